"""``make train``: data -> model -> warm start -> eval before -> GRPO -> eval after -> summary.json.

    python -m trainer.pipeline                                  # the embedded default (tiny model, CPU)
    python -m trainer.pipeline --model Qwen/Qwen2.5-0.5B-Instruct --data gsm8k.jsonl --verifier math \\
        --config configs/qwen05b.yaml                           # a real model: the same code path

The embedded default builds everything itself: the arithmetic task (``trainer.task``), a character
tokenizer and a tiny Qwen2 (``trainer.tiny``). The warm start is supervised on completions that show
their work only part of the time; GRPO's data has final answers only, so only the reward (from the
verifier service) can tell the policy what pays. Held-out accuracy is greedy, graded by the service's
``math`` verifier, before and after GRPO.

A run lives in ``runs/<name>/`` (``runs/latest`` points at it): ``config.yaml``, ``data/``,
``warmstart/`` (the model GRPO starts from), ``metrics.jsonl``, ``tb/``, ``curves.png``,
``completions.jsonl``, ``eval_before.jsonl``/``eval_after.jsonl``, ``checkpoints/`` and ``summary.json``.

The verifier service: ``--target host:port`` (or ``VERIFIER_TARGET``) uses a running one; otherwise a
local one is started on a free loopback port for the run and stopped afterwards.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from trainer import cli, task, tiny
from trainer.config import GRPOConfig, load_config
from trainer.errors import DataError, exit_on_error
from trainer.heldout import evaluate_heldout, figure_lines
from trainer.progress import MetricsBar
from trainer.sections import EvalSection, TaskSection, TinySection
from trainer.warmstart import WarmStartConfig, warm_start

__all__ = [
    "ALIASES",
    "DEFAULT_CONFIG",
    "EvalSection",
    "PipelineConfig",
    "Run",
    "TaskSection",
    "TinySection",
    "evaluate_heldout",
    "figure_lines",
    "load",
    "load_args",
    "main",
    "make_run_dir",
    "prepare_data",
    "run",
    "say",
    "verifier_service",
]

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"
ALIASES = {"verifier": "grpo.verifier"}  # make train VERIFIER=...: the GRPO reward


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
    task: TaskSection = TaskSection()
    tiny: TinySection = TinySection()
    warmstart: WarmStartConfig = WarmStartConfig()
    warmstart_data: str | None = Field(None, description="JSONL {prompt, completion} to warm start a --model on")
    eval: EvalSection = EvalSection()
    grpo: GRPOConfig = Field(default_factory=GRPOConfig, description="the GRPO trainer (trainer/config.py)")


# ---------------------------------------------------------------------------------------------
# configuration and the run folder
# ---------------------------------------------------------------------------------------------


def load(path: str | Path | None, over: dict[str, Any]) -> PipelineConfig:
    """A pipeline config file (optional) with ``over`` (a nested mapping) on top, validated once."""
    raw = cli.read_yaml(path) if path else {}
    return cli.build(PipelineConfig, cli.merge(raw, over), f" in {path}" if path else "")


def load_args(argv: list[str]) -> PipelineConfig:
    """``make train``'s command line: ``--config FILE`` (default configs/default.yaml), then overrides."""
    return cli.load(PipelineConfig, argv, default_config=DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None,
                    aliases=ALIASES)  # fmt: skip


def make_run_dir(runs: Path, name: str) -> Path:
    run = runs / name
    n = 1
    while run.exists():
        n += 1
        run = runs / f"{name}-{n}"
    run.mkdir(parents=True)
    latest = runs / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(run.name)
    return run


def prepare_data(cfg: PipelineConfig, run: Path) -> dict[str, Path | None]:
    """The embedded task's splits, or the user's DATA (with a held-out part split off when needed)."""
    out = run / "data"
    if cfg.data is None:
        sizes = {k: v for k, v in cfg.task.sizes().items() if v}
        paths = task.build(out, cfg.seed, sizes, cfg.task.task_config())
        return {"warmstart": paths.get("warmstart"), "train": paths["train"], "heldout": paths["heldout"]}
    rows = task.read_jsonl(cfg.data)
    ws = Path(cfg.warmstart_data) if cfg.warmstart_data else None
    if cfg.eval_data:
        return {"warmstart": ws, "train": Path(cfg.data), "heldout": Path(cfg.eval_data)}
    k = cfg.eval.heldout_from_data
    if len(rows) <= k:
        raise DataError(f"{cfg.data}: {len(rows)} rows, not enough to hold out {k}; pass --eval-data FILE")
    random.Random(cfg.seed).shuffle(rows)
    return {
        "warmstart": ws,
        "train": task.write_jsonl(rows[k:], out / "train.jsonl"),
        "heldout": task.write_jsonl(rows[:k], out / "heldout.jsonl"),
    }


@contextmanager
def verifier_service(target: str | None, log_path: Path) -> Iterator[str]:
    """``target`` (or $VERIFIER_TARGET) if given; else a local service on a free loopback port, stopped after."""
    target = target or os.environ.get("VERIFIER_TARGET")
    if target:
        yield target
        return
    from verifiers.launch import LocalServer

    say("starting the verifier service (Docker sandbox pool) on 127.0.0.1 ...")
    server = LocalServer(pool_size=2, log_path=str(log_path)).start()
    try:
        yield server.target
    finally:
        server.stop()


def say(msg: str) -> None:
    """A progress line on stderr (stdout holds the figures)."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# the run: a sequence of stages over one Run
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    """What the stages share: the config, the run folder, and what each stage produced."""

    cfg: PipelineConfig
    dir: Path
    t0: float
    paths: dict[str, Path | None] = field(default_factory=dict)
    grpo: GRPOConfig | None = None
    model: Any = None
    tok: Any = None
    target: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)

    def mark(self, phase: str) -> None:
        """Seconds since the last mark go to ``phase`` (summary.json's phases_s)."""
        self.phases[phase] = time.time() - self.t0 - sum(self.phases.values())

    def grpo_config(self, **extra: Any) -> GRPOConfig:
        """The pipeline's ``grpo`` section pointed at this run (folder, data, seed, model, threads)."""
        raw = self.cfg.grpo.model_dump()
        raw.update(run_dir=str(self.dir), data=str(self.paths["train"]), eval_data=str(self.paths["heldout"]),
                   seed=self.cfg.seed, **extra)  # fmt: skip
        if self.cfg.threads and "threads" not in self.cfg.grpo.model_fields_set:
            raw["threads"] = self.cfg.threads
        return load_config(None, raw)


def start(cfg: PipelineConfig) -> Run:
    """Threads, the run folder (runs/latest points at it) and the data splits."""
    import torch

    t0 = time.time()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = cfg.name or f"{Path(cfg.model).name if cfg.model else 'default'}-s{cfg.seed}-{stamp}"
    run_dir = make_run_dir(Path(cfg.runs), name)
    say(f"run: {run_dir}  ({run_dir.parent / 'latest'} -> {run_dir.name})")
    r = Run(cfg, run_dir, t0)
    r.paths = prepare_data(cfg, run_dir)
    return r


def load_model(r: Run) -> None:
    """The policy: the user's --model, or the tiny model built here."""
    from trainer.train import load_policy

    model = r.cfg.model or str(tiny.build(r.dir / "init", r.cfg.tiny.tiny_config(), seed=r.cfg.seed))
    r.grpo = r.grpo_config(model=model)
    r.model, r.tok = load_policy(r.grpo)


def warm_start_stage(r: Run) -> None:
    """Supervised steps on the warm-start rows (worked solutions mixed with estimates); saved to warmstart/."""
    ws, rows_path = r.cfg.warmstart, r.paths.get("warmstart")
    r.results["warmstart"] = {"steps": 0}
    if not rows_path or not ws.steps:
        return
    rows = task.read_jsonl(rows_path)
    worked = sum(task.BARE_THINK not in x["completion"] for x in rows)
    say(f"warm start: {ws.steps} supervised steps on {rows_path} "
        f"({worked} of {len(rows)} completions show their work; the rest only estimate)")  # fmt: skip
    from tqdm import tqdm

    bar = tqdm(total=ws.steps, desc="warm start", unit="step", dynamic_ncols=True)

    def on_step(step: int, m: dict[str, float]) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{m['loss']:.3f}", step_s=f"{m['step_s']:.2f}", refresh=False)

    r.results["warmstart"] = warm_start(r.model, r.tok, rows, ws.model_copy(update={"seed": r.cfg.seed}),
                                        on_step=on_step, use_chat_template=r.grpo.use_chat_template)  # fmt: skip
    bar.close()
    r.model.save_pretrained(r.dir / "warmstart")
    r.tok.save_pretrained(r.dir / "warmstart")


def connect(r: Run) -> None:
    """GRPO's config gets the service's address; the whole config goes to config.yaml."""
    r.grpo = r.grpo_config(model=r.grpo.model, verifier_target=r.target)
    dump = {**r.cfg.model_dump(exclude={"grpo"}), "grpo": r.grpo.model_dump()}
    (r.dir / "config.yaml").write_text(yaml.safe_dump(dump, sort_keys=False))
    say(f"verifier service: {r.target}; GRPO reward: {r.grpo.verifier}; held-out grading: {r.cfg.eval.verifier}")


def _heldout(r: Run, model, out: str) -> dict[str, Any]:
    return evaluate_heldout(model, r.tok, r.paths["heldout"], r.cfg.eval, r.target, r.dir / out, seed=r.cfg.seed,
                            use_chat_template=r.grpo.use_chat_template)  # fmt: skip


def eval_before(r: Run) -> None:
    before = r.results["eval_before"] = _heldout(r, r.model, "eval_before.jsonl")
    say(f"held-out accuracy after the warm start: {before['accuracy']:.3f} ({before['n']} problems, greedy)")
    with (r.dir / "metrics.jsonl").open("a") as f:  # step 0 of the eval curve in curves.png
        f.write(json.dumps({"step": 0, "eval/accuracy": before["accuracy"]}) + "\n")


def grpo(r: Run) -> None:
    from trainer.train import train

    g = r.grpo
    say(f"GRPO: {g.steps} steps x {g.prompts_per_step} prompts x G={g.group_size} on {r.paths['train']} "
        "(final answers only: no worked solutions)")  # fmt: skip
    with MetricsBar(r.dir / "metrics.jsonl", g.steps):
        r.results["grpo"] = train(g, r.model, r.tok)


def eval_after(r: Run) -> None:
    r.results["eval_after"] = _heldout(r, r.results["grpo"]["model"], "eval_after.jsonl")


def summarise(r: Run) -> dict[str, Any]:
    """summary.json, and the figures printed."""
    res, cfg = r.results, r.cfg
    checkpoint = res["grpo"]["checkpoint"]
    summary = {
        "eval_before": res["eval_before"],
        "eval_after": res["eval_after"],
        "steps": r.grpo.steps,
        "wall_s": round(time.time() - r.t0, 1),
        "phases_s": {k: round(v, 1) for k, v in r.phases.items()},
        "warmstart": res["warmstart"],
        "seed": cfg.seed,
        "model": cfg.model or "tiny (built by trainer.tiny)",
        "data": str(Path(r.paths["train"]).resolve()),
        "heldout": str(Path(r.paths["heldout"]).resolve()),
        "verifier": r.grpo.verifier,
        "checkpoint": str(Path(checkpoint).resolve()),
        "run_dir": str(r.dir.resolve()),
    }
    (r.dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for line in figure_lines(res["eval_before"], res["eval_after"], cfg.eval.verifier):
        print(line)
    print(f"wall {summary['wall_s']:.0f} s; run: {r.dir} ({r.dir.parent / 'latest'}); curves: {r.dir / 'curves.png'}; "
          f"checkpoint: {checkpoint}")  # fmt: skip
    return summary


Stage = Callable[[Run], None]
# (phase in summary.json's phases_s, stage); the second list runs while the verifier service is up
BEFORE_SERVICE: tuple[tuple[str, Stage], ...] = (("setup_s", load_model), ("warmstart_s", warm_start_stage))
WITH_SERVICE: tuple[tuple[str, Stage], ...] = (
    ("service_s", connect),
    ("eval_before_s", eval_before),
    ("grpo_s", grpo),
    ("eval_after_s", eval_after),
)


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """``make train``: the stages in order; returns summary.json's contents."""
    r = start(load_args(list(sys.argv[1:] if argv is None else argv)))
    for phase, stage in BEFORE_SERVICE:
        stage(r)
        r.mark(phase)
    with verifier_service(r.cfg.target, r.dir / "verifier.log") as r.target:
        for phase, stage in WITH_SERVICE:
            stage(r)
            r.mark(phase)
    return summarise(r)


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(PipelineConfig, __doc__, ALIASES))
        return
    run(argv)


if __name__ == "__main__":
    main()
