"""Where ``make train`` runs, and with which settings: a new run folder, or an existing one resumed in
place; the config file it reads; and where each setting that matters came from.

- ``make train NAME=x`` where ``runs/x`` has a checkpoint and no summary.json (an interrupted run):
  resume it in place (same folder, same metrics.jsonl, no second "before" evaluation), with the
  settings saved in ``runs/x/config.yaml`` and the command line's flags on top. A finished ``runs/x``:
  refused, with the commands that start another run or train this one further. ``runs/x`` without a
  checkpoint (stopped before GRPO's first step): a new folder ``runs/x-2``, said so.
- ``--grpo.resume auto``: the run named by NAME, else ``runs/latest``; no checkpoint there is an error,
  never a silent fresh start. ``--grpo.resume <checkpoint folder>``: that run's folder, in place.
- Without ``--config``: ``configs/default.yaml`` for the embedded task, ``configs/real_model.yaml``
  when ``--model`` is given (a model of one's own gets settings for real models, not the tiny task's).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from trainer import cli
from trainer.data import read_jsonl, write_jsonl
from trainer.errors import CheckpointError, ConfigError, DataError
from trainer.pipelines import task
from trainer.run.checkpoint import list_checkpoints, resolve_resume

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
DEFAULT_CONFIG = CONFIGS / "default.yaml"
REAL_MODEL_CONFIG = CONFIGS / "real_model.yaml"
# what a resumed run cannot change: the checkpoint would not match them
FIXED = ("model", "data", "eval_data", "seed", "task", "tiny", "warmstart_data")
# the settings printed at the start of every run, with their source
SHOWN = (
    "model", "data", "seed", "grpo.verifier", "grpo.steps", "grpo.lr", "grpo.lr_schedule", "grpo.warmup_steps",
    "grpo.max_new_tokens", "grpo.group_size", "grpo.prompts_per_step", "grpo.beta", "grpo.clip_eps_low",
    "grpo.clip_eps_high", "grpo.temperature", "grpo.top_p", "grpo.lora", "warmstart.steps", "eval.verifier",
    "eval.max_new_tokens", "eval.k", "eval.heldout_from_data", "task.heldout_size",
)  # fmt: skip


@dataclass
class Loaded:
    """The validated config, the run folder to use (None: a new one) and the checkpoint to resume from."""

    cfg: Any
    sources: dict[str, str] = field(default_factory=dict)
    run_dir: Path | None = None
    resume: Path | None = None
    notes: list[str] = field(default_factory=list)


def _get(tree: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def sources(keys: tuple[str, ...], file_raw: dict, file_name: str | None, over: dict) -> dict[str, str]:
    """For each dotted key: 'flag', the config file's name, or 'default'."""
    out = {}
    for k in keys:
        if _get(over, k)[0]:
            out[k] = "flag"
        elif file_name and _get(file_raw, k)[0]:
            out[k] = file_name
        else:
            out[k] = "default"
    return out


def settings_lines(cfg: BaseModel, src: dict[str, str]) -> list[str]:
    """``  grpo.lr  1e-06  (configs/real_model.yaml)`` for each shown setting."""
    tree = cfg.model_dump()
    rows = []
    for k in SHOWN:
        if k.startswith("task.") and tree.get("data") or k == "eval.heldout_from_data" and not tree.get("data"):
            continue  # the embedded task's held-out size, or the split off --data: only the one that applies
        ok, v = _get(tree, k)
        if ok:
            rows.append((k, "-" if v is None else str(v), src.get(k, "default")))
    w0, w1 = max(len(r[0]) for r in rows), min(40, max(len(r[1]) for r in rows))
    return ["settings (value, where it came from):"] + [f"  {k:<{w0}}  {v:<{w1}}  ({s})" for k, v, s in rows]


def _newest(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def _step(ckpt: Path) -> int:
    return int(ckpt.name.split("-")[1])


def place(runs: Path, name: str | None, resume: str | None, steps: int) -> tuple[Path | None, Path | None, str]:
    """(existing run folder to continue or None, checkpoint or None, a note for the user)."""
    if resume and resume != "auto":
        ck = resolve_resume(resume, runs)
        if ck.parent.name != "checkpoints":
            raise CheckpointError(
                f"--grpo.resume {resume}: not a checkpoint of a run folder (<run>/checkpoints/step-N)"
            )
        return ck.parent.parent, ck, f"resuming {ck.parent.parent} from {ck.name}"
    where = runs / name if name else runs / "latest"
    if resume == "auto":
        ck = _newest(where) if where.exists() else None
        if ck is None:
            raise CheckpointError(
                f"--grpo.resume auto: no checkpoint in {where} to resume (a run writes one every save_every steps, "
                f"at its end, and when stopped by Ctrl-C or SIGTERM). To start a new run, drop --grpo.resume"
            )
        return where.resolve(), ck, f"resuming {where} from {ck.name}"
    if not name or not where.exists():
        return None, None, ""
    ck = _newest(where)
    if ck is None:
        return None, None, f"{where} exists but has no checkpoint to resume (it stopped before GRPO's first step)"
    return where, ck, f"resuming {where} from {ck.name} (an existing run folder with a checkpoint)"


def refuse_finished(run_dir: Path, ck: Path, steps: int, runs: Path) -> None:
    """A finished run (summary.json) resumed with no more steps to train: say what to run instead."""
    if (run_dir / "summary.json").exists() and steps <= _step(ck):
        name = run_dir.name
        at = "" if runs == Path("runs") else f" RUNS={runs}"
        raise ConfigError(
            f"{run_dir} is a finished run ({_step(ck)} steps, summary.json). Start another one: "
            f"`make train NAME={name}-2{at}` (with your settings); or train this one further, from its step {_step(ck)}: "
            f"`make train NAME={name}{at} ARGS='--grpo.steps {_step(ck) * 2}'`"
        )


def load(model: type[BaseModel], argv: list[str], aliases: dict[str, str]) -> Loaded:
    """``make train``'s command line -> the config, the run folder and what to resume, with the source
    of every shown setting."""
    path, over = cli.parse_argv(model, argv, aliases)
    if path is None:
        default = REAL_MODEL_CONFIG if over.get("model") else DEFAULT_CONFIG
        path = str(default) if default.exists() else None
    raw = cli.read_yaml(path) if path else {}
    shown = _shown_name(path)
    cfg = cli.build(model, cli.merge(dict(raw), over), f" in {path}" if path else "")
    g = cfg.grpo  # type: ignore[attr-defined]
    run_dir, ck, note = place(Path(cfg.runs), cfg.name, g.resume, g.steps)  # type: ignore[attr-defined]
    out = Loaded(cfg, sources(SHOWN, raw, shown, over), run_dir, ck, [note] if note else [])
    if path == str(REAL_MODEL_CONFIG) and not argv_has_config(argv):
        out.notes.append(f"MODEL= given without CONFIG=: settings for a real model from {shown}")
    if run_dir is None:
        return out
    saved_path = run_dir / "config.yaml"
    if not saved_path.exists():
        raise CheckpointError(
            f"{run_dir} has a checkpoint but no config.yaml: resume it with `python -m trainer.train "
            f"--config FILE --resume {ck}` (FILE: the GRPO config it was trained with)"
        )
    saved = cli.read_yaml(saved_path)
    check_fixed(saved, over, run_dir)
    saved.pop("name", None)
    cfg = cli.build(model, cli.merge(dict(saved), over), f" ({saved_path} with the command line's overrides)")
    refuse_finished(run_dir, ck, cfg.grpo.steps, Path(cfg.runs))  # type: ignore[attr-defined]
    out.cfg, out.sources = cfg, sources(SHOWN, saved, str(saved_path), over)
    return out


def argv_has_config(argv: list[str]) -> bool:
    return any(a == "--config" or a.startswith("--config=") for a in argv)


def _shown_name(path: str | None) -> str | None:
    if path is None:
        return None
    p = Path(path).resolve()
    try:
        return str(p.relative_to(CONFIGS.parent))
    except ValueError:
        return path


def check_fixed(saved: dict, over: dict, run_dir: Path) -> None:
    clash = []
    for k in FIXED:
        given, value = _get(over, k)
        if not given:
            continue
        had = _get(saved, k)[1]
        pairs = (
            [(f"{k}.{kk}", vv, _get(saved, f"{k}.{kk}")[1]) for kk, vv in value.items()]
            if isinstance(value, dict)
            else [(k, value, had)]
        )
        clash += [f"{name}: {v} (the run has {h})" for name, v, h in pairs if str(v) != str(h)]
    if clash:
        raise ConfigError(
            f"{run_dir} is resumed in place, and its checkpoint was trained with other settings: {'; '.join(clash)}. "
            f"To resume it, run `make train NAME={run_dir.name}` (its settings come from {run_dir / 'config.yaml'}); "
            f"to start a new run with these settings, pick another NAME"
        )


# ---------------------------------------------------------------------------------------------
# a new run folder and its data
# ---------------------------------------------------------------------------------------------


def make_run_dir(runs: Path, name: str) -> Path:
    run = runs / name
    n = 1
    while run.exists():
        n += 1
        run = runs / f"{name}-{n}"
    run.mkdir(parents=True)
    relink_latest(runs, run)
    return run


def prepare_data(cfg: Any, run: Path) -> dict[str, Path | None]:
    """The embedded task's splits, or the user's DATA (with a held-out part split off when needed)."""
    out = run / "data"
    if cfg.data is None:
        sizes = {k: v for k, v in cfg.task.sizes().items() if v}
        paths = task.build(out, cfg.seed, sizes, cfg.task)
        return {"warmstart": paths.get("warmstart"), "train": paths["train"], "heldout": paths["heldout"]}
    rows = read_jsonl(cfg.data)
    ws = Path(cfg.warmstart_data) if cfg.warmstart_data else None
    if cfg.eval_data:
        return {"warmstart": ws, "train": Path(cfg.data), "heldout": Path(cfg.eval_data)}
    k = cfg.eval.heldout_from_data
    if len(rows) <= k:
        raise DataError(f"{cfg.data}: {len(rows)} rows, not enough to hold out {k}; pass --eval-data FILE")
    random.Random(cfg.seed).shuffle(rows)
    return {
        "warmstart": ws,
        "train": write_jsonl(rows[k:], out / "train.jsonl"),
        "heldout": write_jsonl(rows[:k], out / "heldout.jsonl"),
    }


def relink_latest(runs: Path, run: Path) -> None:
    latest = runs / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(run.resolve().name if run.resolve().parent == runs.resolve() else run.resolve())
