"""Scoring overlapped with generation (trainer/grpo/rewards.py): each group is handed to the reward function
as soon as all its rows produced EOS, while the decode loop goes on for the others.

- groups are submitted mid-decode (counted in model forwards, not in seconds), with the very texts the
  finished rollout holds;
- the overlapped batch equals the serial one (same texts, same rewards, same order), with a pure
  reward and through a real verifier service;
- a reward function's error reaches the step; a wrong number of scores is a ScoringError.

The tiny model (trainer/pipelines/tiny.py) is given many EOS ids so that rows stop at different lengths.
"""

from __future__ import annotations

import pytest
import torch

from trainer.config import GRPOConfig, TinyConfig
from trainer.data import DataStream, Example
from trainer.grpo.rewards import GroupScorer, PythonReward, ScoringError, VerifierReward
from trainer.grpo.step import collect_batch
from trainer.pipelines import tiny
from trainer.rollout.decode import finished_groups, generate_rollout

G = 4
torch.set_num_threads(1)


def _model():
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, TinyConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=64))
    # a dozen characters end a completion: rows stop after a few tokens, at different steps
    model.generation_config.eos_token_id = [tok.eos_token_id] + tok.convert_tokens_to_ids(list("abcdefghijkl"))
    return model, tok


EXAMPLES = [Example(f"{a}+{a + 2}=", str(2 * a + 2)) for a in range(6)]


def digits(c: str, r: str) -> float:
    return float(sum(ch.isdigit() for ch in c) % 3) / 2


def test_groups_are_submitted_while_decoding_goes_on_with_their_final_texts():
    model, tok = _model()
    forwards = []
    model.register_forward_hook(lambda *a: forwards.append(1))
    seen: list[tuple[int, list[int], list[str]]] = []
    torch.manual_seed(0)
    ro = generate_rollout(
        model,
        tok,
        EXAMPLES,
        G,
        max_new_tokens=40,
        use_chat_template=False,
        on_groups_done=lambda groups, texts: seen.append((len(forwards), groups, texts)),
    )
    assert seen, "no group finished before the end of decoding"
    assert seen[0][0] < len(forwards), "the first group must be handed on before the last forward"
    for _, groups, texts in seen:
        rows = [g * G + j for g in groups for j in range(G)]
        assert texts == [ro.texts[r] for r in rows]
        assert not ro.truncated[rows].any()


def _cfg(**kw) -> GRPOConfig:
    base = dict(group_size=G, prompts_per_step=6, max_new_tokens=40, use_chat_template=False, device="cpu")
    return GRPOConfig(**{**base, **kw})


def _batches(reward_fn):
    model, tok = _model()
    out = []
    for overlap in (False, True):
        torch.manual_seed(0)
        out.append(collect_batch(_cfg(overlap_scoring=overlap), model, tok, DataStream(EXAMPLES, 0), reward_fn))
    return out


def test_overlapped_batch_equals_the_serial_one():
    serial, overlapped = _batches(PythonReward(digits))
    assert overlapped.rollout.texts == serial.rollout.texts
    assert torch.equal(overlapped.rewards, serial.rewards) and torch.equal(overlapped.valid, serial.valid)
    assert [s.outcome for s in overlapped.scores] == [s.outcome for s in serial.scores]
    assert serial.rewards.std() > 0, "rewards must differ between rows for the comparison to mean anything"


@pytest.mark.docker
def test_overlapped_batch_through_the_verifier_service_equals_the_serial_one(verifier_server):
    reward = VerifierReward("tag_count", verifier_server.target)
    try:
        serial, overlapped = _batches(reward)
    finally:
        reward.close()
    assert overlapped.rollout.texts == serial.rollout.texts
    assert [(s.reward, s.outcome) for s in overlapped.scores] == [(s.reward, s.outcome) for s in serial.scores]


def test_a_reward_error_reaches_the_step_and_a_wrong_count_is_a_scoring_error():
    def boom(c, r, p):
        raise ValueError("verifier said no")

    s = GroupScorer(boom, 2, ["1"] * 4, ["p"] * 4)
    s.submit([0], ["a", "b"])
    with pytest.raises(ValueError, match="verifier said no"):
        s.finish(["a", "b", "c", "d"])
    short = GroupScorer(lambda c, r, p: [0.0], 2, ["1"] * 2, ["p"] * 2)
    with pytest.raises(ScoringError, match="1 scores for 2 completions"):
        short.finish(["a", "b"])


def test_finished_groups_are_those_with_no_running_row():
    running = torch.tensor([False, False, True, False, False, False])
    assert finished_groups(running, 2) == [0, 2]
