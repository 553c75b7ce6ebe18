"""Metrics: one JSON line per step (``metrics.jsonl``), the same scalars to every ``report_to`` backend
(TensorBoard by default; Weights & Biases and Trackio when installed), sampled completions
(``completions.jsonl`` and a table in each backend), and ``curves.png`` at the end (a red line at each step
the reward-hacking alarm fired, ``alarm/fired``).

Names are namespaced (``reward/mean``, ``loss/kl``, ``perf/tokens_per_s``). Everything under
``perf/`` depends on the machine; everything else is a function of the seed and the config.

Backends: ``tensorboard`` writes ``run_dir/tb``; ``wandb`` starts a run in project ``$WANDB_PROJECT``
(default ``rlvr``) named after the run folder, under ``$WANDB_DIR`` (default ``run_dir``), and honours
``WANDB_MODE=offline``; ``trackio`` logs to project ``$TRACKIO_PROJECT`` (default ``rlvr``). Each gets
exactly the finite scalars that go to metrics.jsonl, at the same step.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CURVES = [
    "reward/mean",
    "reward/accuracy",
    "eval/accuracy",
    "alarm/audit_agreement",
    "loss/total",
    "loss/kl",
    "policy/entropy",
    "completion/length_mean",
    "group/frac_zero_std",
    "perf/tokens_per_s",
]


class ReportToError(RuntimeError):
    """A ``report_to`` backend that cannot start (its optional package is missing)."""


def _require(package: str, backend: str) -> Any:
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise ReportToError(
            f"report_to: {backend} needs the {package!r} package, which is not installed: "
            f"`pip install {package}`, or drop {backend} from report_to"
        ) from None


class TensorBoardBackend:
    def __init__(self, run_dir: Path, config: dict[str, Any]):
        _require("tensorboard", "tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        self._w = SummaryWriter(str(run_dir / "tb"))

    def scalars(self, step: int, values: dict[str, float]) -> None:
        """One event holding the step's scalars (add_scalar writes one event per scalar: ~40 a step)."""
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(value=[Summary.Value(tag=k, simple_value=v) for k, v in values.items()])
        self._w.file_writer.add_summary(summary, step)

    def table(self, step: int, cols: list[str], rows: list[list[Any]]) -> None:
        md = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
        for r in rows:
            md += "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", "⏎") for c in r) + " |\n"
        self._w.add_text("completions", md, step)

    def close(self) -> None:
        self._w.close()


class WandbBackend:
    def __init__(self, run_dir: Path, config: dict[str, Any]):
        self._wandb = _require("wandb", "wandb")
        self._run = self._wandb.init(
            project=os.environ.get("WANDB_PROJECT") or "rlvr",
            name=run_dir.name,
            dir=os.environ.get("WANDB_DIR") or str(run_dir),
            config=config,
        )

    def scalars(self, step: int, values: dict[str, float]) -> None:
        self._run.log(values, step=step)

    def table(self, step: int, cols: list[str], rows: list[list[Any]]) -> None:
        self._run.log({"completions": self._wandb.Table(columns=cols, data=rows)}, step=step)

    def close(self) -> None:
        self._run.finish()


class TrackioBackend:
    def __init__(self, run_dir: Path, config: dict[str, Any]):
        self._trackio = _require("trackio", "trackio")
        self._trackio.init(project=os.environ.get("TRACKIO_PROJECT") or "rlvr", name=run_dir.name, config=config)

    def scalars(self, step: int, values: dict[str, float]) -> None:
        self._trackio.log(values, step=step)

    def table(self, step: int, cols: list[str], rows: list[list[Any]]) -> None:
        self._trackio.log({"completions": self._trackio.Table(columns=cols, data=rows)}, step=step)

    def close(self) -> None:
        self._trackio.finish()


BACKENDS = {"tensorboard": TensorBoardBackend, "wandb": WandbBackend, "trackio": TrackioBackend}


class MetricsLogger:
    """Appends to run_dir/metrics.jsonl and sends the same scalars to each ``report_to`` backend;
    ``truncate_after(step)`` drops lines past a resumed checkpoint."""

    def __init__(
        self, run_dir: str | Path, *, report_to: Iterable[str] = ("tensorboard",), config: dict[str, Any] | None = None
    ):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self.completions_path = self.dir / "completions.jsonl"
        names = list(dict.fromkeys(report_to))
        unknown = [n for n in names if n not in BACKENDS]
        if unknown:
            raise ReportToError(f"report_to: unknown backend(s) {unknown}; choose from {sorted(BACKENDS)}")
        self.backends: dict[str, Any] = {}
        try:
            for n in names:
                self.backends[n] = BACKENDS[n](self.dir, dict(config or {}))
        except BaseException:
            self._close_backends()
            raise

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
        finite = {k: v for k, v in clean.items() if v is not None and math.isfinite(v)}
        for b in self.backends.values():
            b.scalars(step, finite)

    def log_completions(self, step: int, rows: list[dict[str, Any]]) -> None:
        with self.completions_path.open("a") as f:
            for r in rows:
                f.write(json.dumps({"step": step, **r}) + "\n")
        if rows:
            cols = list(rows[0])
            for b in self.backends.values():
                b.table(step, cols, [[r[c] for c in cols] for r in rows])

    def _close_backends(self) -> None:
        for b in self.backends.values():
            b.close()
        self.backends = {}

    def close(self) -> None:
        self._close_backends()
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


def alarm_steps(rows: list[dict[str, Any]]) -> list[int]:
    """Steps at which the reward-hacking alarm fired (``alarm/fired`` > 0 in metrics.jsonl)."""
    return [r["step"] for r in rows if (r.get("alarm/fired") or 0) > 0]


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
    alarms = alarm_steps(rows)
    for ax, name in zip(axes.flat, names, strict=False):
        for i, s in enumerate(alarms):  # the reward-hacking alarm (trainer/alarm/): a red line at each step it fired
            ax.axvline(s, color="tab:red", linewidth=1.0, alpha=0.7, label="alarm" if i == 0 else None)
        pts = [(r["step"], r[name]) for r in rows if r.get(name) is not None]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        if len(pts) < 50:
            ax.plot(xs, ys, marker=".")
        else:  # noisy per-step values: faint, with a trailing moving average on top
            ax.plot(xs, ys, alpha=0.3, linewidth=0.8)
            ax.plot(xs, moving_average(ys, max(5, len(ys) // 20)), linewidth=1.8)
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
    if alarms:
        axes.flat[0].legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return Path(out)
