"""What every rollout backend shares (trainer/rollout/backends.py picks one): its error type, and the
assembly of a ``Rollout`` from the token lists an engine returns."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from trainer.data import Example
from trainer.errors import TrainerError
from trainer.rollout.decode import Rollout, completion_mask_from_eos


class BackendError(TrainerError, RuntimeError):
    """A rollout backend that cannot run here (missing package, no GPU, unsupported setting)."""


def rollout_from_ids(
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    eos_ids: Sequence[int],
    device: torch.device | str = "cpu",
    sample_logprobs: Sequence[Sequence[float]] | None = None,
) -> Rollout:
    """A ``Rollout`` from token lists an engine returned: one prompt per example, G completions per
    prompt (rows g*G .. g*G+G-1); prompts left-padded, completions right-padded, masks up to the first EOS.
    ``sample_logprobs``: the engine's log-prob of each completion token (NaN: not reported), 0 past the mask."""
    if len(completion_ids) != len(examples) * group_size or len(prompt_ids) != len(examples):
        raise BackendError(
            f"{len(completion_ids)} completions for {len(prompt_ids)} prompts of group {group_size} "
            f"({len(examples)} examples)"
        )
    pad = tokenizer.pad_token_id
    p_len = max(len(p) for p in prompt_ids)
    c_len = max(1, max(len(c) for c in completion_ids))
    p_rows = [[pad] * (p_len - len(p)) + list(p) for p in prompt_ids]
    p_mask = [[0] * (p_len - len(p)) + [1] * len(p) for p in prompt_ids]
    ids = torch.tensor(p_rows, device=device).repeat_interleave(group_size, dim=0)  # (N, P)
    attn = torch.tensor(p_mask, device=device).repeat_interleave(group_size, dim=0)  # (N, P)
    comp = torch.tensor([list(c) + [pad] * (c_len - len(c)) for c in completion_ids], device=device)  # (N, C)
    mask, truncated = completion_mask_from_eos(comp, eos_ids)
    lengths = torch.tensor([len(c) for c in completion_ids], device=device)
    mask = mask * (torch.arange(c_len, device=device)[None, :] < lengths[:, None])  # not past a row's own end
    comp = comp.masked_fill(mask == 0, pad)
    lps = None
    if sample_logprobs is not None:
        rows = [list(x)[:c_len] + [0.0] * (c_len - len(x)) for x in sample_logprobs]
        lps = torch.tensor(rows, dtype=torch.float32, device=device).masked_fill(mask == 0, 0.0)  # (N, C)
    return Rollout(
        ids,
        attn,
        comp,
        mask,
        truncated,
        tokenizer.batch_decode(comp, skip_special_tokens=True),
        [e.prompt for e in examples for _ in range(group_size)],
        [e.reference for e in examples for _ in range(group_size)],
        lps,
    )
