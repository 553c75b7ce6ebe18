"""The training forward without its matmuls: the decode already computed them.

At mu == 1 (and on the first minibatch of any update) the policy that takes the gradient step is the
policy that sampled the rollout, so the training forward recomputes, position by position, what the lean
decode (trainer/rollout/lean_forward.py) computed while sampling. A ``Recording`` keeps it: for each layer the
output of each matmul step (q/k/v after the RMSNorm, the residual stream after attention, gate/up after
the RMSNorm, the residual stream after the MLP) and the logits each token was drawn from. ``replay_logits``
then runs the forward with autograd, where every matmul step is an autograd function whose forward
returns the recorded output and whose backward is the step's own (dx = dy w^T, dw = x^T dy, through the
RMSNorm on the narrow side); rotary, attention and SiLU are recomputed, so autograd sees the whole graph.
The gradient is the one of the ordinary forward up to float rounding (tests/trainer/test_replay.py: log-probs to
1e-5 and every parameter's gradient to 1e-5 relative, against the HF model's own forward).

It applies only where it is exact: the recording's model object, still ``lean_supported``, no optimizer
step anywhere in the process since the rollout (a global ``torch.optim`` step hook counts them: the fused
AdamW the trainer uses by default does not bump the parameters' version counters, and a user's optimizer
may write through ``p.data``), every parameter's version counter unchanged (in-place edits outside an
optimizer), gradients on, no autocast, whole groups when the prompt was shared. Anything else (a stale
recording, a DDP/FSDP wrapper, rows from two rollouts) takes the ordinary forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.optim.optimizer import register_optimizer_step_post_hook

from trainer.rollout.lean_forward import LeanWeights, add_mm, attention_mask, lean_supported, mask_positions, norm_mm

MAX_BYTES = 1 << 30  # recordings larger than this are not kept (the ordinary forward runs instead)
KINDS = ("qkv", "attn_out", "gate_up", "mlp_out")  # what each layer records, in the decoder's order
_optimizer_steps = [0]  # optimizer steps taken in this process (every torch.optim.Optimizer, any model)


def _count_step(optimizer, args, kwargs) -> None:
    _optimizer_steps[0] += 1


register_optimizer_step_post_hook(_count_step)


def _versions(model) -> tuple[int, ...]:
    return tuple(p._version for p in model.parameters())


def _normal_empty(like: Tensor, *shape: int) -> Tensor:
    """An empty buffer that autograd may use later: the decode runs under inference_mode, whose own
    tensors cannot be saved for backward (writing into this one there is fine)."""
    with torch.inference_mode(False):
        return like.new_empty(shape)


class Recording:
    """What one lean decode computed, by layer and position, position-major (so that one token per row
    is one contiguous (rows, width) block the matmul writes into): ``head`` (positions [0, split), the rows
    before the prompt was repeated G times) and ``tail`` (all rows, positions [split, end)), each a list
    per layer of {kind: (positions, rows, width)}; ``logits`` (steps, N, V) the logits the tokens were
    drawn from."""

    def __init__(self, model, capacity: int, max_new_tokens: int):
        self.model, self.versions, self.optimizer_steps = model, _versions(model), _optimizer_steps[0]
        self.layers = model.config.num_hidden_layers
        self.max_new = max_new_tokens
        self.capacity = capacity - 1  # positions fed: the last sampled token never is
        self.head: list[dict[str, Tensor]] = []
        self.tail: list[dict[str, Tensor]] = []
        self.split, self.group = 0, 0
        self.logits: Tensor | None = None
        self.steps = 0
        self._pending: list[tuple[Tensor, Tensor, int, int]] = []

    @staticmethod
    def fits(rows: int, capacity: int, model, max_new_tokens: int) -> bool:
        cfg = model.config
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        qkv = (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * hd
        per_pos = cfg.num_hidden_layers * (qkv + 2 * cfg.intermediate_size + 2 * cfg.hidden_size)
        return 4 * rows * (capacity * per_pos + max_new_tokens * cfg.vocab_size) <= MAX_BYTES

    def slots(self, n: int, start: int, length: int, like: Tensor, widths: tuple[int, ...]) -> list[tuple]:
        """Per layer, where the decoder writes its (n*length, width) outputs (q/k/v, attention output,
        gate/up, MLP output) for positions [start, start+length): the buffers themselves for one token
        per row (position-major: one contiguous (n, width) block), else scratch tensors ``flush`` copies in."""
        at = start - self.split
        if not self.tail:
            self.tail = [
                {k: _normal_empty(like, self.capacity - self.split, n, w) for k, w in zip(KINDS, widths, strict=True)}
                for _ in range(self.layers)
            ]
        if length == 1:
            return [tuple(layer[k][at] for k in KINDS) for layer in self.tail]
        out = []
        for layer in self.tail:
            scratch = tuple(like.new_empty(n * length, layer[k].shape[-1]) for k in KINDS)
            self._pending += [(layer[k], t, at, length) for k, t in zip(KINDS, scratch, strict=True)]
            out.append(scratch)
        return out

    def logits_product(self, n: int, vocab: int, like: Tensor) -> Tensor:
        if self.logits is None:
            self.logits = _normal_empty(like, self.max_new, n, vocab)
        self.steps += 1
        return self.logits[self.steps - 1]

    def flush(self) -> None:
        """Copy the scratch outputs of a multi-token forward into their (positions, rows) place."""
        for buf, scratch, at, length in self._pending:
            buf[at : at + length] = scratch.view(-1, length, buf.shape[-1]).transpose(0, 1)
        self._pending = []

    def repeat(self, g: int, length: int) -> None:
        """The decoder repeated its rows g times after ``length`` positions: those become the head."""
        self.head = [{k: v[:length] for k, v in layer.items()} for layer in self.tail]
        self.tail, self.split, self.group = [], length, g
        self.logits, self.steps = None, 0  # the prefill's last logits are not sampled from

    def usable(self, model, completion_len: int) -> bool:
        """Whether the training forward of ``model`` may replay this recording now (the caller checks that
        its rows are whole groups of ``self.group``): the weights are the ones it was recorded under."""
        return (
            model is self.model
            and self.optimizer_steps == _optimizer_steps[0]
            and torch.is_grad_enabled()
            and not torch.is_autocast_enabled(next(model.parameters()).device.type)
            and self.steps == completion_len
            and _versions(model) == self.versions
            and lean_supported(model)
        )


class _Residual(torch.autograd.Function):
    """h + x @ w (+ b), taken from a recording; the backward is the residual add's and the matmul's."""

    @staticmethod
    def forward(ctx, h: Tensor, x: Tensor, w: Tensor, b: Tensor | None, recorded: Tensor) -> Tensor:
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        return recorded

    @staticmethod
    def backward(ctx, dy: Tensor):
        x, w = ctx.saved_tensors
        dx = dy @ w.t() if ctx.needs_input_grad[1] else None
        dw = x.t() @ dy if ctx.needs_input_grad[2] else None
        db = dy.sum(0) if ctx.has_bias and ctx.needs_input_grad[3] else None
        return dy, dx, dw, db, None


class _NormProduct(torch.autograd.Function):
    """RMSNorm(x) @ w (+ b), the norm's scale folded into ``w`` (the lean decoder's norm_mm), its value
    taken from a recording; the backward is the normalised matmul's, on the narrow side (x normalised,
    (m, H)): no elementwise op touches the wide output."""

    @staticmethod
    def forward(ctx, x: Tensor, w: Tensor, b: Tensor | None, recorded: Tensor, eps: float) -> Tensor:
        r = (x * x).sum(-1, keepdim=True).mul_(1.0 / x.shape[-1]).add_(eps).rsqrt_()  # (m, 1)
        ctx.save_for_backward(x, w, r)
        ctx.has_bias = b is not None
        return recorded

    @staticmethod
    def backward(ctx, dy: Tensor):
        x, w, r = ctx.saved_tensors
        xn = x * r  # RMSNorm(x) without its scale (folded into w)
        dw = xn.t() @ dy if ctx.needs_input_grad[1] else None
        db = dy.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        dx = None
        if ctx.needs_input_grad[0]:
            dxn = dy @ w.t()
            dx = r * (dxn - xn * (dxn * xn).mean(-1, keepdim=True))  # through 1/rms(x)
        return dx, dw, db, None, None


def _pick(buf: Tensor, rows: Tensor | None, length: int) -> Tensor:
    """(positions, R, w) recorded -> (length * len(rows), w), position-major, for the selected rows."""
    sel = buf[:length] if rows is None else buf[:length, rows]
    return sel.reshape(-1, buf.shape[-1])


def _norm_step(h: Tensor, w: Tensor, b: Tensor | None, eps: float, rec: Tensor | None, rows, length: int) -> Tensor:
    """RMSNorm(h) @ w (+ b): from the recording, or computed (no recording: scoring without gradients)."""
    if rec is None:
        return norm_mm(h, eps, w, b)
    return _NormProduct.apply(h, w, b, _pick(rec, rows, length), eps)


def _residual_step(h: Tensor, x: Tensor, w: Tensor, b: Tensor | None, rec: Tensor | None, rows, length: int) -> Tensor:
    """h + x @ w (+ b): from the recording, or computed."""
    return add_mm(h, x, w, b) if rec is None else _Residual.apply(h, x, w, b, _pick(rec, rows, length))


def _pass(dec: LeanWeights, ids, pos, mask, rec_layers, rows, past):
    """One forward over (m, L) tokens, matmul outputs from ``rec_layers`` (with autograd) or computed
    (None, without), in position-major row order; returns the last layer's (L*m, H) output and each
    layer's (k, v) (m, hk, S, d), ``past`` prepended."""
    m, length = ids.shape
    hq, hk, d = dec.heads, dec.kv_heads, dec.head_dim
    h = F.embedding(ids.t().reshape(-1), dec.embed, padding_idx=dec.padding_idx)  # nn.Embedding's gradient
    cis = dec.rope(pos.t())  # (L, m, 1, D/2)
    kv = []
    for i, ly in enumerate(dec.layers):
        r = rec_layers[i] if rec_layers is not None else dict.fromkeys(KINDS)
        qkv = _norm_step(h, ly.w_qkv, ly.b_qkv, ly.eps1, r["qkv"], rows, length).view(length, m, hq + 2 * hk, d)
        pairs = torch.view_as_complex(qkv[:, :, : hq + hk].unflatten(-1, (d // 2, 2)))
        qk = torch.view_as_real(pairs * cis).flatten(-2)  # (L, m, hq + hk, d)
        k, v = qk[:, :, hq:].permute(1, 2, 0, 3), qkv[:, :, hq + hk :].permute(1, 2, 0, 3)  # (m, hk, L, d)
        if past is not None:
            k, v = torch.cat([past[i][0], k], dim=2), torch.cat([past[i][1], v], dim=2)
        kv.append((k, v))
        q = qk[:, :, :hq].permute(1, 2, 0, 3)  # (m, hq, L, d)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=dec.scaling, enable_gqa=hq != hk)
        a = a.permute(2, 0, 1, 3).reshape(length * m, hq * d)
        h = _residual_step(h, a, ly.w_o, ly.b_o, r["attn_out"], rows, length)
        gate, up = _norm_step(h, ly.w_gu, ly.b_gu, ly.eps2, r["gate_up"], rows, length).chunk(2, dim=-1)
        h = _residual_step(h, F.silu(gate) * up, ly.w_down, ly.b_down, r["mlp_out"], rows, length)
    return h, kv


def replay_logits(model, rollout, rows: Tensor, group_size: int = 0, recording: Recording | None = None) -> Tensor:
    """(n, C, V) logits of the completions of ``rows`` (whole groups).

    With ``recording`` (the rollout's, ``Recording.usable`` said yes): with autograd, the matmul outputs
    replayed. Without: the lean forward computed in full, for scoring under
    no_grad / inference_mode only (a reference or old-policy pass of a ``lean_supported`` model), each
    group's prompt but its last token encoded once when ``group_size`` > 1. The sequence is the one the
    decode fed: prompt + completion but its last token, the keys after an EOS not masked (they only reach
    positions after the EOS, whose log-probs the loss masks)."""
    rec = recording
    if rec is None and torch.is_grad_enabled():
        raise RuntimeError("replay_logits without a recording computes without autograd: call it under no_grad")
    dec = LeanWeights(model)  # under autograd when replaying: the fused weights lead back to the parameters
    n, c = rows.numel(), rollout.completion_ids.shape[1]
    all_rows = n == len(rollout) and bool((rows == torch.arange(n, device=rows.device)).all())
    pick = None if all_rows else rows
    ids = torch.cat([rollout.prompt_ids[rows], rollout.completion_ids[rows][:, : c - 1]], dim=1)  # what was fed
    p_mask = rollout.prompt_mask[rows]
    key_mask = torch.cat([p_mask, p_mask.new_ones(n, c - 1)], dim=1)
    p_pos = mask_positions(p_mask)
    pos = torch.cat([p_pos, p_pos[:, -1:] + torch.arange(1, c, device=rows.device)], dim=1)
    p = rollout.prompt_ids.shape[1]
    if rec is not None:
        split, g = rec.split, rec.group
    else:
        g = group_size if group_size > 1 else 0
        split = p - 1 if g else 0
    past = None
    if split:
        head_rows = None if all_rows else rows.view(-1, g)[:, 0] // g  # the recording's head rows
        mask = attention_mask(key_mask[::g, :split], n // g, split, split, ids.device)
        head = None if rec is None else rec.head
        _, kv = _pass(dec, ids[::g, :split], pos[::g, :split], mask, head, head_rows, None)
        past = [(k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)) for k, v in kv]
    length = ids.shape[1] - split
    tail = None if rec is None else rec.tail
    mask = attention_mask(key_mask, n, length, key_mask.shape[1], ids.device)
    h, _ = _pass(dec, ids[:, split:], pos[:, split:], mask, tail, pick, past)
    last = h.view(length, n, -1)[p - 1 - split :].reshape(c * n, -1)  # positions whose logits were sampled
    logits = _norm_step(last, dec.lm_head, dec.lm_bias, dec.norm_eps, None if rec is None else rec.logits, pick, c)
    return logits.view(c, n, -1).transpose(0, 1)  # (n, C, V)
