"""Log-probs of sampled tokens under any model (policy, old policy, reference): one forward pass over
prompt + completion, logits only for the completion positions (a group's shared prompt encoded once)."""

from __future__ import annotations

import torch
from torch import Tensor

from trainer.rollout.decode import Rollout
from trainer.rollout.decode_loop import new_kv_cache
from trainer.rollout.lean_forward import lean_supported, mask_positions
from trainer.rollout.replay import replay_logits
from trainer.rollout.sampling import token_entropy, token_logprobs


def completion_logprobs(
    model,
    rollout: Rollout,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    rows: Tensor | slice | None = None,
    group_size: int = 0,
    fast_path: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """Log-probs (n, C) of the sampled completion tokens (and entropies (n, C)) under ``model``.

    Position ids follow the attention mask, as in ``generate``, so left padding does not shift them;
    prompt columns that are padding in every selected row are dropped first. With ``group_size`` > 1
    and ``rows`` made of whole groups, each prompt runs once and its KV cache (part of the autograd
    graph) is repeated for the G completions: the same numbers for less compute. A lean-supported model
    runs the lean forward (trainer/rollout/replay.py: the decode's recording with gradients, in full without);
    ``fast_path`` False: always the HF forward (``GRPOConfig.fast_path``, for comparisons).
    """
    idx = torch.arange(len(rollout), device=rollout.prompt_ids.device) if rows is None else rows
    if isinstance(idx, slice):
        idx = torch.arange(len(rollout), device=rollout.prompt_ids.device)[idx]
    c = rollout.completion_ids.shape[1]
    rec = rollout.replay if fast_path else None
    if rec is not None and c > 1 and rec.usable(model, c) and whole_groups(idx, rec.group or 1):
        logits = replay_logits(model, rollout, idx, recording=rec)  # the decode's products: trainer/rollout/replay.py
    elif (
        c > 1
        and fast_path
        and not torch.is_grad_enabled()
        and lean_supported(model)
        and (group_size <= 1 or whole_groups(idx, group_size))
    ):
        logits = replay_logits(model, rollout, idx, group_size)  # the lean forward, no HF modules (scoring)
    elif group_size > 1 and c > 1 and whole_groups(idx, group_size):
        logits = _shared_prefix_logits(model, rollout, idx, group_size)
    else:
        prompt_mask = rollout.prompt_mask[idx]  # (n, P)
        start = int((prompt_mask.sum(0) == 0).sum())  # leading all-padding columns (left padding)
        ids = torch.cat([rollout.prompt_ids[idx][:, start:], rollout.completion_ids[idx]], dim=1)  # (n, P'+C)
        attn = torch.cat([prompt_mask[:, start:], rollout.completion_mask[idx]], dim=1)  # (n, P'+C)
        out = model(input_ids=ids, attention_mask=attn, position_ids=mask_positions(attn), logits_to_keep=c + 1)
        logits = out.logits[:, :-1]  # (n, C, V): position t predicts completion token t
    logp = token_logprobs(logits, rollout.completion_ids[idx], temperature)  # (n, C)
    ent = None
    if with_entropy:
        with torch.no_grad():
            ent = token_entropy(logits.detach(), temperature)
    return logp, ent


def _shared_prefix_logits(model, rollout: Rollout, idx: Tensor, g: int) -> Tensor:
    """(n, C, V) logits for the completions of whole groups, each group's prompt encoded once."""
    first = idx.view(-1, g)[:, 0]  # (n/G,) one row per group
    p_mask = rollout.prompt_mask[first]  # (n/G, P)
    start = int((p_mask.sum(0) == 0).sum())
    p_mask, p_ids = p_mask[:, start:], rollout.prompt_ids[first][:, start:]
    p_pos = mask_positions(p_mask)
    cache = new_kv_cache(model)
    head = model(
        input_ids=p_ids,
        attention_mask=p_mask,
        position_ids=p_pos,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    first_logits = head.logits.repeat_interleave(g, dim=0)  # (n, 1, V): predicts completion token 0
    cache.batch_repeat_interleave(g)
    c_ids, c_mask = rollout.completion_ids[idx][:, :-1], rollout.completion_mask[idx][:, :-1]  # (n, C-1)
    attn = torch.cat([p_mask.repeat_interleave(g, dim=0), c_mask], dim=1)  # (n, P'+C-1)
    c_pos = p_pos[:, -1:].repeat_interleave(g, dim=0) + 1 + torch.arange(c_ids.shape[1], device=c_ids.device)
    tail = model(input_ids=c_ids, attention_mask=attn, position_ids=c_pos, past_key_values=cache, use_cache=True)
    return torch.cat([first_logits, tail.logits], dim=1)  # (n, C, V)


def whole_groups(rows: Tensor, group_size: int) -> bool:
    """True when ``rows`` lists whole groups, each as g*G, g*G+1, ..., g*G+G-1."""
    if rows.numel() % group_size:
        return False
    r = rows.view(-1, group_size)
    return bool((r[:, 0] % group_size == 0).all() and (r - r[:, :1] == torch.arange(group_size, device=r.device)).all())
