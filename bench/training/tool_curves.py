"""The embedded tool task's figures (docs/train.md, "The embedded tool task"): for the runs of
``make train TASK=tools SEED=n`` (each trains GRPO with tools, then the same budget without tools from the same warm
start), a picture of the learning curves with and without tools and the held-out table.

    python -m bench.training.tool_curves runs/tools-s0 runs/tools-s1 runs/tools-s2 --out docs/images/tool_task.png

Per run: ``summary.json`` (held-out greedy accuracy before and after, both arms; wall time) and the two
``metrics.jsonl`` (``<run>/`` with tools, ``<run>/without_tools/``): the sampled training reward per step (a
moving mean) and the held-out greedy accuracy every ``eval_every`` steps (step 0: the warm start).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean, pstdev


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def curves(run: Path) -> dict[str, dict[str, list]]:
    out = {}
    for arm, d in (("with tools", run), ("without tools", run / "without_tools")):
        m = rows(d / "metrics.jsonl")
        steps = [r["step"] for r in m if "reward/mean" in r]
        rew = [r["reward/mean"] for r in m if "reward/mean" in r]
        ev = [(r["step"], r["eval/accuracy"]) for r in m if "eval/accuracy" in r]
        calls = [r.get("tool/calls_per_completion", 0.0) for r in m if "reward/mean" in r]
        out[arm] = {"steps": steps, "reward": rew, "eval": ev, "calls": calls}
    return out


def smooth(xs: list[float], k: int = 5) -> list[float]:
    return [mean(xs[max(0, i - k + 1) : i + 1]) for i in range(len(xs))]


def plot(runs: list[Path], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"with tools": "tab:blue", "without tools": "tab:red"}
    for i, run in enumerate(runs):
        for arm, c in curves(run).items():
            label = arm if i == 0 else None
            a.plot(c["steps"], smooth(c["reward"]), color=colors[arm], alpha=0.8, label=label)
            if c["eval"]:
                s, e = zip(*c["eval"], strict=True)
                b.plot(s, e, marker="o", color=colors[arm], alpha=0.8, label=label)
    a.set(
        title="sampled training reward (mean of 5 steps)",
        xlabel="GRPO step",
        ylabel="reward (math: 0/1)",
        ylim=(-0.02, 1.02),
    )
    b.set(
        title="held-out accuracy, greedy (step 0: 128 problems; then the first 64)",
        xlabel="GRPO step",
        ylabel="accuracy",
        ylim=(-0.02, 1.02),
    )
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend(loc="center right")
    fig.suptitle(f"make train TASK=tools: products with a Python call, {len(runs)} seeds (one line per seed)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)


def table(runs: list[Path]) -> str:
    lines = [
        "| seed | with tools: before → after | without tools: before → after | calls per completion (last 10 steps) | wall |",
        "|---|---|---|---|---|",
    ]
    acc = {"with": [], "without": []}
    for run in runs:
        s = json.loads((run / "summary.json").read_text())
        w = s["without_tools"]
        c = curves(run)["with tools"]["calls"][-10:]
        acc["with"].append(s["eval_after"]["accuracy"])
        acc["without"].append(w["eval_after"]["accuracy"])
        lines.append(
            f"| {s['seed']} | {s['eval_before']['accuracy']:.3f} → **{s['eval_after']['accuracy']:.3f}** | "
            f"{w['eval_before']['accuracy']:.3f} → **{w['eval_after']['accuracy']:.3f}** | {mean(c):.2f} | "
            f"{s['wall_s']:.0f} s |"
        )
    if len(runs) > 1:
        lines.append(
            f"| mean ± std | → {mean(acc['with']):.3f} ± {pstdev(acc['with']):.3f} | "
            f"→ {mean(acc['without']):.3f} ± {pstdev(acc['without']):.3f} | | |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of make train TASK=tools")
    p.add_argument("--out", type=Path, default=Path("docs/images/tool_task.png"))
    a = p.parse_args(argv)
    done = [r for r in a.runs if (r / "summary.json").exists()]
    plot(done or a.runs, a.out)
    print(table(done) if done else "no finished run (summary.json) yet")
    print(f"picture: {a.out}")


if __name__ == "__main__":
    main()
