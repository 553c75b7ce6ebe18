"""What a machine that runs the tests must have, and the only parts a test may skip without.

Each part is decided from facts of the host (a binary on ``PATH`` that answers, an image the engine
has, a device torch sees), never from the project's own probes, so a regression in a probe cannot turn
into a skip. ``make test`` (and so ``.ci/run``) runs ``python -m tests.parts`` after its installs: a
required part that is missing fails the run with its name. A test may skip only for a part declared in
``OPTIONAL`` (``skip_unless``); tests/project/test_test_honesty.py refuses any other skip whose condition
project code computes.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def _runs(*cmd: str, timeout: float = 60) -> str:
    """'' when ``cmd`` exits 0, else why not (its last line of stderr, or the error)."""
    exe = shutil.which(cmd[0])
    if exe is None:
        return f"`{cmd[0]}` is not on PATH"
    try:
        r = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`{' '.join(cmd)}`: {e}"
    last = (r.stderr or r.stdout).strip().splitlines()[-1:] or [f"exit {r.returncode}"]
    return "" if r.returncode == 0 else f"`{' '.join(cmd)}` failed: {last[0][:200]}"


def _image(repo: str) -> str:
    """The engine has an image of ``repo`` (any tag: `make image` tags each build by its inputs)."""
    why = _runs("docker", "image", "ls", "--quiet", repo)
    if why:
        return why
    found = subprocess.run(["docker", "image", "ls", "--quiet", repo], capture_output=True, text=True, timeout=60)
    return "" if found.stdout.strip() else f"the engine has no {repo} image"


def _bwrap() -> str:
    """bubblewrap present and able to make the namespaces the backend uses. Only /usr and its links are bound, as
    the backend does: binding the host's whole / raced Docker (a container's overlay mount that came or went during
    the recursive bind failed the probe, 'Unable to apply mount flags: remount /newroot/var/lib/docker/...')."""
    binds = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib64"):
        p = Path("/", top)
        if p.is_symlink():
            binds += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            binds += ["--ro-bind", str(p), f"/{top}"]
    return _runs("bwrap", *binds, "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "true")


def _user(name: str) -> str:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return f"no user {name!r}"
    return ""


def _podman() -> str:
    """Podman present; as root, the user it runs as (sandbox/host/install_podman.sh makes it) and runc."""
    why = _runs("podman", "--version")
    if not why and os.geteuid() == 0:
        why = _user("rlvr-podman") or ("" if shutil.which("runc") else "`runc` is not on PATH")
    return why


def pg_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl (on PATH, or Debian's /usr/lib/postgresql/N/bin)."""
    found = shutil.which("initdb")
    dirs = [Path(found).parent] if found else []
    dirs += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((d for d in dirs if (d / "initdb").exists() and (d / "pg_ctl").exists()), None)


def _postgres() -> str:
    if pg_bindir() is None:
        return "no initdb/pg_ctl (on PATH or under /usr/lib/postgresql/*/bin)"
    return _user("postgres") if os.geteuid() == 0 else ""


# name -> (what it is for, how `make test` installs it, probe: '' when present, else why not)
REQUIRED: dict[str, tuple[str, str, Callable[[], str]]] = {
    "docker": ("the default sandbox backend", "make docker", lambda: _runs("docker", "info")),
    "sandbox image": ("what every sandbox runs", "make image", lambda: _image("rlvr-sandbox")),
    "toolchain image": ("the languages other than Python", "make image-langs", lambda: _image("rlvr-sandbox-langs")),
    "bwrap": ("the bubblewrap sandbox backend", "make bwrap", _bwrap),
    "podman": ("the rootless Podman sandbox backend", "make podman", _podman),
    "postgresql": ("the registry's shared backend", "make postgres", _postgres),
    "docker-compose": (
        "deploy/compose.yaml's failover test",
        "make service-image",
        lambda: _runs("docker-compose", "version"),
    ),
}


def _gpu() -> str:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return "" if torch.cuda.is_available() else "no CUDA GPU visible to torch"


def _vllm() -> str:
    if importlib.util.find_spec("vllm") is None:
        return "vllm is not installed (pip install -e .[vllm])"
    return _gpu()


# The parts a test may skip without: name -> probe ('' when present, else why not).
OPTIONAL: dict[str, Callable[[], str]] = {"gpu": _gpu, "vllm": _vllm}

_seen: dict[str, str] = {}


def missing(part: str) -> str:
    """Why ``part`` (required or optional) is missing here, '' when present; probed once per process."""
    if part not in REQUIRED and part not in OPTIONAL:
        raise KeyError(f"unknown part {part!r}: declare it in tests/parts.py (REQUIRED or OPTIONAL)")
    if part not in _seen:
        _seen[part] = REQUIRED[part][2]() if part in REQUIRED else OPTIONAL[part]()
    return _seen[part]


def skip_unless(part: str) -> pytest.MarkDecorator:
    """The one allowed skip: ``part`` is declared optional and missing here."""
    if part not in OPTIONAL:
        raise KeyError(f"{part!r} is not declared optional in tests/parts.py: a test cannot skip without it")
    why = missing(part)
    return pytest.mark.skipif(bool(why), reason=f"optional part {part} missing: {why}")


def require(part: str) -> None:
    """Fail the calling test, naming ``part``, when a required part is missing (never a skip)."""
    if part not in REQUIRED:
        raise KeyError(f"{part!r} is not a required part in tests/parts.py")
    why = missing(part)
    if why:
        pytest.fail(f"required part missing: {part} ({REQUIRED[part][0]}; `{REQUIRED[part][1]}`): {why}")


def main() -> int:
    gone = [(name, missing(name)) for name in REQUIRED if missing(name)]
    for name, (what, _how, _) in REQUIRED.items():
        print(f"  {name:16} {'MISSING' if missing(name) else 'ok':8} {what}")
    for name in OPTIONAL:
        print(f"  {name:16} {'absent' if missing(name) else 'ok':8} optional: its tests skip, saying so")
    for name, why in gone:
        print(f"error: required part missing: {name}: {why} (`{REQUIRED[name][1]}` installs it)", file=sys.stderr)
    return 1 if gone else 0


if __name__ == "__main__":
    sys.exit(main())
