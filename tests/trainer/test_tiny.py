"""The tiny model: tokenizer round trips and R1 tags as single tokens, the chat template, a Qwen2 built
from a config that saves and loads with save_pretrained / from_pretrained, the warm start lowering its
loss, and (Docker) a model saved to a local folder trains from it through the `make train` path."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.config import TinyConfig, WarmStartConfig
from trainer.pipelines import task, tiny
from trainer.pipelines.warmstart import encode, sft_loss, warm_start

SMALL = TinyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)


@pytest.mark.parametrize("text", ["3-2+8+8=?", "<think>1+8+8, 9+8, 17</think><answer>17</answer>", "Hello, World!\n"])
def test_tokenizer_round_trip(text):
    tok = tiny.build_tokenizer()
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert tok.unk_token_id not in ids


def test_r1_tags_are_single_tokens_and_survive_skip_special():
    tok = tiny.build_tokenizer()
    for tag in tiny.R1_TAGS:
        assert len(tok(tag, add_special_tokens=False)["input_ids"]) == 1
    ids = tok("<think>a</think><answer>1</answer>" + tiny.EOS, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == "<think>a</think><answer>1</answer>"


def test_chat_template():
    tok = tiny.build_tokenizer()
    msgs = [{"role": "user", "content": "1+2=?"}, {"role": "assistant", "content": "<think>x</think>3"}]
    assert tok.apply_chat_template(msgs, tokenize=False) == "<|user|>1+2=?<|assistant|><think>x</think>3<|end|>"


def test_save_and_load_pretrained(tmp_path):
    path = tiny.build(tmp_path / "m", SMALL, seed=1)
    model = AutoModelForCausalLM.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert tok.chat_template == tiny.CHAT_TEMPLATE and tok.eos_token == tiny.EOS
    assert model.config.vocab_size == len(tok)
    fresh = tiny.build_model(tiny.build_tokenizer(), SMALL, seed=1)
    for a, b in zip(model.state_dict().values(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # same seed, same weights


def test_warm_start_masks_the_prompt_and_lowers_the_loss():
    torch.manual_seed(0)
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, SMALL)
    rows = task.make_splits(0, {"warmstart": 64})["warmstart"]
    ids, attn, mask = encode(tok, rows[:2])
    n_prompt = len(
        tok(
            tok.apply_chat_template(
                [{"role": "user", "content": rows[0]["prompt"]}], tokenize=False, add_generation_prompt=True
            ),
            add_special_tokens=False,
        )["input_ids"]
    )
    assert mask[0, :n_prompt].sum() == 0 and mask[0, n_prompt] == 1
    assert ids[0, int(attn[0].sum()) - 1] == tok.eos_token_id  # the completion ends with EOS
    before = sft_loss(model, *encode(tok, rows)).item()
    warm_start(model, tok, rows, WarmStartConfig(steps=15, batch_size=16, lr=3e-3, warmup_steps=2))
    assert sft_loss(model, *encode(tok, rows)).item() < before - 0.5


@pytest.mark.docker
def test_a_model_saved_to_a_local_folder_trains_from_it(tmp_path, capsys):
    """`make train MODEL=<folder> DATA=<jsonl>`: the same pipeline, a local model, 2 GRPO steps."""
    from trainer.pipelines import make_train as pipeline

    torch.manual_seed(0)
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, SMALL)  # taught the format a little, so that sampled rewards differ
    warm_start(
        model, tok, task.make_splits(1, {"warmstart": 256})["warmstart"], WarmStartConfig(steps=40, batch_size=32)
    )
    model_dir = tmp_path / "my-model"
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = task.build(tmp_path / "data", 0, {"train": 40})["train"]
    summary = pipeline.run(
        [
            "--model",
            str(model_dir),
            "--data",
            str(data),
            "--verifier",
            "think_format",
            "--runs",
            str(tmp_path / "runs"),
            "--name",
            "local",
            "--eval.heldout_from_data",
            "8",
            "--eval.max_new_tokens",
            "8",
            "--grpo.steps",
            "2",
            "--grpo.prompts_per_step",
            "2",
            "--grpo.group_size",
            "4",
            "--grpo.max_new_tokens",
            "24",
            "--grpo.eval_every",
            "0",
            "--grpo.lr",
            "1e-3",
            "--eval.k",
            "8",  # MODEL= reads configs/real_model.yaml: k 4
        ]
    )
    run = tmp_path / "runs" / "local"
    assert (tmp_path / "runs" / "latest").resolve() == run.resolve()
    assert json.loads((run / "summary.json").read_text())["steps"] == 2 == summary["steps"]
    assert summary["eval_before"]["n"] == summary["eval_after"]["n"] == 8
    # greedy, sampled (T=1) accuracy and pass@8 before and after: in summary.json and printed, the same numbers
    printed = capsys.readouterr().out
    for ev in (summary["eval_before"], summary["eval_after"]):
        assert ev["k"] == 8 and ev["n_samples"] == 64 and ev["temperature"] == 1.0
        assert 0.0 <= ev["sampled_accuracy"] <= ev["pass@8"] <= 1.0
    b, a = summary["eval_before"], summary["eval_after"]
    assert f"{b['accuracy']:.3f} before GRPO -> {a['accuracy']:.3f} after GRPO" in printed  # no warm start here
    assert f"(sampled, T=1, 8 per problem): {b['sampled_accuracy']:.3f} -> {a['sampled_accuracy']:.3f}" in printed
    assert f"pass@8 (T=1): {b['pass@8']:.3f} -> {a['pass@8']:.3f}" in printed
    trained = AutoModelForCausalLM.from_pretrained(summary["checkpoint"])
    start = AutoModelForCausalLM.from_pretrained(model_dir)
    changed = [
        not torch.equal(a, b) for a, b in zip(trained.state_dict().values(), start.state_dict().values(), strict=True)
    ]
    assert any(changed)
    lines = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [0, 1, 2]  # step 0: held-out accuracy before GRPO
    assert lines[0]["eval/accuracy"] == summary["eval_before"]["accuracy"]
