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

from trainer.config.commands import EvalArgs, PipelineConfig, R1Config, TaskArgs, WarmStartArgs
from trainer.config.grpo import GRPOConfig, LoraConfig, load_config
from trainer.config.sampling import Temperature, TopP
from trainer.config.sections import EvalSection, RejectionSection, TaskConfig, TinyConfig, WarmStartConfig
from trainer.config.tools import ToolsConfig

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
    "ToolsConfig",
    "TopP",
    "WarmStartArgs",
    "WarmStartConfig",
    "load_config",
]
