"""The sandbox half of the compile cache (host half: verifiers/kinds/code/compile_cache.py). Standard library only.

Shipped as one job with driver.py (its text, then this module's, then one call), whose ``main``,
``write_files`` and ``compile_step`` it is handed, never imported there. Two entry points:

* ``build(main, write_files, compile_step)``: write the job's files and compile with the driver's own
  functions; once the compiler and everything it started are dead (the driver's ``run`` kills every other
  process of the sandbox before it returns), read what the compile wrote into the scratch directory into
  this process's memory, packed. Nothing of the program has run yet, and nothing else runs in the sandbox (one job at a time, every
  process killed and /tmp wiped between jobs), so the blob is exactly the compiler's output. Then the
  job goes on as the driver (its cases, on the binary just built), and at the end sends the blob as
  the ``artifact`` line if it fits in what the output cap (``output_cap``) leaves; else an ``uncached``
  line says why (too large, a link, too many files). The program cannot reach the blob: it lives in
  this non-dumpable process, which the program can neither trace nor read. A compile error is
  reported as the driver reports it;
* ``run_cached(main)``: unpack the blob the host sent (``artifact``) into the scratch directory, then run
  the driver with no compile step.

The blob: zlib of, per file, ``>HHI`` (path length, mode bits, size), the path (UTF-8), the bytes.
Paths are relative, below the scratch directory, without ``..`` or a leading dot (``entries`` refuses
anything else, here and on the host). Top-level hidden entries are tool caches in HOME (Go's
``.gocache``, Mono's ``.mono``), not part of the artifact.
"""

import base64
import ctypes
import io
import json
import os
import stat
import struct
import sys
import zlib

from in_sandbox.jobs import DRIVER

HEAD = struct.Struct(">HHI")
ROOM = 16384  # of the output cap, kept for the lines around the artifact
MAX_FILES = 1024


def scan():
    """{relative path: (size, mtime_ns, mode)} of what the scratch directory holds; a link or other
    special file maps to None. None when it holds more than MAX_FILES entries."""
    found, dirs = {}, [""]
    while dirs:
        d = dirs.pop()
        for e in os.scandir(d or "."):
            rel = f"{d}/{e.name}" if d else e.name
            if not d and e.name.startswith("."):
                continue
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                dirs.append(rel)
            else:
                found[rel] = (st.st_size, st.st_mtime_ns, st.st_mode & 0o777) if stat.S_ISREG(st.st_mode) else None
            if len(found) > MAX_FILES:
                return None
    return found


def pack(before, after, limit):
    """(base64 blob of the files ``after`` has new or changed since ``before``, "") or (None, why not)."""
    if after is None:
        return None, f"the compile left more than {MAX_FILES} files"
    parts, raw = [], 0
    for rel in sorted(after):
        if after[rel] is None:
            return None, f"the compile left {rel}, not a regular file"
        if after[rel] == before.get(rel):
            continue
        with open(rel, "rb") as f:
            data = f.read()
        name = rel.encode()
        parts += [HEAD.pack(len(name), after[rel][2], len(data)), name, data]
        raw += len(data)
        if raw > 8 * limit:  # no point compressing it: binaries shrink 2-3x
            return None, f"the compile wrote over {8 * limit} bytes"
    for level in (1, 6):  # 1 is the faster; 6 the smaller, for what 1 leaves too large
        blob = base64.b64encode(zlib.compress(b"".join(parts), level)).decode()
        if len(blob) <= limit:
            return blob, ""
    return None, f"the artifact takes {len(blob)} bytes, over the {limit} the output cap leaves"


def entries(blob):
    """[(path, mode, bytes)] of a packed blob (zlib, not base64); ValueError for a path that leaves the
    scratch directory or a truncated blob."""
    data, at, out = zlib.decompress(blob), 0, []
    while at < len(data):
        if at + HEAD.size > len(data):
            raise ValueError("truncated artifact")
        n, mode, size = HEAD.unpack_from(data, at)
        at += HEAD.size
        name, body = data[at : at + n].decode(), data[at + n : at + n + size]
        at += n + size
        parts = name.split("/")
        if len(body) != size or not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"artifact entry {name!r} is not a plain relative path")
        if parts[0].startswith("."):
            raise ValueError(f"artifact entry {name!r} is hidden")
        out.append((name, mode & 0o755, body))
    return out


def _hide():
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0, as the driver: the program cannot look in
    except Exception:
        pass


def _refeed(q):
    """The driver's ``main`` reads its query from stdin: hand it ``q``."""
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(q).encode()))


def build(main, write_files, compile_step):
    _hide()
    q = DRIVER.loads(sys.stdin.buffer.read())
    count, stdout = _Count(), os.dup(1)  # the driver's main points fd 1 at stderr: keep the job's stdout

    def say(**d):
        count.write(stdout, ("\n" + json.dumps(dict(d, nonce=q["nonce"])) + "\n").encode())

    env = dict(os.environ, **q["env"])
    write_files(q)
    before = scan() or {}
    report = compile_step(q, env)
    say(compile=report)
    if not report["ok"]:
        return
    cap = int(q.pop("output_cap"))
    try:
        blob, why = pack(before, scan(), cap - ROOM)
    except (OSError, ValueError, zlib.error) as e:  # a file gone or unreadable: not cached
        blob, why = None, f"the artifact could not be read: {e}"
    q["compile"] = None  # the driver from here on, on the binary just built
    _refeed(q)
    with count:
        main()
    if blob is not None and count.written + len(blob) > cap - ROOM // 4:
        blob, why = None, f"the artifact ({len(blob)} bytes) does not fit in what the cases left of the output cap"
    say(**({"artifact": blob} if blob is not None else {"uncached": why}))


class _Count:
    """While entered, counts what this process writes towards the output cap: every ``os.write`` (the
    driver writes its lines so), but into the memfds that carry the cases' inputs (``os.memfd_create``)."""

    def __init__(self):
        self.written, self.memfds = 0, set()
        self._write, self._memfd = os.write, os.memfd_create

    def write(self, fd, data):
        n = self._write(fd, data)
        self.written += 0 if fd in self.memfds else n
        return n

    def memfd_create(self, *a):
        fd = self._memfd(*a)
        self.memfds.add(fd)
        return fd

    def __enter__(self):
        os.write, os.memfd_create = self.write, self.memfd_create

    def __exit__(self, *exc):
        os.write, os.memfd_create = self._write, self._memfd


def run_cached(main):
    _hide()
    q = DRIVER.loads(sys.stdin.buffer.read())
    for name, mode, body in entries(base64.b64decode(q.pop("artifact"))):
        if "/" in name:
            os.makedirs(os.path.dirname(name), exist_ok=True)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.chmod(name, mode)
    q["compile"] = None
    _refeed(q)
    main()
