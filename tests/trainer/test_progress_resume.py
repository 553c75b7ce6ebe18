"""Issue 50, item 6: the progress line of ``make train`` survives a resume in place. The resumed trainer
rewrites metrics.jsonl back to its checkpoint (MetricsLogger.truncate_after, the real one) while the bar
follows the file; the old bar then read from its old offset, in the middle of a line (JSONDecodeError in
its thread: the bar froze at the stop step with a stale ``ALARM=``). Now it reads the file again and
shows what it holds: the resumed steps, and the alarm only where a step raised it."""

from __future__ import annotations

import threading

from trainer.run.metrics import MetricsLogger
from trainer.run.progress import MetricsBar


def row(step: int, alarm: bool = False) -> dict[str, float]:
    m = {"reward/mean": 0.25 + step / 100, "loss/kl": 0.001 * step, "perf/step_s": 0.4}
    if alarm:
        m.update({"alarm/fired": 1.0, "alarm/fired/audit_disagreement": 1.0})
    return m


def wait_for(bar: MetricsBar, step: int) -> None:
    """Until the bar's thread has shown ``step`` (or died); a hang guard, not a timing."""
    for _ in range(400):
        if bar.bar.n == step or not bar._thread.is_alive():
            return
        threading.Event().wait(0.05)


def test_the_bar_follows_a_resume_that_rewrites_metrics(tmp_path):
    logger = MetricsLogger(tmp_path, report_to=[])
    for step in range(1, 5):
        logger.log(step, row(step, alarm=step == 4))  # the stop step's row carries the alarm
    bar = MetricsBar(tmp_path / "metrics.jsonl", total=8)
    with bar:
        wait_for(bar, 4)
        assert bar.bar.postfix and "ALARM=audit_disagreement" in bar.bar.postfix
        logger.truncate_after(3)  # the resume from the checkpoint of step 3
        for step in range(4, 9):
            logger.log(step, {**row(step), "perf/elapsed_s": 1000.0 + step, "perf/peak_mem_mb": 123.0})
        wait_for(bar, 8)
        assert bar._thread.is_alive()  # no JSONDecodeError in the thread
    logger.close()
    assert bar.bar.n == 8
    assert "ALARM" not in (bar.bar.postfix or "")  # step 4 ran again without the alarm
