"""A lean incremental forward for Qwen2 / Llama-architecture causal LMs, used by the decode loop.

At the sizes a CPU trains (a ~1M-parameter model, 32 rows), one token's forward through the HF modules
costs more in Python (module calls, mask building, cache objects, rotary recomputed per layer) than in
arithmetic. ``LeanDecoder`` runs the same computation on the model's own weights with:

- a preallocated KV cache per layer, (rows, kv_heads, capacity, head_dim), written in place;
- one matmul for q, k and v (their weights concatenated once per rollout) and one for gate and up;
- rotary position embeddings applied to q and k together, from cos/sin computed once per forward;
- ``torch.nn.functional.scaled_dot_product_attention`` with a boolean mask (GQA via ``enable_gqa``);
- logits for the last position only.

It is exact to the HF model up to float rounding (tests/test_lean_forward.py: fp32 logits and log-probs
to 1e-5 against HF's, left padding, grouped-query attention; sampled tokens identical under one seed).
``lean_supported`` accepts only what it reproduces: ``Qwen2ForCausalLM`` / ``LlamaForCausalLM`` themselves
(not peft, DDP or FSDP wrappers), SiLU MLP, default RoPE, full attention in every layer (no sliding
window), no module hooks; anything else takes the HF forward. The weights are read at construction
(build one per rollout: the optimizer changes them in place between rollouts, the fused copies do not
follow).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

SUPPORTED = ("Qwen2ForCausalLM", "LlamaForCausalLM")


def lean_supported(model) -> bool:
    """True when ``LeanDecoder`` computes exactly what ``model``'s own forward computes (see module doc)."""
    if type(model).__name__ not in SUPPORTED:  # peft / DDP / FSDP wrappers and other architectures
        return False
    cfg = model.config
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        return False
    if getattr(cfg, "hidden_act", None) != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return False
    if any(t != "full_attention" for t in getattr(cfg, "layer_types", None) or []):
        return False
    if getattr(cfg, "use_sliding_window", False):
        return False
    layers = model.model.layers
    if len(layers) != cfg.num_hidden_layers:
        return False
    for m in model.modules():
        if m._forward_hooks or m._forward_pre_hooks:  # e.g. accelerate offloading: weights move in hooks
            return False
    params = list(model.parameters())
    return all(p.device == params[0].device and p.device.type != "meta" for p in params)


def _cat_bias(*linears) -> Tensor | None:
    biases = [lin.bias for lin in linears]
    if all(b is None for b in biases):
        return None
    return torch.cat(
        [
            b if b is not None else lin.weight.new_zeros(lin.weight.shape[0])
            for b, lin in zip(biases, linears, strict=True)
        ]
    )


class _Layer:
    """One decoder layer's weights, transposed for ``x @ w``; q/k/v and gate/up fused."""

    def __init__(self, layer):
        att, mlp = layer.self_attn, layer.mlp
        self.ln1, self.eps1 = layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon
        self.ln2, self.eps2 = layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon
        self.w_qkv = torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight]).t()
        self.b_qkv = _cat_bias(att.q_proj, att.k_proj, att.v_proj)
        self.w_o, self.b_o = att.o_proj.weight.t(), att.o_proj.bias
        self.w_gu = torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).t()
        self.b_gu = _cat_bias(mlp.gate_proj, mlp.up_proj)
        self.w_down, self.b_down = mlp.down_proj.weight.t(), mlp.down_proj.bias


def _mm(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """(m, k) @ (k, n) (+ b): one call."""
    return torch.mm(x, w) if b is None else torch.addmm(b, x, w)


def _add_mm(h: Tensor, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """The residual stream plus a projection, h + x @ w (+ b), the add fused into the matmul."""
    out = torch.addmm(h, x, w)
    return out if b is None else out.add_(b)


def _rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """HF's RMSNorm: normalised in float32, cast back, then scaled."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    return weight * F.rms_norm(x.float(), (x.shape[-1],), None, eps).to(x.dtype)


class LeanDecoder:
    """Incremental forward with a static KV cache: ``forward(ids, mask, pos)`` appends ``ids``' keys and
    values and returns the last position's logits; ``repeat_interleave(g)`` repeats every row g times
    (a group's prompt encoded once for its G completions)."""

    def __init__(self, model, rows: int, capacity: int):
        cfg, base = model.config, model.model
        att = base.layers[0].self_attn
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim, self.scaling = att.head_dim, att.scaling
        self.layers = [_Layer(layer) for layer in base.layers]
        self.embed = base.embed_tokens.weight
        self.norm, self.norm_eps = base.norm.weight, base.norm.variance_epsilon
        self.lm_head, self.lm_bias = model.lm_head.weight, model.lm_head.bias
        self.inv_freq = base.rotary_emb.inv_freq.float()
        self.rope_scale = base.rotary_emb.attention_scaling
        self.rows, self.capacity, self.length = rows, capacity, 0
        self.k: list[Tensor] = []
        self.v: list[Tensor] = []

    def _rope(self, pos: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """(n, L) positions -> cos, sin (n, L, 1, D), with rotate_half's sign folded into sin."""
        freqs = pos[..., None].float() * self.inv_freq  # (n, L, D/2)
        cos = torch.cat((freqs, freqs), dim=-1).cos() * self.rope_scale
        s = freqs.sin() * self.rope_scale
        sin = torch.cat((-s, s), dim=-1)  # rotate_half(x) * sin == roll(x, D/2) * [-sin, sin]
        return cos.to(dtype)[:, :, None], sin.to(dtype)[:, :, None]

    def _mask(self, mask: Tensor | None, n: int, length: int, end: int, device) -> Tensor | None:
        """Boolean (n, 1, L, S) attention mask: causal, padded keys off; a query whose every key is
        padding (a left-padding position) sees itself, so its (unused) output stays finite."""
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

    def forward(self, ids: Tensor, mask: Tensor | None, pos: Tensor) -> Tensor:
        """(n, L) new tokens, (n, S) attention mask over cached + new tokens (None: all ones), (n, L)
        position ids -> (n, V) float32 logits of the last position."""
        n, length = ids.shape
        start, end = self.length, self.length + length
        if end > self.capacity:
            raise ValueError(f"LeanDecoder: {end} tokens exceed the cache capacity {self.capacity}")
        h = F.embedding(ids.reshape(-1), self.embed)  # (n*L, H): rows flattened, so each matmul is one call
        cos, sin = self._rope(pos, h.dtype)
        attn_mask = self._mask(mask, n, length, end, ids.device)
        hq, hk, d = self.heads, self.kv_heads, self.head_dim
        if not self.k:
            shape = (n, hk, self.capacity, d)
            self.k = [h.new_empty(shape) for _ in self.layers]
            self.v = [h.new_empty(shape) for _ in self.layers]
        for i, ly in enumerate(self.layers):
            qkv = _mm(_rms_norm(h, ly.ln1, ly.eps1), ly.w_qkv, ly.b_qkv).view(n, length, hq + 2 * hk, d)
            qk = qkv[:, :, : hq + hk]
            qk = torch.addcmul(qk * cos, qk.roll(d // 2, dims=-1), sin)  # rotary on q and k: (n, L, hq + hk, d)
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
            h = _add_mm(h, a.transpose(1, 2).reshape(n * length, hq * d), ly.w_o, ly.b_o)
            gate, up = _mm(_rms_norm(h, ly.ln2, ly.eps2), ly.w_gu, ly.b_gu).chunk(2, dim=-1)
            h = _add_mm(h, F.silu(gate) * up, ly.w_down, ly.b_down)
        self.length = end
        last = _rms_norm(h.view(n, length, -1)[:, -1], self.norm, self.norm_eps)  # (n, H)
        return F.linear(last, self.lm_head, self.lm_bias).float()  # (n, V)

    def repeat_interleave(self, g: int) -> None:
        """Every row (and its cache) repeated g times in place: rows r*g .. r*g+g-1 are row r."""
        self.k = [k.repeat_interleave(g, dim=0) for k in self.k]
        self.v = [v.repeat_interleave(g, dim=0) for v in self.v]
        self.rows *= g
