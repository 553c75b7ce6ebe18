"""What an alarm leaves behind: a line on stderr and a record in ``run_dir/alarms.jsonl`` with the
flagged completions (prompt, completion, reference, training reward, outcome and signals, and the audit's
verdict where it graded them). metrics.jsonl and TensorBoard get ``alarm/fired`` and
``alarm/fired/<rule>`` at the step; curves.png marks the step (trainer/run/metrics.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainer.alarm.rules import Finding
from trainer.alarm.stats import Completion
from trainer.errors import Stopped

ALARMS_FILE = "alarms.jsonl"


class AlarmStopped(Stopped):
    """``on_alarm: stop`` ended the run: ``checkpoint`` holds the step before the alarm (``step``)."""

    def __init__(self, message: str, step: int, checkpoint: Path):
        super().__init__(message)
        self.step, self.checkpoint = step, checkpoint


KEEP = 16  # flagged completions written per alarm


def flagged_rows(
    rows: Sequence[Completion], idx: Sequence[int], audit: Mapping[int, tuple[float, str, list[str]]]
) -> list[dict[str, Any]]:
    out = []
    for i in list(idx)[:KEEP]:
        r = rows[i]
        row = {"row": i, "prompt": r.prompt, "completion": r.text, "reference": r.reference, "reward": r.reward,
               "outcome": r.outcome, "signals": list(r.signals)}  # fmt: skip
        if i in audit:
            reward, outcome, signals = audit[i]
            row["audit"] = {"reward": reward, "outcome": outcome, "signals": signals}
        out.append(row)
    return out


def record(run_dir: str | Path, step: int, finding: Finding, action: str, flagged: list[dict[str, Any]],
           n_flagged: int) -> dict[str, Any]:  # fmt: skip
    """Append the alarm to alarms.jsonl and say it on stderr; returns the record."""
    rec = {"step": step, "rule": finding.rule, "message": finding.message, "figures": finding.figures,
           "action": action, "flagged": n_flagged, "completions": flagged}  # fmt: skip
    path = Path(run_dir) / ALARMS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"ALARM step {step}: {finding.rule}: {finding.message} [{action}; evidence: {path}]", file=sys.stderr,
          flush=True)  # fmt: skip
    return rec


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_alarms(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / ALARMS_FILE
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x] if path.exists() else []


def truncate_after(run_dir: str | Path, step: int) -> None:
    """A resumed run keeps the alarms up to its checkpoint's step."""
    path = Path(run_dir) / ALARMS_FILE
    if path.exists():
        keep = [x for x in path.read_text(encoding="utf-8").splitlines() if x and json.loads(x)["step"] <= step]
        path.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
