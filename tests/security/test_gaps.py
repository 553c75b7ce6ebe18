"""The battery's documented gaps are decided from the kernel's facts, never from the code under test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.security import gaps

V1 = """\
25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
29 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
31 25 0:28 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
"""
V2 = (
    "27 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
)


def test_the_mount_table_says_which_hierarchy_holds_each_controller():
    assert gaps.cgroup_mounts(V1) == {
        "rw": Path("/sys/fs/cgroup/memory"),
        "memory": Path("/sys/fs/cgroup/memory"),
        "cpu": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct"),
        "v2": Path("/sys/fs/cgroup/unified"),
    }
    assert gaps.cgroup_mounts(V2) == {"v2": Path("/sys/fs/cgroup")}


def test_the_gaps_module_reads_nothing_of_the_sandbox():
    """A regression in sandbox/backends/cgroups.py must fail the attacks, not turn them into expected failures."""
    tree = ast.parse(Path(gaps.__file__).read_text())
    imported = {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not imported & {"sandbox", "verifiers", "trainer"}, imported


def test_on_this_host_bwrap_has_a_gap_exactly_where_the_kernel_offers_no_cgroup():
    for protection in ("memory", "cpu"):
        assert bool(gaps.known_gap("bwrap", protection)) == (not gaps.host_cgroup(protection)), protection
    assert gaps.known_gap("docker", "memory") == ""
