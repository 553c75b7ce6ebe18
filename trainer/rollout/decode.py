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

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from trainer.data import Example, render_prompt
from trainer.rollout.decode_loop import (
    completion_mask_from_eos,
    decode,
    eos_token_ids,
    fast_decode_supported,
    new_kv_cache,
    prefill,
    rollout_generation_config,
)
from trainer.rollout.replay import Recording
from trainer.rollout.sampling import picked_logprob
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


@dataclass(frozen=True)
class SampleOptions:
    """How a rollout samples: the settings ``generate_rollout`` and ``generate_tool_rollout``
    (trainer/rollout/tool_decode.py) share. Both take them as one object or as keywords (an unknown keyword is
    refused: TypeError naming it)."""

    max_new_tokens: int  # completion budget (tool rollouts: policy and tool tokens together)
    temperature: float = 1.0
    top_p: float = 1.0
    do_sample: bool = True  # False: greedy
    use_chat_template: bool = True  # render prompts through the tokenizer's chat template
    share_prefix: bool = True  # encode each distinct prompt once, repeat its KV cache G times
    fast_decode: bool = True  # the trainer's decode loop (else model.generate)
    fast_path: bool = True  # the lean forward where it applies (False: the HF forward, to compare)

    @classmethod
    def of(cls, opts: SampleOptions | None, kw: dict[str, Any]) -> SampleOptions:
        """``opts`` with ``kw`` on top (or ``kw`` alone)."""
        return cls(**kw) if opts is None else dataclasses.replace(opts, **kw)

    def sampling(self) -> dict[str, Any]:
        return {"do_sample": self.do_sample, "temperature": self.temperature, "top_p": self.top_p}


def generate_rollout(
    model,
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    opts: SampleOptions | None = None,
    *,
    on_groups_done: Callable[[list[int], list[str]], None] | None = None,
    record: bool = False,
    **kw: Any,
) -> Rollout:
    """Sample ``group_size`` completions for each example (greedy when ``do_sample`` is False); the settings are
    ``opts`` and/or ``SampleOptions``'s fields as keywords.

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
    o = SampleOptions.of(opts, kw)
    ids, attn = encode_prompts(model, tokenizer, examples, group_size, o.use_chat_template)  # (N, P) each
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
                max_new_tokens=o.max_new_tokens,
                eos_ids=eos,
                pad_id=tokenizer.pad_token_id,
                do_sample=o.do_sample,
                temperature=o.temperature,
                top_p=o.top_p,
                share_prefix=o.share_prefix,
                fast_decode=o.fast_decode,
                on_finished=hook,
                record=record,
                fast_path=o.fast_path,
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


def encode_prompts(
    model, tokenizer, examples: Sequence[Example], group_size: int, use_chat_template: bool
) -> tuple[Tensor, Tensor]:
    """(N, P) left-padded prompt ids and mask, each prompt rendered as training renders it and repeated G times."""
    device = next(model.parameters()).device
    texts_in = [render_prompt(tokenizer, e.prompt, use_chat_template) for e in examples]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    enc = tokenizer(texts_in, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    tokenizer.padding_side = side
    return enc["input_ids"].repeat_interleave(group_size, dim=0), enc["attention_mask"].repeat_interleave(group_size, 0)


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
