"""A lean incremental forward for Qwen2 / Llama-architecture causal LMs, used by the decode loop.

At the sizes a CPU trains (a ~1M-parameter model, 32 rows), one token's forward through the HF modules
costs more in Python (module calls, mask building, cache objects, rotary recomputed per layer) than in
arithmetic. ``LeanDecoder`` runs the same computation on the model's own weights with:

- a preallocated KV cache per layer, (rows, kv_heads, capacity, head_dim), written in place;
- one matmul for q, k and v (their weights concatenated once per rollout) and one for gate and up, on
  rows flattened to 2-D, the residual adds fused into the o_proj and down_proj matmuls;
- each RMSNorm's scale folded into the projection after it (1/rms scales the output rows);
- rotary as one complex multiply on q and k together (their head dims reordered into pairs in the
  weights; q.k is unchanged by a common reordering), from rotations computed once per forward;
- ``torch.nn.functional.scaled_dot_product_attention`` with a boolean mask (GQA via ``enable_gqa``);
- logits for the last position only.

It is exact to the HF model up to float rounding (tests/trainer/test_lean_forward.py: fp32 logits and log-probs
to 1e-5 against HF's, left padding, grouped-query attention; sampled tokens identical under one seed).
``lean_supported`` accepts only what it reproduces: ``Qwen2ForCausalLM`` / ``LlamaForCausalLM`` from
transformers themselves (not peft, DDP or FSDP wrappers, not a remote-code class of the same name) whose
every submodule is of its family's own classes or an exact ``nn.Linear`` / ``nn.Embedding`` / SiLU (an
adapter injected in place by ``add_adapter``, a quantised or parametrized linear, a user's subclass is
none), no quantisation config, no module hooks (forward or backward), float32 ``nn.Parameter`` weights
outside autocast, SiLU MLP, default RoPE, full attention in every layer (no sliding window), eager or SDPA
attention, and no attention dropout while training; anything else takes the HF forward (docs/train.md,
"Supported architectures"). The weights are read at construction (build one per rollout: the optimizer changes them in place
between rollouts, the fused copies do not follow). Given a ``Recording`` (trainer/rollout/replay.py) it writes
the outputs of its matmul steps (q/k/v, attention output + residual, gate/up, MLP output + residual,
logits) there, for the update's first training forward.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from torch import Tensor, nn

SUPPORTED = ("Qwen2ForCausalLM", "LlamaForCausalLM")  # transformers' own classes (checked by identity)
_PARTS = ("Model", "DecoderLayer", "Attention", "MLP", "RMSNorm", "RotaryEmbedding")  # each family's modules


def _family_module(model):
    """transformers' modeling module of ``model``'s exact class when it is a SUPPORTED one, else None."""
    cls = type(model)
    if cls.__name__ not in SUPPORTED or not cls.__module__.startswith("transformers.models."):
        return None
    module = sys.modules.get(cls.__module__)
    return module if getattr(module, cls.__name__, None) is cls else None


def _plain_modules(model, module, device: torch.device) -> bool:
    """Every submodule is one of the family's own classes or an exact torch linear / embedding / SiLU (exact
    types: adapter layers, quantised or parametrized linears, subclasses are refused), without hooks, no
    attention dropout applies (eval mode, or a zero probability), and every parameter is a plain float32
    ``nn.Parameter`` (not a tensor subclass) on ``device``."""
    from transformers.activations import SiLUActivation

    prefix = type(model).__name__.removesuffix("ForCausalLM")
    allowed = {type(model), nn.Linear, nn.Embedding, nn.ModuleList, nn.SiLU, SiLUActivation}
    allowed |= {getattr(module, prefix + part, None) for part in _PARTS}
    for m in model.modules():
        if type(m) not in allowed:
            return False
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
            return False  # e.g. accelerate offloading (weights move in hooks), or hooks that see activations
        if m.training and getattr(m, "attention_dropout", 0.0):
            return False
        for p in m._parameters.values():  # (its own, not recursing: cheaper than parameters(recurse=False))
            if p is not None and (type(p) is not nn.Parameter or p.dtype != torch.float32 or p.device != device):
                return False
    return True


def _config_supported(cfg) -> bool:
    """The settings the lean forward reproduces: SiLU MLP, default RoPE, full attention in every layer
    (eager or SDPA), no quantisation."""
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    return (
        rope.get("rope_type", rope.get("type", "default")) == "default"
        and getattr(cfg, "hidden_act", None) == "silu"
        and getattr(cfg, "pretraining_tp", 1) == 1
        and all(t == "full_attention" for t in getattr(cfg, "layer_types", None) or [])
        and not getattr(cfg, "use_sliding_window", False)
        and getattr(cfg, "_attn_implementation", None) in (None, "eager", "sdpa")
        and getattr(cfg, "quantization_config", None) is None
    )


def lean_supported(model) -> bool:
    """True when ``LeanDecoder`` computes exactly what ``model``'s own forward computes (see module doc)."""
    module = _family_module(model)  # peft / DDP / FSDP wrappers and other architectures: None
    if module is None or not _config_supported(model.config) or getattr(model, "hf_quantizer", None) is not None:
        return False
    if len(model.model.layers) != model.config.num_hidden_layers:
        return False
    first = next(model.parameters(), None)
    if first is None or first.device.type == "meta" or torch.is_autocast_enabled(first.device.type):
        return False
    return _plain_modules(model, module, first.device)


def mask_positions(mask: Tensor) -> Tensor:
    """Position ids that skip left padding, as ``generate`` computes them. (n, L) -> (n, L)."""
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


def _pairs(w: Tensor, heads: int, d: int) -> Tensor:
    """Rows of a q or k projection (weight (heads*d, H) or bias (heads*d,)) reordered within each head from
    HF's half-split rotary layout [x_0 .. x_{d/2-1}, y_0 .. y_{d/2-1}] to pairs [x_0, y_0, x_1, y_1, ...], so
    that rotary is one complex multiply. q and k get the same order: their dot products do not change."""
    perm = torch.arange(d, device=w.device).view(2, d // 2).t().reshape(-1)
    return w.view(heads, d, *w.shape[1:])[:, perm].reshape(w.shape)


def _cat_bias(parts: list[tuple[Tensor | None, int]]) -> Tensor | None:
    """The bias of fused projections from (bias or None, out_features) each; None when none has one."""
    if all(b is None for b, _ in parts):
        return None
    ref = next(b for b, _ in parts if b is not None)
    return torch.cat([b if b is not None else ref.new_zeros(size) for b, size in parts])


class _Layer:
    """One decoder layer's weights, transposed for ``x @ w``: q/k/v fused (q and k rows in rotary pairs),
    gate/up fused, each RMSNorm's scale folded into the input columns of the projection after it."""

    def __init__(self, layer, hq: int, hk: int, d: int):
        att, mlp = layer.self_attn, layer.mlp
        ln1, ln2 = layer.input_layernorm, layer.post_attention_layernorm
        self.eps1, self.eps2 = ln1.variance_epsilon, ln2.variance_epsilon
        q, k, v = att.q_proj, att.k_proj, att.v_proj
        w_qkv = torch.cat([_pairs(q.weight, hq, d), _pairs(k.weight, hk, d), v.weight])
        self.w_qkv = (w_qkv * ln1.weight).t()
        qb, kb = (None if x.bias is None else _pairs(x.bias, h, d) for x, h in ((q, hq), (k, hk)))
        self.b_qkv = _cat_bias([(qb, hq * d), (kb, hk * d), (v.bias, hk * d)])
        self.w_o, self.b_o = att.o_proj.weight.t(), att.o_proj.bias
        g, u = mlp.gate_proj, mlp.up_proj
        self.w_gu = (torch.cat([g.weight, u.weight]) * ln2.weight).t()
        self.b_gu = _cat_bias([(g.bias, g.out_features), (u.bias, u.out_features)])
        self.w_down, self.b_down = mlp.down_proj.weight.t(), mlp.down_proj.bias


def norm_mm(x: Tensor, eps: float, w: Tensor, b: Tensor | None, out: Tensor | None = None) -> Tensor:
    """RMSNorm(x) @ w (+ b) for (m, H) rows, the norm's scale already folded into ``w``: 1/rms(x) scales
    each output row after the matmul (the same product, fewer ops than normalising first). The result
    goes into ``out`` when given (a Recording's buffer, trainer/rollout/replay.py)."""
    r = (x * x).sum(-1, keepdim=True).mul_(1.0 / x.shape[-1]).add_(eps).rsqrt_()  # (m, 1)
    y = torch.mm(x, w)
    if out is None:
        return y.mul_(r) if b is None else torch.addcmul(b, y, r)
    return torch.mul(y, r, out=out) if b is None else torch.addcmul(b, y, r, out=out)


def add_mm(h: Tensor, x: Tensor, w: Tensor, b: Tensor | None, out: Tensor | None = None) -> Tensor:
    """The residual stream plus a projection, h + x @ w (+ b), the add fused into the matmul (into ``out``)."""
    out = torch.addmm(h, x, w) if out is None else torch.addmm(h, x, w, out=out)
    return out if b is None else out.add_(b)


def attention_mask(mask: Tensor | None, n: int, length: int, end: int, device) -> Tensor | None:
    """Boolean (n, 1, L, S) mask for the last ``length`` of ``end`` positions: causal, padded keys off
    (``mask`` (n, >= S), None: no padding); a query whose every key is padding (a left-padding position)
    sees itself, so its (unused) output stays finite."""
    if length == 1:  # one new token per row: it sees every unpadded key, and itself
        if mask is None:
            return None
        allowed = mask[:, :end] != 0  # (n, S)
        allowed[:, -1] = True
        return allowed[:, None, None, :]
    q_pos = torch.arange(end - length, end, device=device)[:, None]  # (L, 1)
    k_pos = torch.arange(end, device=device)[None, :]  # (1, S)
    allowed = (k_pos <= q_pos)[None]  # (1, L, S)
    if mask is not None:
        allowed = (allowed & (mask[:, None, :end] != 0)) | (k_pos == q_pos)[None]  # (n, L, S)
    return allowed.expand(n, length, end)[:, None]


class LeanWeights:
    """A Qwen2/Llama model's weights as the lean forward uses them (``_Layer``: fused, norm scales folded),
    its head counts, embedding and rotary. Built from the parameters as they are now: under autograd the
    fused copies carry gradients back to them (trainer/rollout/replay.py)."""

    def __init__(self, model):
        cfg, base = model.config, model.model
        att = base.layers[0].self_attn
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim, self.scaling = att.head_dim, att.scaling
        self.layers = [_Layer(layer, self.heads, self.kv_heads, self.head_dim) for layer in base.layers]
        self.embed, self.padding_idx = base.embed_tokens.weight, base.embed_tokens.padding_idx
        self.norm_eps = base.norm.variance_epsilon
        self.lm_head, self.lm_bias = (model.lm_head.weight * base.norm.weight).t(), model.lm_head.bias
        self.inv_freq = base.rotary_emb.inv_freq.float()
        self.rope_scale = base.rotary_emb.attention_scaling

    def rope(self, pos: Tensor) -> Tensor:
        """(n, L) positions -> (n, L, 1, D/2) complex rotations scale * (cos + i sin), HF's values."""
        freqs = pos[..., None].float() * self.inv_freq  # (n, L, D/2)
        return torch.polar(torch.full_like(freqs, self.rope_scale), freqs)[:, :, None]


class LeanDecoder(LeanWeights):
    """Incremental forward with a static KV cache: ``forward(ids, mask, pos)`` appends ``ids``' keys and
    values and returns the last position's logits; ``repeat_interleave(g)`` repeats every row g times
    (a group's prompt encoded once for its G completions)."""

    def __init__(self, model, rows: int, capacity: int, recording=None):
        super().__init__(model)
        self.rows, self.capacity, self.length = rows, capacity, 0
        self.k: list[Tensor] = []
        self.v: list[Tensor] = []
        self.recording = recording  # trainer/rollout/replay.py: keeps every layer's outputs for the training forward
        ly = self.layers[0]
        self.widths = (ly.w_qkv.shape[1], ly.w_o.shape[1], ly.w_gu.shape[1], ly.w_down.shape[1])

    def forward(self, ids: Tensor, mask: Tensor | None, pos: Tensor) -> Tensor:
        """(n, L) new tokens, (n, S) attention mask over cached + new tokens (None: all ones), (n, L)
        position ids -> (n, V) float32 logits of the last position."""
        n, length = ids.shape
        start, end = self.length, self.length + length
        if end > self.capacity:
            raise ValueError(f"LeanDecoder: {end} tokens exceed the cache capacity {self.capacity}")
        h = F.embedding(ids.reshape(-1), self.embed)  # (n*L, H): rows flattened, so each matmul is one call
        cis = self.rope(pos)
        attn_mask = attention_mask(mask, n, length, end, ids.device)
        hq, hk, d = self.heads, self.kv_heads, self.head_dim
        if not self.k:
            shape = (n, hk, self.capacity, d)
            self.k = [h.new_empty(shape) for _ in self.layers]
            self.v = [h.new_empty(shape) for _ in self.layers]
        rec = self.recording
        slots = [(None,) * 4] * len(self.layers) if rec is None else rec.slots(n, start, length, h, self.widths)
        for i, ly in enumerate(self.layers):
            s_qkv, s_attn, s_gu, s_mlp = slots[i]  # where the outputs go when recording (else None)
            qkv = norm_mm(h, ly.eps1, ly.w_qkv, ly.b_qkv, s_qkv)
            qkv = qkv.view(n, length, hq + 2 * hk, d)
            pairs = torch.view_as_complex(qkv[:, :, : hq + hk].unflatten(-1, (d // 2, 2)))
            qk = torch.view_as_real(pairs * cis).flatten(-2)  # rotary on q and k: (n, L, hq + hk, d)
            self.k[i][:, :, start:end] = qk[:, :, hq:].transpose(1, 2)
            self.v[i][:, :, start:end] = qkv[:, :, hq + hk :].transpose(1, 2)
            a = F.scaled_dot_product_attention(
                qk[:, :, :hq].transpose(1, 2),  # (n, hq, L, d)
                self.k[i][:, :, :end],
                self.v[i][:, :, :end],
                attn_mask=attn_mask,
                scale=self.scaling,
                enable_gqa=hq != hk,
            )
            a = a.transpose(1, 2).reshape(n * length, hq * d)
            h = add_mm(h, a, ly.w_o, ly.b_o, s_attn)
            gate, up = norm_mm(h, ly.eps2, ly.w_gu, ly.b_gu, s_gu).chunk(2, dim=-1)
            h = add_mm(h, F.silu(gate) * up, ly.w_down, ly.b_down, s_mlp)
        self.length = end
        last = h.view(n, length, -1)[:, -1]  # (n, H)
        logits_out = None if rec is None else rec.logits_product(n, self.lm_head.shape[1], h)
        logits = norm_mm(last, self.norm_eps, self.lm_head, self.lm_bias, logits_out)  # (n, V)
        if rec is not None:
            rec.flush()
        return logits

    def grow(self, capacity: int) -> None:
        """Room for ``capacity`` positions (tool rollouts append output of unknown length); the cached positions
        are kept. Not with a recording (its buffers are sized once)."""
        if capacity <= self.capacity:
            return
        if self.recording is not None:
            raise ValueError("LeanDecoder.grow: a recording decoder cannot grow")
        if self.k:
            self.k = [self._resized(k, capacity) for k in self.k]
            self.v = [self._resized(v, capacity) for v in self.v]
        self.capacity = capacity

    def _resized(self, cache: Tensor, capacity: int) -> Tensor:
        out = cache.new_empty(cache.shape[0], cache.shape[1], capacity, cache.shape[3])
        out[:, :, : self.length] = cache[:, :, : self.length]
        return out

    def repeat_interleave(self, g: int) -> None:
        """Every row (and its cache) repeated g times in place: rows r*g .. r*g+g-1 are row r."""
        self.k = [self._repeat(k, g) for k in self.k]
        self.v = [self._repeat(v, g) for v in self.v]
        self.rows *= g
        if self.recording is not None:
            self.recording.repeat(g, self.length)

    def _repeat(self, cache: Tensor, g: int) -> Tensor:
        """(rows, hk, capacity, d) -> (rows*g, hk, capacity, d), copying only the filled positions."""
        rows, hk, cap, d = cache.shape
        out = cache.new_empty(rows * g, hk, cap, d)
        out.view(rows, g, hk, cap, d)[:, :, :, : self.length] = cache[:, None, :, : self.length]
        return out
