"""Checkpoints: a folder per step that ``AutoModelForCausalLM.from_pretrained`` can load, plus the
trainer state needed to continue exactly where the run stopped.

    run_dir/checkpoints/step-000010/
        config.json, model.safetensors, tokenizer files   # save_pretrained (LoRA: the adapter)
        trainer_state.pt   # step, data cursor, optimizer, scheduler, RNG states, reference weights
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

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
