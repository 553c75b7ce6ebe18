"""``MODEL=`` as a practitioner gives it: a folder written by ``save_pretrained`` or a hub id, or a PEFT
adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``, saved on a base model).

An adapter folder is loaded as its base model (``base_model_name_or_path`` in adapter_config.json) with
the adapter on top, trainable: GRPO trains the adapter (``grpo.lora`` is set to the adapter's shape so
checkpoints, resume and the reference, the base model with the adapter off, follow the LoRA path). The
tokenizer comes from the adapter folder when it holds one, else from the base. Anything that cannot be
trained stops the run before anything starts, saying what to pass instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.errors import ModelError

ADAPTER_CONFIG = "adapter_config.json"


def is_adapter(path: str | Path | None) -> bool:
    return path is not None and (Path(path) / ADAPTER_CONFIG).is_file()


def adapter_info(path: str | Path) -> dict[str, Any]:
    """adapter_config.json, checked: a LoRA adapter whose base can be found."""
    p = Path(path)
    try:
        info = json.loads((p / ADAPTER_CONFIG).read_text())
    except (OSError, ValueError) as e:
        raise ModelError(f"{p / ADAPTER_CONFIG}: cannot read it ({e})") from None
    kind = info.get("peft_type", "LORA")
    if kind != "LORA":
        raise ModelError(
            f"MODEL={p} is a PEFT {kind} adapter; only LoRA adapters can be trained here. Pass the "
            "base model (MODEL=<base>) and train new adapters with ARGS='--grpo.lora.r 16'"
        )
    base = info.get("base_model_name_or_path")
    if not base:
        raise ModelError(
            f"MODEL={p} is a LoRA adapter whose adapter_config.json names no base model "
            "(base_model_name_or_path): set it to the base model's folder or hub id"
        )
    if not Path(base).exists() and (base.startswith((".", "/")) or base.count("/") > 1):
        raise ModelError(
            f"MODEL={p} is a LoRA adapter on base {base!r}, which is not there: set "
            f"base_model_name_or_path in {p / ADAPTER_CONFIG} to the base model's folder"
        )
    return info


def lora_section(info: dict[str, Any]) -> dict[str, Any]:
    """The ``grpo.lora`` settings that describe the adapter (``LoraConfig``, trainer/config/grpo.py)."""
    targets = info.get("target_modules") or "all-linear"
    return {
        "r": int(info.get("r", 8)),
        "alpha": int(info.get("lora_alpha", 8)),
        "dropout": float(info.get("lora_dropout", 0.0)),
        "target_modules": sorted(targets) if isinstance(targets, list | set) else targets,
    }


def load_adapter(path: str | Path, dtype=None):
    """(PeftModel with the adapter trainable, tokenizer) for an adapter folder."""
    try:
        import peft
    except ImportError:
        raise ModelError(
            f"MODEL={path} is a PEFT adapter folder: loading it needs peft (`pip install .[lora]`), "
            "or pass the merged model instead"
        ) from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    info = adapter_info(path)
    base = AutoModelForCausalLM.from_pretrained(info["base_model_name_or_path"], dtype=dtype)
    model = peft.PeftModel.from_pretrained(base, str(path), is_trainable=True)
    has_tok = any((Path(path) / f).exists() for f in ("tokenizer.json", "tokenizer_config.json"))
    tok = AutoTokenizer.from_pretrained(str(path) if has_tok else info["base_model_name_or_path"])
    return model, tok


def check_trainable(model, source: str) -> None:
    """Stop before anything starts when the optimizer would get no parameter to train."""
    if not any(p.requires_grad for p in model.parameters()):
        raise ModelError(
            f"MODEL={source}: no parameter of the loaded model is trainable. For a PEFT adapter "
            "pass its folder (the one holding adapter_config.json); for a full model pass the folder "
            "written by save_pretrained"
        )
