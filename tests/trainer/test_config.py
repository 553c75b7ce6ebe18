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

ROOT = Path(__file__).resolve().parents[2]


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
        (["--progress", "0", "--inner.fresh", "1"], {"progress": 0, "inner": {"fresh": 1}}),  # pydantic: False, True
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
    assert cli.load(Outer, ["--progress", "0", "--inner.fresh", "yes"]).model_dump(include={"progress", "inner"}) == {
        "progress": False,
        "inner": {"lr": 1.0, "name": "x", "tag": None, "fresh": True},
    }
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
    assert "--inner.tag str | None  optional text (default: None)" in text
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


@pytest.mark.slow
@pytest.mark.parametrize(
    "module",
    [
        "trainer.train",
        "trainer.pipelines.make_train",
        "trainer.pipelines.r1",
        "trainer.evaluation.evaluate",
        "trainer.pipelines.warmstart",
        "trainer.pipelines.task",
    ],
)
def test_every_entry_point_prints_help_from_its_model(module):
    p = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "options (--config FILE" in p.stdout and "(default: " in p.stdout


def test_entry_points_turn_a_config_error_into_a_message_and_status_1(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "trainer.train", "--group_size", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1 and "error: invalid GRPOConfig" in p.stderr and "group_size" in p.stderr
    assert "Traceback" not in p.stderr


# -- the pipeline's and r1's models: every config file in configs/ validates, sections are typed ------------
@pytest.mark.parametrize(
    ("name", "module", "model"),
    [
        ("default.yaml", "make_train", "PipelineConfig"),
        ("qwen05b.yaml", "make_train", "PipelineConfig"),
        ("r1.yaml", "r1", "R1Config"),
    ],
)
def test_the_shipped_config_files_validate(name, module, model):
    import trainer.config

    cfg = cli.load(getattr(trainer.config, model), ["--config", str(ROOT / "configs" / name)])
    grpo = cfg.grpo if module == "make_train" else cfg.rl
    assert isinstance(grpo, GRPOConfig) and grpo.verifier == "r1"
    train = load_config(ROOT / "configs" / name) if module == "make_train" else None
    assert train is None or train == grpo  # the trainer reads the same file's grpo section


def test_make_train_flags_map_onto_the_pipeline_model(tmp_path):
    from trainer.pipelines import make_train as pipeline

    cfg = pipeline.load_args(
        [
            "--model",
            "m",
            "--data",
            "d.jsonl",
            "--eval-data",
            "e.jsonl",
            "--verifier",
            "math",
            "--target",
            "h:1",
            "--name",
            "2024",
            "--seed",
            "3",
            "--runs",
            "r",
            "--grpo.lr",
            "1e-4",
            "--tiny.hidden_size",
            "32",
            "--eval.k",
            "0",
        ]
    )
    assert (cfg.model, cfg.data, cfg.eval_data, cfg.target, cfg.name, cfg.seed, cfg.runs) == (
        "m",
        "d.jsonl",
        "e.jsonl",
        "h:1",
        "2024",
        3,
        "r",
    )
    assert (cfg.grpo.verifier, cfg.grpo.lr, cfg.tiny.hidden_size, cfg.eval.k) == ("math", 1e-4, 32, 0)
    assert cfg.warmstart.steps == 0  # --model and no --config: configs/real_model.yaml (issue 31)
    assert pipeline.load_args(["--runs", "r"]).warmstart.steps == 1200  # no --model: configs/default.yaml
    with pytest.raises(ConfigError, match="grpo.group_size"):
        pipeline.load_args(["--grpo.group_size", "1"])
    with pytest.raises(ConfigError, match="tiny.width"):
        pipeline.load_args(["--tiny.width", "1"])


def test_too_little_data_to_hold_out_is_a_data_error(tmp_path):
    from trainer.errors import DataError
    from trainer.pipelines import make_train as pipeline
    from trainer.pipelines.run_folder import prepare_data

    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "1+1=?", "answer": "2"}\n' * 3)
    cfg = pipeline.load_args(["--data", str(data), "--eval.heldout_from_data", "5"])
    with pytest.raises(DataError, match="not enough to hold out 5"):
        prepare_data(cfg, tmp_path / "run")


def test_make_r1_flags_map_onto_the_r1_model():
    from trainer.pipelines import r1

    cfg = r1.load_args(["--out", "o", "--target", "h:2", "--seed", "1", "--rl.steps", "3", "--rejection.samples", "8"])
    assert (cfg.out, cfg.target, cfg.seed, cfg.rl.steps, cfg.rejection.samples) == ("o", "h:2", 1, 3, 8)
    assert cfg.final_rl.steps == 300 and cfg.cold_start.steps == 1000  # configs/r1.yaml
