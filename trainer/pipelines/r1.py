"""``make r1``: the DeepSeek-R1 pipeline on the embedded default task, one command, resumable per stage.

    python -m trainer.pipelines.r1                                   # configs/r1.yaml, output in runs/r1-s0/
    python -m trainer.pipelines.r1 --seed 1 --out runs/r1-s1 --rl.steps 100 --rejection.samples 8

Stages (R1 paper, sec. 2.3), each in its own folder under ``--out``:

1. ``cold_start``  supervised fine-tuning of the base model on a small cold-start set (the task's
   warm-start split: worked chains mixed with estimates, as in ``make train``);
2. ``rl``          GRPO from the cold-start model on final-answer-only prompts (``r1`` reward:
   0.9 * math + 0.1 * think_format, from the verifier service);
3. ``rejection``   N samples per prompt from the RL model (temperature 1), graded by the service; a
   sample is kept only if ``math`` says CORRECT and ``think_format`` says well formed, then
   deduplicated (trainer/pipelines/rejection.py); the counts are reported;
4. ``sft``         supervised fine-tuning of the *base* model (not the RL one) on the kept samples;
5. ``final_rl``    GRPO again, from the ``sft`` model.

After every stage that produces a model, held-out accuracy (greedy, the service's ``math``
verifier, the same 256 problems) goes in the stage's ``stage.json``; the end prints one table of all
stages (also ``<out>/r1_table.md`` and ``<out>/summary.json``). A stage whose ``stage.json`` exists is
skipped, so running the same command again after an interruption resumes at the first unfinished stage.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from trainer import cli
from trainer.config import GRPOConfig, R1Config, WarmStartConfig, load_config
from trainer.data import read_jsonl, write_jsonl
from trainer.errors import TrainerError, exit_on_error
from trainer.evaluation.heldout import evaluate_heldout
from trainer.pipelines import task, tiny
from trainer.pipelines.make_train import say
from trainer.pipelines.service import verifier_service

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "r1.yaml"
STAGES = ("cold_start", "rl", "rejection", "sft", "final_rl")


class R1Error(TrainerError):
    """A stage cannot run (e.g. rejection sampling kept nothing to fine-tune on)."""


def load(path: str | Path | None, over: dict[str, Any]) -> R1Config:
    """An r1 config file (optional) with ``over`` (a nested mapping) on top, validated once."""
    raw = cli.read_yaml(path) if path else {}
    return cli.build(R1Config, cli.merge(raw, over), f" in {path}" if path else "")


def load_args(argv: list[str]) -> R1Config:
    """``make r1``'s command line: ``--config FILE`` (default configs/r1.yaml), then overrides."""
    return cli.load(R1Config, argv, default_config=DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)


# ---------------------------------------------------------------------------------------------
# stages
# ---------------------------------------------------------------------------------------------


def _load_model(path: Path):
    from transformers import AutoModelForCausalLM

    from trainer.policy import load_tokenizer

    return AutoModelForCausalLM.from_pretrained(path), load_tokenizer(path)


def _save(model, tok, path: Path) -> Path:
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def sft_stage(cfg: R1Config, base: Path, rows: list[dict], wcfg: WarmStartConfig, out: Path) -> dict[str, Any]:
    from trainer.pipelines.warmstart import warm_start

    model, tok = _load_model(base)
    stats = warm_start(model, tok, rows, wcfg.model_copy(update={"seed": cfg.seed}))
    _save(model, tok, out / "model")
    return {"from": str(base), "examples": len(rows), "steps": wcfg.steps, "loss": round(stats["loss"], 4)}


def rl_stage(cfg: R1Config, start: Path, grpo: GRPOConfig, paths: dict[str, Path], target: str, out: Path) -> dict:
    from trainer.policy import load_policy
    from trainer.train import train

    raw = {**grpo.model_dump(), "model": str(start), "data": str(paths["train"]), "eval_data": str(paths["heldout"])}
    raw.update(run_dir=str(out), seed=cfg.seed, target=target, report_to=[], save_every=0)
    if cfg.threads and "threads" not in grpo.model_fields_set:
        raw["threads"] = cfg.threads
    gcfg = load_config(None, raw)
    model, tok = load_policy(gcfg)
    result = train(gcfg, model, tok)
    _save(result["model"], tok, out / "model")
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # the final weights are in model/
    m = result["metrics"]
    return {"from": str(start), "steps": gcfg.steps, "verifier": gcfg.verifier,
            "sampled_reward_last": round(m.get("reward/mean", float("nan")), 4)}  # fmt: skip


def rejection_stage(cfg: R1Config, model_dir: Path, paths: dict[str, Path], target: str, out: Path) -> dict:
    from trainer.data import load_examples
    from trainer.pipelines.rejection import Sample, filter_samples, grade_samples, sample_records
    from trainer.rollout.decode import generate_rollout
    from verifiers.client import VerifierClient

    rc = cfg.rejection
    model, tok = _load_model(model_dir)
    examples = load_examples(paths["train"])[: rc.prompts]
    raw: list[Sample] = []
    for i in range(0, len(examples), rc.batch_prompts):
        part = examples[i : i + rc.batch_prompts]
        ro = generate_rollout(
            model, tok, part, rc.samples, max_new_tokens=rc.max_new_tokens, temperature=rc.temperature, do_sample=True
        )
        raw += [Sample(p, r, c) for p, r, c in zip(ro.prompts, ro.references, ro.texts, strict=True)]
    client = VerifierClient(target)
    try:
        graded = grade_samples(client, raw, correct_verifier=rc.correct_verifier, format_verifier=rc.format_verifier)
    finally:
        client.close()
    kept, counts = filter_samples(graded)
    write_jsonl(sample_records(graded), out / "samples.jsonl")
    write_jsonl(kept, out / "sft.jsonl")
    return {"from": str(model_dir), "samples_per_prompt": rc.samples, **counts}


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def _eval_stage(cfg: R1Config, stage_dir: Path, heldout: Path, target: str) -> dict[str, Any]:
    model, tok = _load_model(stage_dir / "model")
    greedy_only = cfg.eval.model_copy(update={"k": 0})  # the table is greedy
    ev = evaluate_heldout(model, tok, heldout, greedy_only, target, stage_dir / "eval.jsonl", seed=cfg.seed)
    return {"accuracy": ev["accuracy"], "n": ev["n"], "reward_mean": round(ev["reward_mean"], 4)}


def prepare(cfg: R1Config, out: Path) -> dict[str, Path]:
    """Data splits and the base model (built once; reused when the run resumes)."""
    t = cfg.task
    if not (out / "data" / "heldout.jsonl").exists():
        task.build(out / "data", cfg.seed, t.sizes(), t)
    if not (out / "base" / "config.json").exists():
        tiny.build(out / "base", cfg.tiny, seed=cfg.seed)
    return {s: out / "data" / f"{s}.jsonl" for s in ("warmstart", "train", "heldout")} | {"base": out / "base"}


def run_stage(name: str, cfg: R1Config, out: Path, paths: dict[str, Path], target: str) -> dict[str, Any]:
    """Run one stage into out/<name>/ and return its record (held-out figures included)."""
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    if name == "cold_start":
        rec = sft_stage(cfg, paths["base"], read_jsonl(paths["warmstart"]), cfg.cold_start, d)
    elif name == "rl":
        rec = rl_stage(cfg, out / "cold_start" / "model", cfg.rl, paths, target, d)
    elif name == "rejection":
        rec = rejection_stage(cfg, out / "rl" / "model", paths, target, d)
    elif name == "sft":
        rows = read_jsonl(out / "rejection" / "sft.jsonl")
        if not rows:
            raise R1Error(
                "rejection sampling kept no sample: nothing to fine-tune on (train the RL stage longer "
                "or raise rejection.samples / rejection.prompts)"
            )
        rec = sft_stage(cfg, paths["base"], rows, cfg.sft, d)
    else:
        rec = rl_stage(cfg, out / "sft" / "model", cfg.final_rl, paths, target, d)
    if (d / "model").exists():
        rec["heldout"] = _eval_stage(cfg, d, paths["heldout"], target)
    return rec


def table(records: dict[str, dict[str, Any]]) -> str:
    """The per-stage Markdown table."""
    lines = ["| stage | held-out greedy accuracy | what it did | wall |", "|---|---|---|---|"]
    for name in STAGES:
        r = records.get(name)
        if r is None:
            lines.append(f"| {name} | — | not run | — |")
            continue
        acc = f"{r['heldout']['accuracy']:.3f}" if "heldout" in r else "—"
        if name == "rejection":
            what = (
                f"{r['sampled']} samples ({r['prompts']} prompts x {r['samples_per_prompt']}): {r['correct']} "
                f"correct, {r['well_formed']} well formed, {r['correct_and_well_formed']} both, "
                f"{r['duplicates']} duplicates dropped -> {r['kept']} kept ({r['prompts_kept']} prompts)"
            )
        elif name in ("rl", "final_rl"):
            what = f"GRPO {r['steps']} steps ({r['verifier']}) from {Path(r['from']).parent.name}"
        else:
            what = f"SFT {r['steps']} steps on {r['examples']} examples from {Path(r['from']).name}"
        lines.append(f"| {name} | {acc} | {what} | {r['wall_s']:.0f} s |")
    return "\n".join(lines)


def run_stages(cfg: R1Config, out: Path, paths: dict[str, Path], target: str) -> dict[str, dict[str, Any]]:
    """Every stage in order; a stage whose stage.json exists is read back instead of run again."""
    records: dict[str, dict[str, Any]] = {}
    for name in STAGES:
        done = out / name / "stage.json"
        if done.exists():
            records[name] = json.loads(done.read_text())
            say(f"[{name}] done before ({done}): skipped")
            continue
        say(f"[{name}] running ...")
        ts = time.time()
        rec = run_stage(name, cfg, out, paths, target)
        rec["wall_s"] = round(time.time() - ts, 1)
        done.write_text(json.dumps(rec, indent=2) + "\n")
        records[name] = rec
        say(f"[{name}] {json.dumps(rec)}")
    return records


def run(argv: list[str] | None = None) -> dict[str, Any]:
    t0 = time.time()
    cfg = load_args(list(sys.argv[1:] if argv is None else argv))
    out = Path(cfg.out or f"runs/r1-s{cfg.seed}")
    out.mkdir(parents=True, exist_ok=True)
    import torch

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    paths = prepare(cfg, out)
    with verifier_service(cfg.target, out / "verifier.log") as target:
        records = run_stages(cfg, out, paths, target)
    md = table(records)
    (out / "r1_table.md").write_text(md + "\n")
    summary = {"stages": records, "wall_s": round(time.time() - t0, 1), "out": str(out.resolve()), "seed": cfg.seed}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(md)
    print(f"wall {summary['wall_s']:.0f} s this invocation; stages in {out}/<stage>/ (stage.json, model/, eval.jsonl)")
    return summary


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(R1Config, __doc__))
        return
    run(argv)


if __name__ == "__main__":
    main()
