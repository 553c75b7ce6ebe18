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


def record(
    run_dir: str | Path, step: int, finding: Finding, action: str, flagged: list[dict[str, Any]], n_flagged: int
) -> dict[str, Any]:
    """Append the alarm to alarms.jsonl and say it on stderr; returns the record."""
    rec = {"step": step, "rule": finding.rule, "message": finding.message, "figures": finding.figures,
           "action": action, "flagged": n_flagged, "completions": flagged}  # fmt: skip
    path = Path(run_dir) / ALARMS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    print(
        f"ALARM step {step}: {finding.rule}: {finding.message} [{action}; evidence: {path}]",
        file=sys.stderr,
        flush=True,
    )
    return rec


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


RESUMED = "resumed"  # the action of a resume's marker record (not an alarm)


def read_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every line of alarms.jsonl as written: the alarms and the resumes' markers, oldest first."""
    path = Path(run_dir) / ALARMS_FILE
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x] if path.exists() else []


def read_alarms(run_dir: str | Path) -> list[dict[str, Any]]:
    """The alarms in alarms.jsonl, oldest first (the resumes' markers left out). An alarm written after the
    step a later resume went back to carries ``superseded: <that step>``: the run trained those steps again."""
    records = read_records(run_dir)
    out = []
    for i, rec in enumerate(records):
        if rec.get("action") == RESUMED:
            continue
        later = [m["step"] for m in records[i + 1 :] if m.get("action") == RESUMED and m["step"] < rec["step"]]
        out.append({**rec, "superseded": min(later)} if later else rec)
    return out


def mark_resume(run_dir: str | Path, step: int, restored: bool) -> dict[str, Any] | None:
    """A resume from the checkpoint of ``step``: alarms.jsonl is history and stays as written (append-only);
    a marker record says which of its alarms the resume replaced (those after ``step``: their steps train
    again). Returns the marker (None when there was no file to mark)."""
    path = Path(run_dir) / ALARMS_FILE
    if not path.exists():
        return None
    replaced = [f"{a['step']}:{a['rule']}" for a in read_alarms(run_dir) if a["step"] > step and "superseded" not in a]
    state = (
        "the alarm's state (baselines, histories, counters) restored from it"
        if restored
        else ("the checkpoint holds no alarm state: the rules start their history again")
    )
    rec = {"step": step, "rule": "resume", "action": RESUMED, "flagged": 0, "completions": [],
           "message": f"resumed from the checkpoint of step {step}; {state}; alarms after step {step} above are "
                      f"kept as written and marked superseded ({len(replaced)})",
           "figures": {"replaced": replaced, "state_restored": restored}}  # fmt: skip
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    return rec
