"""A bounded LRU of verdicts. In GRPO a group often repeats the same completion, so this saves
sandbox work. Infrastructure failures are never cached.

Bounded twice: at most ``max_items`` entries and at most ``max_bytes`` of verdicts (an estimate of each
entry's size: its details, cases, components and steps; a stdio verdict of 1,000 cases is ~300 kB, so
a count alone allowed ~14 GiB). A verdict bigger than an eighth of the budget is not kept.

Entries are scoped by caller (``verifiers/service/callers.py``): the key holds who asked, so a hit — and the
time it saves — only ever answers a caller's own earlier submission, never another's.

>>> c = VerdictCache(max_items=100, max_bytes=16 * 1024)
>>> v = Verdict(0.0, Outcome.INCORRECT, "x" * 900)
>>> for i in range(20): c.put(str(i), v)
>>> len(c), c.bytes <= 16 * 1024
(11, True)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import replace

from verifiers.shapes.base import Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

ENTRY_OVERHEAD = 512  # the key, the OrderedDict node, the Verdict object (~450 B measured) and the allocator
CASE_OVERHEAD = 120
STEP_OVERHEAD = 100


def verdict_bytes(v: Verdict) -> int:
    """An estimate of what an entry holds in memory (text counted at one byte per character, plus objects)."""
    n = ENTRY_OVERHEAD + len(v.detail) + 80 * len(v.components) + STEP_OVERHEAD * len(v.steps)
    return n + sum(CASE_OVERHEAD + len(c.detail) for c in v.cases)


class VerdictCache:
    def __init__(self, max_items: int = 50_000, max_bytes: int = 256 << 20):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._d: OrderedDict[str, tuple[Verdict, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._d)

    @staticmethod
    def key(req: Request, version: int | str, caller: str = "") -> str:
        # timeout_s too: a TIMEOUT under one budget is not the verdict under another
        blob = json.dumps(
            [caller, req.verifier, version, req.completion, req.reference, sorted(req.options.items()), req.timeout_s]
        )
        return hashlib.blake2b(blob.encode(), digest_size=20).hexdigest()

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            entry = self._d.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._d.move_to_end(key)
            self.hits += 1
            return replace(entry[0], cached=True, components=dict(entry[0].components))

    def put(self, key: str, v: Verdict) -> None:
        if self.max_items <= 0 or v.outcome is Outcome.SANDBOX_ERROR:
            return
        size = verdict_bytes(v)
        if size > self.max_bytes // 8:  # one huge verdict would push out hundreds of ordinary ones
            return
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._d[key] = (replace(v, components=dict(v.components)), size)
            self.bytes += size
            while len(self._d) > self.max_items or self.bytes > self.max_bytes:
                _, (_, gone) = self._d.popitem(last=False)
                self.bytes -= gone
                self.evictions += 1

    def invalidate(self, verifier: str | None = None) -> None:
        with self._lock:
            self._d.clear()
            self.bytes = 0
