"""Issue 31 played as a practitioner: a model folder of one's own (byte-level BPE tokenizer from the
``tokenizers`` library, chat template, right padding; a tiny Qwen2), a GSM8K-style JSONL, and only the
documented commands: ``make train`` and ``make eval`` through the Makefile, then a PEFT adapter as MODEL=."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from tests.own_model_helpers import gsm8k_style, save_model_folder

ROOT = Path(__file__).resolve().parents[2]
SHORT = (
    "--grpo.steps 2 --grpo.prompts_per_step 2 --grpo.group_size 2 --grpo.max_new_tokens 8 --grpo.micro_batch_size 2 "
    "--eval.max_new_tokens 8 --eval.k 0 --eval.heldout_from_data 4 --threads 1"
)


def make(target: str, timeout: int = 600, **knobs: str) -> subprocess.CompletedProcess:
    args = [f"{k}={v}" for k, v in knobs.items()]
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(
        ["make", "-s", target, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.slow
@pytest.mark.docker
def test_make_train_and_eval_on_a_model_of_ones_own(tmp_path, verifier_server):
    data = gsm8k_style(tmp_path / "gsm.jsonl")
    runs = tmp_path / "runs"
    knobs = {"DATA": str(data), "VERIFIER": "r1", "RUNS": str(runs), "TARGET": verifier_server.target}

    # 1. the tokenizer declares the R1 tags special: stopped before anything starts, saying which token and the fix
    special = save_model_folder(tmp_path / "special-tags", tags_special=True)
    got = make("train", MODEL=str(special), NAME="first", ARGS=SHORT, **knobs)
    assert got.returncode != 0
    assert "preflight failed (nothing was started)" in got.stderr
    assert "'<think>' is a special token" in got.stderr and "NO_ANSWER" in got.stderr
    assert f"python -m trainer.run.preflight {special} --fix-tags" in got.stderr
    assert "verifier service:" not in got.stderr and not (runs / "first" / "metrics.jsonl").exists()
    ev = make(
        "eval",
        MODEL=str(special),
        DATA=str(data),
        VERIFIER="r1",
        TARGET=verifier_server.target,
        OUT=str(tmp_path / "special.json"),
        LIMIT="2",
        ARGS="--max-new-tokens 8",
    )
    assert ev.returncode != 0 and "'<think>' is a special token" in ev.stderr and "--fix-tags" in ev.stderr

    # 2. the fix it names, then the same command: a short run that says what it trains with
    fixed = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-m", "trainer.run.preflight", str(special), "--fix-tags"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fixed.returncode == 0, fixed.stderr
    got = make("train", MODEL=str(special), NAME="mine", ARGS=SHORT, **knobs)
    assert got.returncode == 0, got.stderr[-3000:]
    run = runs / "mine"
    err = got.stderr
    assert "settings for a real model from configs/real_model.yaml" in err
    assert "grpo.lr" in err and "1e-06" in err and "(configs/real_model.yaml)" in err and "(flag)" in err
    assert "warm start" not in err and "only estimate" not in err and "final answers only" not in err
    assert "held-out accuracy before GRPO" in err and "before GRPO ->" in got.stdout
    # a random tiny model writes no tags: the first steps all NO_ANSWER, said in the log with the causes
    assert "steps 1-2: all 8 completions graded NO_ANSWER by 'r1'" in err and "Most likely" in err
    assert json.loads((run / "summary.json").read_text())["warnings"]
    prompt = (run / "prompt.txt").read_text()
    assert "<|im_start|>user\nTom has" in prompt and prompt.rstrip().endswith("<|im_start|>assistant")
    assert sorted({json.loads(x)["step"] for x in (run / "completions.jsonl").read_text().splitlines()}) == [1, 2]

    # 3. make eval on the run's checkpoint
    ckpt = run / "checkpoints" / "step-000002"
    ev = make(
        "eval",
        MODEL=str(ckpt),
        DATA=str(data),
        VERIFIER="r1",
        TARGET=verifier_server.target,
        OUT=str(tmp_path / "eval.json"),
        LIMIT="4",
        ARGS="--max-new-tokens 8",
    )
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert json.loads((tmp_path / "eval.json").read_text())["problems"] == 4


@pytest.mark.docker
def test_a_peft_adapter_folder_as_model_trains_the_adapter(tmp_path, verifier_server):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from trainer.pipelines import make_train as pipeline

    base_dir = save_model_folder(tmp_path / "base", tags_special=False)
    base = AutoModelForCausalLM.from_pretrained(base_dir)
    lora = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    lora.save_pretrained(tmp_path / "adapter")
    assert json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"]
    data = gsm8k_style(tmp_path / "gsm.jsonl")
    summary = pipeline.run(
        [
            "--model",
            str(tmp_path / "adapter"),
            "--data",
            str(data),
            "--verifier",
            "math",
            "--runs",
            str(tmp_path / "runs"),
            "--name",
            "adapter",
            "--target",
            verifier_server.target,
            *shlex.split(SHORT),
        ]
    )
    ckpt = Path(summary["checkpoint"])
    assert (ckpt / "adapter_model.safetensors").exists() and not (ckpt / "model.safetensors").exists()
    trained = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), str(ckpt))
    names = [n for n, _ in trained.named_parameters() if "lora_" in n]
    assert names and all("q_proj" in n or "v_proj" in n for n in names)  # the adapter's own shape, trained
    kept = AutoModelForCausalLM.from_pretrained(base_dir).state_dict()
    now = trained.get_base_model().state_dict()
    for k, v in kept.items():  # the base weights did not move
        k2 = k if k in now else k.rsplit(".", 1)[0] + ".base_layer." + k.rsplit(".", 1)[1]
        assert torch.equal(v, now[k2]), k


def test_a_model_with_nothing_to_train_stops_before_anything_starts(tmp_path):
    from trainer.errors import ModelError
    from trainer.run.own_model import check_trainable

    model = torch.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ModelError, match="no parameter of the loaded model is trainable.*adapter_config.json"):
        check_trainable(model, "x")
