"""The bwrap backend's seccomp filter, generated at start with libseccomp (through ctypes: no Python
binding needed, only ``libseccomp.so.2``, which every Debian with systemd has) and handed to
``bwrap --seccomp FD`` as a compiled BPF program.

What it takes away is what Docker's default profile takes from a container without capabilities, as
a deny list (everything else stays allowed, so any program that runs in the Docker sandbox runs here):
namespaces (``unshare``, ``setns``, ``clone`` with a namespace flag; ``clone3`` answers ENOSYS so libc
falls back to ``clone``), mounts and the new mount API, kernel keyrings, BPF, perf events,
userfaultfd, io_uring, module loading, kexec, reboot, swap, clocks, accounting, quotas, the kernel
log, handle-based opens, reading or writing other processes' memory, ptrace, personality changes
and the legacy syscalls. Each is refused with EPERM (ENOSYS for clone3); system calls of a
foreign architecture (32-bit entry points on x86_64) kill the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import tempfile

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7


def scmp_act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
DENIED = (
    "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module",
    "finit_module", "delete_module", "create_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime", "acct", "quotactl",
    "quotactl_fd", "syslog", "open_by_handle_at", "name_to_handle_at", "process_vm_readv",
    "process_vm_writev", "ptrace", "personality", "lookup_dcookie", "nfsservctl", "uselib", "ustat",
    "sysfs", "_sysctl", "iopl", "ioperm", "vhangup", "get_kernel_syms", "query_module", "fanotify_init",
    "pidfd_getfd", "kcmp", "mbind", "migrate_pages", "move_pages", "set_mempolicy",
)  # fmt: skip


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]  # fmt: skip


class SeccompUnavailable(RuntimeError):
    """libseccomp is not on this host (the filter cannot be generated)."""


def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as e:
        raise SeccompUnavailable(f"libseccomp not found ({e}): apt-get install libseccomp2") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]  # fmt: skip
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _add(lib: ctypes.CDLL, ctx: int, action: int, name: str, args: list[_ArgCmp] | None = None) -> bool:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr < 0:
        return False  # not a system call of this architecture (e.g. stime on x86_64)
    arr = (_ArgCmp * len(args))(*args) if args else None
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(args or ()), arr)
    if rc < 0:
        raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")
    return True


def build_bpf() -> bytes:
    """The compiled filter (a BPF program, as ``bwrap --seccomp`` reads it)."""
    lib = _lib()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        for name in DENIED:
            _add(lib, ctx, scmp_act_errno(errno.EPERM), name)
        # clone: refused when any namespace flag is set (its flags are argument 0 on x86_64 and arm64);
        # one rule per flag, as MASKED_EQ compares the whole masked value
        for bit in range(17, 31):
            flag = 1 << bit
            if NAMESPACE_FLAGS & flag:
                _add(lib, ctx, scmp_act_errno(errno.EPERM), "clone", [_ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag)])
        _add(lib, ctx, scmp_act_errno(errno.ENOSYS), "clone3")
        with tempfile.TemporaryFile() as f:
            rc = lib.seccomp_export_bpf(ctx, f.fileno())
            if rc < 0:
                raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
            f.seek(0)
            return f.read()
    finally:
        lib.seccomp_release(ctx)


_cached: bytes | None = None


def filter_bytes() -> bytes:
    """The filter, generated once per process."""
    global _cached
    if _cached is None:
        _cached = build_bpf()
    return _cached


def filter_fd() -> int:
    """A fresh readable fd holding the filter (bwrap reads it to the end; the caller closes it)."""
    data = filter_bytes()
    fd = os.memfd_create("rlvr-seccomp", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
