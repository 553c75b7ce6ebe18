"""Issue 31: resume as a user does it. A real ``python -m trainer.pipelines.make_train`` process (what ``make train``
runs) is sent SIGTERM during GRPO; it writes the step's checkpoint and prints the command that resumes
it; that command (the same one) continues in the same folder, without a second "before" evaluation, and
ends with the same weights as a run never interrupted (same seed)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]
STEPS = 40
SMALL = [
    "--tiny.hidden_size", "32", "--tiny.num_hidden_layers", "1", "--tiny.num_attention_heads", "2",
    "--tiny.intermediate_size", "64", "--task.warmstart_size", "512", "--task.train_size", "64",
    "--task.heldout_size", "8", "--warmstart.steps", "200", "--warmstart.batch_size", "32", "--eval.k", "0",
    "--eval.max_new_tokens", "24", "--grpo.max_new_tokens", "32", "--grpo.prompts_per_step", "2",
    "--grpo.group_size", "4", "--grpo.eval_every", "0", "--grpo.lr", "1e-3", "--threads", "1",
    "--grpo.steps", str(STEPS),
    "--grpo.verifier", "think_format",  # graded on the host: no sandbox time limit to hit on a loaded machine
]  # fmt: skip


def pipeline(runs: Path, name: str, target: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "trainer.pipelines.make_train", *SMALL, "--runs", str(runs), "--name", name,
            "--target", target, *extra]  # fmt: skip


def steps_logged(metrics: Path) -> list[int]:
    if not metrics.exists():
        return []
    return [json.loads(ln)["step"] for ln in metrics.read_text().splitlines() if ln.endswith("}")]


def read(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln]


def final_weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "checkpoints" / f"step-{STEPS:06d}" / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.docker
def test_sigterm_then_the_printed_command_resumes_to_the_same_weights(tmp_path, verifier_server):
    runs = tmp_path / "runs"
    cmd = pipeline(runs, "t7", verifier_server.target)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = runs / "t7" / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while max(steps_logged(metrics), default=0) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    stopped_at = max(steps_logged(metrics))
    assert 2 <= stopped_at < STEPS
    assert f"interrupted at step {stopped_at}; resume with: make train NAME=t7 RUNS={runs}" in err
    assert (runs / "t7" / "checkpoints" / f"step-{stopped_at:06d}" / "trainer_state.pt").exists()
    before_eval = (runs / "t7" / "eval_before.jsonl").stat().st_mtime_ns

    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)  # the same command
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming {runs / 't7'} from step-{stopped_at:06d}" in again.stderr
    assert "(from stages.json)" in again.stderr  # the "before" figure is reused, not evaluated again
    assert (runs / "t7" / "eval_before.jsonl").stat().st_mtime_ns == before_eval
    assert steps_logged(metrics) == list(range(STEPS + 1))  # one metrics file: step 0 (eval before), 1..STEPS
    assert sorted(p.name for p in runs.iterdir()) == ["latest", "t7"]  # no t7-2
    assert json.loads((runs / "t7" / "summary.json").read_text())["steps"] == STEPS

    plain = subprocess.run(
        pipeline(runs, "plain", verifier_server.target), cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert plain.returncode == 0, plain.stderr[-3000:]
    rewards = [[m.get("reward/mean") for m in read(run / "metrics.jsonl")] for run in (runs / "t7", runs / "plain")]
    assert rewards[0] == rewards[1]  # the same samples graded the same, step by step
    a, b = final_weights(runs / "t7"), final_weights(runs / "plain")
    start = load_file(str(runs / "plain" / "warmstart" / "model.safetensors"))
    assert any(not torch.equal(a[k], start[k]) for k in a)  # GRPO moved the weights: the comparison means something
    diff = {k: (a[k] - b[k]).abs().max().item() for k in a if not torch.equal(a[k], b[k])}
    assert a.keys() == b.keys() and not diff, diff


@pytest.mark.slow
def test_resume_auto_without_a_checkpoint_refuses_before_anything_starts(tmp_path):
    got = subprocess.run(
        pipeline(tmp_path / "runs", "fresh", "127.0.0.1:1", "--grpo.resume", "auto"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 1
    assert "--grpo.resume auto: no checkpoint in" in got.stderr and "drop --grpo.resume" in got.stderr
    assert not (tmp_path / "runs" / "fresh").exists()  # nothing was started
