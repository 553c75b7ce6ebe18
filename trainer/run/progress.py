"""A progress bar for a training run: follows run/metrics.jsonl in a thread and shows reward, accuracy,
KL and step time (tqdm). Used by ``make train`` (trainer/pipelines/make_train.py)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path


class MetricsBar:
    """Follows run/metrics.jsonl in a thread and shows reward, accuracy, KL and step time on a tqdm bar."""

    def __init__(self, path: Path, total: int, watch=None):
        from tqdm import tqdm

        self.path, self.bar = path, tqdm(total=total, desc="GRPO", unit="step", dynamic_ncols=True)
        self.watch = watch  # trainer.run.outcome_watch.OutcomeWatch: a warning when the first steps grade one outcome
        self.alarms: list[str] = []  # rules of the reward-hacking alarm that fired so far
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def _follow(self) -> None:
        pos = 0
        while not self._stop.is_set():
            self._read(pos_box := [pos])
            pos = pos_box[0]
            self._stop.wait(0.5)
        self._read([pos])

    def _read(self, pos_box: list[int]) -> None:
        if not self.path.exists():
            return
        with self.path.open() as f:
            f.seek(pos_box[0])
            for line in f:
                if not line.endswith("\n"):
                    break
                pos_box[0] += len(line.encode())
                m = json.loads(line)
                self.bar.n = m["step"]
                post = {
                    "reward": m.get("reward/mean"),
                    "acc": m.get("reward/accuracy"),
                    "kl": m.get("loss/kl"),
                    "step_s": m.get("perf/step_s"),
                }
                if m.get("eval/accuracy") is not None:
                    post["eval_acc"] = m["eval/accuracy"]
                note = self.watch.update(m) if self.watch is not None else None
                if note:
                    self.bar.write(note, file=sys.stderr)
                shown = {k: f"{v:.3f}" for k, v in post.items() if v is not None}
                if self.watch is not None and self.watch.flag:
                    shown["warning"] = self.watch.flag
                fired = [k.split("/", 2)[2] for k, v in m.items() if k.startswith("alarm/fired/") and v]
                if fired:  # the reward-hacking alarm (trainer/alarm/); its message is on stderr and in alarms.jsonl
                    self.alarms += fired
                if self.alarms:
                    shown["ALARM"] = ",".join(dict.fromkeys(self.alarms))
                self.bar.set_postfix(shown, refresh=False)
                self.bar.refresh()

    def __enter__(self) -> MetricsBar:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.bar.close()
