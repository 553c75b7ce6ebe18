"""Issue 50, item 1: a resume after an alarm keeps the alarm's eyes and its evidence.

The real trainer (``train``) on a tiny policy built from a config, against the real service (the audit is
its strict ``math``): the training reward is a switch that pays nothing for three steps and then every
completion (a hack the audit refuses: the tiny policy's text is not the answer). With ``on_alarm stop``
the run stops at step 4 and writes the checkpoint of step 3. Resumed from it with ``on_alarm warn``,
the same hack must fire again at step 4, the next step it shows: the alarm's state (the first steps'
baselines, the rules' history, when each rule last held) is in the checkpoint. On the old trainer the
rules' history restarted at the resume, so "at the start" became the exploited steps and nothing fired;
and alarms.jsonl was cut back to step 3, losing the stop record: it is append-only now, the resume adds a
marker and the replaced record is read back as ``superseded``.
"""

from __future__ import annotations

import json

import pytest
import torch

from trainer.alarm.evidence import read_alarms
from trainer.config import GRPOConfig
from trainer.data import write_jsonl
from trainer.grpo.rewards import Score
from trainer.pipelines import tiny
from trainer.run.checkpoint import checkpoint_dir, load_trainer_state
from trainer.run.metrics import read_metrics
from trainer.train import train

pytestmark = pytest.mark.docker
SMALL = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)


class Switch:
    """Pays nothing before step ``hack_from``, then every completion 1.0 (one call per step; no eval)."""

    def __init__(self, hack_from: int, step: int = 0):
        self.hack_from, self.step = hack_from, step

    def __call__(self, completions, references, prompts):
        self.step += 1
        pay = float(self.step >= self.hack_from)
        return [Score(pay, "CORRECT" if pay else "INCORRECT") for _ in completions]

    def close(self) -> None:
        pass


def config(tmp_path, target: str, **kw) -> GRPOConfig:
    data = write_jsonl(
        [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(10, 20) for b in range(3)],
        tmp_path / "train.jsonl",
    )
    base = dict(
        data=str(data),
        verifier="r1",
        target=target,
        group_size=8,
        prompts_per_step=2,
        max_new_tokens=8,
        run_dir=str(tmp_path / "run"),
        report_to=[],
        threads=1,
        seed=0,
        alarm=True,
        eval_every=0,
        save_every=1,
        keep_checkpoints=10,
        canary_every=0,
    )
    return GRPOConfig(**{**base, **kw})


def fresh_model(tok):
    from trainer.config import TinyConfig

    return tiny.build_model(tok, TinyConfig(**SMALL), seed=0)


@pytest.mark.timeout(900)
def test_stop_then_resume_the_same_hack_fires_again_and_the_stop_record_stays(tmp_path, client):
    torch.set_num_threads(1)
    tok = tiny.build_tokenizer()
    cfg = config(tmp_path, client.target, steps=6, on_alarm="stop")
    from trainer.alarm.evidence import AlarmStopped

    with pytest.raises(AlarmStopped) as e:
        train(cfg, fresh_model(tok), tok, reward_fn=Switch(hack_from=4))
    assert e.value.step == 3 and e.value.checkpoint == checkpoint_dir(cfg.run_dir, 3)
    stop = [a for a in read_alarms(cfg.run_dir) if a["action"] == "stop"]
    assert len(stop) == 1 and stop[0]["step"] == 4

    resumed = cfg.model_copy(update={"on_alarm": "warn", "resume": str(e.value.checkpoint)})
    train(resumed, fresh_model(tok), tok, reward_fn=Switch(hack_from=4, step=3))
    records = [json.loads(x) for x in (tmp_path / "run" / "alarms.jsonl").read_text().splitlines()]
    assert [(r["step"], r["rule"], r["action"]) for r in records] == [
        (4, "audit_disagreement", "stop"),  # kept as written
        (3, "resume", "resumed"),  # the resume's marker
        (4, "audit_disagreement", "warn"),  # the same hack, seen again at the next step it shows
    ]
    alarms = read_alarms(cfg.run_dir)
    # the stop record is still there, marked as replaced by the resume; the same hack fired again at step 4
    assert [(a["step"], a["action"], a.get("superseded")) for a in alarms if a["rule"] == "audit_disagreement"] == [
        (4, "stop", 3),
        (4, "warn", None),
    ]
    markers = [r for r in records if r["action"] == "resumed"]
    assert len(markers) == 1 and markers[0]["step"] == 3 and markers[0]["figures"]["state_restored"] is True
    assert "4:audit_disagreement" in markers[0]["figures"]["replaced"]
    fired = {r["step"]: r.get("alarm/fired", 0) for r in read_metrics(cfg.run_dir + "/metrics.jsonl")}
    assert fired[4] >= 1  # the resumed run's own step 4 (metrics.jsonl's row of the stop was replaced)
    saved = load_trainer_state(checkpoint_dir(cfg.run_dir, 3))["alarm"]
    assert [s["step"] for s in saved["history"]] == [1, 2, 3]  # the state of the checkpoint's step, not the stop's
    assert len(load_trainer_state(checkpoint_dir(cfg.run_dir, 6))["alarm"]["history"]) == 6
