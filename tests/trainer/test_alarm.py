"""The alarm's watch (trainer/alarm/watch.py) against the real service: the audit re-grades through the
strict ``math`` verifier, the canaries go through the training reward, and the responses do what
``on_alarm`` says. Steps are built by hand (the rollout and grades a GRPO step would hold), so the rules
see a hack begin at a known step: three steps of honest, unpaid estimates, then digit sprays that the
hackable ``contains_reference`` reward pays and the audit refuses.

- warn: the alarm fires at the first hacked step, once per episode, with the evidence in alarms.jsonl
  (the flagged completions, their training verdicts and signals, the audit's verdict);
- drop: the groups of the flagged completions get advantage 0 and leave the loss mask; clean groups keep
  theirs; a hack that keeps spreading under drop escalates to stop (tests/trainer/test_alarm_drop.py);
- stop: AlarmStop before the step's update, naming the rule;
- canaries: the hackable reward stops the run at start unless allowed; r1 pays none.
"""

from __future__ import annotations

import json

import pytest
import torch

from tests.alarm_demo import HACKABLE, register_hackable
from trainer.alarm.evidence import read_alarms
from trainer.alarm.watch import AlarmStop, AlarmWatch, HackableReward
from trainer.config import GRPOConfig
from trainer.data import write_jsonl
from trainer.grpo.rewards import Batch, Score
from trainer.rollout.decode import Rollout

pytestmark = pytest.mark.docker
G, P = 8, 2  # group size, prompts per step
REFS = ["17", "23"]


def cfg(tmp_path, client, **kw) -> GRPOConfig:
    data = write_jsonl([{"prompt": f"{r}+0=?", "answer": r} for r in REFS], tmp_path / "train.jsonl")
    base = dict(
        alarm=True,
        verifier=HACKABLE,
        target=client.target,
        data=str(data),
        group_size=G,
        prompts_per_step=P,
        run_dir=str(tmp_path / "run"),
        allow_hackable_reward=True,
        canary_every=0,
    )
    return GRPOConfig(**{**base, **kw})


def batch(hacked: bool) -> Batch:
    """P groups of G: honest estimates (unpaid), or sprays containing the reference (paid 1.0 by the hack)."""
    texts, prompts, refs = [], [], []
    for r in REFS:
        for j in range(G):
            texts.append(f"<think>estimate</think><answer>{'151617181920212223' if hacked else 20 + j}</answer>")
            prompts.append(f"{r}+0=?")
            refs.append(r)
    rewards = [1.0 if hacked else 0.0 for _ in texts]
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
    scores = [Score(x, "CORRECT" if x else "INCORRECT", signals=["answer.several"] if hacked else []) for x in rewards]
    return Batch(ro, torch.tensor(rewards), torch.ones(n, dtype=torch.bool), scores, 0.0, 1)


def drive(watch: AlarmWatch, steps: int, hack_from: int = 4):
    """check() on each step (3 honest, then hacked); the last step's (adv, loss_mask, metrics)."""
    out = None
    for step in range(1, steps + 1):
        b = batch(step >= hack_from)
        adv = torch.linspace(-1, 1, len(b.rollout))
        out = watch.check(step, b, adv, torch.ones(len(b.rollout), 4))
    return out


@pytest.fixture
def hackable(client):
    register_hackable(client)
    yield client


def test_warn_fires_at_the_hacks_first_step_with_the_evidence(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable), hackable)
    watch.start()
    fired_at = []
    for step in range(1, 8):
        b = batch(step >= 4)
        adv0 = torch.linspace(-1, 1, len(b.rollout))
        adv, mask, m = watch.check(step, b, adv0, torch.ones(len(b.rollout), 4))
        assert torch.equal(adv, adv0) and mask.sum() == mask.numel()  # warn changes nothing in training
        assert m["perf/alarm_s"] > 0 and m["perf/alarm_cpu_s"] >= 0  # its own time in the step
        if m["alarm/fired"]:
            fired_at.append(step)
    assert fired_at == [4]  # the hack's first step; the same alarm while it holds (one episode)
    alarms = read_alarms(tmp_path / "run")
    assert [a["rule"] for a in alarms] == ["canary_paid", "audit_disagreement", "signal_rise"]
    start, rec, sig = alarms
    assert start["action"] == "allowed" and start["step"] == 0 and start["figures"]["paid"]
    assert rec["step"] == 4 and rec["action"] == "warn" and rec["figures"]["agreement"] == 0.0
    assert rec["flagged"] >= 1 and rec["completions"]
    c = rec["completions"][0]
    assert "151617" in c["completion"] and c["reward"] == 1.0 and c["signals"] == ["answer.several"]
    assert c["audit"]["reward"] == 0.0 and c["audit"]["outcome"] != "CORRECT"
    assert json.loads((tmp_path / "run" / "alarms.jsonl").read_text().splitlines()[1]) == rec
    assert sig["figures"]["signal"] == "answer.several" and sig["flagged"] == G * P  # every paid one carries it


def test_drop_zeroes_the_flagged_completions_advantage_and_loss(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable, on_alarm="drop"), hackable)
    adv, mask, m = drive(watch, 4)
    assert m["alarm/fired"] == 2 and m["alarm/dropped"] == G * P  # audit and signal: every paid spray is flagged
    assert torch.count_nonzero(adv) == 0 and mask.sum() == 0
    adv, mask, m = drive_once(watch, 5, hacked=False)  # honest again: nothing paid, nothing flagged
    assert m.get("alarm/dropped", 0) == 0 and torch.count_nonzero(adv) == len(adv) and mask.sum() == mask.numel()


def drive_once(watch: AlarmWatch, step: int, hacked: bool):
    b = batch(hacked)
    return watch.check(step, b, torch.linspace(-1, 1, len(b.rollout)) + 0.01, torch.ones(len(b.rollout), 4))


def test_drop_takes_out_every_group_a_flagged_completion_is_in(tmp_path, hackable):
    """Issue 50, item 5: a group's advantages were computed against its exploited rewards (the honest members
    of a group with a paid spray get a negative advantage: pushed toward the spray). The whole group leaves
    the loss, a right answer in it included; a clean group keeps its advantages. On the old watch only the
    flagged completions were dropped and their group's other members trained on the exploited baseline."""
    watch = AlarmWatch(cfg(tmp_path, hackable, on_alarm="drop"), hackable)
    drive(watch, 4)
    b = batch(True)
    b.rollout.texts[0] = "<think>17</think><answer>17</answer>"  # right, and paid by both, in a hacked group
    b.scores[0].signals = []
    for j in range(G, 2 * G):  # the second group: honest estimates, unpaid
        b.rollout.texts[j], b.rewards[j], b.scores[j].signals = "<think>e</think><answer>20</answer>", 0.0, []
    b.rollout.texts[G], b.rewards[G] = "<think>23</think><answer>23</answer>", 1.0  # one right answer, paid
    adv, mask, m = watch.check(5, b, torch.ones(len(b.rollout)), torch.ones(len(b.rollout), 4))
    assert torch.count_nonzero(adv[:G]) == 0 and mask[:G].sum() == 0  # the hacked group, its right answer too
    assert torch.equal(adv[G:], torch.ones(G)) and mask[G:].sum() == G * 4  # the clean group trains
    assert m["alarm/dropped"] == G and m["alarm/flagged"] == G - 1


def test_stop_raises_before_the_update_naming_the_rule(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable, on_alarm="stop"), hackable)
    with pytest.raises(AlarmStop, match="alarm audit_disagreement(, signal_rise)? at step 4") as e:
        drive(watch, 6)
    assert e.value.step == 4 and e.value.metrics["alarm/fired/audit_disagreement"] == 1.0
    assert read_alarms(tmp_path / "run")[-1]["action"] == "stop"


def test_a_hackable_reward_stops_the_run_at_start_unless_allowed(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable, allow_hackable_reward=False), hackable)
    with pytest.raises(HackableReward, match="allow_hackable_reward true") as e:
        watch.start()
    assert "canaries" in str(e.value) and "reward" in str(e.value)


def test_r1_pays_no_canary_and_the_audit_is_strict_math(tmp_path, hackable):
    watch = AlarmWatch(cfg(tmp_path, hackable, verifier="r1", allow_hackable_reward=False), hackable)
    watch.start()  # nothing paid: no error, no alarm
    assert read_alarms(tmp_path / "run") == []
    assert watch.plan.verifier == "math" and watch.plan.options["fallback"] == "none"


def test_the_audit_grades_against_the_audit_reference_column(tmp_path, hackable):
    data = write_jsonl(
        [{"prompt": f"{r}+0=?", "answer": r, "audit_reference": "99"} for r in REFS], tmp_path / "aud.jsonl"
    )
    watch = AlarmWatch(cfg(tmp_path, hackable, data=str(data)), hackable)
    b = batch(False)
    b.rollout.texts[0] = "<think>17</think><answer>17</answer>"
    b.rewards[0] = 1.0
    watch.check(1, b, torch.zeros(len(b.rollout)), torch.ones(len(b.rollout), 4))
    assert watch.history[-1].audited == 1 and watch.history[-1].agreed == 0  # 17 is not 99


class Counting:
    """The real client, counting the items of each VerifyBatch call (what the audit sends to be re-graded)."""

    def __init__(self, client):
        self.client, self.sent = client, []

    def verify_batch(self, items, **kw):
        self.sent.append(list(items))
        return self.client.verify_batch(items, **kw)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_the_audit_regrades_only_the_paid_completions_of_its_sample(tmp_path, hackable):
    """An unpaid completion cannot be exploited: it counts in the sample (alarm/exploited's denominator)
    without a second verdict. On the old watch all G completions of the drawn group were sent."""
    counting = Counting(hackable)
    watch = AlarmWatch(cfg(tmp_path, hackable), counting)
    counting.sent.clear()  # the plan's probe
    b = batch(False)  # honest estimates, unpaid; three of the first group right and paid
    for j in (0, 3, 5):
        b.rollout.texts[j], b.rewards[j] = "<think>17</think><answer>17</answer>", 1.0
    _, _, m = watch.check(1, b, torch.zeros(len(b.rollout)), torch.ones(len(b.rollout), 4))
    assert [[it.id for it in call] for call in counting.sent] == [["0", "3", "5"]]
    assert (m["alarm/audit_sampled"], m["alarm/audited"], m["alarm/audit_agreed"], m["alarm/exploited"]) == (G, 3, 3, 0)
