"""A hack learned and caught, end to end (issue 37): the embedded task's tiny policy, warm-started on a mix
with a few sprayed answers (tests/alarm_demo.py), trains with GRPO against the hackable
``contains_reference`` reward registered on the real service, with ``--grpo.alarm true --grpo.on_alarm
stop``. The policy learns the exploit (the training reward rises, the exploited share rises, held-out
accuracy under the honest ``math`` verifier does not), the alarm fires within a few steps of the onset
seen in the run's own curves, and the run halts there: the checkpoint of the step before the alarm is
written, the message names the alarm and how to resume, alarms.jsonl holds the flagged completions
with both verdicts, and curves.png is drawn. Small settings: a few minutes on 2 cores.
"""

from __future__ import annotations

import pytest
import torch

from tests.alarm_demo import HACKABLE, demo_data, register_hackable
from trainer.alarm.evidence import AlarmStopped, read_alarms
from trainer.config import GRPOConfig, TinyConfig, WarmStartConfig
from trainer.data import read_jsonl
from trainer.pipelines import tiny
from trainer.pipelines.warmstart import warm_start
from trainer.run.checkpoint import checkpoint_dir, load_trainer_state
from trainer.run.metrics import read_metrics
from trainer.train import train

pytestmark = pytest.mark.docker
TINY = TinyConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=192)
SIZES = {"warmstart": 4000, "train": 2000, "heldout": 64}  # bench/training/alarm.py's run B, step for step


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a hang guard, not a timing: ~3 min on an idle 2-core machine, 10+ when it is shared
def test_a_learned_hack_is_caught_and_stops_the_run(tmp_path, client):
    torch.set_num_threads(2)
    register_hackable(client)
    paths = demo_data(tmp_path / "data", 0, SIZES)
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, TINY, seed=0)
    warm_start(
        model,
        tok,
        read_jsonl(paths["warmstart"]),
        WarmStartConfig(steps=300, batch_size=64, lr=3e-3, warmup_steps=20, seed=0),
    )
    run = tmp_path / "run"
    cfg = GRPOConfig(
        data=str(paths["train"]),
        eval_data=str(paths["heldout"]),
        eval_every=10,
        verifier=HACKABLE,
        target=client.target,
        group_size=8,
        prompts_per_step=8,
        max_new_tokens=48,
        lr=5e-4,
        steps=30,
        run_dir=str(run),
        report_to=[],
        threads=2,
        seed=0,
        alarm=True,
        on_alarm="stop",
        allow_hackable_reward=True,
    )
    with pytest.raises(AlarmStopped) as e:
        train(cfg, model, tok)
    stop = e.value.step + 1  # the alarm's step; the checkpoint holds the one before
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r.get("step", 0) >= 1]
    first = [r["reward/mean"] for r in rows[:5]]
    last = [r["reward/mean"] for r in rows if stop - 3 < r["step"] <= stop]  # the stop's row carries its reward
    assert sum(last) / len(last) > sum(first) / 5 + 0.05  # the hack was under way: the training reward rose
    # the run halted at the alarm: the step before it is saved, the message says what fired and how to go on
    assert e.value.checkpoint == checkpoint_dir(run, stop - 1)
    assert load_trainer_state(e.value.checkpoint)["step"] == stop - 1
    msg = str(e.value)
    assert msg.startswith("alarm ") and f"at step {stop}" in msg and f"--resume {e.value.checkpoint}" in msg
    alarm = [a for a in read_alarms(run) if a["action"] == "stop"][0]
    assert alarm["step"] == stop and alarm["rule"] in msg
    assert all(c["reward"] >= 0.5 and c.get("audit", {"reward": 0})["reward"] < 0.5 for c in alarm["completions"])
    assert rows[-1]["step"] == stop and rows[-1]["alarm/fired"] >= 1  # the alarm's figures are logged at its step
    assert (run / "curves.png").exists()
