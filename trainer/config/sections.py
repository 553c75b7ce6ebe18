"""The sections the pipelines compose (``make train``'s PipelineConfig, ``make r1``'s R1Config): the
embedded task (``TaskConfig``), the tiny model (``TinyConfig``), the held-out figures (``EvalSection``),
the supervised warm start (``WarmStartConfig``) and r1's rejection sampling (``RejectionSection``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer.config.sampling import TEMPERATURE, Temperature


class TaskConfig(BaseModel):
    """The embedded task (used when no --data is given); see trainer/pipelines/task.py."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["chains", "products"] = Field(
        "chains",
        description="'chains': a+b-c chains worked out in <think> (trainer/pipelines/task.py); 'products': a*b, worked "
        "out with one Python call (trainer/pipelines/tool_task.py, make train TASK=tools; operands is then 2)",
    )
    operands: int = Field(4, ge=2, description="numbers per problem (chains)")
    min_value: int = Field(1, ge=0, description="smallest operand")
    max_value: int = Field(9, ge=1, description="largest operand")
    worked_fraction: float = Field(
        0.35, ge=0, le=1, description="share of warm-start rows that show their work (products: that make the call)"
    )
    estimate_to: int = Field(10, ge=1, description="the other rows answer with the value rounded to this multiple")
    warmstart_size: int = Field(12000, ge=0, description="warm-start (supervised) rows")
    train_size: int = Field(4000, ge=1, description="GRPO prompts (final answers only)")
    heldout_size: int = Field(256, ge=1, description="held-out problems graded before and after")

    def sizes(self) -> dict[str, int]:
        return {"warmstart": self.warmstart_size, "train": self.train_size, "heldout": self.heldout_size}


class TinyConfig(BaseModel):
    """Shape of the tiny Qwen2 decoder the embedded default builds (trainer/pipelines/tiny.py)."""

    model_config = ConfigDict(extra="forbid")
    hidden_size: int = Field(128, ge=1, description="width of the residual stream")
    num_hidden_layers: int = Field(4, ge=1, description="transformer blocks")
    num_attention_heads: int = Field(4, ge=1, description="query heads (key/value heads are the same number)")
    intermediate_size: int = Field(384, ge=1, description="width of the SwiGLU MLP")
    max_position_embeddings: int = Field(128, ge=1, description="longest sequence (prompt + completion) in tokens")


class EvalSection(BaseModel):
    """Held-out accuracy before and after training: greedy, plus sampled accuracy and pass@k."""

    model_config = ConfigDict(extra="forbid")
    verifier: str = Field("math", description="verifier that grades held-out accuracy")
    max_new_tokens: int = Field(48, ge=1, description="completion length limit")
    batch_size: int = Field(128, ge=1, description="rows per generate call")
    heldout_from_data: int = Field(200, ge=1, description="with --data and no --eval-data: rows held out")
    k: int = Field(8, ge=0, description="samples per problem (T=1) for sampled accuracy and pass@k; 0: greedy only")


class WarmStartConfig(BaseModel):
    """The supervised phase. Field descriptions are the documentation.

    Run by ``warm_start`` (trainer/pipelines/warmstart.py); ``make train``'s ``warmstart`` section, ``make r1``'s
    ``cold_start`` and ``sft``."""

    model_config = ConfigDict(extra="forbid")
    steps: int = Field(300, ge=0, description="optimizer steps (0: no warm start)")
    batch_size: int = Field(64, ge=1, description="examples per step")
    lr: float = Field(3e-3, gt=0, description="AdamW peak learning rate")
    warmup_steps: int = Field(30, ge=0, description="linear warmup, then cosine decay to 0")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    grad_clip: float = Field(1.0, gt=0, description="max global grad norm")
    seed: int = Field(0, description="order of the examples")


class RejectionSection(BaseModel):
    """Stage 3: rejection sampling from the RL model.

    ``make r1``'s ``rejection`` section, run by trainer/pipelines/r1.py's ``rejection_stage``."""

    model_config = ConfigDict(extra="forbid")
    prompts: int = Field(512, ge=1, description="training prompts sampled from (the first K of the RL split)")
    samples: int = Field(4, ge=1, description="N: samples per prompt")
    temperature: Temperature = Field(TEMPERATURE, description="sampling temperature")
    max_new_tokens: int = Field(48, ge=1, description="completion length limit")
    batch_prompts: int = Field(64, ge=1, description="prompts per generate call")
    correct_verifier: str = Field("math", description="kept only if this verifier says CORRECT")
    format_verifier: str = Field("think_format", description="... and this one says well formed")
