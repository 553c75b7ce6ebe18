"""The backend table: the one place a sandbox backend is declared, looked up by name (``SandboxConfig.backend``)
like fsspec's protocols or gymnasium's environment ids. A new backend is a module of this folder implementing
sandbox/backend.py's contract plus one line of ``BACKENDS``; the pool (sandbox/pool.py) and the service's
``--backend`` read it. Real import statements, so tests/project/test_layering.py sees them; each class is
imported on first use (a bwrap host never loads the Docker SDK).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox.backend import Backend, SandboxError


def _docker() -> type[Backend]:
    from sandbox.backends.docker import DockerSandbox

    return DockerSandbox


def _podman() -> type[Backend]:
    from sandbox.backends.podman import PodmanSandbox

    return PodmanSandbox


def _bwrap() -> type[Backend]:
    from sandbox.backends.bwrap import BwrapSandbox

    return BwrapSandbox


@dataclass(frozen=True)
class BackendEntry:
    """One line of the backend table: all the pool and the service's limits know of a backend."""

    load: Callable[[], type[Backend]]  # its class, imported on first use (a bwrap host never loads the Docker SDK)
    image: bool  # it runs the sandbox image (`make image`): the pool names it when SandboxConfig.image is ""
    about: str  # one line for the service's --backend help (docs/sandbox.md compares them)


BACKENDS: dict[str, BackendEntry] = {
    "docker": BackendEntry(_docker, image=True, about="the default; use it for training"),
    "podman": BackendEntry(_podman, image=True, about="rootless, no Docker daemon"),
    "bwrap": BackendEntry(_bwrap, image=False, about="no container engine"),
}


def backend_entry(name: str) -> BackendEntry:
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox backend {name!r}: choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name]
