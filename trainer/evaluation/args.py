"""The command line of ``python -m trainer.evaluation.evaluate`` (``make eval``): one pydantic model, parsed by
trainer/cli.py like every trainer entry point. Flags are the field names with dashes
(``--format-verifier think_format``, ``--max-new-tokens 64``); switches go alone (``--fresh``,
``--no-progress``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainer import cli


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
    temperature: float = Field(1.0, gt=0, description="sampling temperature when K > 1")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling when K > 1")
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


def parse_args(argv: Sequence[str] | None = None) -> EvalArgs:
    """``make eval``'s command line -> EvalArgs (a ConfigError says what is wrong)."""
    return cli.load(EvalArgs, list(argv or []))
