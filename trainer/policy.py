"""The policy side of a run: device and precision (fp32 weights + AdamW state, bf16 autocast on CUDA;
pure bf16/fp16 only when asked), seeding, loading the policy (LoRA wrapped once, dropout off), the
reference model and the optimizer with its schedule."""

from __future__ import annotations

import copy
import ctypes
import random
import sys
import warnings
from typing import Any

import numpy as np
import torch

from trainer.config import GRPOConfig
from trainer.errors import ModelError

# ---------------------------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------------------------


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def keep_freed_cpu_memory() -> bool:
    """Let glibc's malloc keep freed blocks for reuse (Linux). By default a block over the mmap threshold is
    mapped fresh and unmapped when freed, and the heap top is trimmed, so every step's activations fault in
    new zeroed pages: ~4,000 page faults and ~10% of a `short` CPU step on bench/training/vs_trl.py. Blocks up to
    32 MiB (glibc's ceiling) now come from the heap, which is trimmed only past 1 GiB of free memory. Peak
    RSS is the live high-water mark either way. Returns whether glibc took the settings."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # musl and other C libraries: leave their allocator as it is
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(libc.mallopt(m_mmap_threshold, 32 << 20)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))


def pick_dtype(name: str, device: torch.device) -> torch.dtype:
    """Parameter (and AdamW state) dtype: auto is float32; bf16 compute comes from autocast (forward_context)."""
    if name == "auto":
        return torch.float32
    return getattr(torch, name)


def autocast_dtype(cfg: GRPOConfig, device: torch.device) -> torch.dtype | None:
    """bfloat16 when forward/backward run under autocast, else None."""
    if cfg.autocast == "none" or pick_dtype(cfg.dtype, device) != torch.float32:
        return None
    if cfg.autocast == "auto" and not (device.type == "cuda" and torch.cuda.is_bf16_supported()):
        return None
    return torch.bfloat16


def forward_context(cfg: GRPOConfig, device: torch.device):
    """torch.autocast(bf16) over fp32 weights when cfg asks for it (auto: on CUDA); a no-op context otherwise."""
    dt = autocast_dtype(cfg, device)
    return torch.autocast(device.type, dtype=dt, enabled=dt is not None)


def _warn_half_precision(cfg: GRPOConfig) -> None:
    if cfg.dtype in ("bfloat16", "float16") and cfg.lr < 1e-4:
        warnings.warn(
            f"dtype={cfg.dtype}: pure half-precision weights and AdamW state; at lr={cfg.lr:g} most updates are "
            "below the format's resolution and are lost (the model barely trains). Use dtype: auto (fp32 weights, "
            "bf16 autocast) unless memory forces this.",
            stacklevel=2,
        )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


_DROPOUT_MODULES = (
    torch.nn.Dropout,
    torch.nn.Dropout1d,
    torch.nn.Dropout2d,
    torch.nn.Dropout3d,
    torch.nn.AlphaDropout,
    torch.nn.FeatureAlphaDropout,
)


def _is_dropout_name(name: str) -> bool:
    return any(w in name for w in ("dropout", "pdrop", "layerdrop", "drop_path", "drop_prob"))


def _zero_dropout_attrs(obj, seen: set[int]) -> None:
    """Sets every non-zero float attribute of ``obj`` whose name says it is a dropout probability to 0, and
    those of the configs it holds (its ``config``, a multimodal config's ``text_config``, ...)."""
    from transformers import PretrainedConfig

    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name, value in list(vars(obj).items()):
        if isinstance(value, float) and value and _is_dropout_name(name):
            setattr(obj, name, 0.0)
        elif isinstance(value, PretrainedConfig):
            _zero_dropout_attrs(value, seen)


def disable_dropout(model: torch.nn.Module) -> None:
    """Every dropout probability of ``model`` to 0, so that rollouts, pi_old, pi_ref and the training forward
    score one policy: ``nn.Dropout`` modules (LoRA's too), the probabilities attention modules copy from
    the config at init (``attention_dropout``, applied by HF only in train mode), and the config's own
    (``attention_dropout``, ``hidden_dropout``, ``resid_pdrop``, ..., read by some models at forward time).
    The saved checkpoint's config says 0 too."""
    seen: set[int] = set()
    for m in model.modules():
        if isinstance(m, _DROPOUT_MODULES):
            m.p = 0.0
        _zero_dropout_attrs(m, seen)  # its attributes, and its config (HF modules keep it as ``self.config``)


def load_tokenizer(path: str):
    """``AutoTokenizer.from_pretrained(path)``, except for a tokenizer saved from a ``tokenizers`` object (its
    tokenizer_config says ``TokenizersBackend``, as the embedded tiny model's does): that one is loaded as saved.
    AutoTokenizer would give it the model type's class instead (Qwen2Tokenizer for a Qwen2 config), whose own
    pre-tokenizer drops characters the saved one keeps (spaces and newlines of the tiny character tokenizer)."""
    import json
    from pathlib import Path

    from transformers import AutoTokenizer

    conf = Path(path) / "tokenizer_config.json"
    if conf.is_file() and json.loads(conf.read_text()).get("tokenizer_class") == "TokenizersBackend":
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        return TokenizersBackend.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def load_policy(cfg: GRPOConfig, model=None, tokenizer=None):
    """The model to train (loaded from cfg.model unless given), on cfg's device, LoRA-wrapped if asked."""
    from transformers import AutoModelForCausalLM

    device = pick_device(cfg.device)
    dtype = pick_dtype(cfg.dtype, device)
    _warn_half_precision(cfg)
    if model is None:
        if cfg.model is None:
            raise ModelError("no model: set `model:` in the config (a folder or hub id) or pass one to train()")
        model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=dtype)
    if tokenizer is None:
        if (cfg.tokenizer or cfg.model) is None:
            raise ModelError("no tokenizer: set `tokenizer:` (or `model:`) in the config, or pass one to train()")
        tokenizer = load_tokenizer(cfg.tokenizer or cfg.model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = model.to(device=device, dtype=dtype)
    disable_dropout(model)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False  # training forwards; generate() still asks for its cache
    if cfg.lora is not None and not hasattr(model, "peft_config"):  # wrapped once (the pipeline loads first)
        try:
            import peft
        except ImportError:
            raise ModelError("lora: needs peft; install it with `pip install .[lora]`") from None
        lc = cfg.lora
        pc = peft.LoraConfig(
            r=lc.r,
            lora_alpha=lc.alpha,
            lora_dropout=lc.dropout,
            target_modules=lc.target_modules,
            task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(model, pc)
        if cfg.gradient_checkpointing:
            model.enable_input_require_grads()
    disable_dropout(model)  # LoRA dropout too (TRL's disable_dropout): rollouts and scoring see one policy
    model.train()
    return model, tokenizer


def make_reference(cfg: GRPOConfig, model):
    """Frozen copy of the policy; None when beta == 0 (no KL) or with LoRA (adapters off = reference)."""
    if cfg.beta == 0 or cfg.lora is not None:
        return None
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def _fused_adamw(params: list) -> bool:
    """AdamW's fused kernel (one op per step instead of a dozen per parameter; TRL's default optimizer,
    adamw_torch_fused, is the same) where it exists: floating-point parameters, all on the CPU or all on
    one CUDA device, plain tensors (FSDP's sharded DTensors keep the default implementation)."""
    devices = {p.device for p in params}
    return (
        len(devices) == 1
        and next(iter(devices)).type in ("cpu", "cuda")
        and all(p.is_floating_point() and type(p.data) is torch.Tensor for p in params)
    )


def make_optimizer(cfg: GRPOConfig, model) -> tuple[torch.optim.Optimizer, Any]:
    """GRPO's AdamW and LR schedule: one schedule step per optimizer step (steps x mu x minibatches)."""
    return build_optimizer(
        model,
        lr=cfg.lr,
        betas=cfg.adam_betas,
        weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_steps,
        total_steps=cfg.steps * cfg.mu * cfg.minibatches,
        schedule=cfg.lr_schedule,
    )


def build_optimizer(
    model,
    *,
    lr: float,
    betas: tuple[float, float],
    weight_decay: float,
    warmup_steps: int,
    total_steps: int,
    schedule: str = "cosine",
    fused: bool = True,
) -> tuple[torch.optim.Optimizer, Any]:
    """The one optimizer builder (GRPO's ``make_optimizer`` and the warm start): AdamW over the trainable
    parameters, a linear warmup over ``warmup_steps``, then ``schedule`` (cosine, linear or constant) to
    ``total_steps``. ``fused``: the fused kernel where it exists (``_fused_adamw``); False keeps torch's default."""
    params = [p for p in model.parameters() if p.requires_grad]
    kernel = (_fused_adamw(params) or None) if fused else None
    opt = torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay, fused=kernel)

    def factor(i: int) -> float:
        if i < warmup_steps:
            return (i + 1) / warmup_steps
        frac = (i - warmup_steps) / max(1, total_steps - warmup_steps)
        if schedule == "linear":
            return max(0.0, 1.0 - frac)
        if schedule == "cosine":
            return 0.5 * (1.0 + np.cos(np.pi * min(frac, 1.0)))
        return 1.0

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)
