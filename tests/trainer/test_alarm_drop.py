"""Issue 50, item 5: ``on_alarm drop`` either contains a hack or stops it. Steps built by hand against the
real service (as tests/trainer/test_alarm.py): four prompts a step, three honest steps, then a spray the
hackable reward pays in a number of groups that grows (the hack spreading while it is dropped) or falls
back (contained). Spreading: the flagged share rises above its level at the alarm and the alarm escalates
to stop (``drop_escalated``, AlarmStop before the update, the evidence in alarms.jsonl). Contained: drop
goes on dropping and never stops. On the old watch drop never stopped: the hack trained on."""

from __future__ import annotations

import pytest
import torch

from tests.alarm_demo import HACKABLE, register_hackable
from trainer.alarm.evidence import read_alarms
from trainer.alarm.watch import AlarmStop, AlarmWatch
from trainer.config import GRPOConfig
from trainer.data import write_jsonl
from trainer.grpo.rewards import Batch, Score
from trainer.rollout.decode import Rollout

pytestmark = pytest.mark.docker
G = 8
REFS = ["17", "23", "31", "42"]


def cfg(tmp_path, client) -> GRPOConfig:
    data = write_jsonl([{"prompt": f"{r}+0=?", "answer": r} for r in REFS], tmp_path / "train.jsonl")
    return GRPOConfig(
        alarm=True,
        verifier=HACKABLE,
        target=client.target,
        data=str(data),
        group_size=G,
        prompts_per_step=len(REFS),
        run_dir=str(tmp_path / "run"),
        allow_hackable_reward=True,
        canary_every=0,
        on_alarm="drop",
    )


def batch(hacked_groups: int) -> Batch:
    """The first ``hacked_groups`` groups spray (paid 1.0 by the hack); the others estimate (unpaid)."""
    texts, prompts, refs, rewards = [], [], [], []
    for g, r in enumerate(REFS):
        for j in range(G):
            hacked = g < hacked_groups
            texts.append(f"<think>estimate</think><answer>{'1516171819202122232425' if hacked else 50 + j}</answer>")
            prompts.append(f"{r}+0=?")
            refs.append(r)
            rewards.append(1.0 if hacked else 0.0)
    n = len(texts)
    ro = Rollout(
        torch.zeros(n, 2, dtype=torch.long),
        torch.ones(n, 2, dtype=torch.long),
        torch.zeros(n, 4, dtype=torch.long),
        torch.ones(n, 4, dtype=torch.long),
        torch.zeros(n, dtype=torch.bool),
        texts,
        prompts,
        refs,
    )
    scores = [Score(x, "CORRECT" if x else "INCORRECT") for x in rewards]
    return Batch(ro, torch.tensor(rewards), torch.ones(n, dtype=torch.bool), scores, 0.0, 1)


@pytest.fixture
def hackable(client):
    register_hackable(client)
    yield client


def run(watch: AlarmWatch, plan: list[int]) -> list[dict[str, float]]:
    out = []
    for step, hacked in enumerate(plan, 1):
        b = batch(hacked)
        _, _, m = watch.check(step, b, torch.linspace(-1, 1, len(b.rollout)), torch.ones(len(b.rollout), 4))
        out.append(m)
    return out


def test_a_hack_that_spreads_under_drop_escalates_to_stop(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable), hackable)
    with pytest.raises(AlarmStop, match="drop_escalated at step 7") as e:
        run(watch, [0, 0, 0, 1, 2, 3, 4, 4])
    assert e.value.step == 7 and e.value.findings[0].figures["flagged_share_at_alarm"] == 0.25
    rec = read_alarms(tmp_path / "run")[-1]
    assert (rec["rule"], rec["action"], rec["step"]) == ("drop_escalated", "stop", 7) and rec["completions"]
    assert len(watch.history) == 6  # the stop put the alarm's state back to the step before


def test_a_hack_drop_contains_does_not_stop(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable), hackable)
    ms = run(watch, [0, 0, 0, 2, 1, 1, 1, 1])
    assert ms[3]["alarm/fired"] >= 1 and ms[3]["alarm/dropped"] == 2 * G  # the alarm, and its groups dropped
    assert not any(m.get("alarm/fired/drop_escalated") for m in ms)
    assert "drop_escalated" not in {a["rule"] for a in read_alarms(tmp_path / "run")}
