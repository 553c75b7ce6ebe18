"""The GRPO run's model: ``GRPOConfig`` (``python -m trainer.train``'s command line, and the ``grpo:``
section of ``make train``'s config, the ``rl:`` and ``final_rl:`` sections of ``make r1``'s) and its
``lora`` section, ``LoraConfig``. Field descriptions are the documentation."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainer import cli
from trainer.config.sampling import TEMPERATURE, TOP_P, Temperature, TopP
from trainer.config.tools import ToolsConfig

# The variant lists, declared once: the config fields below and the loss (trainer/grpo/loss.py) use these names.
LossType = Literal["grpo", "token_mean", "dr_grpo"]  # the reduction (loss.py, ``grpo_loss``)
ImportanceLevel = Literal["token", "sequence"]  # "sequence" is GSPO
Scale = Literal["group", "batch", "none"]  # advantage std scaling
Std = Literal["population", "unbiased"]  # the std estimator for advantages


def weighs_tokens(loss_type: LossType) -> bool:
    """Whether ``loss_type`` weighs every token alike (DAPO's token mean), so minibatches and ranks are weighed by
    their token counts; the others average over completions."""
    return loss_type == "token_mean"


class LoraConfig(BaseModel):
    """LoRA adapters through ``peft`` (optional dependency: ``pip install .[lora]``)."""

    model_config = ConfigDict(extra="forbid")
    r: int = Field(16, ge=1, description="adapter rank")
    alpha: int = Field(32, ge=1, description="scaling numerator (scale = alpha / r)")
    dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the adapter input")
    target_modules: list[str] | str = Field("all-linear", description="module names, or 'all-linear'")


class GRPOConfig(BaseModel):
    """Everything one GRPO run needs. Field descriptions are the documentation."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    # -- what to train on -----------------------------------------------------------------------
    model: str | None = Field(None, description="folder or hub id for AutoModelForCausalLM (None: passed in)")
    tokenizer: str | None = Field(None, description="tokenizer folder (default: same as model)")
    data: str | None = Field(None, description='JSONL: {"prompt","answer"} (math) or {"prompt","tests"} (code)')
    eval_data: str | None = Field(None, description="held-out JSONL, graded greedily every eval_every steps")
    use_chat_template: bool = Field(True, description="wrap prompts in the tokenizer's chat template if it has one")

    # -- rewards ----------------------------------------------------------------------------------
    verifier: str = Field("math", description="name of the verifier in the service's registry")
    target: str = Field(
        "127.0.0.1:50051", description="host:port of the verifier service (host:port,host:port: replicas)"
    )
    verifier_timeout_s: float = Field(300.0, gt=0, description="deadline of one VerifyBatch call")

    # -- rollout ----------------------------------------------------------------------------------
    group_size: int = Field(8, ge=2, description="G: completions sampled per prompt")
    prompts_per_step: int = Field(8, ge=1, description="prompts per rollout batch (batch = prompts * G)")
    max_new_tokens: int = Field(256, ge=1, description="completion length limit")
    temperature: Temperature = Field(TEMPERATURE, description="sampling temperature (log-probs use the same)")
    top_p: TopP = Field(TOP_P, description="nucleus sampling")
    share_prefix: bool = Field(True, description="encode each prompt once per group (KV cache repeated G times)")
    fast_decode: bool = Field(
        True,
        description="sample with the trainer's own decode loop (one forward per token, temperature/top_p/EOS only); "
        "False, or a model/generation_config it does not cover (repetition penalty, beams, ...): model.generate",
    )
    fast_path: bool = Field(
        True,
        description="lean forward for Qwen2/Llama models it reproduces (decode, scoring, replay of the decode's "
        "products in the first training forward); False: the HF forward everywhere, same numbers, slower: for "
        "comparing the two (docs/train.md, Supported architectures)",
    )
    overlap_scoring: bool = Field(
        True,
        description="send each group to the verifier as soon as its completions are decoded (trainer/grpo/rewards.py)",
    )
    scoring_workers: int = Field(4, ge=1, description="threads that send groups to the verifier (overlap_scoring)")
    rollout_backend: Literal["hf", "vllm"] = Field(
        "hf",
        description="who samples: 'hf' (the policy, in this process) or 'vllm' (a colocated vLLM engine, weights "
        "pushed after each update; pip install .[vllm], CUDA); see trainer/rollout/backends.py",
    )
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, lt=1, description="vllm: share of GPU memory")
    rollout_dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="precision rollouts sample in; auto: the training forward's (bf16 where training autocasts, "
        "e.g. on CUDA; else the parameters' dtype), so the sampler's distribution is the one the loss scores",
    )
    tis: Literal["auto", "on", "off"] = Field(
        "auto",
        description="truncated importance sampling: weight each token's loss term by min(pi_old/pi_sample, "
        "tis_cap), pi_sample the sampler's recorded log-prob; auto: on when rollout_backend is vllm",
    )
    tis_cap: float = Field(2.0, ge=1, description="tis: the cap C on pi_old/pi_sample (verl, TRL: 2-3)")
    mask_truncated: bool = Field(False, description="drop completions that hit max_new_tokens from the loss")
    dynamic_sampling: bool = Field(False, description="DAPO: drop zero-variance groups, refill the batch")
    tools: ToolsConfig | None = Field(
        None,
        description="tool-integrated reasoning: rollouts call Python in a sandbox session mid-answer (format, "
        "max_calls, output_chars, timeout_s; docs/train.md, Tool rollouts); None: one pass of decoding",
    )
    max_refills: int = Field(3, ge=0, description="extra rollouts per step when dynamic_sampling refills")

    # -- objective --------------------------------------------------------------------------------
    beta: float = Field(0.04, ge=0, description="k3 KL weight; 0 loads no reference model")
    clip_eps_low: float = Field(0.2, ge=0, lt=1, description="lower clip: rho >= 1 - eps_low")
    clip_eps_high: float = Field(0.2, ge=0, description="upper clip: rho <= 1 + eps_high (DAPO: 0.28)")
    loss_type: LossType = Field("grpo", description="reduction, see loss.py")
    importance_level: ImportanceLevel = Field("token", description="'sequence' is GSPO")
    scale_rewards: Scale = Field("group", description="advantage std scaling")
    std: Std = Field("population", description="std estimator for advantages")
    advantage: Literal["outcome", "process"] = Field(
        "outcome",
        description="'outcome': one advantage per completion from its reward; 'process' (DeepSeekMath process "
        "supervision): per-token advantages from the verifier's step rewards, see trainer/grpo/loss.py",
    )
    process_outcome_step: bool = Field(
        True, description="process: add the overall reward as a last step ending at the completion's last token"
    )
    ref_reset_every: int = Field(0, ge=0, description="pi_ref <- pi_theta every K steps (0: never)")

    # -- optimisation -----------------------------------------------------------------------------
    steps: int = Field(100, ge=1, description="rollout steps")
    mu: int = Field(1, ge=1, description="optimisation epochs over each rollout batch")
    minibatches: int = Field(1, ge=1, description="optimizer steps per epoch (the batch split evenly)")
    micro_batch_size: int | None = Field(None, ge=1, description="rows per forward/backward (grad accumulation)")
    lr: float = Field(1e-6, gt=0, description="AdamW peak learning rate")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field("constant", description="after warmup")
    warmup_steps: int = Field(0, ge=0, description="linear warmup, in optimizer steps")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    adam_betas: tuple[float, float] = Field((0.9, 0.99), description="AdamW betas")
    grad_clip: float = Field(1.0, ge=0, description="max global grad norm (0: off)")
    lora: LoraConfig | None = Field(None, description="train LoRA adapters instead of all weights")
    gradient_checkpointing: bool = Field(False, description="recompute activations in backward")
    parallel: Literal["ddp", "fsdp"] = Field(
        "ddp",
        description="under torchrun: 'ddp' (a full replica per rank, gradients all-reduced) or 'fsdp' (torch "
        "FSDP2 fully_shard per decoder layer, for models that do not fit one device); see trainer/distributed.py",
    )

    # -- the reward-hacking alarm (trainer/alarm/, docs/train.md "The reward-hacking alarm") -----------
    alarm: bool = Field(
        False,
        description="watch for reward hacking: audit a sample of rewarded completions, replay canaries through the "
        "reward, raise alarms on the dynamics (docs/train.md); the alarm_* and audit* settings need it",
    )
    on_alarm: Literal["warn", "drop", "stop"] = Field(
        "warn",
        description="what an alarm does: warn (progress line, stderr, alarms.jsonl); drop (also: the flagged "
        "completions get advantage 0 and no loss); stop (checkpoint of the last step before it, then exit)",
    )
    audit: float | None = Field(
        None,
        ge=0,
        le=1,
        description="share of the step's groups whose completions are re-graded by the audit verifier (at least one "
        "group with a paid completion); None: 0.05 with the alarm on",
    )
    audit_verifier: str | None = Field(
        None,
        description="the independent verdict; None: the strict built-in of the data's kind (math with fallback none, "
        "or code), with enforce_signals=all where the service offers it. A data column audit_reference, when "
        "present, is what the audit grades against",
    )
    canary_every: int = Field(
        100, ge=0, description="replay the canaries through the training reward every K steps (0: only at start)"
    )
    allow_hackable_reward: bool = Field(
        False, description="train even when a canary is paid at start (otherwise the run stops before training)"
    )

    # -- run --------------------------------------------------------------------------------------
    run_dir: str = Field("runs/grpo", description="metrics, checkpoints, curves.png")
    save_every: int = Field(0, ge=0, description="checkpoint every K steps (0: only at the end)")
    keep_checkpoints: int = Field(2, ge=1, description="how many step checkpoints to keep")
    eval_every: int = Field(0, ge=0, description="greedy held-out accuracy every K steps (0: off)")
    eval_limit: int | None = Field(None, ge=1, description="grade only the first K eval examples")
    log_completions_every: int = Field(
        10, ge=0, description="write sampled completions every K steps, and on the first and last (0: never)"
    )
    seed: int = Field(0, description="seeds data order, sampling and init of adapters")
    device: str = Field("auto", description="'auto' (cuda if available, else cpu), or a torch device")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="parameter and AdamW-state dtype; auto: float32 (mixed precision: see autocast). bfloat16/"
        "float16: pure half precision, for memory-bound cases only (updates at small lr fall below its resolution)",
    )
    autocast: Literal["auto", "bf16", "none"] = Field(
        "auto", description="bf16 autocast of forward/backward over fp32 weights; auto: bf16 on cuda (if supported)"
    )
    threads: int | None = Field(None, ge=1, description="torch CPU threads (None: leave torch's default)")
    resume: str | None = Field(None, description="'auto' (latest in run_dir) or a checkpoint folder")
    report_to: list[Literal["tensorboard", "wandb", "trackio"]] = Field(
        ["tensorboard"],
        description="where the scalars go besides metrics.jsonl: tensorboard, wandb, trackio (the last two are "
        "optional packages); 'wandb' or 'tensorboard,wandb' on the command line, 'none' for none",
    )

    @field_validator("report_to", mode="before")
    @classmethod
    def _report_to_list(cls, v: object) -> object:
        if isinstance(v, str):
            return [] if v.strip() in ("", "none") else [x.strip() for x in v.split(",")]
        return v

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: object) -> object:
        old = sorted(k for k in data if k in RENAMED) if isinstance(data, dict) else []
        if old:
            raise ValueError(
                "; ".join(
                    f"{k} is now called {RENAMED[k]} (`{RENAMED[k]}:` in a config file, --{RENAMED[k]})" for k in old
                )
            )
        return data

    @model_validator(mode="after")
    def _check(self) -> GRPOConfig:
        batch = self.prompts_per_step * self.group_size
        if batch % self.minibatches:
            raise ValueError(
                f"batch prompts_per_step*group_size={batch} is not divisible by minibatches={self.minibatches}"
            )
        mb = batch // self.minibatches
        if self.micro_batch_size and mb % self.micro_batch_size:
            raise ValueError(f"minibatch of {mb} rows is not divisible by micro_batch_size={self.micro_batch_size}")
        if self.lora is not None and self.ref_reset_every:
            raise ValueError("ref_reset_every needs full fine-tuning: with lora the reference is the frozen base model")
        if not self.alarm:
            set_ = sorted(self.model_fields_set & ALARM_FIELDS)
            if set_ and any(getattr(self, k) != GRPOConfig.model_fields[k].default for k in set_):
                raise ValueError(
                    f"{', '.join(set_)} {'needs' if len(set_) == 1 else 'need'} alarm: true (--grpo.alarm true)"
                )
        if self.tools is not None:
            if self.advantage == "process":
                raise ValueError("tools: advantage process is not supported (step spans would cover tool output)")
        if self.rollout_dtype == "float32" and self.dtype in ("bfloat16", "float16"):
            raise ValueError(f"rollout_dtype=float32 needs float32 parameters (dtype is {self.dtype}): use auto")
        return self

    @property
    def audit_share(self) -> float:
        """The audit's share of groups: ``audit``, or 0.05 with the alarm on (0 without it)."""
        if not self.alarm:
            return 0.0
        return 0.05 if self.audit is None else self.audit

    @property
    def batch_size(self) -> int:
        return self.prompts_per_step * self.group_size

    @property
    def tis_on(self) -> bool:
        """Truncated importance sampling applies: asked for, or by default where a separate engine samples."""
        return self.tis == "on" or (self.tis == "auto" and self.rollout_backend == "vllm")

    def logs_completions_at(self, step: int) -> bool:
        """Sampled completions are written every log_completions_every steps, and on the first and last step."""
        every = self.log_completions_every
        return bool(every) and (step % every == 0 or step in (1, self.steps))

    @property
    def off_policy(self) -> bool:
        """True when some optimizer step sees a batch sampled by an older policy (needs old log-probs)."""
        return self.mu > 1 or self.minibatches > 1


RENAMED = {"verifier_target": "target"}  # a former name is refused with its new one (make train says --target)
ALARM_FIELDS = {"on_alarm", "audit", "audit_verifier", "canary_every", "allow_hackable_reward"}


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
