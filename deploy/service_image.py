"""Build the service image offline (``make service-image``): the verifier service as one deployable image.

Like the sandbox image (sandbox/image/python.py), no registry is involved: one tar stream piped into
``docker import`` of

  1. the same debootstrap root file system (``var/cache/rootfs-*``: Debian minbase with python3);
  2. the service's Python packages, copied from this virtualenv: the distributions the service imports
     and everything they require (walked through ``importlib.metadata``; torch and transformers are not
     among them: the ``reward_model`` kind needs the full install), under ``/opt/rlvr/site``;
  3. the repository's ``verifiers/``, ``sandbox/``, ``in_sandbox/``, ``languages/``, ``proto/`` and ``deploy/`` packages under ``/opt/rlvr/app``;
  4. the host's ``/usr/bin/bwrap`` (Debian's bubblewrap; its libraries are in the minbase root), so the
     bwrap backend works in a pod with no container engine; its sandboxes see ``/opt/rlvr/site``.

The server runs as the unprivileged uid 10001 (``USER``); the sandbox backend is a flag
(``--backend docker|podman|bwrap``, see deploy/README.md for what each needs from the orchestrator).
gRPC health (grpc.health.v1) and HTTP ``/healthz`` answer readiness; ``python3 -m deploy.probe``
is the probe command for orchestrators without a gRPC probe.

The tag is ``rlvr-service:<hash>`` of the recipe, the package versions and the sources.

    .venv/bin/python -m deploy.service_image          # build (cached by its tag)
    .venv/bin/python -m deploy.service_image --tag    # print the tag
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sandbox.image.python import CACHE, ROOT, build_rootfs, image_exists

REPO = "rlvr-service"
SERVICE_UID = 10001
ROOTS = ["grpcio", "grpcio-health-checking", "grpcio-reflection", "protobuf", "pydantic", "docker", "fastapi",
         "uvicorn", "httptools", "prometheus-client", "psycopg", "psycopg-binary", "pyyaml", "sympy",
         "math-verify", "latex2sympy2_extended", "antlr4-python3-runtime"]  # fmt: skip
APP = ["verifiers", "sandbox", "in_sandbox", "languages", "proto", "deploy"]
BWRAP = Path("/usr/bin/bwrap")  # the host's bubblewrap (Debian's), copied in when there
CHANGES = [
    "ENV PYTHONPATH=/opt/rlvr/site:/opt/rlvr/app",
    "ENV PYTHONDONTWRITEBYTECODE=1",
    "ENV HOME=/tmp",
    "ENV LANG=C.UTF-8",
    "ENV TMPDIR=/var/lib/rlvr/chan",
    "ENV RLVR_SANDBOX_PYLIBS=/opt/rlvr/site",
    "WORKDIR /opt/rlvr/app",
    f"USER {SERVICE_UID}:{SERVICE_UID}",
    "EXPOSE 50051 8080",
    'ENTRYPOINT ["python3", "-m", "verifiers.fronts.server"]',
    'CMD ["--host", "0.0.0.0", "--port", "50051", "--http-port", "8080", "--registry", "/var/lib/rlvr/registry.sqlite"]',
]


def distributions() -> list[md.Distribution]:
    """The root distributions and everything they require (extras they were asked with included)."""
    seen: dict[str, md.Distribution] = {}
    todo = list(ROOTS)
    while todo:
        name = re.split(r"[ ;<>=!~\[]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional requirement not installed here
        seen[name] = dist
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(req)
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def image_tag() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for d in distributions():
        h.update(f"{d.metadata['Name']}=={d.version}\n".encode())
    for pkg in APP:
        for f in sorted((ROOT / pkg).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f.relative_to(ROOT).as_posix().encode() + f.read_bytes())
    return f"{REPO}:{h.hexdigest()[:12]}"


def service_layer(layer: Path) -> None:
    site = layer / "opt/rlvr/site"
    for dist in distributions():
        for f in dist.files or []:
            src = Path(dist.locate_file(f)).resolve()
            rel = Path(f)
            if rel.is_absolute() or ".." in rel.parts or not src.is_file() or "__pycache__" in rel.parts:
                continue  # scripts in bin/, byte code (recompiled below)
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, site / rel)
    app = layer / "opt/rlvr/app"
    for pkg in APP:
        shutil.copytree(ROOT / pkg, app / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if BWRAP.exists():  # the bwrap backend inside the image (its libraries are in the minbase root)
        (layer / "usr/bin").mkdir(parents=True)
        shutil.copy2(BWRAP, layer / "usr/bin/bwrap")
    for d in ("var/lib/rlvr", "var/lib/rlvr/chan"):  # the service's own: the registry, the sandboxes' FIFOs
        (layer / d).mkdir(parents=True, exist_ok=True)
        os.chown(layer / d, SERVICE_UID, SERVICE_UID)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", str(layer / "opt/rlvr")],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def build(tag: str) -> None:
    rootfs = build_rootfs()
    with tempfile.TemporaryDirectory(prefix="rlvr-service-", dir=CACHE) as tmp:
        layer = Path(tmp)
        service_layer(layer)
        tar = subprocess.Popen(
            [
                "tar",
                "--numeric-owner",
                "--mode=u-s,g-s",
                "--exclude=./.complete",
                "-C",
                str(rootfs),
                "-c",
                ".",
                "-C",
                str(layer),
                "opt/rlvr",
                "var/lib/rlvr",
                *(["usr/bin/bwrap"] if BWRAP.exists() else []),
            ],
            stdout=subprocess.PIPE,
        )
        cmd = ["docker", "import"] + [x for c in CHANGES for x in ("--change", c)]
        subprocess.run(
            [*cmd, "--message", "rlvr service (offline build)", "-", tag],
            stdin=tar.stdout,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if tar.wait() != 0:
            raise RuntimeError("tar of the service image failed")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", action="store_true", help="print the tag the current sources describe and exit")
    args = p.parse_args()
    tag = image_tag()
    if args.tag:
        print(tag)
        return 0
    if image_exists(tag):
        print(f"service image {tag} is up to date")
        return 0
    build(tag)
    subprocess.run(["docker", "tag", tag, f"{REPO}:latest"], check=True)
    remove_older(tag)
    print(f"built service image {tag}")
    return 0


def remove_older(tag: str) -> None:
    """Untag the images earlier sources described (each is ~270 MB); one still in use stays."""
    out = subprocess.run(
        ["docker", "images", REPO, "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True
    ).stdout.split()
    old = [t for t in out if t not in (tag, f"{REPO}:latest")]
    if old:
        subprocess.run(["docker", "rmi", *old], capture_output=True)


if __name__ == "__main__":
    raise SystemExit(main())
