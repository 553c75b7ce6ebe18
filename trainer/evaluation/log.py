"""``<out>.samples.jsonl``, the resume log of ``make eval``: append-only, keyed by id + sample index;
a line is reused only if its fingerprint matches (trainer/evaluation/evaluate.py's docstring says when)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class SampleLog:
    """``<out>.samples.jsonl``: one graded sample a line, flushed as written. Latest line per key wins."""

    def __init__(self, path: Path, fresh: bool = False):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            path.unlink(missing_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        if path.exists():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):  # cut mid-line by the interruption: drop the fragment
                with path.open("r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
            with path.open(encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.done[rec["key"]] = rec
                    except (json.JSONDecodeError, KeyError, TypeError):
                        continue  # a line cut by the interruption: that sample is graded again
        self._f = path.open("a", encoding="utf-8")

    def reusable(self, key: str, fp: str) -> dict[str, Any] | None:
        rec = self.done.get(key)
        return rec if rec is not None and rec.get("fp") == fp else None

    def append(self, records: list[dict[str, Any]]) -> None:
        self._f.write("".join(json.dumps(r) + "\n" for r in records))
        self._f.flush()

    def close(self) -> None:
        self._f.close()
