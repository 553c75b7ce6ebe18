"""Saving and resuming a run's state: the checkpoint folder (trainer/checkpoint.py) plus the data
cursor, config and reference weights; under FSDP the weights are gathered first (every rank calls)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from trainer import distributed
from trainer.checkpoint import checkpoint_dir, load_trainer_state, resolve_resume, save_checkpoint, set_rng_state
from trainer.errors import CheckpointError


def save_run(cfg, step, model, tokenizer, optimizer, scheduler, stream, ref, ctx=None) -> Path:
    """Every rank calls it; rank 0 writes. Under FSDP the weights and optimizer state are gathered first
    (a collective) and written unsharded, so the checkpoint loads with from_pretrained."""
    full: dict[str, Any] = {}
    if distributed.is_sharded(model):
        full["state_dict"], full["optimizer_state"] = distributed.full_state(model, optimizer)
    if ctx is not None and not ctx.is_main:
        return checkpoint_dir(cfg.run_dir, step)
    extra = {"data": stream.state(), "config": cfg.model_dump()}
    if ref is not None:
        extra["reference"] = {k: t.detach().cpu() for k, t in ref.state_dict().items()}
    return save_checkpoint(
        cfg.run_dir, step, model, tokenizer, optimizer, scheduler, extra=extra, keep=cfg.keep_checkpoints, **full
    )


def resume_run(cfg, model, optimizer, scheduler, stream, ref) -> int:
    """Load the checkpoint named by cfg.resume into the live objects; returns its step (0: fresh start)."""
    path = resolve_resume(cfg.resume, cfg.run_dir) if cfg.resume else None
    if path is None:
        if cfg.resume == "auto":  # never a silent fresh start (make train refuses one: trainer/pipelines/run_folder.py)
            print(
                f"resume auto: no checkpoint in {Path(cfg.run_dir) / 'checkpoints'}; starting at step 1",
                file=sys.stderr,
            )
        return 0
    if distributed.is_sharded(model):
        raise distributed.DistributedError(f"--resume {path}: resuming a `parallel: fsdp` run is not supported yet")
    from safetensors.torch import load_file

    state = load_trainer_state(path)
    if cfg.lora is not None:
        import peft

        peft.set_peft_model_state_dict(model, load_file(str(path / "adapter_model.safetensors")))
    else:
        weights = load_file(str(path / "model.safetensors"))
        missing, unexpected = model.load_state_dict(weights, strict=False)
        tied = set(getattr(model, "_tied_weights_keys", None) or [])
        if unexpected or [k for k in missing if k not in tied and "lm_head" not in k]:
            raise CheckpointError(f"--resume {path}: weights do not match the model ({missing[:3]} {unexpected[:3]})")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    stream.load(state["data"])
    if ref is not None and "reference" in state:
        ref.load_state_dict(state["reference"])
    set_rng_state(state["rng"])
    print(f"resumed from {path} (step {state['step']})", file=sys.stderr)
    return int(state["step"])
