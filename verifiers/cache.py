"""A bounded LRU of verdicts. In GRPO a group often repeats the same completion, so this saves
sandbox work. Infrastructure failures are never cached."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import replace

from verifiers.base import Outcome, Request, Verdict


class VerdictCache:
    def __init__(self, max_items: int = 50_000):
        self.max_items = max_items
        self._d: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(req: Request, version: int) -> str:
        # timeout_s too: a TIMEOUT under one budget is not the verdict under another
        blob = json.dumps([req.verifier, version, req.completion, req.reference, sorted(req.options.items()),
                           req.timeout_s])  # fmt: skip
        return hashlib.blake2b(blob.encode(), digest_size=20).hexdigest()

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            v = self._d.get(key)
            if v is None:
                self.misses += 1
                return None
            self._d.move_to_end(key)
            self.hits += 1
            return replace(v, cached=True, components=dict(v.components))

    def put(self, key: str, v: Verdict) -> None:
        if self.max_items <= 0 or v.outcome is Outcome.SANDBOX_ERROR:
            return
        with self._lock:
            self._d[key] = replace(v, components=dict(v.components))
            self._d.move_to_end(key)
            while len(self._d) > self.max_items:
                self._d.popitem(last=False)

    def invalidate(self, verifier: str | None = None) -> None:
        with self._lock:
            self._d.clear()
