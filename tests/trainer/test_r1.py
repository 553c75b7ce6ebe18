"""The R1 pipeline (trainer/pipelines/r1.py) and its rejection-sampling filter (trainer/pipelines/rejection.py).

- the filter, graded by a real verifier service over gRPC: a wrong answer, a malformed completion (no
  think block, text before <think>, an empty think), a missing answer never enter the SFT set; a
  duplicate enters once; the counts add up;
- the filter alone on grades that say SANDBOX_ERROR / partial reward: dropped;
- ``python -m trainer.pipelines.r1`` with tiny stage sizes runs all five stages, writes the per-stage table, and
  a second invocation skips every finished stage (and one whose stage.json was removed is redone).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.pipelines.rejection import Sample, filter_samples, grade_samples
from verifiers.client import VerifierClient

ROOT = Path(__file__).resolve().parents[2]

GOOD = "<think>1+8+8, 9+8, 17</think><answer>17</answer>"
CASES = [  # (completion, enters the SFT set?)
    (GOOD, True),
    (GOOD, False),  # the same text again: a duplicate
    ("<think>1+8+8, 9+8, 18</think><answer>18</answer>", False),  # wrong answer, well formed
    ("<answer>17</answer>", False),  # right answer, no think block
    ("so <think>1+8+8, 9+8, 17</think><answer>17</answer>", False),  # text before <think>
    ("<think></think><answer>17</answer>", False),  # empty think
    ("<think>1+8+8, 9+8, 17</think>", False),  # no answer
    ("<think>estimate</think><answer>20</answer>", False),  # an estimate, wrong
    ("<think>1+8+8, 9+8, 17 </think><answer>17</answer>", True),  # a different correct text: kept
]


@pytest.mark.docker
def test_only_correct_and_well_formed_samples_enter_the_sft_set(verifier_server):
    samples = [Sample("3-2+8+8=?", "17", c) for c, _ in CASES]
    with VerifierClient(verifier_server.target) as client:
        graded = grade_samples(client, samples, batch=4)  # several VerifyBatch calls
    kept, counts = filter_samples(graded)
    want = [c.strip() for c, ok in CASES if ok]
    assert [r["completion"] for r in kept] == want
    assert all(r["prompt"] == "3-2+8+8=?" and r["answer"] == "17" for r in kept)
    assert counts["sampled"] == len(CASES)
    assert counts["duplicates"] == 1
    assert counts["kept"] == counts["correct_and_well_formed"] - counts["duplicates"] == 2
    # the grades themselves: 'math' finds the answer in the no-think one, 'think_format' refuses it
    no_think = graded[3]
    assert (no_think.correct, no_think.well_formed) == (True, False)


def test_grades_that_are_not_a_clean_pass_are_dropped():
    s = [
        Sample("p", "1", "a", "SANDBOX_ERROR", 0.0, "CORRECT", 1.0),
        Sample("p", "1", "b", "CORRECT", 0.5, "CORRECT", 1.0),  # partial credit is not verified correct
        Sample("p", "1", "c", "CORRECT", 1.0, "TIMEOUT", 0.0),
        Sample("p", "1", "d", "CORRECT", 1.0, "CORRECT", 1.0),
        Sample("q", "2", "d", "CORRECT", 1.0, "CORRECT", 1.0),  # same text, other prompt: not a duplicate
    ]
    kept, counts = filter_samples(s)
    assert [(r["prompt"], r["completion"]) for r in kept] == [("p", "d"), ("q", "d")]
    assert counts == {
        "sampled": 5,
        "correct": 3,
        "well_formed": 4,
        "correct_and_well_formed": 2,
        "duplicates": 0,
        "kept": 2,
        "prompts": 2,
        "prompts_kept": 2,
    }


TINY_ARGS = [
    "--task.warmstart_size", "400", "--task.train_size", "64", "--task.heldout_size", "16",
    "--tiny.hidden_size", "32", "--tiny.num_hidden_layers", "1", "--tiny.num_attention_heads", "2",
    "--tiny.intermediate_size", "64", "--cold_start.steps", "3", "--cold_start.batch_size", "8",
    "--rl.steps", "2", "--rl.prompts_per_step", "2", "--rl.group_size", "2", "--rl.max_new_tokens", "16",
    "--rejection.prompts", "8", "--rejection.samples", "2", "--rejection.max_new_tokens", "16",
    "--sft.steps", "3", "--sft.batch_size", "8",
    "--final_rl.steps", "2", "--final_rl.prompts_per_step", "2", "--final_rl.group_size", "2",
    "--final_rl.max_new_tokens", "16", "--eval.max_new_tokens", "16", "--threads", "1",
]  # fmt: skip


def _r1(out: Path, target: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "trainer.pipelines.r1", "--out", str(out), "--target", target, *TINY_ARGS]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.docker
@pytest.mark.slow
def test_r1_runs_every_stage_and_resumes_per_stage(tmp_path, verifier_server):
    out = tmp_path / "r1"
    # a tiny model kept nothing in rejection sampling: give the SFT stage one verified sample to start from
    first = _r1(out, verifier_server.target)
    if first.returncode != 0 and "kept no sample" in first.stderr:
        (out / "rejection" / "sft.jsonl").write_text(json.dumps({"prompt": "1+1=?", "completion": GOOD}) + "\n")
        first = _r1(out, verifier_server.target)
    assert first.returncode == 0, first.stderr[-3000:]
    for stage in ("cold_start", "rl", "rejection", "sft", "final_rl"):
        rec = json.loads((out / stage / "stage.json").read_text())
        assert rec["wall_s"] >= 0
        if stage != "rejection":
            assert (out / stage / "model" / "config.json").exists()
            assert 0.0 <= rec["heldout"]["accuracy"] <= 1.0 and rec["heldout"]["n"] == 16
    rej = json.loads((out / "rejection" / "stage.json").read_text())
    assert rej["sampled"] == 8 * 2 and rej["prompts"] == 8
    table = (out / "r1_table.md").read_text()
    assert table.count("\n| ") == 5 and "held-out greedy accuracy" in table

    (out / "final_rl" / "stage.json").unlink()  # interrupted in the last stage
    again = _r1(out, verifier_server.target)
    assert again.returncode == 0, again.stderr[-3000:]
    skipped = [line for line in again.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 4 and "[final_rl] running" in again.stderr
