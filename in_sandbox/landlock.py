"""Landlock (Linux 5.13+, unprivileged) for session processes: stdlib only, through ctypes.

``restrict(rw, ro)`` puts the calling process (and everything it starts later) in a new Landlock
domain: files may be read under ``ro`` and ``rw``, written only under ``rw``; where the kernel has
scopes (ABI 6, Linux 6.12+), signals and abstract unix sockets cannot reach a process outside the
domain. Domains nest and only ever narrow, so a session's forks, each restricting itself again, cannot
signal one another or write into one another's directory. Ptrace across domains is refused by Landlock
at every ABI. Returns the ABI used, or 0 where Landlock is missing (then nothing is restricted, and the
session says so: ``isolation``).
"""

import ctypes
import os

SYS_CREATE, SYS_ADD_RULE, SYS_RESTRICT = 444, 445, 446  # x86_64 and aarch64 share these numbers
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# fs access rights (ABI 1 unless noted)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 16, 32, 64, 128, 256
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 512, 1024, 2048, 4096
REFER, TRUNCATE = 8192, 16384  # ABI 2, ABI 3
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2  # ABI 6
READ = EXECUTE | READ_FILE | READ_DIR
ALL_V1 = (1 << 13) - 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def abi():
    v = _libc.syscall(SYS_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    return max(int(v), 0)


def restrict(rw, ro):
    """Restrict this process (see the module docstring); the ABI used, 0 where unavailable."""
    version = abi()
    if version < 1:
        return 0
    handled = ALL_V1 | (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)
    scoped = (SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL) if version >= 6 else 0
    attr = _Ruleset(handled, 0, scoped)
    size = ctypes.sizeof(_Ruleset) if version >= 6 else 8
    fd = _libc.syscall(SYS_CREATE, ctypes.byref(attr), size, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for paths, rights in ((ro, READ), (rw, handled)):
            for path in paths:
                try:
                    pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # not in this sandbox's file system
                try:
                    allowed = rights if os.path.isdir(path) else rights & (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE)
                    rule = _PathBeneath(allowed, pfd)
                    if _libc.syscall(SYS_ADD_RULE, fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0) < 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
                finally:
                    os.close(pfd)
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if _libc.syscall(SYS_RESTRICT, fd, 0) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(fd)
    return version
