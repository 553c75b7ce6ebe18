"""Compiled artifacts cached by what made them, across jobs and requests (the host half; the sandbox
half is in_sandbox/code/artifact.py; the flow is ``toolchains.Toolchains.run``, behind ``VerifierService.run_job``).

A driver job with a compile step runs as a **build** job: the driver's job that also sends back what
its compiler wrote (packed, read before the program ran, sent after the cases where the output cap
leaves room). The next job whose **key** is the same runs a **run** job instead: the artifact
unpacked, the cases run, no compiler. The key is the SHA-256 of everything that decides what the
compiler writes: the toolchain image, the source files as written, the request's extra files, the
compiler's argv and environment, its address-space and process limits, the job's sandbox limits. A job
with any of them different gets its own compile; a cached compile that took longer than the asking
job's compile budget is compiled again, so a budget means what it did without the cache. A clean
compile error (the compiler exited non-zero, no signal, no time-out) is cached too, as the result it
produced. Artifacts that do not fit (over the output cap with the cases' output, links, more than
1024 files) are not cached: that job ran as the driver, and the next compiles again.

Why a hostile program cannot poison another job's artifact:

* the artifact is read in the build job after the compiler and every process it started were killed and
  before any program of that source ran, into the memory of the non-dumpable driver, which the program
  can neither trace nor read; the sandbox runs one job at a time and kills every process and wipes
  /tmp between jobs, so nothing else can be writing into the scratch directory then;
* the cache lives in the service's memory, never in a sandbox: a program can change its own copy of the
  binary for its own later cases (as without the cache), never the copy the next job gets;
* an artifact is handed only to a job with the same key, so it only ever runs the program it was built
  from, with the inputs that job brings; its paths are checked on the host before it is stored
  (``artifact.entries``) and again in the sandbox before they are written.

Bounded: least recently used entries are dropped past ``max_bytes`` (packed bytes; 0 turns the cache
off). ``STATS`` in toolchains.py counts hits.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from in_sandbox.code import artifact
from sandbox.backend import Job, Result

# the jobs: the driver and the artifact's sandbox half (in_sandbox/code/, shipped in the toolchain image)
_IMPORT = "from in_sandbox.code import artifact, driver\n"
BUILD_JOB = _IMPORT + "artifact.build(driver.main, driver.write_files, driver.compile_step)\n"
RUN_JOB = _IMPORT + "artifact.run_cached(driver.main)\n"
DEFAULT_BYTES = 256 << 20
# what decides the compiler's output (the inputs, budgets and run argv do not)
_KEYED = ("files", "blobs", "compile", "env", "compile_as_mb", "compile_nproc")


@dataclass(frozen=True)
class Entry:
    compile: dict  # the driver's compile record (ok, message, elapsed, status, exit, signal)
    artifact: bytes | None  # packed (zlib) files the compile wrote; None for a compile error
    failed: Result | None  # a compile error: the build job's result, its nonce ``nonce``
    nonce: str = ""

    @property
    def size(self) -> int:
        failed = len(self.failed.stdout) + len(self.failed.stderr) if self.failed else 0
        return len(self.artifact or b"") + len(self.compile.get("message") or "") + failed + 256


def key(q: dict, job: Job, image: str) -> str:
    """The cache key of a driver query ``q`` (the job's stdin, parsed) run as ``job`` on ``image``."""
    same = [image, {k: q.get(k) for k in _KEYED}, job.limits.memory_mb, job.limits.nproc, job.limits.fsize_mb]
    return hashlib.sha256(json.dumps(same, sort_keys=True).encode()).hexdigest()


def cacheable_failure(comp: dict, res: Result) -> bool:
    """A compile error the same source always gets: the compiler exited non-zero by itself."""
    return (
        not comp["ok"] and comp["status"] == "runtime" and comp["signal"] is None and not res.timed_out
    ) and not res.output_limit_exceeded


class ArtifactCache:
    """A thread-safe LRU of ``Entry`` by key, bounded by the sum of their sizes."""

    def __init__(self, max_bytes: int = DEFAULT_BYTES) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self.max_bytes, self.bytes, self.evicted = max_bytes, 0, 0

    def get(self, k: str, budget_s: float) -> Entry | None:
        """The entry for ``k`` if it is there and its compile took at most ``budget_s``."""
        with self._lock:
            e = self._entries.get(k)
            if e is None or e.compile["elapsed"] > budget_s:
                return None
            self._entries.move_to_end(k)
            return e

    def put(self, k: str, e: Entry) -> None:
        if e.artifact is not None:
            artifact.entries(e.artifact)  # refuse (ValueError) what would leave the scratch directory
        with self._lock:
            old = self._entries.pop(k, None)
            self.bytes -= old.size if old else 0
            if e.size > self.max_bytes // 4:
                return  # one entry never takes most of the cache
            self._entries[k] = e
            self.bytes += e.size
            while self.bytes > self.max_bytes:
                _, gone = self._entries.popitem(last=False)
                self.bytes -= gone.size
                self.evicted += 1

    def resize(self, max_bytes: int) -> None:
        """Bound the cache to ``max_bytes`` from now on (0: off), dropping the least recently used past it."""
        with self._lock:
            self.max_bytes = max_bytes
            while self._entries and self.bytes > max_bytes:
                _, gone = self._entries.popitem(last=False)
                self.bytes -= gone.size
                self.evicted += 1

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


def rewrite(stdout: str, nonce: str, edit: Callable[[dict], dict | None]) -> str:
    """``stdout`` with each trusted line (one carrying ``nonce``, which the program never sees) replaced
    by ``edit(line)``, or dropped where that is None."""
    out = []
    for line in stdout.split("\n"):
        d = _trusted(line, nonce)
        if d is not None:
            d = edit(d)
            if d is None:
                continue
            line = json.dumps(d)
        out.append(line)
    return "\n".join(out)


def as_driver() -> Callable[[dict], dict | None]:
    """Edits a build job's lines into the driver's: no artifact, its compile line and not the second."""
    seen = False

    def edit(d: dict) -> dict | None:
        nonlocal seen
        if "artifact" in d or "uncached" in d or ("compile" in d and seen):
            return None
        seen = seen or "compile" in d
        return d

    return edit


def _trusted(line: str, nonce: str) -> dict | None:
    if nonce not in line:
        return None
    try:
        d = json.loads(line)
    except ValueError:
        return None
    return d if isinstance(d, dict) and d.get("nonce") == nonce else None
