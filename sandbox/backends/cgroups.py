"""Per-sandbox cgroups for the bwrap backend: memory (swap equal to it: none), pids and a CPU quota.

Where they come from, first that works:

* cgroup v2 as root: ``/sys/fs/cgroup/rlvr-sandbox/<sandbox>``;
* cgroup v2 delegated to this user (systemd ``Delegate=yes``, a Slurm job with its own cgroup, a pod's
  namespace): sub-cgroups of this process's own cgroup, when its ``cgroup.subtree_control`` is
  writable by us and the controllers can be enabled there (v2's no-internal-processes rule: this
  process must not sit in that cgroup itself; a systemd scope made with ``Delegate=yes`` for a child
  leaf is the usual way);
* cgroup v1 as root: ``/sys/fs/cgroup/{memory,pids,cpu}/rlvr-sandbox/<sandbox>``;
* none: each job is bounded by its rlimits only (RLIMIT_AS per process, RLIMIT_CPU, RLIMIT_NPROC),
  which ``describe()`` says at start-up.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sandbox.backend import pid_alive

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
PARENT = "rlvr-sandbox"
PERIOD_US = 100_000
CONTROLLERS = ("memory", "pids", "cpu")


def own_v2_cgroup() -> Path | None:
    """This process's cgroup v2 directory, or None (no unified hierarchy)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                path = line[3:].strip()
                base = ROOT if (ROOT / "cgroup.controllers").exists() else ROOT / "unified"
                d = base / path.lstrip("/")
                return d if (d / "cgroup.controllers").exists() else None
    except OSError:
        return None
    return None


def v2_parent() -> Path | None:
    """Where per-sandbox v2 cgroups go here (created, controllers enabled), or None."""
    if os.geteuid() == 0 and (ROOT / "cgroup.controllers").exists():
        parent = ROOT / PARENT
    else:
        own = own_v2_cgroup()
        if own is None or os.geteuid() == 0 or not os.access(own / "cgroup.subtree_control", os.W_OK):
            return None
        parent = own
    try:
        have = set(
            (parent.parent if parent.name == PARENT else parent).joinpath("cgroup.controllers").read_text().split()
        )
        wanted = [c for c in CONTROLLERS if c in have]
        if parent.name == PARENT:
            parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
    except OSError as e:
        log.info("no cgroup v2 for bwrap sandboxes under %s: %s", parent, e)
        return None
    return parent


def v1_available() -> bool:
    return os.geteuid() == 0 and all((ROOT / c).is_dir() for c in ("memory", "pids"))


class SandboxCgroups:
    """One sandbox's cgroups (inactive when none can be made: ``active`` is False)."""

    def __init__(self, name: str, memory_mb: int, pids: int, cpus: float):
        self.dirs: list[Path] = []
        self.controllers: list[str] = []
        try:
            parent = v2_parent()
            if parent is not None:
                self._v2(parent / name, memory_mb, pids, cpus)
            elif v1_available():
                self._v1(name, memory_mb, pids, cpus)
        except OSError as e:
            log.warning("bwrap sandbox without cgroups (%s): memory is bounded per process only", e)
            self.remove()

    def _v2(self, d: Path, memory_mb: int, pids: int, cpus: float) -> None:
        d.mkdir()
        self.dirs.append(d)
        files = {"memory": {"memory.max": str(memory_mb << 20), "memory.swap.max": "0"},
                 "pids": {"pids.max": str(pids)}, "cpu": {"cpu.max": f"{int(cpus * PERIOD_US)} {PERIOD_US}"}}  # fmt: skip
        for ctl, values in files.items():
            if (d / next(iter(values))).exists():
                for f, v in values.items():
                    try:
                        (d / f).write_text(v)
                    except OSError:
                        if f != "memory.swap.max":  # no swap accounting: there is no swap to limit
                            raise
                self.controllers.append(ctl)

    def _v1(self, name: str, memory_mb: int, pids: int, cpus: float) -> None:
        for ctl in CONTROLLERS:
            if ctl == "cpu" and not (ROOT / "cpu").is_dir():
                continue
            d = ROOT / ctl / PARENT / name
            d.mkdir(parents=True)
            self.dirs.append(d)
            if ctl == "memory":
                (d / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
                try:
                    (d / "memory.memsw.limit_in_bytes").write_text(str(memory_mb << 20))
                except OSError:
                    pass  # swap accounting off: there is no swap to limit
            elif ctl == "pids":
                (d / "pids.max").write_text(str(pids))
            else:
                (d / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (d / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)))
            self.controllers.append(ctl)

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def enter_script(self) -> str:
        """Shell that moves the shell itself into every cgroup (run before exec'ing bwrap)."""
        return "".join(f'echo $$ > "{d}/cgroup.procs" && ' for d in self.dirs)

    def remove(self) -> None:
        for d in self.dirs:
            try:
                d.rmdir()
            except OSError:
                pass
        self.dirs = []


def describe() -> str:
    """What bounds a bwrap sandbox's memory, processes and CPU here (said at start-up)."""
    parent = v2_parent()
    if parent is not None:
        kind = "cgroup v2" + ("" if parent.name == PARENT else " (delegated)")
        return f"{kind} under {parent}: memory, pids and CPU quota per sandbox"
    if v1_available():
        return "cgroup v1 (root): memory, pids" + (" and CPU quota" if (ROOT / "cpu").is_dir() else "") + " per sandbox"
    return "no cgroup available: rlimits only (memory per process, CPU seconds, processes per sandbox user namespace)"


def remove_stale() -> int:
    """Empty per-sandbox cgroups a crashed run left behind (a live one is not empty: rmdir fails)."""
    removed = 0
    parents = [ROOT / PARENT] + [ROOT / c / PARENT for c in CONTROLLERS]
    own = own_v2_cgroup()
    parents += [own] if own is not None else []
    for parent in parents:
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            if d.is_dir() and d.name.startswith("rlvr-sbx-"):
                pid = d.name.split("-")[2]
                if not pid.isdigit() or not pid_alive(int(pid)):
                    try:
                        d.rmdir()
                        removed += 1
                    except OSError:
                        pass
    return removed
