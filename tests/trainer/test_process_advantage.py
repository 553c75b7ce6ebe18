"""Process supervision (trainer/grpo/loss.py): A_{i,t} = sum of output i's group-normalised step rewards
whose step ends at or after token t; character spans mapped to tokens by decode-prefix lengths.

- a hand-computed group with steps of unequal length (and unequal counts per output);
- a group whose step rewards are all equal gets advantage 0 everywhere;
- SANDBOX_ERROR / BAD_REFERENCE members: left out of the statistics, advantage 0;
- span -> token on a real BPE tokenizer whose tokens span several characters (a step ending inside
  a token counts for that token), and on the default task's tokenizer with ``arith_steps``' spans;
- grpo_loss with per-token advantages that are constant per row equals the outcome-mode loss;
- two GRPO steps with ``advantage: process`` against a real verifier service (``arith_steps``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from trainer.config import GRPOConfig, TaskConfig, TinyConfig
from trainer.grpo.loss import char_to_token_end, grpo_loss, process_advantages, steps_to_tokens
from trainer.pipelines import task, tiny
from verifiers.kinds.steps import ArithSteps

T = torch.tensor


def test_hand_computed_group_with_steps_of_unequal_length():
    # G = 3 outputs, width 6. Step rewards of the group: 1,0 | 1 | 0,0,1 -> mean 0.5, population std 0.5,
    # so (with eps = 0) every correct step normalises to +1 and every wrong one to -1.
    rewards = [[1.0, 0.0], [1.0], [0.0, 0.0, 1.0]]
    ends = [[1, 4], [2], [0, 2, 5]]  # token where each step ends: steps of 2, 3 / 3 / 1, 2, 3 tokens
    adv = process_advantages(rewards, ends, T([True, True, True]), 3, 6, eps=0.0)
    # output 0: +1 at token 1, -1 at token 4 -> suffix sums
    # output 1: +1 at token 2
    # output 2: -1 at token 0, -1 at token 2, +1 at token 5
    expected = T(
        [
            [0.0, 0.0, -1.0, -1.0, -1.0, 0.0],
            [1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
            [-1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        ]
    )
    torch.testing.assert_close(adv, expected)


def test_hand_computed_asymmetric_group_unbiased_std():
    # step rewards 1, 1, 1, 0 over G = 2: mean 0.75, unbiased std sqrt(0.25) = 0.5
    # -> r~ = +0.5 for a 1, -1.5 for the 0
    adv = process_advantages([[1.0, 1.0, 0.0], [1.0]], [[0, 1, 3], [2]], T([True, True]), 2, 4, std="unbiased", eps=0)
    torch.testing.assert_close(adv, T([[-0.5, -1.0, -1.5, -1.5], [0.5, 0.5, 0.5, 0.0]]))


@pytest.mark.parametrize("value", [0.0, 1.0, 0.3])
def test_a_group_whose_step_rewards_are_all_equal_gets_advantage_zero(value):
    rewards = [[value, value], [value], [value, value, value], []]
    ends = [[1, 3], [0], [0, 1, 2], []]
    adv = process_advantages(rewards, ends, T([True] * 4), 4, 5)
    assert torch.equal(adv, torch.zeros(4, 5))


def test_groups_are_normalised_separately_and_a_single_step_is_zero_variance():
    # group 0 informative, group 1 has one step in all: zero
    adv = process_advantages([[1.0], [0.0], [1.0], []], [[0], [0], [2], []], T([True] * 4), 2, 3, eps=0)
    torch.testing.assert_close(adv[:2], T([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))
    assert torch.equal(adv[2:], torch.zeros(2, 3))


def test_invalid_members_are_masked_like_outcome_mode():
    rewards = [[1.0, 0.0], [9.0, 9.0, -9.0], [0.0]]  # member 1: SANDBOX_ERROR (placeholder rewards)
    ends = [[0, 2], [0, 1, 2], [1]]
    masked = process_advantages(rewards, ends, T([True, False, True]), 3, 4)
    alone = process_advantages([rewards[0], rewards[2]], [ends[0], ends[2]], T([True, True]), 2, 4)
    assert torch.equal(masked[1], torch.zeros(4))
    torch.testing.assert_close(masked[[0, 2]], alone)


def test_bad_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="divisible"):
        process_advantages([[1.0]], [[0]], T([True]), 2, 3)
    with pytest.raises(ValueError, match="outside"):
        process_advantages([[1.0], [0.0]], [[0], [3]], T([True, True]), 2, 3)


# ---------------------------------------------------------------------------------------------
# character spans -> tokens
# ---------------------------------------------------------------------------------------------


def bpe_tokenizer() -> PreTrainedTokenizerFast:
    """A real byte-level BPE trained here, whose merges make multi-character tokens ('9+8', ', ' ...)."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    rng = random.Random(0)
    corpus = [task.make_problem(rng, TaskConfig())["completion"] for _ in range(300)]
    # GPT-2 pre-splitting (words, numbers, punctuation), then 43 merges: tokens of a few characters
    tk.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"], show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<eos>", pad_token="<eos>")


def test_a_step_ending_inside_a_token_counts_for_that_token():
    tok = bpe_tokenizer()
    text = "<think>1+8+8, 9+8, 17</think><answer>17</answer>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert len(text) / 4 < len(ids) < len(text), "the BPE must merge a few characters per token"
    bounds = [len(tok.decode(ids[:k])) for k in range(len(ids) + 1)]  # token k covers [bounds[k], bounds[k+1])
    inside = 0
    for end in range(1, len(text) + 1):
        k = char_to_token_end(ids, end, tok)
        assert bounds[k] < end <= bounds[k + 1], (end, k, bounds)  # the token holding character end - 1
        inside += end < bounds[k + 1]
    assert inside > 0  # some steps end strictly inside a token
    assert char_to_token_end(ids, len(text) + 5, tok) == len(ids) - 1  # past the end: the last token


def test_arith_steps_spans_map_to_the_tokens_of_the_default_tokenizer():
    tok = tiny.build_tokenizer()
    text = "<think>1+8+8, 9+8, 17</think><answer>17</answer>"
    verdict = ArithSteps().grade(text, "17", "3-2+8+8=?")
    ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    cids = T([ids + [tok.pad_token_id] * 3])  # (1, C) right-padded
    mask = T([[1] * len(ids) + [0] * 3])
    steps = [[(s.reward, s.start, s.end) for s in verdict.steps]]
    rewards, ends = steps_to_tokens(cids, mask, steps, [1.0], tok)
    # '<think>' is one token, then one token per character: '1+8+8' ends at char 11 -> token 5,
    # '9+8' at char 16 -> token 10, '17' at char 20 -> token 14; the outcome step ends on EOS
    assert rewards == [[1.0, 1.0, 1.0, 1.0]]
    assert ends == [[5, 10, 14, len(ids) - 1]]
    assert [tok.decode(ids[e]) for e in ends[0][:3]] == ["8", "8", "7"]


def test_per_token_advantages_constant_per_row_give_the_outcome_loss():
    torch.manual_seed(0)
    lp, old, ref = (torch.randn(4, 5) for _ in range(3))
    mask = T([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]])
    a = T([0.5, -1.0, 2.0, 0.0])
    one, _ = grpo_loss(lp, old, ref, a, mask)
    per_token, _ = grpo_loss(lp, old, ref, a[:, None].expand(4, 5), mask)
    torch.testing.assert_close(one, per_token)


# ---------------------------------------------------------------------------------------------
# the trainer, against a real verifier service
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
def test_two_process_steps_against_the_service(tmp_path: Path, verifier_server):
    from trainer.train import train

    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": f"{a}+{b}+1=?", "answer": str(a + b + 1)}) + "\n"
            for a in range(1, 5)
            for b in range(1, 5)
        )
    )
    init = tiny.build(
        tmp_path / "init", TinyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    )
    cfg = GRPOConfig(
        model=str(init),
        data=str(data),
        verifier="arith_steps",
        target=verifier_server.target,
        advantage="process",
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=12,
        steps=2,
        lr=1e-3,
        run_dir=str(tmp_path / "run"),
        threads=1,
        log_completions_every=1,
        report_to=[],
    )
    out = train(cfg)
    m = out["metrics"]
    assert m["loss/total"] == m["loss/total"] and "group/advantage_abs_mean" in m  # a finite step ran
    rows = [json.loads(x) for x in (tmp_path / "run" / "completions.jsonl").read_text().splitlines()]
    assert rows and all("advantage" in r for r in rows)
