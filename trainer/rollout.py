"""Rollouts: G sampled completions per prompt, their masks, their log-probs, and their rewards.

- ``generate_rollout`` samples G completions per prompt (temperature, top_p, max_new_tokens, stop at
  EOS); group g is rows g*G .. g*G+G-1. Each prompt is encoded once and its KV cache repeated G times.
  The tokens come from ``decode``, a lean loop of one forward per token (``generate``'s per-token
  bookkeeping costs more than a tiny model's forward on a CPU), or from ``model.generate`` for models
  the loop does not cover (``fast_decode_supported``); same distribution. Both sample from the trainer's
  settings only: the checkpoint's generation_config (repetition_penalty, top_k, ...) is ignored, as TRL does.
- ``completion_logprobs`` scores the sampled tokens under any model (policy, old policy, reference)
  with one forward pass over prompt + completion, logits only for the completion positions.
- Rewards come through one small interface, ``RewardFn``. ``VerifierReward`` is the real one: one
  ``VerifyBatch`` call to the verifier service per step. ``PythonReward`` wraps a plain function
  for benchmarks and tests of the loss (never for the service's own tests).
- ``collect_batch`` assembles one step's batch: a seeded ``DataStream`` of prompts -> rollout ->
  grades, and with DAPO's dynamic sampling drops zero-variance groups and samples more prompts.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from trainer.config import GRPOConfig
from trainer.loss import token_entropy, token_logprobs
from trainer.overlap import GroupScorer, finished_groups
from verifiers.client import VerifierClient, VerifyItem

SANDBOX_ERROR = "SANDBOX_ERROR"
UNGRADED = (SANDBOX_ERROR, "BAD_REFERENCE")  # not the model's fault: masked out of the loss


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One prompt and what grades it: the gold answer (math) or the tests (code)."""

    prompt: str
    reference: str


def load_examples(path: str | Path) -> list[Example]:
    """JSONL rows ``{"prompt", "answer"}`` (math) or ``{"prompt", "tests"}`` (code)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            ref = row.get("answer", row.get("tests"))
            if "prompt" not in row or ref is None:
                raise ValueError(f"{path}:{n}: each row needs 'prompt' and 'answer' (math) or 'tests' (code)")
            rows.append(Example(str(row["prompt"]), str(ref)))
    if not rows:
        raise ValueError(f"{path}: no examples")
    return rows


def render_prompt(tokenizer, prompt: str, use_chat_template: bool = True) -> str:
    """The prompt as the model sees it: inside the chat template when the tokenizer has one."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        msgs = [{"role": "user", "content": prompt}]
        return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    return prompt


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


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
        )


def completion_mask_from_eos(completion_ids: Tensor, eos_ids: Sequence[int]) -> tuple[Tensor, Tensor]:
    """(N, C) ids -> mask (N, C) that keeps tokens up to and including the first EOS, truncated (N,)."""
    is_eos = torch.isin(completion_ids, torch.tensor(list(eos_ids), device=completion_ids.device))  # (N, C)
    has_eos = is_eos.any(dim=1)  # (N,)
    first = torch.where(has_eos, is_eos.int().argmax(dim=1), completion_ids.shape[1])  # (N,)
    pos = torch.arange(completion_ids.shape[1], device=completion_ids.device)
    return (pos[None, :] <= first[:, None]).long(), ~has_eos


def _eos_ids(model, tokenizer) -> list[int]:
    eos = model.generation_config.eos_token_id
    eos = tokenizer.eos_token_id if eos is None else eos
    return [eos] if isinstance(eos, int) else list(eos)


def _new_cache(model):
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def _positions(mask: Tensor) -> Tensor:
    """Position ids that skip left padding, as ``generate`` computes them. (n, L) -> (n, L)."""
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


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


def _top_p_filter(scores: Tensor, top_p: float) -> Tensor:
    """Keep the smallest set of most likely tokens whose probability reaches ``top_p`` (at least one);
    the rest get -inf. (n, V) -> (n, V)."""
    probs, order = torch.softmax(scores, dim=-1).sort(dim=-1, descending=True)  # (n, V)
    mass_before = probs.cumsum(dim=-1) - probs  # (n, V): probability of the more likely tokens
    drop_sorted = mass_before >= top_p
    drop_sorted[:, 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, -torch.inf)


def _next_tokens(logits: Tensor, do_sample: bool, temperature: float, top_p: float) -> tuple[Tensor, Tensor]:
    """(n, V) float32 logits of the last position -> (n,) the next token (sampled or greedy) and (n, V)
    the scores it was drawn from (logits / temperature, top_p applied; the raw logits when greedy)."""
    if not do_sample:
        return logits.argmax(dim=-1), logits
    scores = logits / temperature if temperature != 1.0 else logits
    if top_p < 1.0:
        scores = _top_p_filter(scores, top_p)
    return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1), scores


def _picked_logprob(scores: Tensor, tokens: Tensor) -> Tensor:
    """(n, V) scores, (n,) tokens -> (n,) log-prob of each token under softmax(scores)."""
    return torch.log_softmax(scores, dim=-1).gather(-1, tokens[:, None]).squeeze(-1)


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
) -> Tensor:
    """A lean decode loop: (N, P) left-padded prompts -> (N, C) new tokens, C <= max_new_tokens.

    One forward per new token with a ``DynamicCache``; the next token is sampled from
    softmax(top_p(logits / temperature)) (greedy when ``do_sample`` is False); rows that produced EOS
    get ``pad_id`` afterwards, and the loop stops when every row has finished. As in ``generate``:
    position ids follow the attention mask (left padding does not shift them), an all-ones mask is
    dropped, and ``cache`` may already hold all but the last prompt token (then only that one is fed).
    ``logits_out`` collects the float32 logits each token was drawn from, (N, V) per step (tests).
    ``on_finished(running, tokens)`` is called after a step in which some row produced EOS (overlap.py).
    ``logprobs_out`` collects, (N,) per step, the log-prob of each drawn token under the distribution it
    was drawn from.
    """
    n = ids.shape[0]
    pos = _positions(attn)  # (N, P)
    mask = None if bool(attn.all()) else attn
    if cache is None:
        cache = _new_cache(model)
    fed = cache.get_seq_length()  # prompt tokens already in the cache
    step = model(
        input_ids=ids[:, fed:],
        attention_mask=mask,
        position_ids=pos[:, fed:],
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    logits = step.logits[:, -1].float()  # (N, V)
    pos = pos[:, -1:]  # (N, 1)
    eos = torch.tensor(list(eos_ids), device=ids.device)
    running = torch.ones(n, dtype=torch.bool, device=ids.device)  # (N,) no EOS yet
    new: list[Tensor] = []
    for t in range(max_new_tokens):
        if logits_out is not None:
            logits_out.append(logits)
        nxt, scores = _next_tokens(logits, do_sample, temperature, top_p)  # (N,), (N, V)
        if logprobs_out is not None:
            logprobs_out.append(_picked_logprob(scores, nxt))
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
        step = model(
            input_ids=nxt[:, None], attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True
        )
        logits = step.logits[:, -1].float()
    return torch.stack(new, dim=1)  # (N, C)


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
) -> tuple[Tensor, Tensor]:
    """(N, P) left-padded prompts, each repeated G times in a row -> (N, C) new tokens and (N, C) the
    log-prob of each under the distribution it was drawn from."""
    cache = None
    if share_prefix and group_size > 1 and ids.shape[1] > 1:
        cache = _new_cache(model)
        # one row per distinct prompt (rows g*G), all but the last token: (P_u, P-1)
        u_ids, u_mask = ids[::group_size, :-1], attn[::group_size, :-1]
        model(
            input_ids=u_ids,
            attention_mask=u_mask,
            position_ids=_positions(u_mask),
            past_key_values=cache,
            logits_to_keep=1,
        )
        cache.batch_repeat_interleave(group_size)
    if fast_decode and fast_decode_supported(model):
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
        )
        return tokens, torch.stack(logps[: tokens.shape[1]], dim=1)
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
    logps = [_picked_logprob(sc.float(), tokens[:, t]) for t, sc in enumerate(out.scores)]
    return tokens, torch.stack(logps, dim=1)


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
) -> Rollout:
    """Sample ``group_size`` completions for each example (greedy when ``do_sample`` is False).

    With ``share_prefix`` each distinct prompt is encoded once: its KV cache is computed for one row and
    repeated G times before decoding continues from it, instead of encoding the prompt G times. With
    ``fast_decode`` (and a model ``fast_decode_supported`` accepts) the tokens come from ``decode``, else
    from ``model.generate``; both sample from the same distribution. ``on_groups_done(groups, texts)`` gets
    each group's final texts as soon as all its rows produced EOS, while decoding goes on (overlap.py).
    """
    device = next(model.parameters()).device
    texts_in = [render_prompt(tokenizer, e.prompt, use_chat_template) for e in examples]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    enc = tokenizer(texts_in, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    tokenizer.padding_side = side
    ids = enc["input_ids"].repeat_interleave(group_size, dim=0)  # (N, P)
    attn = enc["attention_mask"].repeat_interleave(group_size, dim=0)  # (N, P)
    eos = _eos_ids(model, tokenizer)
    hook = None if on_groups_done is None else _group_hook(on_groups_done, group_size, eos, tokenizer)
    was_training = model.training
    model.eval()
    try:
        # inference_mode, cheaper per op than no_grad; the clone makes a normal tensor for the training forwards
        with torch.inference_mode():
            completion_ids, sample_logprobs = _sample_tokens(
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


def whole_groups(rows: Tensor, group_size: int) -> bool:
    """True when ``rows`` lists whole groups, each as g*G, g*G+1, ..., g*G+G-1."""
    if rows.numel() % group_size:
        return False
    r = rows.view(-1, group_size)
    return bool((r[:, 0] % group_size == 0).all() and (r - r[:, :1] == torch.arange(group_size, device=r.device)).all())


def completion_logprobs(
    model,
    rollout: Rollout,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    rows: Tensor | slice | None = None,
    group_size: int = 0,
) -> tuple[Tensor, Tensor | None]:
    """Log-probs (n, C) of the sampled completion tokens (and entropies (n, C)) under ``model``.

    Position ids follow the attention mask, as in ``generate``, so left padding does not shift them;
    prompt columns that are padding in every selected row are dropped first. With ``group_size`` > 1
    and ``rows`` made of whole groups, each prompt runs once and its KV cache (part of the autograd
    graph) is repeated for the G completions: the same numbers for less compute.
    """
    idx = torch.arange(len(rollout), device=rollout.prompt_ids.device) if rows is None else rows
    if isinstance(idx, slice):
        idx = torch.arange(len(rollout), device=rollout.prompt_ids.device)[idx]
    if group_size > 1 and rollout.completion_ids.shape[1] > 1 and whole_groups(idx, group_size):
        logits = _shared_prefix_logits(model, rollout, idx, group_size)
    else:
        prompt_mask = rollout.prompt_mask[idx]  # (n, P)
        start = int((prompt_mask.sum(0) == 0).sum())  # leading all-padding columns (left padding)
        ids = torch.cat([rollout.prompt_ids[idx][:, start:], rollout.completion_ids[idx]], dim=1)  # (n, P'+C)
        attn = torch.cat([prompt_mask[:, start:], rollout.completion_mask[idx]], dim=1)  # (n, P'+C)
        c = rollout.completion_ids.shape[1]
        out = model(input_ids=ids, attention_mask=attn, position_ids=_positions(attn), logits_to_keep=c + 1)
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
    p_pos = _positions(p_mask)
    cache = _new_cache(model)
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


# ---------------------------------------------------------------------------------------------
# rewards
# ---------------------------------------------------------------------------------------------


@dataclass
class Score:
    """One graded completion. ``components`` holds the per-verifier rewards of a composite."""

    reward: float
    outcome: str
    components: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    steps: list[tuple[float, int, int]] = field(default_factory=list)  # (reward, start, end) per step (process.py)


class RewardFn(Protocol):
    """Grades a batch: completions[i] against references[i] (prompts[i] for context)."""

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]: ...


class VerifierReward:
    """Rewards from the verifier service: one ``VerifyBatch`` call per step, through the client only."""

    def __init__(self, verifier: str, target: str | None = None, *, client: VerifierClient | None = None, **kw):
        if client is None and target is None:
            raise ValueError("VerifierReward needs a target ('host:port') or a client")
        self.verifier = verifier
        self.client = client or VerifierClient(target, **kw)

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]:
        items = [
            VerifyItem(verifier=self.verifier, completion=c, reference=r, prompt=p, id=str(i))
            for i, (c, r, p) in enumerate(zip(completions, references, prompts, strict=True))
        ]
        results = self.client.verify_batch(items)
        steps = [[(x["reward"], x["start"], x["end"]) for x in r.steps] for r in results]
        return [
            Score(r.reward, r.outcome, dict(r.components), r.elapsed_s, st)
            for r, st in zip(results, steps, strict=True)
        ]

    def check(self, timeout_s: float = 15.0) -> None:
        """Fail early, with what to do, when the service is unreachable or does not know the verifier."""
        try:
            self.client.wait_ready(timeout_s)
        except Exception:  # grpc.FutureTimeoutError
            raise SystemExit(
                f"verifier service not reachable at {self.client.target}: start it (`python -m verifiers.server`, "
                "or `make train`, which starts one) or set verifier_target to where it runs"
            ) from None
        names = [v.name for v in self.client.list_verifiers()]
        if self.verifier not in names:
            raise SystemExit(f"verifier {self.verifier!r} is not registered at {self.client.target}; known: {names}")

    def close(self) -> None:
        self.client.close()


class PythonReward:
    """A plain ``fn(completion, reference) -> float | None`` (None: nothing gradable). Benchmarks only."""

    def __init__(self, fn: Callable[[str, str], float | None], name: str = "python"):
        self.fn, self.name = fn, name

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]:
        out = []
        for c, r in zip(completions, references, strict=True):
            v = self.fn(c, r)
            outcome = "NO_ANSWER" if v is None else ("CORRECT" if v >= 1.0 else "INCORRECT")
            out.append(Score(float(v or 0.0), outcome, {self.name: float(v or 0.0)}))
        return out


# ---------------------------------------------------------------------------------------------
# a training batch: data stream -> rollout -> grades (dynamic sampling refills)
# ---------------------------------------------------------------------------------------------


class DataStream:
    """Endless, seeded pass over the examples; a new permutation each epoch. State: (epoch, position)."""

    def __init__(self, examples: list[Example], seed: int):
        self.examples, self.seed, self.epoch, self.pos = examples, seed, 0, 0
        self._order = self._perm()

    def _perm(self) -> list[int]:
        return np.random.default_rng([self.seed, self.epoch]).permutation(len(self.examples)).tolist()

    def take(self, n: int) -> list[Example]:
        out = []
        while len(out) < n:
            if self.pos == len(self._order):
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._perm()
            out.append(self.examples[self._order[self.pos]])
            self.pos += 1
        return out

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load(self, state: dict[str, int]) -> None:
        self.epoch, self.pos = state["epoch"], state["pos"]
        self._order = self._perm()


@dataclass
class Batch:
    """One step's training data: the rollout and its grades."""

    rollout: Rollout
    rewards: Tensor  # (N,) float32, SANDBOX_ERROR entries hold 0
    valid: Tensor  # (N,) bool: graded (not SANDBOX_ERROR / BAD_REFERENCE)
    scores: list[Score]
    verify_s: float
    rollouts: int  # how many generate calls built this batch (dynamic sampling refills)


def grade(
    reward_fn: RewardFn, rollout: Rollout, scorer: GroupScorer | None = None
) -> tuple[Tensor, Tensor, list[Score], float]:
    """Rewards of the rollout and the seconds the step waited for them (with ``scorer``: only what was
    still outstanding after decoding; the groups it already sent were graded meanwhile)."""
    t0 = time.perf_counter()
    if scorer is not None:
        scores, dt = scorer.finish(rollout.texts)
    else:
        scores = reward_fn(rollout.texts, rollout.references, rollout.prompts)
        dt = time.perf_counter() - t0
    if len(scores) != len(rollout):
        raise RuntimeError(f"reward function returned {len(scores)} scores for {len(rollout)} completions")
    rewards = torch.tensor([s.reward for s in scores], dtype=torch.float32)
    valid = torch.tensor([s.outcome not in UNGRADED for s in scores])
    return rewards, valid, scores, dt


def informative_groups(rewards: Tensor, valid: Tensor, g: int) -> Tensor:
    """(P,) bool: the group has >= 2 valid samples with different rewards."""
    r, v = rewards.view(-1, g), valid.view(-1, g)
    hi = torch.where(v, r, torch.full_like(r, -torch.inf)).amax(1)
    lo = torch.where(v, r, torch.full_like(r, torch.inf)).amin(1)
    return (v.sum(1) >= 2) & (hi > lo)


def _pad_cat(tensors: list[Tensor], value: int, left: bool) -> Tensor:
    width = max(t.shape[1] for t in tensors)
    pad = [(width - t.shape[1], 0) if left else (0, width - t.shape[1]) for t in tensors]
    return torch.cat([torch.nn.functional.pad(t, p, value=value) for t, p in zip(tensors, pad, strict=True)])


def concat_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Stack rollouts of different widths: prompts padded on the left, completions on the right."""
    if len(parts) == 1:
        return parts[0]
    return Rollout(
        _pad_cat([p.prompt_ids for p in parts], pad_id, left=True),
        _pad_cat([p.prompt_mask for p in parts], 0, left=True),
        _pad_cat([p.completion_ids for p in parts], pad_id, left=False),
        _pad_cat([p.completion_mask for p in parts], 0, left=False),
        torch.cat([p.truncated for p in parts]),
        sum((p.texts for p in parts), []),
        sum((p.prompts for p in parts), []),
        sum((p.references for p in parts), []),
    )


def collect_batch(cfg: GRPOConfig, model, tokenizer, stream: DataStream, reward_fn: RewardFn, backend=None) -> Batch:
    """prompts x G -> rollout (the policy samples, or ``backend.generate``: rollout_backend.py) -> rewards. With dynamic sampling, keep only informative groups and
    sample more prompts (up to max_refills times); top up with uninformative groups if still short."""
    g, want = cfg.group_size, cfg.prompts_per_step
    kept: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    spare: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    verify_s, rollouts, have = 0.0, 0, 0
    while have < want and rollouts <= (cfg.max_refills if cfg.dynamic_sampling else 0):
        examples = stream.take(want - have if cfg.dynamic_sampling else want)
        scorer = None
        if cfg.overlap_scoring:  # each group is graded as soon as it is decoded (overlap.py)
            refs = [e.reference for e in examples for _ in range(g)]
            prompts = [e.prompt for e in examples for _ in range(g)]
            scorer = GroupScorer(reward_fn, g, refs, prompts, workers=cfg.scoring_workers)
        sample = partial(generate_rollout, model, tokenizer) if backend is None else backend.generate
        ro = sample(
            examples,
            g,
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            use_chat_template=cfg.use_chat_template,
            share_prefix=cfg.share_prefix,
            fast_decode=cfg.fast_decode,
            on_groups_done=None if scorer is None else scorer.submit,
        )
        rewards, valid, scores, dt = grade(reward_fn, ro, scorer)
        verify_s, rollouts = verify_s + dt, rollouts + 1
        good = informative_groups(rewards, valid, g) if cfg.dynamic_sampling else torch.ones(len(ro) // g, dtype=bool)
        for keep, bucket in ((True, kept), (False, spare)):
            groups = [i for i in range(len(good)) if bool(good[i]) == keep]
            rows = [i * g + j for i in groups for j in range(g)]
            if rows:
                bucket.append((ro.select(rows), rewards[rows], valid[rows], [scores[i] for i in rows]))
        have = sum(len(k[0]) for k in kept) // g
    parts = _take_groups(kept + spare, want * g)
    ro = concat_rollouts([p[0] for p in parts], tokenizer.pad_token_id)
    return Batch(
        ro,
        torch.cat([p[1] for p in parts]),
        torch.cat([p[2] for p in parts]),
        sum((p[3] for p in parts), []),
        verify_s,
        rollouts,
    )


def _take_groups(parts: list, n_rows: int) -> list:
    out, left = [], n_rows
    for ro, r, v, s in parts:
        if left <= 0:
            break
        k = min(left, len(ro))
        out.append((ro.select(range(k)), r[:k], v[:k], s[:k]) if k < len(ro) else (ro, r, v, s))
        left -= k
    return out
