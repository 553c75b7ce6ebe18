"""``one_answer``'s false-alarm rate per answer-space size (issue 50, item 4).

    .venv/bin/python -m bench.training.alarm_space [--steps 100] [--seeds 20] [--out bench/results/alarm_space.txt]

Honest synthetic traces (tests/alarm_traces.py: 8 prompts x 8 completions a step, references drawn from
2, 4, 10 answers or the default task's, an 80%-accurate policy, an honest grader whose audit agrees):
how often each rule would fire per 100 steps, with the rule as it was (references not counted) and as it
is (an answer string must be paid for ``one_answer_refs`` different references). Then the same traces
with a hack from step 50 (one answer string paid on every prompt): the step each version first fires.
No timing: the figures are counts, the same on any machine.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from tests.alarm_traces import SPACES, firings
from trainer.alarm.rules import Thresholds


def episodes(steps: list[int], window: int = Thresholds().window) -> int:
    """Alarms raised, as the watch raises them: once per episode (again after ``window`` clear steps)."""
    return sum(1 for i, s in enumerate(steps) if i == 0 or s - steps[i - 1] > window)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lines = [f"one_answer on honest synthetic traces: {a.steps} steps x {a.seeds} seeds per answer-space size; "
             "8 prompts x G=8 a step, 80% accurate, the audit agrees", "",
             "answers  alarms raised per 100 steps, mean over seeds (max) [steps the rule holds]        any rule, now   "
             "hack from step 50: first firing (before / now)"]  # fmt: skip
    for k in sorted(SPACES):
        per100 = 100 / a.steps
        old_f = [firings(k, a.steps, s, count_refs=False) for s in range(a.seeds)]
        new_f = [firings(k, a.steps, s) for s in range(a.seeds)]
        old, new = [episodes(f) * per100 for f in old_f], [episodes(f) * per100 for f in new_f]
        held = statistics.mean(len(f) * per100 for f in old_f), statistics.mean(len(f) * per100 for f in new_f)
        anyrule = [episodes(firings(k, a.steps, s, rule="")) * per100 for s in range(a.seeds)]
        hack_old = firings(k, 60, 0, hack_from=50, count_refs=False)
        hack_new = firings(k, 60, 0, hack_from=50)
        hack = f"{[x for x in hack_old if x >= 50][:1] or '-'} / {hack_new[:1] or '-'}"
        lines.append(f"{k:>7}  before {statistics.mean(old):5.2f} ({max(old):4.1f}) [{held[0]:5.1f}]; now "
                     f"{statistics.mean(new):4.2f} ({max(new):3.1f}) [{held[1]:3.1f}]      {statistics.mean(anyrule):4.2f}"
                     f"            {hack}")  # fmt: skip
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
