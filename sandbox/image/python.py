"""Build the sandbox image without any image registry.

Offline path (always works, needs root + debootstrap):
  1. ``debootstrap --variant=minbase bookworm`` into ``var/cache/rootfs-<hash>`` (cached);
  2. the runtime layer: sympy, Math-Verify and its LaTeX parser, numpy and pandas installed on the host with
     ``pip install --target`` (pure-Python wheels, and cp311 manylinux wheels for numpy and pandas: the host's
     Python is 3.11 as bookworm's is), byte-compiled, plus the in-container worker;
  3. one tar stream of both piped into ``docker import`` with the image config (``--change``).

Where a registry is reachable and debootstrap is not usable (not root, not Debian), ``--from-registry``
builds ``FROM python:3.11-slim`` with the same runtime layer instead.

The tag is ``rlvr-sandbox:<hash>`` where the hash covers everything that goes in (this recipe, the
worker, the pinned runtime packages), so a change to any of them builds a new image.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "var" / "cache"
# the in-sandbox program: the room in_sandbox/ (the worker and every module a kind's job imports), shipped as
# files to /opt/sandbox/in_sandbox/; the worker runs as a script and puts /opt/sandbox first on its path
IN_SANDBOX = ROOT / "in_sandbox"
WORKER_FILES = sorted(p for p in IN_SANDBOX.rglob("*.py") if "__pycache__" not in p.parts)
WORKER_CMD = ["python3", "-s", "/opt/sandbox/in_sandbox/worker.py"]
REPO_NAME = "rlvr-sandbox"
SUITE = "bookworm"
DEBIAN_PACKAGES = ["python3"]
RUNTIME_PACKAGES = [
    "sympy==1.14.0",
    "mpmath==1.3.0",
    "math-verify==0.9.0",
    "latex2sympy2_extended==1.11.0",
    "antlr4-python3-runtime==4.13.2",
    # what SandboxFusion's image bundles and its users' programs import; cp311 manylinux wheels,
    # not preloaded (the worker imports only ``SandboxConfig.preload``): a job pays for its own import
    "numpy==2.4.6",
    "pandas==3.1.1",
    "python-dateutil==4.0.0",
    "tzdata==2026.6",
]
# their own test suites (pandas/tests alone is 46 MB), which no job imports: left out of the image
STRIP_TESTS = ["numpy", "pandas"]
# numpy's hook for distributors (numpy/_distributor_init.py imports it before its BLAS library loads):
# OpenBLAS would start a thread per CPU the host has, each counted against the sandbox's pids limit and its
# stack against the job's address space, for a sandbox with one CPU's quota. One thread unless the program
# sets the variable itself. Here, not in the worker's job environment, so it holds on every backend.
NUMPY_INIT = (
    "# written by sandbox/image/python.py: one BLAS thread per job unless the program asks for more\n"
    "import os\n\n"
    "for _name in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS'):\n"
    "    os.environ.setdefault(_name, '1')\n"
)
SANDBOX_UID = 65534
# No setuid/setgid file in the image (su, mount, passwd, ...): with no-new-privileges they could not
# elevate anyway, but there is then nothing to elevate with even if that option were lost.
TAR_FLAGS = ["--mode=u-s,g-s"]
IMAGE_CHANGES = [
    "ENV PATH=/usr/local/bin:/usr/bin:/bin",
    "ENV PYTHONPATH=/opt/pylibs",
    "ENV PYTHONDONTWRITEBYTECODE=1",
    "ENV HOME=/tmp",
    "ENV LANG=C.UTF-8",
    "WORKDIR /tmp",
    f"USER {SANDBOX_UID}:{SANDBOX_UID}",
    f"CMD {json.dumps(WORKER_CMD)}",
]


class ImageBuildError(RuntimeError):
    """The sandbox image cannot be built here (the message says what to do instead)."""


def digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:12]


def rootfs_hash() -> str:
    return digest([SUITE.encode(), " ".join(DEBIAN_PACKAGES).encode(), b"minbase"])


def image_tag() -> str:
    """The tag of the image that the current sources describe."""
    recipe = "\n".join(RUNTIME_PACKAGES + STRIP_TESTS + [NUMPY_INIT] + IMAGE_CHANGES + TAR_FLAGS).encode()
    return f"{REPO_NAME}:{digest([rootfs_hash().encode(), recipe, *worker_bytes()])}"


def worker_bytes() -> list[bytes]:
    """Each in-sandbox file's path in the room and its bytes (a moved file changes the tag too)."""
    return [str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() for f in WORKER_FILES]


def copy_worker(layer: Path) -> None:
    """The in-sandbox files, as /opt/sandbox/in_sandbox/... of the image (``layer`` is the image's root)."""
    for f in WORKER_FILES:
        dest = layer / "opt" / "sandbox" / f.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)


def build_lock():
    """One image build at a time on this machine's cache (the Python and the toolchain image share parts of it, and
    tests build an image that is missing): hold the returned file open while building."""
    import fcntl

    CACHE.mkdir(parents=True, exist_ok=True)
    lock = open(CACHE / ".image-build.lock", "w")  # noqa: SIM115 - the caller holds it for the build
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def image_exists(tag: str) -> bool:
    r = subprocess.run(["docker", "image", "inspect", tag], capture_output=True)
    return r.returncode == 0


def run_logged(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    print(f"  ({cmd[0] if cmd[0] != sys.executable else 'python'} took {time.monotonic() - t0:.1f} s)", file=sys.stderr)


def build_rootfs() -> Path:
    """debootstrap a minbase Debian with python3; cached by its inputs."""
    dest = rootfs_cache()
    if (dest / ".complete").exists():
        return dest
    if os.geteuid() != 0:
        raise ImageBuildError(
            "building the sandbox root filesystem needs root (debootstrap); run `sudo make image`"
            " or `make image FROM_REGISTRY=1` where python:3.11-slim can be pulled"
        )
    if not shutil.which("debootstrap"):
        run_logged(
            ["apt-get", "install", "-y", "-q", "debootstrap"], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        )
    shutil.rmtree(dest, ignore_errors=True)
    tmp = Path(str(dest) + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    mirror = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
    run_logged(
        ["debootstrap", "--variant=minbase", f"--include={','.join(DEBIAN_PACKAGES)}", SUITE, str(tmp), mirror],
        stdout=subprocess.DEVNULL,
    )
    # Keep the image small: apt caches and docs are not needed at run time.
    for sub in ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"]:
        shutil.rmtree(tmp / sub, ignore_errors=True)
    (tmp / ".complete").touch()
    tmp.rename(dest)
    return dest


def rootfs_cache() -> Path:
    """Where ``build_rootfs`` keeps the image's root filesystem (the bwrap backend binds its /usr)."""
    return CACHE / f"rootfs-{rootfs_hash()}"


def pylibs_cache() -> Path:
    """Where ``build_runtime_layer`` keeps the image's Python packages (bwrap shows them as /opt/pylibs)."""
    return CACHE / f"pylibs-{digest([' '.join(RUNTIME_PACKAGES + STRIP_TESTS + [NUMPY_INIT]).encode()])}"


def build_runtime_layer(layer: Path) -> None:
    """Python packages (host pip, --target) and the worker, laid out as they appear in the image."""
    pylibs = pylibs_cache()
    if not (pylibs / ".complete").exists():
        part = pylibs.with_name(pylibs.name + ".partial")  # built aside, then renamed: never seen half-written
        shutil.rmtree(part, ignore_errors=True)
        shutil.rmtree(pylibs, ignore_errors=True)
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(part)]
        run_logged([*cmd, *RUNTIME_PACKAGES])
        for pkg in STRIP_TESTS:
            for tests in sorted((part / pkg).rglob("tests"), reverse=True):
                shutil.rmtree(tests, ignore_errors=True)
        (part / "numpy" / "_distributor_init_local.py").write_text(NUMPY_INIT)
        run_logged([sys.executable, "-m", "compileall", "-q", "-j", "0", str(part)], stdout=subprocess.DEVNULL)
        (part / ".complete").touch()
        part.rename(pylibs)
    shutil.copytree(pylibs, layer / "opt" / "pylibs", ignore=shutil.ignore_patterns(".complete", "bin"))
    copy_worker(layer)


def build_offline(tag: str) -> None:
    rootfs = build_rootfs()
    with tempfile.TemporaryDirectory(prefix="rlvr-image-", dir=CACHE) as tmp:
        layer = Path(tmp)
        build_runtime_layer(layer)
        tar = subprocess.Popen(
            [
                "tar",
                "--numeric-owner",
                *TAR_FLAGS,
                "--exclude=./.complete",
                "-C",
                str(rootfs),
                "-c",
                ".",
                "-C",
                str(layer),
                "opt/pylibs",
                "opt/sandbox",
            ],
            stdout=subprocess.PIPE,
        )
        cmd = ["docker", "import"]
        for c in IMAGE_CHANGES:
            cmd += ["--change", c]
        cmd += ["--message", "rlvr sandbox (offline build)", "-", tag]
        run_logged(cmd, stdin=tar.stdout, stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise ImageBuildError("tar of the sandbox root filesystem failed")


def rootfs_from_image(tag: str) -> None:
    """Fill var/cache's root file system and package directory from the image itself, when this checkout did
    not build it (another checkout on this host did, or it was loaded from elsewhere): the bwrap backend binds
    them, and without them falls back to the host's /usr. Offline, a few seconds: ``docker export``."""
    root, pylibs = rootfs_cache(), pylibs_cache()
    if (root / ".complete").exists() and (pylibs / ".complete").exists():
        return
    part = Path(str(root) + ".export")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    cid = subprocess.run(["docker", "create", tag], capture_output=True, text=True, check=True).stdout.strip()
    try:
        export = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        run_logged(["tar", "--numeric-owner", "-x", "-C", str(part)], stdin=export.stdout)
        if export.wait() != 0:
            raise ImageBuildError(f"docker export of {tag} failed")
    finally:
        subprocess.run(["docker", "rm", cid], capture_output=True)
    if not (pylibs / ".complete").exists():
        shutil.rmtree(pylibs, ignore_errors=True)
        shutil.move(str(part / "opt" / "pylibs"), pylibs)
        (pylibs / ".complete").touch()
    if (root / ".complete").exists():
        shutil.rmtree(part)
    else:
        shutil.rmtree(root, ignore_errors=True)
        (part / ".complete").touch()
        part.rename(root)


def build_from_registry(tag: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rlvr-image-", dir=CACHE) as tmp:
        ctx = Path(tmp)
        build_runtime_layer(ctx)
        lines = ["FROM python:3.11-slim", "COPY opt /opt"] + [c for c in IMAGE_CHANGES if not c.startswith("CMD")]
        lines.append(f"CMD {json.dumps(WORKER_CMD)}")
        (ctx / "Dockerfile").write_text("\n".join(lines) + "\n")
        run_logged(["docker", "build", "-q", "-t", tag, str(ctx)], stdout=subprocess.DEVNULL)
