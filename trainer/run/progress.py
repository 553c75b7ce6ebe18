"""A progress bar for a training run: follows run/metrics.jsonl in a thread and shows reward, accuracy,
KL and step time (tqdm), and with tool rollouts the tool figures (``SHOWN``). Used by ``make train`` (trainer/pipelines/make_train.py)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

# what the line shows, from a metrics.jsonl row: (label, metric); a metric the row lacks is left out
SHOWN = (
    ("reward", "reward/mean"),
    ("acc", "reward/accuracy"),
    ("kl", "loss/kl"),
    ("step_s", "perf/step_s"),
    ("eval_acc", "eval/accuracy"),
    # tool rollouts (trainer/grpo/step.py, tool_metrics): calls per completion, the share of calls that failed,
    # the share of completion tokens that are tool output, seconds in tools this step
    ("calls", "tool/calls_per_completion"),
    ("tool_err", "tool/error_rate"),
    ("tool_share", "tool/output_share"),
    ("tool_s", "perf/tool_s"),
)


def postfix(m: dict) -> dict[str, str]:
    """The progress line's figures for one metrics row, in ``SHOWN``'s order.

    >>> postfix({"reward/mean": 0.5, "tool/calls_per_completion": 1.25, "perf/tool_s": 2.0})
    {'reward': '0.500', 'calls': '1.250', 'tool_s': '2.000'}
    """
    return {label: f"{m[key]:.3f}" for label, key in SHOWN if m.get(key) is not None}


class MetricsBar:
    """Follows run/metrics.jsonl in a thread and shows reward, accuracy, KL and step time on a tqdm bar."""

    def __init__(self, path: Path, total: int, watch=None):
        from tqdm import tqdm

        self.path, self.bar = path, tqdm(total=total, desc="GRPO", unit="step", dynamic_ncols=True)
        self.watch = watch  # trainer.run.outcome_watch.OutcomeWatch: a warning when the first steps grade one outcome
        self.alarms: dict[int, list[str]] = {}  # step -> rules of the reward-hacking alarm that fired there
        self.pos, self.head = 0, None  # bytes of the file read so far; its first line (to see a rewrite)
        self.fed = 0  # the last step given to ``watch`` (a step read again after a resume is not fed twice)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def _follow(self) -> None:
        while not self._stop.is_set():
            self._read()
            self._stop.wait(0.5)
        self._read()

    def _read(self) -> None:
        """The lines appended since the last read. A resumed run rewrites metrics.jsonl back to its checkpoint
        (trainer/run/metrics.py: truncate_after), so the file can be shorter than what was read, or hold other
        lines at the old offset: then it is read again from the top and the bar shows what it holds now (the
        steps after the checkpoint, and their alarms, are gone until they run again)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(0, 2)
            if f.tell() < self.pos or not self._same_head(f):
                self._restart()
            f.seek(self.pos)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                try:
                    m = json.loads(raw)
                except ValueError:  # not a line boundary: the file was rewritten under us; start over next time
                    self._restart()
                    return
                self.pos += len(raw)
                if self.head is None:
                    self.head = raw
                self._show(m)

    def _same_head(self, f) -> bool:
        """The first line is still the one read first (a rewrite that grew back past our offset changes it)."""
        if self.head is None:
            return True
        f.seek(0)
        return f.read(len(self.head)) == self.head

    def _restart(self) -> None:
        self.pos, self.head, self.alarms = 0, None, {}

    def _show(self, m: dict) -> None:
        step = int(m.get("step", 0))
        self.bar.n = step
        self.alarms = {s: rules for s, rules in self.alarms.items() if s < step}  # a step run again: its own alarms
        note = self.watch.update(m) if self.watch is not None and step > self.fed else None
        self.fed = max(self.fed, step)
        if note:
            self.bar.write(note, file=sys.stderr)
        shown = postfix(m)
        if self.watch is not None and self.watch.flag:
            shown["warning"] = self.watch.flag
        fired = [k.split("/", 2)[2] for k, v in m.items() if k.startswith("alarm/fired/") and v]
        if fired:  # the reward-hacking alarm (trainer/alarm/); its message is on stderr and in alarms.jsonl
            self.alarms[step] = fired
        if self.alarms:
            shown["ALARM"] = ",".join(dict.fromkeys(r for rules in self.alarms.values() for r in rules))
        self.bar.set_postfix(shown, refresh=False)
        self.bar.refresh()

    def __enter__(self) -> MetricsBar:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.bar.close()
