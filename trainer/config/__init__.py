"""Every trainer config model, in one package: pure pydantic, validated once where it is parsed.

Public surface (``from trainer.config import ...``):

- ``GRPOConfig``, ``LoraConfig`` (``grpo``): one GRPO run, ``python -m trainer.train``; ``load_config`` reads it;
- ``TaskConfig``, ``TinyConfig``, ``EvalSection``, ``WarmStartConfig``, ``RejectionSection`` (``sections``):
  the sections the pipelines compose;
- ``PipelineConfig`` (``make train``), ``R1Config`` (``make r1``), ``EvalArgs`` (``make eval``),
  ``WarmStartArgs``, ``TaskArgs`` (``commands``): the other entry points' command lines;
- ``Temperature``, ``TopP`` (``sampling``): the one definition of the sampling settings those models share.

A YAML file gives the values; ``--key value`` pairs on the command line override them (nested fields
with a dot: ``--lora.r 16``; values are parsed as YAML, so ``--beta 0`` is a number). The parsing is
trainer/cli.py's, the same for every trainer entry point. The code that uses a model imports it from
here and lives with its room (the loop in trainer/train.py, the pipelines in trainer/pipelines/, ...).
"""

from __future__ import annotations

from pathlib import Path

from trainer import cli
from trainer.config.commands import EvalArgs, PipelineConfig, R1Config, TaskArgs, WarmStartArgs
from trainer.config.grpo import GRPOConfig, LoraConfig
from trainer.config.sampling import Temperature, TopP
from trainer.config.sections import EvalSection, RejectionSection, TaskConfig, TinyConfig, WarmStartConfig

__all__ = [
    "EvalArgs",
    "EvalSection",
    "GRPOConfig",
    "LoraConfig",
    "PipelineConfig",
    "R1Config",
    "RejectionSection",
    "TaskArgs",
    "TaskConfig",
    "Temperature",
    "TinyConfig",
    "TopP",
    "WarmStartArgs",
    "WarmStartConfig",
    "load_config",
]


def load_config(path: str | Path | None = None, overrides: list[str] | dict | None = None) -> GRPOConfig:
    """Read YAML (optional; a pipeline config's ``grpo:`` section is used when present), apply the
    overrides (``["--beta", "0"]`` or a nested mapping), validate once. Errors (ConfigError) name the
    field and the file. The parsing is trainer.cli's, shared by every trainer entry point."""
    raw: dict = {}
    if path is not None:
        raw = cli.read_yaml(path)
        raw = raw["grpo"] if isinstance(raw.get("grpo"), dict) else raw
    over = overrides if isinstance(overrides, dict) else cli.parse_argv(GRPOConfig, list(overrides or []))[1]
    return cli.build(GRPOConfig, cli.merge(raw, over), f" in {path}" if path else "")
