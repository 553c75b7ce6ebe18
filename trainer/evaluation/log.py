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
        self.path, self._mode = path, "w" if fresh else "a"  # fresh: the old log is replaced at the first append
        self.done: dict[str, dict[str, Any]] = {}
        if path.exists() and not fresh:
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
        self._f = None  # opened at the first append: a run that grades nothing leaves no empty file

    def reusable(self, key: str, fp: str) -> dict[str, Any] | None:
        rec = self.done.get(key)
        return rec if rec is not None and rec.get("fp") == fp else None

    def append(self, records: list[dict[str, Any]]) -> None:
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = self.path.open(self._mode, encoding="utf-8")
        self._f.write("".join(json.dumps(r) + "\n" for r in records))
        self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
