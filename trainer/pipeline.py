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
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from trainer import task, tiny
from trainer.progress import MetricsBar
from trainer.warmstart import WarmStartConfig, warm_start

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "default.yaml"


class TaskSection(BaseModel):
    """The embedded task (used when no --data is given)."""

    model_config = ConfigDict(extra="forbid")
    operands: int = Field(4, ge=2)
    min_value: int = Field(1, ge=0)
    max_value: int = Field(9, ge=1)
    worked_fraction: float = Field(0.35, ge=0, le=1, description="share of warm-start rows that show their work")
    estimate_to: int = Field(10, ge=1, description="the other rows answer with the value rounded to this multiple")
    warmstart_size: int = Field(12000, ge=0)
    train_size: int = Field(4000, ge=1)
    heldout_size: int = Field(256, ge=1)


class EvalSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verifier: str = Field("math", description="verifier that grades held-out accuracy")
    max_new_tokens: int = Field(48, ge=1)
    batch_size: int = Field(128, ge=1)
    heldout_from_data: int = Field(200, ge=1, description="with --data and no --eval-data: rows held out")
    k: int = Field(8, ge=0, description="samples per problem (T=1) for sampled accuracy and pass@k; 0: greedy only")


class PipelineConfig(BaseModel):
    """configs/default.yaml. The ``grpo`` mapping is trainer.config.GRPOConfig (validated there)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    name: str | None = None
    seed: int = 0
    threads: int | None = Field(2, ge=1)
    task: TaskSection = TaskSection()
    tiny: dict[str, Any] = Field(default_factory=dict, description="trainer.tiny.TinyConfig fields")
    warmstart: WarmStartConfig = WarmStartConfig()
    warmstart_data: str | None = Field(None, description="JSONL {prompt, completion} to warm start a --model on")
    eval: EvalSection = EvalSection()
    grpo: dict[str, Any] = Field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# configuration and the run folder
# ---------------------------------------------------------------------------------------------

FLAGS = {"--config", "--model", "--data", "--eval-data", "--verifier", "--target", "--name", "--seed", "--runs"}


def parse_args(argv: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """Known flags, and ``--a.b value`` overrides of the YAML (values parsed as YAML)."""
    flags: dict[str, str] = {}
    over: dict[str, Any] = {}
    it = iter(argv)
    for key in it:
        if not key.startswith("--"):
            raise SystemExit(f"expected --key value, got {key!r} (see --help)")
        try:
            value = next(it)
        except StopIteration:
            raise SystemExit(f"{key} needs a value") from None
        if key in FLAGS:
            flags[key[2:].replace("-", "_")] = value
            continue
        node = over
        *parents, leaf = key[2:].replace("-", "_").split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    return flags, over


def _merge(base: dict, over: dict) -> dict:
    for k, v in over.items():
        base[k] = _merge(dict(base.get(k) or {}), v) if isinstance(v, dict) else v
    return base


def load(path: str | Path | None, over: dict[str, Any]) -> PipelineConfig:
    raw: dict = {}
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise SystemExit(f"config file not found: {path}") from None
    try:
        return PipelineConfig(**_merge(raw, over))
    except Exception as e:  # pydantic.ValidationError
        raise SystemExit(f"invalid pipeline config {path or ''}:\n{e}") from None


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


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def prepare_data(cfg: PipelineConfig, flags: dict[str, str], run: Path) -> dict[str, Path | None]:
    """The embedded task's splits, or the user's DATA (with a held-out part split off when needed)."""
    out = run / "data"
    if "data" not in flags:
        t = cfg.task
        tc = task.TaskConfig(t.operands, t.min_value, t.max_value, t.worked_fraction, t.estimate_to)
        sizes = {"warmstart": t.warmstart_size, "train": t.train_size, "heldout": t.heldout_size}
        paths = task.build(out, cfg.seed, {k: v for k, v in sizes.items() if v}, tc)
        return {"warmstart": paths.get("warmstart"), "train": paths["train"], "heldout": paths["heldout"]}
    rows = task.read_jsonl(flags["data"])
    ws = Path(cfg.warmstart_data) if cfg.warmstart_data else None
    if "eval_data" in flags:
        return {"warmstart": ws, "train": Path(flags["data"]), "heldout": Path(flags["eval_data"])}
    k = cfg.eval.heldout_from_data
    if len(rows) <= k:
        raise SystemExit(f"{flags['data']}: {len(rows)} rows, not enough to hold out {k}; pass --eval-data FILE")
    random.Random(cfg.seed).shuffle(rows)
    return {
        "warmstart": ws,
        "train": task.write_jsonl(rows[k:], out / "train.jsonl"),
        "heldout": task.write_jsonl(rows[:k], out / "heldout.jsonl"),
    }


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def _eval(
    model, tok, heldout: Path, cfg: PipelineConfig, target: str, out: Path, *, use_chat_template: bool = True
) -> dict[str, Any]:
    from trainer.data import load_examples
    from trainer.heldout import sampled_figures
    from trainer.rewards import VerifierReward
    from trainer.train import evaluate

    examples = load_examples(heldout)
    reward = VerifierReward(cfg.eval.verifier, target)
    try:
        ev = evaluate(
            model, tok, examples, reward, max_new_tokens=cfg.eval.max_new_tokens,
            batch_size=cfg.eval.batch_size, use_chat_template=use_chat_template,
        )  # fmt: skip
        sampled = (
            sampled_figures(
                model,
                tok,
                examples,
                reward,
                k=cfg.eval.k,
                max_new_tokens=cfg.eval.max_new_tokens,
                batch_size=cfg.eval.batch_size,
                use_chat_template=use_chat_template,
                seed=cfg.seed,
            )  # fmt: skip
            if cfg.eval.k
            else {}
        )
    finally:
        reward.close()
    rows = task.read_jsonl(heldout)
    task.write_jsonl(
        (
            {"prompt": r["prompt"], "answer": r["answer"], "completion": c}
            for r, c in zip(rows, ev["completions"], strict=True)
        ),
        out,
    )
    return {
        "accuracy": ev["accuracy"],
        "n": ev["n"],
        "reward_mean": ev["reward_mean"],
        "outcomes": ev["outcomes"],
    } | sampled


def figure_lines(before: dict[str, Any], after: dict[str, Any], verifier: str) -> list[str]:
    """The end-of-run figures, greedy first: the same numbers summary.json holds."""
    gain = 100 * (after["accuracy"] - before["accuracy"])
    lines = [f"held-out accuracy (greedy, {after['n']} problems, verifier {verifier}): "
             f"{before['accuracy']:.3f} after warm start -> {after['accuracy']:.3f} after GRPO ({gain:+.1f} points)"]  # fmt: skip
    k = after.get("k")
    if k and before.get("sampled_accuracy") is not None and after.get("sampled_accuracy") is not None:
        lines.append(f"held-out accuracy (sampled, T={after['temperature']:g}, {k} per problem): "
                     f"{before['sampled_accuracy']:.3f} -> {after['sampled_accuracy']:.3f}")  # fmt: skip
    if k and before.get(f"pass@{k}") is not None and after.get(f"pass@{k}") is not None:
        lines.append(
            f"held-out pass@{k} (T={after['temperature']:g}): {before[f'pass@{k}']:.3f} -> {after[f'pass@{k}']:.3f}"
        )
    return lines


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(argv: list[str] | None = None) -> dict[str, Any]:
    t0 = time.time()
    flags, over = parse_args(list(sys.argv[1:] if argv is None else argv))
    cfg_path = flags.get("config") or (DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)
    if "seed" in flags:
        over["seed"] = int(flags["seed"])
    cfg = load(cfg_path, over)
    import torch

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    from trainer.config import load_config

    default = "model" not in flags
    name = (
        flags.get("name")
        or cfg.name
        or (f"{'default' if default else Path(flags['model']).name}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    )
    run_dir = make_run_dir(Path(flags.get("runs", "runs")), name)
    _say(f"run: {run_dir}  ({run_dir.parent / 'latest'} -> {run_dir.name})")
    paths = prepare_data(cfg, flags, run_dir)

    grpo_raw = dict(cfg.grpo)
    grpo_raw.update(run_dir=str(run_dir), data=str(paths["train"]), eval_data=str(paths["heldout"]), seed=cfg.seed)
    if "verifier" in flags:
        grpo_raw["verifier"] = flags["verifier"]
    if cfg.threads and "threads" not in grpo_raw:
        grpo_raw["threads"] = cfg.threads

    # -- model ------------------------------------------------------------------------------------
    if default:
        init = tiny.build(run_dir / "init", tiny.TinyConfig(**cfg.tiny), seed=cfg.seed)
        grpo_raw["model"] = str(init)
    else:
        grpo_raw["model"] = flags["model"]
    from trainer.train import load_policy

    gcfg = load_config(None, grpo_raw)
    model, tok = load_policy(gcfg)
    phases: dict[str, float] = {"setup_s": time.time() - t0}

    # -- warm start (supervised, worked solutions) ------------------------------------------------
    ws_stats: dict[str, Any] = {"steps": 0}
    if paths["warmstart"] and cfg.warmstart.steps:
        rows = task.read_jsonl(paths["warmstart"])
        worked = sum(task.BARE_THINK not in r["completion"] for r in rows)
        _say(f"warm start: {cfg.warmstart.steps} supervised steps on {paths['warmstart']} "
             f"({worked} of {len(rows)} completions show their work; the rest only estimate)")  # fmt: skip
        from tqdm import tqdm

        bar = tqdm(total=cfg.warmstart.steps, desc="warm start", unit="step", dynamic_ncols=True)

        def on_step(step: int, m: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{m['loss']:.3f}", step_s=f"{m['step_s']:.2f}", refresh=False)

        ws_stats = warm_start(model, tok, rows, cfg.warmstart.model_copy(update={"seed": cfg.seed}), on_step=on_step,
                              use_chat_template=gcfg.use_chat_template)  # fmt: skip
        bar.close()
        model.save_pretrained(run_dir / "warmstart")
        tok.save_pretrained(run_dir / "warmstart")
    phases["warmstart_s"] = time.time() - t0 - sum(phases.values())

    # -- the verifier service -----------------------------------------------------------------------
    target = flags.get("target") or os.environ.get("VERIFIER_TARGET")
    server = None
    if not target:
        from verifiers.launch import LocalServer

        _say("starting the verifier service (Docker sandbox pool) on 127.0.0.1 ...")
        server = LocalServer(pool_size=2, log_path=str(run_dir / "verifier.log")).start()
        target = server.target
    gcfg = load_config(None, {**grpo_raw, "verifier_target": target})
    (run_dir / "config.yaml").write_text(
        yaml.safe_dump({**cfg.model_dump(exclude={"grpo"}), "grpo": gcfg.model_dump()}, sort_keys=False)
    )
    try:
        phases["service_s"] = time.time() - t0 - sum(phases.values())
        _say(f"verifier service: {target}; GRPO reward: {gcfg.verifier}; held-out grading: {cfg.eval.verifier}")
        before = _eval(
            model,
            tok,
            paths["heldout"],
            cfg,
            target,
            run_dir / "eval_before.jsonl",
            use_chat_template=gcfg.use_chat_template,
        )
        _say(f"held-out accuracy after the warm start: {before['accuracy']:.3f} ({before['n']} problems, greedy)")
        with (run_dir / "metrics.jsonl").open("a") as f:  # step 0 of the eval curve in curves.png
            f.write(json.dumps({"step": 0, "eval/accuracy": before["accuracy"]}) + "\n")
        phases["eval_before_s"] = time.time() - t0 - sum(phases.values())

        from trainer.train import train

        _say(f"GRPO: {gcfg.steps} steps x {gcfg.prompts_per_step} prompts x G={gcfg.group_size} on {paths['train']} "
             "(final answers only: no worked solutions)")  # fmt: skip
        with MetricsBar(run_dir / "metrics.jsonl", gcfg.steps):
            result = train(gcfg, model, tok)
        phases["grpo_s"] = time.time() - t0 - sum(phases.values())
        after = _eval(
            result["model"],
            tok,
            paths["heldout"],
            cfg,
            target,
            run_dir / "eval_after.jsonl",
            use_chat_template=gcfg.use_chat_template,
        )
        phases["eval_after_s"] = time.time() - t0 - sum(phases.values())
    finally:
        if server is not None:
            server.stop()

    summary = {
        "eval_before": before,
        "eval_after": after,
        "steps": gcfg.steps,
        "wall_s": round(time.time() - t0, 1),
        "phases_s": {k: round(v, 1) for k, v in phases.items()},
        "warmstart": ws_stats,
        "seed": cfg.seed,
        "model": flags.get("model", "tiny (built by trainer.tiny)"),
        "data": str(Path(paths["train"]).resolve()),
        "heldout": str(Path(paths["heldout"]).resolve()),
        "verifier": gcfg.verifier,
        "checkpoint": str(Path(result["checkpoint"]).resolve()),
        "run_dir": str(run_dir.resolve()),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for line in figure_lines(before, after, cfg.eval.verifier):
        print(line)
    print(f"wall {summary['wall_s']:.0f} s; run: {run_dir} ({run_dir.parent / 'latest'}); curves: {run_dir / 'curves.png'}; "
          f"checkpoint: {result['checkpoint']}")  # fmt: skip
    return summary


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        print("flags: " + ", ".join(sorted(FLAGS)) + "; any --section.field value overrides the YAML")
        return
    run()


if __name__ == "__main__":
    main()
