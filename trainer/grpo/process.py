"""Process supervision (DeepSeekMath sec. 4.1.3): per-token advantages from per-step rewards.

A verifier that returns step rewards (``VerifyResponse.steps``: a reward and the character span
``completion[start:end]`` of each step, e.g. the built-in ``arith_steps``) lets the trainer run with
``advantage: process``. For the G outputs of a group:

1. every step reward of every (valid) output of the group is normalised together:
   r~ = (r - mean) / (std + eps), mean and std over all those step rewards;
2. the advantage of token t of output i is the sum of the normalised rewards of the steps of output i
   that end at or after t:  A_{i,t} = sum_{j : index(j) >= t} r~_i^{index(j)}.

``index(j)`` is the token where step j ends. Character spans are mapped to tokens by decode-prefix
lengths, which is exact for any tokenizer: token k of the completion covers the characters
``[len(decode(ids[:k])), len(decode(ids[:k+1])))`` of the text the verifier graded (the same
``decode(..., skip_special_tokens=True)`` the rollout made). A step ending at character ``end``
(exclusive) ends at the token that holds its last character ``end - 1``: the first k with
``len(decode(ids[:k+1])) >= end``. A step that ends inside a token therefore counts for that token.
The lookup is a binary search (prefix lengths only grow), O(log C) decodes per step.

Where this departs from the paper (switchable): ``process_outcome_step`` (default on) appends the
verdict's overall reward as one more step that ends at the completion's last token (its EOS). The
paper's reward model scores the final step, answer included; ``arith_steps`` scores only the written
steps, so without it an output with no gradable step (``<think>estimate</think><answer>20</answer>``)
and the final answer itself would get no signal. With it off, exactly the steps the verifier returned.

Outputs graded SANDBOX_ERROR / BAD_REFERENCE (``valid`` False) are left out of the statistics and get
advantage 0, as in outcome mode. A group whose step rewards are all equal (or that has fewer than two
step rewards) gets advantage 0 everywhere.

>>> process_advantages([[1.0], [0.0]], [[1], [0]], torch.tensor([True, True]), 2, 3, std="population")
tensor([[ 0.9998,  0.9998,  0.0000],
        [-0.9998,  0.0000,  0.0000]])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

StepSpan = tuple[float, int, int]  # (reward, start, end): completion[start:end]


def process_advantages(
    step_rewards: Sequence[Sequence[float]],
    step_tokens: Sequence[Sequence[int]],
    valid: Tensor,
    group_size: int,
    width: int,
    *,
    std: str = "population",
    eps: float = 1e-4,
) -> Tensor:
    """(N, width) advantages A_{i,t} = sum of output i's normalised step rewards whose step ends at token >= t.

    step_rewards[i] / step_tokens[i]: output i's step rewards and the token index (0 <= index < width)
    where each step ends, N = len(step_rewards) outputs in contiguous groups of ``group_size``; valid: (N,)
    bool. Mean and std are taken per group over every step reward of its valid outputs.
    """
    n = len(step_rewards)
    if n % group_size or len(step_tokens) != n or valid.shape != (n,):
        raise ValueError(
            f"need N divisible by group_size={group_size} with N step lists, N token lists and valid of shape "
            f"(N,); got {n}, {len(step_tokens)}, {tuple(valid.shape)}"
        )
    correction = 1 if std == "unbiased" else 0
    points = torch.zeros(n, width)  # (N, C): normalised reward of each step at the token where it ends
    for g0 in range(0, n, group_size):
        rows = [i for i in range(g0, g0 + group_size) if bool(valid[i])]
        for i in rows:
            if len(step_rewards[i]) != len(step_tokens[i]):
                raise ValueError(f"output {i}: {len(step_rewards[i])} step rewards but {len(step_tokens[i])} ends")
        flat = torch.tensor([float(r) for i in rows for r in step_rewards[i]])  # (S,) every step of the group
        if flat.numel() < 2 or bool((flat == flat[0]).all()):
            continue  # zero-variance group: advantage 0
        mean = flat.mean()
        sd = flat.var(correction=correction).sqrt()
        for i in rows:
            for r, t in zip(step_rewards[i], step_tokens[i], strict=True):
                if not 0 <= t < width:
                    raise ValueError(f"output {i}: step ends at token {t}, outside [0, {width})")
                points[i, t] += (float(r) - mean) / (sd + eps)
    return points.flip(1).cumsum(1).flip(1)  # (N, C): suffix sums, A[i, t] = sum_{k >= t} points[i, k]


def char_to_token_end(ids: Sequence[int], end: int, tokenizer) -> int:
    """Index of the token of ``ids`` (a completion, EOS and padding cut off) that holds character ``end - 1``
    of ``tokenizer.decode(ids, skip_special_tokens=True)``; past the text's end: the last token."""
    lo, hi = 0, len(ids) - 1  # invariant: the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(ids[: mid + 1], skip_special_tokens=True)) >= end:
            hi = mid
        else:
            lo = mid + 1
    return lo


def steps_to_tokens(
    completion_ids: Tensor,
    completion_mask: Tensor,
    steps: Sequence[Sequence[StepSpan]],
    outcome_rewards: Sequence[float] | None,
    tokenizer,
) -> tuple[list[list[float]], list[list[int]]]:
    """Step rewards and the token index where each step ends, per output.

    completion_ids, completion_mask: (N, C); steps[i]: output i's (reward, start, end) spans in its text.
    ``outcome_rewards`` (N,), when given, adds one last step per output ending at its last token
    (``process_outcome_step``).
    """
    rewards: list[list[float]] = []
    tokens: list[list[int]] = []
    for i in range(completion_ids.shape[0]):
        length = int(completion_mask[i].sum())  # tokens up to and including EOS
        if length == 0:
            rewards.append([])
            tokens.append([])
            continue
        ids = completion_ids[i, :length].tolist()
        r = [float(s[0]) for s in steps[i]]
        t = [char_to_token_end(ids, int(s[2]), tokenizer) for s in steps[i]]
        if outcome_rewards is not None:
            r.append(float(outcome_rewards[i]))
            t.append(length - 1)
        rewards.append(r)
        tokens.append(t)
    return rewards, tokens


def batch_process_advantages(cfg, batch, tokenizer) -> Tensor:
    """(N, C) process advantages of a training batch (trainer.rollout.Batch) under a GRPOConfig."""
    ro = batch.rollout
    outcome = batch.rewards.tolist() if cfg.process_outcome_step else None
    rewards, tokens = steps_to_tokens(
        ro.completion_ids.cpu(), ro.completion_mask.cpu(), [s.steps for s in batch.scores], outcome, tokenizer
    )
    return process_advantages(
        rewards, tokens, batch.valid.cpu(), cfg.group_size, ro.completion_ids.shape[1], std=cfg.std
    )
