"""Sampling: G completions per prompt, from the trainer's settings only.

``generate_rollout`` samples G completions per prompt (temperature, top_p, max_new_tokens, stop at EOS);
group g is rows g*G .. g*G+G-1. Each prompt is encoded once and its KV cache repeated G times. The tokens
come from ``decode``, a lean loop of one forward per token (``generate``'s per-token bookkeeping costs
more than a tiny model's forward on a CPU; for Qwen2/Llama models that forward is trainer/rollout/lean_forward.py's,
with a static KV cache), or from ``model.generate`` for models the loop does not cover
(``fast_decode_supported``); same distribution. The checkpoint's generation_config
(repetition_penalty, top_k, ...) is ignored, as TRL does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from trainer.data import Example, render_prompt
from trainer.rollout.lean_forward import LeanDecoder, lean_supported, mask_positions
from trainer.rollout.replay import Recording
from trainer.rollout.sampling import next_tokens, picked_logprob
from trainer.rollout.tools import ToolTrace


@dataclass
class Rollout:
    """A batch of N = prompts * G completions; tensors live on the model's device."""

    prompt_ids: Tensor  # (N, P) left-padded
    prompt_mask: Tensor  # (N, P)
    completion_ids: Tensor  # (N, C) right-padded
    completion_mask: Tensor  # (N, C) 1 up to and including the first EOS
    truncated: Tensor  # (N,) bool: no EOS within max_new_tokens
    texts: list[str]  # (N,) decoded completions without special tokens
    prompts: list[str] = field(default_factory=list)  # (N,) raw prompts
    references: list[str] = field(default_factory=list)  # (N,)
    # (N, C) log-prob of each sampled token under the distribution it was drawn from (temperature, top_p
    # applied), recorded while sampling; None where the backend does not record it
    sample_logprobs: Tensor | None = None
    # the lean decode's matmul products (trainer/rollout/replay.py), for the training forward; None if not kept
    replay: Any = None
    # tool rollouts (trainer/rollout/tool_decode.py): (N, C) 1 where the policy sampled the token, 0 on tool output
    # (None: every completion token is the policy's); the texts above are then the policy's own tokens only
    policy_mask: Tensor | None = None
    full_texts: list[str] | None = None  # (N,) policy and tool output together, as the model saw them (logs)
    tool_trace: ToolTrace | None = None  # calls, errors, failed sessions per row, seconds in tools

    def sampled_mask(self) -> Tensor:
        """(N, C) the tokens the policy sampled: the completion mask less tool output. Every loss term, statistic
        and normaliser counts these only."""
        return self.completion_mask if self.policy_mask is None else self.completion_mask * self.policy_mask

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    def select(self, rows: Sequence[int]) -> Rollout:
        idx = torch.as_tensor(list(rows), dtype=torch.long, device=self.completion_ids.device)
        return Rollout(
            self.prompt_ids[idx],
            self.prompt_mask[idx],
            self.completion_ids[idx],
            self.completion_mask[idx],
            self.truncated[idx],
            [self.texts[i] for i in rows],
            [self.prompts[i] for i in rows],
            [self.references[i] for i in rows],
            None if self.sample_logprobs is None else self.sample_logprobs[idx],
            self.replay if list(rows) == list(range(len(self))) else None,  # its rows are this rollout's
            None if self.policy_mask is None else self.policy_mask[idx],
            None if self.full_texts is None else [self.full_texts[i] for i in rows],
            None if self.tool_trace is None else self.tool_trace.select(list(rows)),
        )


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


def _sample_tokens(
    model,
    ids: Tensor,
    attn: Tensor,
    group_size: int,
    *,
    max_new_tokens: int,
    eos_ids: list[int],
    pad_id: int,
    do_sample: bool,
    temperature: float,
    top_p: float,
    share_prefix: bool,
    fast_decode: bool,
    on_finished: Callable[[Tensor, list[Tensor]], None] | None = None,
    record: bool = False,
    fast_path: bool = True,
) -> tuple[Tensor, Tensor, Recording | None]:
    """(N, P) left-padded prompts, each repeated G times in a row -> (N, C) new tokens, (N, C) the
    log-prob of each under the distribution it was drawn from, and the decode's Recording if ``record``
    (and the lean decoder ran)."""
    shared = share_prefix and group_size > 1 and ids.shape[1] > 1
    capacity = ids.shape[1] + max_new_tokens
    lean_ok = fast_decode and fast_path
    cache, lean = prefill(model, ids, attn, group_size if shared else 0, lean_ok, capacity, record)
    if fast_decode and fast_decode_supported(model):
        if cache is None and lean is None and not fast_path:
            cache = new_kv_cache(model)  # decode() runs the HF forward, not the lean one
        logps: list[Tensor] = []
        tokens = decode(
            model,
            ids,
            attn,
            max_new_tokens=max_new_tokens,
            eos_ids=eos_ids,
            pad_id=pad_id,
            do_sample=do_sample,
            temperature=temperature,
            top_p=top_p,
            cache=cache,
            on_finished=on_finished,
            logprobs_out=logps,
            lean=lean,
        )
        return tokens, torch.stack(logps[: tokens.shape[1]], dim=1), None if lean is None else lean.recording
    gen = rollout_generation_config(
        model,
        max_new_tokens=max_new_tokens,
        eos_ids=eos_ids,
        pad_id=pad_id,
        do_sample=do_sample,
        temperature=temperature,
        top_p=top_p,
    )
    # generate() fills every setting left at its default from model.generation_config (a checkpoint's
    # repetition_penalty 1.3 beats our 1.0): while it runs, the model's own config is ours
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    saved, base.generation_config = base.generation_config, gen
    try:
        out = model.generate(
            input_ids=ids,
            attention_mask=attn,
            generation_config=gen,
            output_scores=True,  # the processed scores each token was drawn from
            return_dict_in_generate=True,
            **({} if cache is None else {"past_key_values": cache}),
        )
    finally:
        base.generation_config = saved
    tokens = out.sequences[:, ids.shape[1] :]
    logps = [picked_logprob(sc.float(), tokens[:, t]) for t, sc in enumerate(out.scores)]
    return tokens, torch.stack(logps, dim=1), None


def generate_rollout(
    model,
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    do_sample: bool = True,
    use_chat_template: bool = True,
    share_prefix: bool = True,
    fast_decode: bool = True,
    on_groups_done: Callable[[list[int], list[str]], None] | None = None,
    record: bool = False,
    fast_path: bool = True,
) -> Rollout:
    """Sample ``group_size`` completions for each example (greedy when ``do_sample`` is False).

    With ``share_prefix`` each distinct prompt is encoded once: its KV cache is computed for one row and
    repeated G times before decoding continues from it, instead of encoding the prompt G times. With
    ``fast_decode`` (and a model ``fast_decode_supported`` accepts) the tokens come from ``decode``, else
    from ``model.generate``; both sample from the same distribution. ``on_groups_done(groups, texts)`` gets
    each group's final texts as soon as all its rows produced EOS, while decoding goes on (trainer/grpo/rewards.py, GroupScorer).
    ``record``: keep the lean decode's matmul products (``Rollout.replay``) so that the training forward
    at these weights does not recompute them (trainer/rollout/replay.py).
    ``fast_path`` False: never the lean forward (the decode loop runs the HF forward; nothing recorded), to
    compare against it (``GRPOConfig.fast_path``).
    """
    device = next(model.parameters()).device
    texts_in = [render_prompt(tokenizer, e.prompt, use_chat_template) for e in examples]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    enc = tokenizer(texts_in, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    tokenizer.padding_side = side
    ids = enc["input_ids"].repeat_interleave(group_size, dim=0)  # (N, P)
    attn = enc["attention_mask"].repeat_interleave(group_size, dim=0)  # (N, P)
    eos = eos_token_ids(model, tokenizer)
    hook = None if on_groups_done is None else _group_hook(on_groups_done, group_size, eos, tokenizer)
    was_training = model.training
    model.eval()
    try:
        # inference_mode, cheaper per op than no_grad; the clone makes a normal tensor for the training forwards
        with torch.inference_mode():
            completion_ids, sample_logprobs, recording = _sample_tokens(
                model,
                ids,
                attn,
                group_size,
                max_new_tokens=max_new_tokens,
                eos_ids=eos,
                pad_id=tokenizer.pad_token_id,
                do_sample=do_sample,
                temperature=temperature,
                top_p=top_p,
                share_prefix=share_prefix,
                fast_decode=fast_decode,
                on_finished=hook,
                record=record,
                fast_path=fast_path,
            )
        completion_ids = completion_ids.clone()  # (N, C)
        sample_logprobs = sample_logprobs.clone()  # (N, C)
    finally:
        model.train(was_training)
    mask, truncated = completion_mask_from_eos(completion_ids, eos)
    completion_ids = completion_ids.masked_fill(mask == 0, tokenizer.pad_token_id)
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    return Rollout(
        ids,
        attn,
        completion_ids,
        mask,
        truncated,
        texts,
        [e.prompt for e in examples for _ in range(group_size)],
        [e.reference for e in examples for _ in range(group_size)],
        sample_logprobs.masked_fill(mask == 0, 0.0),
        recording,
    )


def _group_hook(on_groups_done, group_size: int, eos: list[int], tokenizer):
    """A decode ``on_finished`` hook: decodes the texts of newly finished groups and hands them on."""
    sent: set[int] = set()

    def hook(running: Tensor, new: list[Tensor]) -> None:
        fresh = [gi for gi in finished_groups(running, group_size) if gi not in sent]
        if not fresh:
            return
        sent.update(fresh)
        rows = torch.tensor([gi * group_size + j for gi in fresh for j in range(group_size)])
        toks = torch.stack(new, dim=1)[rows.to(new[0].device)]  # (n, t): the same texts the rollout ends with
        mask, _ = completion_mask_from_eos(toks, eos)
        toks = toks.masked_fill(mask == 0, tokenizer.pad_token_id)
        on_groups_done(fresh, tokenizer.batch_decode(toks, skip_special_tokens=True))

    return hook


def finished_groups(running, group_size: int) -> list[int]:
    """Indices of groups none of whose rows is still running. running: (N,) bool tensor."""
    return (~running.view(-1, group_size).any(dim=1)).nonzero().flatten().tolist()
