"""Outcome vs process supervision on the embedded default task (``make train``), seed by seed.

    python -m bench.training.process_vs_outcome --seeds 0 1 2 [--runs runs/cmp] [-- extra pipeline args]

For each seed:
- ``outcome-s<seed>``: ``python -m trainer.pipelines.make_train --seed S`` as ``make train`` runs it (warm start,
  then GRPO with the default outcome advantages and the ``r1`` reward);
- ``process-s<seed>``: the same pipeline, the same steps and batch, started from *that run's* warm-start
  checkpoint (``--model <outcome run>/warmstart --warmstart.steps 0``: the warm start is the same
  computation, done once), with ``--grpo.advantage process --grpo.verifier arith_steps`` (step rewards of
  every written step; the overall reward, the answer's correctness, is the last step);
- held-out figures of both final models, as the pipeline measures them (256 problems): greedy accuracy,
  sampled accuracy (``eval.k`` = 8 samples per problem at temperature 1) and pass@8; for a run without
  sampled figures in its summary, ``python -m trainer.evaluation.evaluate --k 4`` measures the sampled accuracy.
- ``--reuse 'runs/mytrain-s{seed}'``: take ``outcome-s<seed>`` from an existing ``make train SEED=<seed>``
  run folder (the same command and config), linked in instead of trained again.

Runs whose ``summary.json`` / ``eval_sampled.json`` exist are reused, so the script resumes. It prints
one Markdown table: per seed, then mean and spread (population std, min..max) per arm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
PROCESS = ["--grpo.advantage", "process", "--grpo.verifier", "arith_steps"]


def _run(cmd: list[str], log: Path) -> None:
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    with log.open("w") as f:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SystemExit(f"failed (rc {rc}): {' '.join(cmd)}; log: {log}")


def train_arm(runs: Path, name: str, seed: int, extra: list[str]) -> dict:
    run = runs / name
    if not (run / "summary.json").exists():
        if run.exists():
            raise SystemExit(f"{run} exists without summary.json (an interrupted run): remove it and start again")
        cmd = [
            PY,
            "-m",
            "trainer.pipelines.make_train",
            "--runs",
            str(runs),
            "--name",
            name,
            "--seed",
            str(seed),
            *extra,
        ]
        runs.mkdir(parents=True, exist_ok=True)
        _run(cmd, runs / f"{name}.log")
    return json.loads((run / "summary.json").read_text())


def sampled_accuracy(run: Path, summary: dict, k: int) -> float:
    after = summary["eval_after"]
    if after.get("sampled_accuracy") is not None:  # the pipeline measured it (eval.k samples per problem, T=1)
        return float(after["sampled_accuracy"])
    out = run / "eval_sampled.json"
    if not out.exists():
        cmd = [PY, "-m", "trainer.evaluation.evaluate", "--model", summary["checkpoint"], "--k", str(k), "--seed", "0",
               "--out", str(out), "--no-progress"]  # fmt: skip
        _run(cmd, run / "eval_sampled.log")
    return float(json.loads(out.read_text())["pass@k"]["1"])


def pass_k(summary: dict) -> float | None:
    after = summary["eval_after"]
    k = after.get("k")
    return after.get(f"pass@{k}") if k else None


def _stats(xs: list[float]) -> str:
    if not xs:
        return "—"
    return f"{statistics.mean(xs):.3f} ± {statistics.pstdev(xs):.3f} ({min(xs):.3f}..{max(xs):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runs", default="runs/cmp")
    ap.add_argument("--k", type=int, default=4, help="samples per problem for the sampled accuracy")
    ap.add_argument("--reuse", help="existing make-train run folders for the outcome arm, e.g. 'runs/t-s{seed}'")
    ap.add_argument("extra", nargs="*", help="after --: more trainer.pipelines.make_train arguments, for both arms")
    a = ap.parse_args()
    runs = Path(a.runs)
    rows: dict[str, list[tuple]] = {"outcome": [], "process": []}
    for seed in a.seeds:
        base = f"outcome-s{seed}"
        if a.reuse and not (runs / base).exists():
            runs.mkdir(parents=True, exist_ok=True)
            (runs / base).symlink_to(Path(a.reuse.format(seed=seed)).resolve())
        s = train_arm(runs, base, seed, a.extra)
        rows["outcome"].append(
            (
                seed,
                s["eval_before"]["accuracy"],
                s["eval_after"]["accuracy"],
                sampled_accuracy(runs / base, s, a.k),
                pass_k(s),
            )
        )
        ws = ["--model", str(runs / base / "warmstart"), "--warmstart.steps", "0"]
        p = train_arm(runs, f"process-s{seed}", seed, [*a.extra, *ws, *PROCESS])
        rows["process"].append(
            (
                seed,
                p["eval_before"]["accuracy"],
                p["eval_after"]["accuracy"],
                sampled_accuracy(runs / f"process-s{seed}", p, a.k),
                pass_k(p),
            )
        )
        print(f"seed {seed}: outcome {rows['outcome'][-1]}, process {rows['process'][-1]}", file=sys.stderr)
    print(
        "| advantage | seed | after warm start (greedy) | after GRPO, greedy | after GRPO, sampled (T=1) "
        "| after GRPO, pass@k |"
    )
    print("|---|---|---|---|---|---|")
    for arm, rs in rows.items():
        for seed, before, greedy, sampled, pk in rs:
            pks = "—" if pk is None else f"{pk:.3f}"
            print(f"| {arm} | {seed} | {before:.3f} | {greedy:.3f} | {sampled:.3f} | {pks} |")
    for arm, rs in rows.items():
        pks = [r[4] for r in rs if r[4] is not None]
        print(
            f"| **{arm}** | mean ± std (min..max) | {_stats([r[1] for r in rs])} | "
            f"{_stats([r[2] for r in rs])} | {_stats([r[3] for r in rs])} | {_stats(pks)} |"
        )


if __name__ == "__main__":
    main()
