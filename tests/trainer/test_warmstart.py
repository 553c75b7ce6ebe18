"""``python -m trainer.pipelines.warmstart``: the supervised phase from one model folder to another, through the
shared parser (trainer/cli.py); bad input is a typed error."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from trainer import cli
from trainer.config import TinyConfig, WarmStartArgs, WarmStartConfig
from trainer.errors import ConfigError, DataError
from trainer.pipelines import task, tiny, warmstart


def test_the_entry_point_fine_tunes_a_saved_model_into_another_folder(tmp_path):
    src = tiny.build(
        tmp_path / "base", TinyConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    )
    data = task.build(tmp_path / "data", 0, {"warmstart": 16})["warmstart"]
    stats = warmstart.main(
        [
            "--model",
            str(src),
            "--data",
            str(data),
            "--out",
            str(tmp_path / "out"),
            "--steps",
            "2",
            "--batch-size",
            "4",
            "--warmup_steps=1",
            "--lr",
            "1e-2",
        ]
    )
    assert stats["steps"] == 2 and stats["examples"] == 8
    before = AutoModelForCausalLM.from_pretrained(src).state_dict()
    after = AutoModelForCausalLM.from_pretrained(tmp_path / "out").state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_bad_input_is_a_typed_error_and_the_entry_point_exits_1_with_its_message(tmp_path, capsys):
    with pytest.raises(ConfigError, match="model"):
        cli.load(WarmStartArgs, ["--data", "x.jsonl", "--out", "o"])  # --model is required
    with pytest.raises(SystemExit) as e:
        warmstart.main(["--data", "x.jsonl", "--out", "o"])
    assert e.value.code == 1 and "error: invalid WarmStartArgs" in capsys.readouterr().err
    with pytest.raises(DataError, match="no examples"):
        warmstart.warm_start(None, None, [], WarmStartConfig(steps=1))
