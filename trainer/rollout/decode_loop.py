"""The decode loop under ``generate_rollout`` (trainer/rollout/decode.py) and the tool loop
(trainer/rollout/tool_decode.py): one forward per new token from a KV cache (the lean forward of
trainer/rollout/lean_forward.py for Qwen2/Llama models, else the model's own forward with a ``DynamicCache``),
the shared-prefix prefill, the EOS mask, and the generation config ``model.generate`` gets for models the loop
does not cover.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from trainer.rollout.lean_forward import LeanDecoder, lean_supported, mask_positions
from trainer.rollout.replay import Recording
from trainer.rollout.sampling import next_tokens, picked_logprob


def completion_mask_from_eos(completion_ids: Tensor, eos_ids: Sequence[int]) -> tuple[Tensor, Tensor]:
    """(N, C) ids -> mask (N, C) that keeps tokens up to and including the first EOS, truncated (N,)."""
    is_eos = torch.isin(completion_ids, torch.tensor(list(eos_ids), device=completion_ids.device))  # (N, C)
    has_eos = is_eos.any(dim=1)  # (N,)
    first = torch.where(has_eos, is_eos.int().argmax(dim=1), completion_ids.shape[1])  # (N,)
    pos = torch.arange(completion_ids.shape[1], device=completion_ids.device)
    return (pos[None, :] <= first[:, None]).long(), ~has_eos


def eos_token_ids(model, tokenizer) -> list[int]:
    eos = model.generation_config.eos_token_id
    eos = tokenizer.eos_token_id if eos is None else eos
    return [eos] if isinstance(eos, int) else list(eos)


def new_kv_cache(model):
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def hf_forward(model, cache) -> Callable[[Tensor, Tensor | None, Tensor], Tensor]:
    """The model's own forward as ``decode`` calls it: (n, L) ids, mask, positions -> (n, V) last logits (float32)."""

    def forward(ids: Tensor, mask: Tensor | None, pos: Tensor) -> Tensor:
        kw = {"past_key_values": cache, "use_cache": True, "logits_to_keep": 1}
        return model(input_ids=ids, attention_mask=mask, position_ids=pos, **kw).logits[:, -1].float()

    return forward


def fast_decode_supported(model) -> bool:
    """True when ``decode`` samples exactly what ``generate`` would: a decoder-only model whose forward takes
    ``attention_mask``, ``position_ids`` and ``past_key_values`` (a ``DynamicCache``); the rollout's
    settings are temperature, top-p and EOS (``rollout_generation_config``)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft wrappers
    config = getattr(base, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    try:
        params = inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return False
    if not {"input_ids", "attention_mask", "position_ids", "past_key_values", "logits_to_keep"} <= params.keys():
        return False
    # the checkpoint's generation_config (penalties, top_k, ...) is not consulted: rollouts sample from the
    # trainer's own settings only (rollout_generation_config), as TRL does, so both paths sample alike
    return True


def rollout_generation_config(
    model, *, max_new_tokens: int, eos_ids: list[int], pad_id: int, do_sample: bool, temperature: float, top_p: float
):
    """The generation config rollouts use, built from the trainer's settings alone: temperature, top_p,
    max_new_tokens, EOS; every processor of the checkpoint's generation_config (repetition_penalty, top_k,
    min_p, ...) is left out, so the samples come from the distribution the loss scores."""
    from transformers import GenerationConfig

    sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0} if do_sample else {}
    return GenerationConfig(
        max_new_tokens=max_new_tokens,
        eos_token_id=eos_ids,
        pad_token_id=pad_id,
        bos_token_id=getattr(model.generation_config, "bos_token_id", None),
        use_cache=True,
        **(sampling or {"do_sample": False}),
    )


def decode(
    model,
    ids: Tensor,
    attn: Tensor,
    *,
    max_new_tokens: int,
    eos_ids: Sequence[int],
    pad_id: int,
    do_sample: bool = True,
    temperature: float = 1.0,
    top_p: float = 1.0,
    cache=None,
    logits_out: list[Tensor] | None = None,
    on_finished: Callable[[Tensor, list[Tensor]], None] | None = None,
    logprobs_out: list[Tensor] | None = None,
    lean: LeanDecoder | None = None,
) -> Tensor:
    """A lean decode loop: (N, P) left-padded prompts -> (N, C) new tokens, C <= max_new_tokens.

    One forward per new token: ``LeanDecoder`` (trainer/rollout/lean_forward.py) for the models ``lean_supported``
    accepts, else the model's own forward with a ``DynamicCache``; the next token is sampled from
    softmax(top_p(logits / temperature)) (greedy when ``do_sample`` is False); rows that produced EOS
    get ``pad_id`` afterwards, and the loop stops when every row has finished. As in ``generate``:
    position ids follow the attention mask (left padding does not shift them), an all-ones mask is
    dropped, and ``cache`` (or ``lean``) may already hold all but the last prompt token (then only that
    one is fed).
    ``logits_out`` collects the float32 logits each token was drawn from, (N, V) per step (tests).
    ``on_finished(running, tokens)`` is called after a step in which some row produced EOS (trainer/grpo/rewards.py, GroupScorer).
    ``logprobs_out`` collects, (N,) per step, the log-prob of each drawn token under the distribution it
    was drawn from.
    """
    n = ids.shape[0]
    pos = mask_positions(attn)  # (N, P)
    mask = None if bool(attn.all()) else attn
    if lean is None and cache is None and lean_supported(model):
        lean = LeanDecoder(model, n, ids.shape[1] + max_new_tokens)
    if lean is not None:
        forward, fed = lean.forward, lean.length
    else:
        cache = new_kv_cache(model) if cache is None else cache
        forward, fed = hf_forward(model, cache), cache.get_seq_length()
    logits = forward(ids[:, fed:], mask, pos[:, fed:])  # (N, V) float32, the last position's
    pos = pos[:, -1:]  # (N, 1)
    eos = torch.tensor(list(eos_ids), device=ids.device)
    running = torch.ones(n, dtype=torch.bool, device=ids.device)  # (N,) no EOS yet
    new: list[Tensor] = []
    for t in range(max_new_tokens):
        if logits_out is not None:
            logits_out.append(logits)
        nxt, scores = next_tokens(logits, do_sample, temperature, top_p)  # (N,), (N, V)
        if logprobs_out is not None:
            logprobs_out.append(picked_logprob(scores, nxt))
        nxt = torch.where(running, nxt, pad_id)
        new.append(nxt)
        stopped = torch.isin(nxt, eos) & running
        running &= ~stopped
        if on_finished is not None and bool(stopped.any()):
            on_finished(running, new)
        if t == max_new_tokens - 1 or not bool(running.any()):
            break
        pos = pos + 1
        if mask is not None:
            mask = torch.cat([mask, mask.new_ones(n, 1)], dim=1)
        logits = forward(nxt[:, None], mask, pos)
    return torch.stack(new, dim=1)  # (N, C)


def prefill(model, ids: Tensor, attn: Tensor, group_size: int, lean_ok: bool, capacity: int, record: bool = False):
    """(cache, lean) to decode from: the lean forward where ``lean_ok`` and it applies, else an HF cache (None
    unless shared).
    ``group_size`` > 0: each distinct prompt (rows g*G) but its last token encoded once, repeated G times.
    ``record``: the lean decoder keeps its matmul products for the training forward (trainer/rollout/replay.py)."""
    cache = lean = None
    u_ids, u_mask = ids[:: group_size or 1, :-1], attn[:: group_size or 1, :-1]  # (P_u, P-1)
    if lean_ok and lean_supported(model):
        max_new = capacity - ids.shape[1]
        keep = record and Recording.fits(len(ids), capacity, model, max_new)
        rec = Recording(model, capacity, max_new) if keep else None
        lean = LeanDecoder(model, len(u_ids) if group_size else len(ids), capacity, rec)
        if group_size:
            lean.forward(u_ids, None if bool(u_mask.all()) else u_mask, mask_positions(u_mask))
            lean.repeat_interleave(group_size)
    elif group_size:
        cache = new_kv_cache(model)
        model(input_ids=u_ids, attention_mask=u_mask, position_ids=mask_positions(u_mask), past_key_values=cache)
        cache.batch_repeat_interleave(group_size)
    return cache, lean
