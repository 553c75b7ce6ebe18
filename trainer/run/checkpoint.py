"""Checkpoints: a folder per step that ``AutoModelForCausalLM.from_pretrained`` can load, plus the
trainer state needed to continue exactly where the run stopped; ``save_run``/``resume_run`` write and load a
run's whole state (data cursor, config, reference weights; under FSDP the weights are gathered first).

    run_dir/checkpoints/step-000010/
        config.json, model.safetensors, tokenizer files   # save_pretrained (LoRA: the adapter)
        trainer_state.pt   # step, data cursor, optimizer, scheduler, RNG states, reference weights,
                           # the reward-hacking alarm's state (trainer/alarm/watch.py: AlarmWatch.state)
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer import distributed
from trainer.errors import CheckpointError

STATE_FILE = "trainer_state.pt"


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_dir(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step-{step:06d}"


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model,
    tokenizer,
    optimizer: torch.optim.Optimizer,
    scheduler,
    *,
    extra: dict[str, Any] | None = None,
    keep: int = 2,
    state_dict: dict[str, Any] | None = None,
    optimizer_state: dict[str, Any] | None = None,
) -> Path:
    """Write step's checkpoint atomically (tmp folder, then rename) and keep the newest ``keep``.
    ``state_dict`` / ``optimizer_state``: what to write instead of the live ones (FSDP: gathered)."""
    final = checkpoint_dir(run_dir, step)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from transformers.utils import logging as hf_logging

    quiet = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Writing model shards" bar every checkpoint
    try:
        model.save_pretrained(tmp, **({} if state_dict is None else {"state_dict": state_dict}))
        tokenizer.save_pretrained(tmp)
    finally:
        if quiet:
            hf_logging.enable_progress_bar()
    state = {
        "step": step,
        "optimizer": optimizer.state_dict() if optimizer_state is None else optimizer_state,
        "scheduler": scheduler.state_dict(),
        "rng": rng_state(),
        **(extra or {}),
    }
    torch.save(state, tmp / STATE_FILE)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = Path(run_dir) / "checkpoints"
    found = [p for p in root.glob("step-*") if p.is_dir() and not p.name.endswith(".tmp") and (p / STATE_FILE).exists()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def resolve_resume(resume: str, run_dir: str | Path) -> Path | None:
    """'auto' -> the newest checkpoint in run_dir (None if there is none); else the folder given."""
    if resume == "auto":
        found = list_checkpoints(run_dir)
        return found[-1] if found else None
    path = Path(resume)
    if not (path / STATE_FILE).exists():
        raise CheckpointError(f"--resume {resume}: no {STATE_FILE} there; pass a folder under {run_dir}/checkpoints/")
    return path


def load_trainer_state(path: str | Path) -> dict[str, Any]:
    """The dict written by ``save_checkpoint`` (weights are loaded separately with from_pretrained)."""
    return torch.load(Path(path) / STATE_FILE, map_location="cpu", weights_only=False)


def save_run(cfg, step, model, tokenizer, optimizer, scheduler, stream, ref, ctx=None, alarm=None) -> Path:
    """Every rank calls it; rank 0 writes. Under FSDP the weights and optimizer state are gathered first
    (a collective) and written unsharded, so the checkpoint loads with from_pretrained. ``alarm``: the
    run's AlarmWatch, whose state (baselines, histories, counters) the checkpoint keeps."""
    full: dict[str, Any] = {}
    if distributed.is_sharded(model):
        full["state_dict"], full["optimizer_state"] = distributed.full_state(model, optimizer)
    if ctx is not None and not ctx.is_main:
        return checkpoint_dir(cfg.run_dir, step)
    extra = {"data": stream.state(), "config": cfg.model_dump()}
    if alarm is not None:
        extra["alarm"] = alarm.state()
    if ref is not None:
        extra["reference"] = {k: t.detach().cpu() for k, t in ref.state_dict().items()}
    return save_checkpoint(
        cfg.run_dir, step, model, tokenizer, optimizer, scheduler, extra=extra, keep=cfg.keep_checkpoints, **full
    )


def resume_run(cfg, model, optimizer, scheduler, stream, ref, alarm=None) -> int:
    """Load the checkpoint named by cfg.resume into the live objects; returns its step (0: fresh start).
    ``alarm``: the run's AlarmWatch, given the checkpoint's alarm state where it holds one."""
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
    if alarm is not None and state.get("alarm") is not None:
        alarm.load_state(state["alarm"])
    print(f"resumed from {path} (step {state['step']})", file=sys.stderr)
    return int(state["step"])
