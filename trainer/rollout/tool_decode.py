"""Tool rollouts: the policy calls Python in the middle of its answer (tool-integrated reasoning).

``generate_tool_rollout`` takes the keywords of ``generate_rollout`` (trainer/rollout/decode.py) plus a
``ToolRunner`` and the run's ``ToolsConfig``, and returns the same ``Rollout``. All rows of a step advance
together, in phases:

1. decode: one forward per token for every row still decoding. A row whose text since its last output ends a
   call (``CallFormat.find_call``: the closing fence of a ```` ```python ```` block by default) pauses; a row
   that samples EOS, fills the token budget, or makes a call past ``max_calls`` ends. The phase ends when no
   row is decoding.
2. tools: the paused rows' calls run in parallel (``run_calls``, each in its rollout's session). Each output is
   wrapped in its span (``<output>...</output>``, cut to ``output_chars``), tokenized and appended in ONE
   forward over all rows; decoding goes on from the KV cache (never re-encoding the prefix). A session that
   fails (``infra``) ends its row, which is then masked out of the loss (an infrastructure outcome, not 0).

Rows stay aligned in one cache: a row that does not take part in a forward gets a padding column there (mask 0),
and position ids follow the mask, so the gaps change nothing (the log-probs equal those of re-encoding the
compacted sequence: tests/trainer/test_tool_rollout.py). The lean forward and the HF forward (a
``DynamicCache``) run the same loop. The token budget ``max_new_tokens`` counts policy and tool tokens.

What comes back: ``completion_ids`` hold the policy's and the tools' tokens in order, ``policy_mask`` marks the
policy's (``Rollout.sampled_mask``: the only tokens the loss, the KL, the ratio and every normaliser see),
``texts`` (what is graded) is the policy's own tokens only, so a ``\\boxed{}`` printed by a tool is never the
answer; ``full_texts`` is everything, for logs. ``reencode=True`` rebuilds the cache from the whole sequence after
every tool output instead (the slow way, for bench/training/tool_rollout.py and the equivalence test).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from trainer.config.tools import ToolsConfig
from trainer.data import Example
from trainer.errors import ConfigError
from trainer.rollout.decode import Rollout, SampleOptions, encode_prompts
from trainer.rollout.decode_loop import eos_token_ids, fast_decode_supported, hf_forward, new_kv_cache, prefill
from trainer.rollout.lean_forward import LeanDecoder, lean_supported, mask_positions
from trainer.rollout.sampling import next_tokens, picked_logprob
from trainer.rollout.tool_engines import ToolEngine
from trainer.rollout.tools import (
    FORMATS,
    CallFormat,
    ToolResult,
    ToolRunner,
    ToolTrace,
    call_code,
    policy_text,
    run_calls,
)

DECODE, CALL, DONE = 0, 1, 2  # a row's state


class _Context:
    """The rows' shared KV cache (lean or HF) and the full (N, S) ids and mask it holds; ``append`` feeds columns."""

    def __init__(self, model, ids: Tensor, attn: Tensor, group_size: int, lean_ok: bool, capacity: int, reencode: bool):
        self.model, self.lean_ok, self.reencode = model, lean_ok, reencode
        self.ids, self.mask = ids, attn
        cache, lean = prefill(model, ids, attn, group_size, lean_ok, capacity)
        self.logits = self._open(cache, lean, capacity)

    def _open(self, cache, lean, capacity: int) -> Tensor:
        """Start decoding from ``cache`` / ``lean`` (which may hold all but the last token), or from nothing."""
        if lean is None and cache is None and self.lean_ok and lean_supported(self.model):
            lean = LeanDecoder(self.model, len(self.ids), capacity)
        self.lean = lean
        if lean is not None:
            self.forward, fed = lean.forward, lean.length
        else:
            cache = new_kv_cache(self.model) if cache is None else cache
            self.forward, fed = hf_forward(self.model, cache), cache.get_seq_length()
        pos = mask_positions(self.mask)
        return self.forward(self.ids[:, fed:], self._mask(), pos[:, fed:])

    def _mask(self) -> Tensor | None:
        return None if bool(self.mask.all()) else self.mask

    def append(self, cols: Tensor, m: Tensor) -> Tensor:
        """Feed (N, L) columns with mask (N, L); (N, V) logits of each row's last position."""
        self.ids, self.mask = torch.cat([self.ids, cols], 1), torch.cat([self.mask, m.to(self.mask.dtype)], 1)
        if self.reencode and cols.shape[1] > 1:  # the slow way: a fresh cache, the whole sequence again
            return self._open(None, None, self.ids.shape[1] + 64)
        if self.lean is not None and self.ids.shape[1] > self.lean.capacity:
            self.lean.grow(max(self.ids.shape[1], 2 * self.lean.capacity))
        pos = mask_positions(self.mask)[:, -cols.shape[1] :]
        return self.forward(cols, self._mask(), pos)


@dataclass
class RowState:
    """Each row's completion so far: tokens, which the policy sampled, their log-probs, and its tool state."""

    n: int
    fmt: CallFormat
    tokenizer: object
    eos: set[int]
    budget: int
    max_calls: int
    toks: list[list[int]] = field(default_factory=list)
    pol: list[list[int]] = field(default_factory=list)
    lps: list[list[float]] = field(default_factory=list)
    state: list[int] = field(default_factory=list)
    seg: list[int] = field(default_factory=list)  # where the policy's current span (since the last output) starts
    pending: dict[int, str] = field(default_factory=dict)  # row -> the call's body
    truncated: list[bool] = field(default_factory=list)
    trace: ToolTrace = field(default_factory=lambda: ToolTrace([], [], []))

    def __post_init__(self) -> None:
        n = self.n
        self.toks, self.pol, self.lps = [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)]
        self.state, self.seg, self.truncated = [DECODE] * n, [0] * n, [False] * n
        self.trace = ToolTrace([0] * n, [0] * n, [False] * n)
        self.tail = len(self.fmt.stop) + 4  # tokens enough to hold the stop marker

    def decoding(self) -> list[int]:
        return [r for r in range(self.n) if self.state[r] == DECODE]

    def push(self, r: int, tok: int, lp: float) -> None:
        """Row r sampled ``tok``: EOS, budget, or a call ends or pauses it."""
        self.toks[r].append(tok)
        self.pol[r].append(1)
        self.lps[r].append(lp)
        if tok in self.eos:
            self.state[r] = DONE
            return
        span = self.toks[r][self.seg[r] :]
        if self.fmt.stop in self.tokenizer.decode(span[-self.tail :], skip_special_tokens=True):
            body = self.fmt.find_call(self.tokenizer.decode(span, skip_special_tokens=True))
            if body is not None:
                if self.trace.calls[r] >= self.max_calls:  # a call past the limit ends the rollout, unrun
                    self.state[r] = DONE
                    return
                self.pending[r], self.state[r] = body, CALL
        if len(self.toks[r]) >= self.budget and self.state[r] != DONE:
            self.state[r], self.truncated[r] = DONE, True
            self.pending.pop(r, None)

    def add_output(self, r: int, ids: list[int], res: ToolResult, code: str = "") -> bool:
        """Append a call's output span to row r (``code``: what the call ran); True when the row decodes on."""
        self.trace.calls[r] += 1
        self.trace.outputs[r].append(res.output)
        self.trace.codes[r].append(code)
        if res.status == "infra":  # the session died: an infrastructure outcome, masked out of the loss
            self.trace.infra[r], self.state[r] = True, DONE
            return False
        self.trace.errors[r] += res.status != "ok"
        room = self.budget - len(self.toks[r])
        ids = ids[:room]
        self.toks[r] += ids
        self.pol[r] += [0] * len(ids)
        self.lps[r] += [0.0] * len(ids)
        self.seg[r] = len(self.toks[r])
        if len(self.toks[r]) >= self.budget:
            self.state[r], self.truncated[r] = DONE, True
            return False
        self.state[r] = DECODE
        return True


def _decode_phase(ctx: _Context, rows: RowState, logits: Tensor, pad_id: int, sampling: dict) -> Tensor:
    """Every decoding row samples until it ends or pauses at a call; the logits the next tokens come from."""
    while True:
        active = rows.decoding()
        if not active:
            return logits
        nxt, scores = next_tokens(logits, **sampling)  # (N,), (N, V)
        lp = picked_logprob(scores, nxt)
        toks, lps = nxt.tolist(), lp.tolist()
        for r in active:
            rows.push(r, toks[r], lps[r])
        fed = [r for r in active if rows.state[r] != DONE]  # paused rows' last token goes in the cache too
        if not fed:
            return logits
        m = torch.zeros(rows.n, 1, dtype=torch.long, device=nxt.device)
        m[fed] = 1
        logits = ctx.append(torch.where(m[:, 0].bool(), nxt, pad_id)[:, None], m)


class KVEngine:
    """The hf path's ``ToolEngine`` (trainer/rollout/tool_engines.py): every row in one KV cache (``_Context``);
    decoding continues from the cache after each output span, never re-encoding the prefix."""

    def __init__(self, ctx: _Context, pad_id: int):
        self.ctx, self.pad_id, self.logits = ctx, pad_id, ctx.logits

    def decode(self, rows: RowState, sampling: dict) -> None:
        self.logits = _decode_phase(self.ctx, rows, self.logits, self.pad_id, sampling)

    def append(self, spans: dict[int, list[int]]) -> None:
        """The output spans of the rows that go on, in ONE forward over all rows."""
        if not spans:
            return
        width = max(len(s) for s in spans.values())
        cols = torch.full((len(self.ctx.ids), width), self.pad_id, dtype=torch.long, device=self.logits.device)
        m = torch.zeros_like(cols)
        for r, s in spans.items():  # right-aligned, so every continuing row's last column is its own last token
            cols[r, width - len(s) :] = torch.tensor(s, device=cols.device)
            m[r, width - len(s) :] = 1
        self.logits = self.ctx.append(cols, m)


def _tool_phase(
    rows: RowState, runner: ToolRunner, handles: list, cfg: ToolsConfig
) -> tuple[dict[int, list[int]], float]:
    """Run the paused rows' calls in parallel; the output spans of the rows that go on, and the seconds."""
    calls = sorted(rows.pending.items())
    rows.pending.clear()
    todo = [(r, *call_code(rows.fmt, body)) for r, body in calls]
    t0 = time.perf_counter()
    ran = run_calls(runner, [(handles[r], code) for r, code, _ in todo if code is not None], cfg.timeout_s, cfg.workers)
    dt = time.perf_counter() - t0
    results = iter(ran)
    spans: dict[int, list[int]] = {}
    for r, code, err in todo:
        res = next(results) if code is not None else ToolResult(err, "error")
        ids = rows.tokenizer(rows.fmt.wrap(res.output, cfg.output_chars), add_special_tokens=False)["input_ids"]
        if rows.add_output(r, ids, res, code or ""):
            spans[r] = ids
    return spans, dt


def generate_tool_rollout(
    model,
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    opts: SampleOptions | None = None,
    *,
    runner: ToolRunner,
    tools: ToolsConfig,
    reencode: bool = False,
    engine: Callable[[Tensor, Tensor, RowState], ToolEngine] | None = None,
    on_groups_done: object = None,  # generate_rollout's: tool rollouts are graded when the whole batch is done
    record: bool = False,  # generate_rollout's: nothing is recorded for the replay (tool spans change the context)
    **kw: Any,
) -> Rollout:
    """G completions per example, calling tools through ``runner`` (see the module doc); the sampling settings are
    ``generate_rollout``'s (``SampleOptions``, as one object and/or keywords). ``engine(ids, attn, rows)`` makes the
    generator the loop drives (default: ``KVEngine``, the policy's own KV cache; the vLLM backend passes a
    ``ResubmitEngine``, trainer/rollout/tool_engines.py)."""
    o = SampleOptions.of(opts, kw)
    if not fast_decode_supported(model):
        raise ConfigError("tools: the model is not one the trainer's decode loop covers (a decoder-only HF model)")
    ids, attn = encode_prompts(model, tokenizer, examples, group_size, o.use_chat_template)  # (N, P) each
    max_new_tokens, fast_decode, fast_path = o.max_new_tokens, o.fast_decode, o.fast_path
    rows = RowState(
        len(ids),
        FORMATS[tools.format],
        tokenizer,
        set(eos_token_ids(model, tokenizer)),
        max_new_tokens,
        tools.max_calls,
    )
    shared = group_size if o.share_prefix and group_size > 1 and ids.shape[1] > 1 else 0
    sampling = o.sampling()
    t0 = time.perf_counter()
    handles = runner.start(len(examples), group_size, tools.setup)
    rows.trace.tool_s += time.perf_counter() - t0  # opening (and forking) the sessions counts as time in tools
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            if engine is None:
                cap = ids.shape[1] + max_new_tokens
                gen: ToolEngine = KVEngine(
                    _Context(model, ids, attn, shared, fast_decode and fast_path, cap, reencode), tokenizer.pad_token_id
                )
            else:
                gen = engine(ids, attn, rows)
            while True:
                gen.decode(rows, sampling)
                if not rows.pending:
                    break
                spans, dt = _tool_phase(rows, runner, handles, tools)
                gen.append(spans)
                rows.trace.tool_s += dt
    finally:
        model.train(was_training)
        t0 = time.perf_counter()
        runner.close(handles)
        rows.trace.tool_s += time.perf_counter() - t0
    return _rollout(rows, examples, group_size, ids, attn, tokenizer)


def _rollout(rows: RowState, examples, group_size: int, ids: Tensor, attn: Tensor, tokenizer) -> Rollout:
    width = max(1, max(len(t) for t in rows.toks))
    n, dev = rows.n, ids.device
    comp = torch.full((n, width), tokenizer.pad_token_id, dtype=torch.long)
    mask, pol, lps = (
        torch.zeros(n, width, dtype=torch.long),
        torch.zeros(n, width, dtype=torch.long),
        torch.zeros(n, width),
    )
    for r in range(n):
        k = len(rows.toks[r])
        comp[r, :k], mask[r, :k] = torch.tensor(rows.toks[r], dtype=torch.long), 1
        pol[r, :k], lps[r, :k] = torch.tensor(rows.pol[r], dtype=torch.long), torch.tensor(rows.lps[r])
    return Rollout(
        ids,
        attn,
        comp.to(dev),
        mask.to(dev),
        torch.tensor(rows.truncated, device=dev),
        [policy_text(tokenizer, rows.toks[r], rows.pol[r]) for r in range(n)],  # graded: the policy's own tokens
        [e.prompt for e in examples for _ in range(group_size)],
        [e.reference for e in examples for _ in range(group_size)],
        lps.to(dev),
        None,
        policy_mask=pol.to(dev),
        full_texts=tokenizer.batch_decode(rows.toks, skip_special_tokens=True),
        tool_trace=rows.trace,
    )
