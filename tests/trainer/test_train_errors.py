"""Errors: the trainer's library code raises typed errors (trainer/errors.py), only the entry point turns
them into an exit status.

- library calls raise the specific class (ModelError, DataError, CheckpointError, VerifierSetupError), never
  SystemExit, so a caller (a notebook, the pipeline, a test) can catch it and go on (VerifierSetupError:
  tests/trainer/test_train.py);
- `python -m trainer.train` prints a TrainerError as one line on stderr and exits 1, without a traceback,
  also for one raised deep in the run (the rollout backend).
No verifier service is needed: every error here is raised before the first grading call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer import distributed, errors
from trainer.config import GRPOConfig
from trainer.data import DataStream, Example
from trainer.errors import BackendError, DataError
from trainer.grpo import rewards
from trainer.policy import load_policy, make_optimizer
from trainer.run.checkpoint import resolve_resume, resume_run, save_checkpoint
from trainer.train import train

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)


def run_entry_point(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "trainer.train", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------------------------
# library code: typed errors
# ---------------------------------------------------------------------------------------------


def test_every_trainer_error_type_is_a_trainer_error_and_none_is_a_system_exit():
    for cls in (DataError, distributed.DistributedError, BackendError, rewards.ScoringError):
        assert issubclass(cls, errors.TrainerError) and not issubclass(cls, SystemExit)


def test_no_model_is_a_model_error():
    with pytest.raises(errors.ModelError, match="no model: set `model:`"):
        load_policy(GRPOConfig())
    with pytest.raises(errors.ModelError, match="no tokenizer"):
        load_policy(GRPOConfig(), model=tiny_model(tiny_tokenizer()))


def test_no_data_is_a_data_error(tmp_path):
    tok = tiny_tokenizer()
    with pytest.raises(errors.DataError, match="no data"):
        train(GRPOConfig(run_dir=str(tmp_path / "run"), threads=1), tiny_model(tok), tok)


def test_resume_from_a_folder_without_state_is_a_checkpoint_error(tmp_path):
    with pytest.raises(errors.CheckpointError, match="no trainer_state"):
        resolve_resume(str(tmp_path / "nowhere"), tmp_path)


def test_resume_into_a_different_model_is_a_checkpoint_error(tmp_path):
    tok = tiny_tokenizer()
    cfg = GRPOConfig(run_dir=str(tmp_path / "run"))
    bigger = tiny_model(tok, layers=3)
    opt, sched = make_optimizer(cfg, bigger)
    path = save_checkpoint(cfg.run_dir, 1, bigger, tok, opt, sched)
    model = tiny_model(tok, layers=2)
    opt, sched = make_optimizer(cfg, model)
    stream = DataStream([Example("1+1=", "2")], 0)
    with pytest.raises(errors.CheckpointError, match="weights do not match the model"):
        resume_run(cfg.model_copy(update={"resume": str(path)}), model, opt, sched, stream, None)


# ---------------------------------------------------------------------------------------------
# the entry point: exit status 1, one line on stderr, no traceback
# ---------------------------------------------------------------------------------------------


def test_entry_point_with_a_missing_config_file_exits_1_with_one_line(tmp_path):
    missing = tmp_path / "no_such.yaml"
    proc = run_entry_point("--config", str(missing))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0], proc.stderr


def test_entry_point_prints_a_library_error_raised_mid_run_as_one_line(tmp_path):
    """The vllm rollout backend cannot run here (no vllm or no CUDA): its BackendError is raised after the
    model and data are loaded, and reaches the user as `error: ...`, exit status 1."""
    from tests.parts import missing

    if not missing("vllm"):  # a declared optional part (tests/parts.py), decided from the host's facts
        pytest.skip("optional part vllm present: it can run here, so there is no backend error to show")
    tok = tiny_tokenizer()
    init = tmp_path / "init"
    tiny_model(tok).save_pretrained(init)
    tok.save_pretrained(init)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "1+1=", "answer": "2"}) + "\n")
    proc = run_entry_point(
        "--model",
        str(init),
        "--data",
        str(data),
        "--rollout_backend",
        "vllm",
        "--run_dir",
        str(tmp_path / "run"),
        "--threads",
        "1",
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "vllm" in last
