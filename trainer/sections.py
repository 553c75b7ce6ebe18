"""Config sections shared by ``make train`` (trainer/pipelines/make_train.py) and ``make r1`` (trainer/pipelines/r1.py): the
embedded task, the tiny model's shape and the held-out evaluation. Each is a pydantic model whose field
descriptions are the ``--help`` text (trainer/cli.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainer.pipelines import task, tiny


class TaskSection(BaseModel):
    """The embedded task (used when no --data is given); see trainer/pipelines/task.py."""

    model_config = ConfigDict(extra="forbid")
    operands: int = Field(4, ge=2, description="numbers per problem")
    min_value: int = Field(1, ge=0, description="smallest operand")
    max_value: int = Field(9, ge=1, description="largest operand")
    worked_fraction: float = Field(0.35, ge=0, le=1, description="share of warm-start rows that show their work")
    estimate_to: int = Field(10, ge=1, description="the other rows answer with the value rounded to this multiple")
    warmstart_size: int = Field(12000, ge=0, description="warm-start (supervised) rows")
    train_size: int = Field(4000, ge=1, description="GRPO prompts (final answers only)")
    heldout_size: int = Field(256, ge=1, description="held-out problems graded before and after")

    def task_config(self) -> task.TaskConfig:
        return task.TaskConfig(self.operands, self.min_value, self.max_value, self.worked_fraction, self.estimate_to)

    def sizes(self) -> dict[str, int]:
        return {"warmstart": self.warmstart_size, "train": self.train_size, "heldout": self.heldout_size}


class TinySection(BaseModel):
    """Shape of the tiny Qwen2 decoder the embedded default builds (trainer/pipelines/tiny.py TinyConfig)."""

    model_config = ConfigDict(extra="forbid")
    hidden_size: int = Field(128, ge=1, description="width of the residual stream")
    num_hidden_layers: int = Field(4, ge=1, description="transformer blocks")
    num_attention_heads: int = Field(4, ge=1, description="query heads (key/value heads are the same number)")
    intermediate_size: int = Field(384, ge=1, description="width of the SwiGLU MLP")
    max_position_embeddings: int = Field(128, ge=1, description="longest sequence (prompt + completion) in tokens")

    def tiny_config(self) -> tiny.TinyConfig:
        return tiny.TinyConfig(**self.model_dump())


class EvalSection(BaseModel):
    """Held-out accuracy before and after training: greedy, plus sampled accuracy and pass@k."""

    model_config = ConfigDict(extra="forbid")
    verifier: str = Field("math", description="verifier that grades held-out accuracy")
    max_new_tokens: int = Field(48, ge=1, description="completion length limit")
    batch_size: int = Field(128, ge=1, description="rows per generate call")
    heldout_from_data: int = Field(200, ge=1, description="with --data and no --eval-data: rows held out")
    k: int = Field(8, ge=0, description="samples per problem (T=1) for sampled accuracy and pass@k; 0: greedy only")
