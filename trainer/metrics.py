"""Metrics: one JSON line per step (``metrics.jsonl``), TensorBoard scalars, sampled completions
(``completions.jsonl`` and a TensorBoard text table), and ``curves.png`` at the end.

Names are namespaced (``reward/mean``, ``loss/kl``, ``perf/tokens_per_s``). Everything under
``perf/`` depends on the machine; everything else is a function of the seed and the config.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

CURVES = [
    "reward/mean",
    "reward/accuracy",
    "eval/accuracy",
    "loss/total",
    "loss/kl",
    "policy/entropy",
    "completion/length_mean",
    "group/frac_zero_std",
    "perf/tokens_per_s",
]


class MetricsLogger:
    """Appends to run_dir/metrics.jsonl; ``truncate_after(step)`` drops lines past a resumed checkpoint."""

    def __init__(self, run_dir: str | Path, *, tensorboard: bool = True):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self.completions_path = self.dir / "completions.jsonl"
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.dir / "tb"))
            except ImportError:  # tensorboard is a dependency, but a missing one should not stop training
                self._tb = None

    def truncate_after(self, step: int) -> None:
        """Keep only records with step <= ``step`` (a resumed run rewrites what came after)."""
        for path in (self.path, self.completions_path):
            if path.exists():
                keep = [ln for ln in path.read_text().splitlines() if ln and json.loads(ln)["step"] <= step]
                path.write_text("".join(ln + "\n" for ln in keep))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        clean = {k: (float(v) if v is not None else None) for k, v in sorted(metrics.items())}
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, **clean}) + "\n")
        if self._tb is not None:
            for k, v in clean.items():
                if v is not None and math.isfinite(v):
                    self._tb.add_scalar(k, v, step)

    def log_completions(self, step: int, rows: list[dict[str, Any]]) -> None:
        with self.completions_path.open("a") as f:
            for r in rows:
                f.write(json.dumps({"step": step, **r}) + "\n")
        if self._tb is not None and rows:
            cols = list(rows[0])
            table = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
            for r in rows:
                table += "| " + " | ".join(str(r[c]).replace("|", "\\|").replace("\n", "⏎") for c in cols) + " |\n"
            self._tb.add_text("completions", table, step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        plot_curves(self.path, self.dir / "curves.png")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln] if path.exists() else []


def moving_average(values: list[float], window: int) -> list[float]:
    """Trailing mean over the last ``window`` values (fewer at the start).

    >>> moving_average([1, 2, 3, 4], 2)
    [1.0, 1.5, 2.5, 3.5]
    """
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


def plot_curves(metrics_path: str | Path, out: str | Path) -> Path | None:
    """A grid of the main curves from metrics.jsonl; None when there is nothing to plot."""
    rows = read_metrics(metrics_path)
    names = [n for n in CURVES if any(r.get(n) is not None for r in rows)]
    if not names:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 3
    nrows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 2.8 * nrows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        pts = [(r["step"], r[name]) for r in rows if r.get(name) is not None]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        if len(pts) < 50:
            ax.plot(xs, ys, marker=".")
        else:  # noisy per-step values: faint, with a trailing moving average on top
            ax.plot(xs, ys, alpha=0.3, linewidth=0.8)
            ax.plot(xs, moving_average(ys, max(5, len(ys) // 20)), linewidth=1.8)
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return Path(out)
