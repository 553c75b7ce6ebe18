"""The command lines of the trainer's entry points besides ``python -m trainer.train`` (whose model is
``GRPOConfig``): one model each, parsed by trainer/cli.py, ``--help`` generated from it.

- ``PipelineConfig``: ``make train`` (trainer/pipelines/make_train.py, configs/default.yaml);
- ``R1Config``: ``make r1`` (trainer/pipelines/r1.py, configs/r1.yaml);
- ``EvalArgs``: ``make eval`` (trainer/evaluation/evaluate.py);
- ``WarmStartArgs``: ``python -m trainer.pipelines.warmstart``; ``TaskArgs``: ``python -m trainer.pipelines.task``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer.config.grpo import GRPOConfig
from trainer.config.sampling import TEMPERATURE, TOP_P, Temperature, TopP
from trainer.config.sections import EvalSection, RejectionSection, TaskConfig, TinyConfig, WarmStartConfig
from trainer.config.tools import ToolsConfig


class PipelineConfig(BaseModel):
    """configs/default.yaml: everything ``make train`` does, section by section."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    name: str | None = Field(None, description="run folder name under --runs (default: <model>-s<seed>-<time>)")
    seed: int = Field(0, description="seeds the data, the tiny model, the warm start and GRPO")
    threads: int | None = Field(2, ge=1, description="torch CPU threads (also GRPO's unless grpo.threads is set)")
    model: str | None = Field(None, description="folder or hub id to train (default: build the tiny model)")
    data: str | None = Field(None, description="JSONL {prompt, answer} for GRPO (default: the embedded task)")
    eval_data: str | None = Field(
        None, description="held-out JSONL (default: split off --data, see eval.heldout_from_data)"
    )
    target: str | None = Field(
        None, description="host:port of a running verifier service (default: $VERIFIER_TARGET, else start one)"
    )
    runs: str = Field("runs", description="folder of run folders (runs/latest points at the newest)")
    task: TaskConfig = TaskConfig()
    tiny: TinyConfig = TinyConfig()
    warmstart: WarmStartConfig = WarmStartConfig()
    warmstart_data: str | None = Field(None, description="JSONL {prompt, completion} to warm start a --model on")
    eval: EvalSection = EvalSection()
    grpo: GRPOConfig = Field(default_factory=GRPOConfig, description="the GRPO trainer (trainer/config/grpo.py)")
    without_tools: bool = Field(
        False,
        description="with grpo.tools: also train the same GRPO budget from the same warm start with no tool and "
        "evaluate it without tools (the control arm, in <run>/without_tools/; trainer/pipelines/tools_baseline.py)",
    )


class R1Config(BaseModel):
    """configs/r1.yaml: the five stages of ``make r1``, section by section."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    seed: int = Field(0, description="seeds the data, the base model and every stage")
    threads: int | None = Field(2, ge=1, description="torch CPU threads (also the RL stages' unless set there)")
    out: str | None = Field(None, description="the run's folder (default: runs/r1-s<seed>)")
    target: str | None = Field(
        None, description="host:port of a running verifier service (default: $VERIFIER_TARGET, else start one)"
    )
    task: TaskConfig = TaskConfig()
    tiny: TinyConfig = TinyConfig()
    cold_start: WarmStartConfig = Field(WarmStartConfig(), description="stage 1: SFT of the base model")
    rl: GRPOConfig = Field(default_factory=GRPOConfig, description="stage 2: GRPO from the cold-start model")
    rejection: RejectionSection = RejectionSection()
    sft: WarmStartConfig = Field(WarmStartConfig(), description="stage 4: SFT of the base model on the kept samples")
    final_rl: GRPOConfig = Field(default_factory=GRPOConfig, description="stage 5: GRPO from the sft model")
    eval: EvalSection = EvalSection()


class EvalArgs(BaseModel):
    """Command line of ``python -m trainer.evaluation.evaluate`` (also ``make eval``)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(
        None, description="folder or hub id for AutoModelForCausalLM; default: the final checkpoint of runs/latest"
    )
    data: str | None = Field(
        None, description='user JSONL of problems: {"prompt", "answer"} (math) or {"prompt", "tests"} (code)'
    )
    completions: str | None = Field(
        None, description='JSONL of completions to grade with no model: {"id", "completion", "reference"} per line'
    )
    verifier: str | None = Field(
        None, description="verifier name in the service's registry (default: the suite's, or the row's \"verifier\")"
    )
    k: int = Field(
        1,
        ge=1,
        description="samples per problem (greedy when 1); pass@k is reported for every k <= K in 1, 5, 10, 20, ...",
    )
    out: str | None = Field(None, description="report JSON path; the Markdown table and the samples log go next to it")
    suite: str | None = Field(
        None, description="humaneval | heldout | a JSONL path (default: heldout, the default task's held-out split)"
    )
    target: str | None = Field(None, description="host:port of a running verifier service; default: start one here")
    limit: int | None = Field(None, ge=1, description="evaluate only the first N problems")
    max_new_tokens: int | None = Field(
        None, ge=1, description="completion length limit (default: 512 for humaneval, else 256)"
    )
    temperature: Temperature = Field(TEMPERATURE, description="sampling temperature when K > 1")
    top_p: TopP = Field(TOP_P, description="nucleus sampling when K > 1")
    chat_template: Literal["auto", "on", "off"] = Field(
        "auto", description="wrap prompts in the tokenizer's chat template (auto: off for humaneval)"
    )
    format_verifier: str = Field(
        "auto", description="grades the format rate (auto: think_format, except for code; 'none' to skip)"
    )
    batch_size: int = Field(32, ge=1, description="samples per VerifyBatch call")
    gen_batch: int | None = Field(
        None,
        ge=1,
        description="rows (prompts x K) per generate call (default: the run's eval batch size for a run's model, else 64)",
    )
    workers: int = Field(2, ge=1, description="VerifyBatch calls in flight at once")
    timeout_s: float = Field(0.0, ge=0, description="grading budget per sample (0: the verifier's default)")
    deadline_s: float = Field(900.0, gt=0, description="RPC deadline of one VerifyBatch call")
    wait_s: float = Field(
        30.0, ge=0, description="how long to keep trying a --target that cannot be reached before failing (seconds)"
    )
    pool_size: int = Field(
        2, ge=1, description="sandbox containers of the service started here (ignored with --target)"
    )
    runs: str = Field(
        "runs",
        description="folder of training runs (make train's --runs): the default model is <runs>/latest's final checkpoint",
    )
    device: str = Field("auto", description="torch device for generation: auto (cuda if available) or a torch device")
    seed: int = Field(0, description="seeds sampling")
    extra_k: str = Field("", description="more k for pass@k, comma-separated (e.g. 3,8)")
    fresh: bool = Field(False, description="ignore (and overwrite) the samples log instead of resuming from it")
    progress: bool = Field(True, description="show a progress bar (on stderr)")
    tools: ToolsConfig | None = Field(
        None,
        description="generate with tool calls in sandbox sessions of the service, as training does (--tools.max_calls 4; "
        "docs/train.md, Tool rollouts); what is graded is the model's own tokens only",
    )

    @model_validator(mode="after")
    def _exclusive(self) -> EvalArgs:
        if not all(x.strip().isdigit() and int(x) > 0 for x in self.extra_k.split(",") if x.strip()):
            raise ValueError(f"--extra-k {self.extra_k!r}: comma-separated positive whole numbers, e.g. 3,8")
        if self.completions and self.model:
            raise ValueError("--completions grades existing completions: drop --model (nothing is generated)")
        if self.data and self.suite:
            raise ValueError("give --data FILE or --suite NAME, not both")
        return self

    def extra_ks(self) -> list[int]:
        """``--extra-k 3,8`` -> [3, 8]."""
        return [int(x) for x in self.extra_k.split(",") if x.strip()]


class WarmStartArgs(WarmStartConfig):
    """``python -m trainer.pipelines.warmstart``: the supervised phase on its own, from a model folder to another."""

    model: str = Field(description="folder or hub id of the model to fine-tune")
    data: str = Field(description='JSONL of {"prompt", "completion"} rows')
    out: str = Field(description="folder the fine-tuned model and tokenizer are saved to")
    use_chat_template: bool = Field(True, description="render prompts through the tokenizer's chat template")


class TaskArgs(BaseModel):
    """``python -m trainer.pipelines.task``: write the default task's splits as JSONL."""

    model_config = ConfigDict(extra="forbid")
    out: str = Field("runs/data", description="folder the <split>.jsonl files go to")
    seed: int = Field(0, description="seeds the problems")
    warmstart: int = Field(4000, ge=0, description="warm-start rows (with completions)")
    train: int = Field(4000, ge=0, description="GRPO rows (final answers only)")
    heldout: int = Field(256, ge=0, description="held-out rows (final answers only)")
