"""The one configuration path (trainer/cli.py): YAML, then ``--section.key value`` overrides, validated by
the entry point's pydantic model; ``--help`` from the field descriptions; errors are ConfigError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from trainer import cli
from trainer.config import GRPOConfig, load_config
from trainer.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


class Inner(BaseModel):
    """A section."""

    model_config = ConfigDict(extra="forbid")
    lr: float = Field(1.0, description="the learning rate")
    name: str = Field("x", description="a text field")
    tag: str | None = Field(None, description="optional text")
    fresh: bool = Field(False, description="a switch")


class Outer(BaseModel):
    """The top."""

    model_config = ConfigDict(extra="forbid")
    inner: Inner = Inner()
    seed: int = Field(0, description="a number")
    sizes: list[int] = Field(default_factory=list, description="a list")
    progress: bool = Field(True, description="another switch")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--inner.lr", "0.5"], {"inner": {"lr": 0.5}}),
        (["--inner.lr=0.5", "--seed=3"], {"inner": {"lr": 0.5}, "seed": 3}),
        (["--inner.name", "007"], {"inner": {"name": "007"}}),  # text fields take the text as written
        (["--inner.tag", "null"], {"inner": {"tag": None}}),
        (["--inner.fresh"], {"inner": {"fresh": True}}),  # a switch alone is true
        (["--inner.fresh", "false", "--seed", "1"], {"inner": {"fresh": False}, "seed": 1}),
        (["--inner.fresh", "--seed", "1"], {"inner": {"fresh": True}, "seed": 1}),
        (["--no-progress"], {"progress": False}),
        (["--sizes", "[1, 2]"], {"sizes": [1, 2]}),  # other values are YAML
        (["--inner.l-r", "2"], {"inner": {"l_r": 2}}),  # dashes are underscores (and unknown names pass through)
    ],
)
def test_overrides_parse_to_a_nested_mapping(argv, expected):
    assert cli.parse_argv(Outer, argv) == (None, expected)


def test_config_file_then_overrides_then_validation(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("seed: 4\ninner: {lr: 0.1, name: a}\n")
    cfg = cli.load(Outer, ["--config", str(f), "--inner.lr", "0.2"])
    assert (cfg.seed, cfg.inner.lr, cfg.inner.name) == (4, 0.2, "a")
    assert cli.load(Outer, [], default_config=f).seed == 4
    assert cli.load(Outer, ["--seed", "5"], default_config=f).seed == 5
    alias = cli.load(Outer, ["--rate", "3"], aliases={"rate": "inner.lr"})
    assert alias.inner.lr == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["seed", "1"], "expected --key value"),
        (["--seed"], "--seed needs a value"),
        (["--seed", "x"], "seed"),
        (["--nope", "1"], "nope"),
        (["--inner.nope", "1"], "inner.nope"),
        (["--config", "/nonexistent/c.yaml"], "config file not found: /nonexistent/c.yaml"),
        (["--no-progress=1"], "takes no value"),
    ],
)
def test_bad_command_lines_are_config_errors_that_say_what(argv, message):
    with pytest.raises(ConfigError, match=message):
        cli.load(Outer, argv)


def test_a_bad_value_in_a_file_names_the_file(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("inner: {lr: fast}\n")
    with pytest.raises(ConfigError, match=f"in {f}") as e:
        cli.load(Outer, ["--config", str(f)])
    assert "inner.lr" in str(e.value)
    f.write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        cli.load(Outer, ["--config", str(f)])


def test_help_lists_every_field_with_its_description_and_default():
    text = cli.help_text(Outer, "usage line")
    assert text.startswith("usage line")
    assert "--inner.lr float  the learning rate (default: 1.0)" in text
    assert "--inner.tag str | NoneType  optional text (default: None)" in text
    assert "--sizes" in text and "(default: [])" in text
    grpo = cli.help_text(GRPOConfig, "")
    for name, f in GRPOConfig.model_fields.items():
        assert f"--{name} " in grpo or f"--{name}.*" in grpo
        if f.description and not name == "lora":
            assert f.description in grpo
    assert "--lora.r int  adapter rank" in grpo  # a nested section, from LoraConfig's descriptions


def test_load_config_reads_a_pipeline_files_grpo_section(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("seed: 3\ngrpo: {beta: 0.5, group_size: 4}\n")
    cfg = load_config(f, ["--group_size", "2"])
    assert (cfg.beta, cfg.group_size) == (0.5, 2)
    assert load_config(None, {"lora": {"r": 2}}).lora.r == 2


@pytest.mark.parametrize("module", ["trainer.train", "trainer.evaluate"])
def test_every_entry_point_prints_help_from_its_model(module):
    p = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert "options (--config FILE" in p.stdout and "(default: " in p.stdout


def test_entry_points_turn_a_config_error_into_a_message_and_status_1(tmp_path):
    p = subprocess.run([sys.executable, "-m", "trainer.train", "--group_size", "1"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 1 and "error: invalid GRPOConfig" in p.stderr and "group_size" in p.stderr
    assert "Traceback" not in p.stderr
