"""What ``make eval`` grades: the plan (every (id, sample) key, its fingerprint, what the samples log
already holds and what is left to generate or grade), the report's default path, the generation
settings, and the settings of a training run's held-out evaluation that an evaluation of its model
reuses."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.config import EvalArgs
from trainer.errors import DataError
from trainer.evaluation import passk, suites
from trainer.evaluation.log import SampleLog, fingerprint
from trainer.evaluation.suites import Problem, Sample

Stamp = Callable[[str], Any]  # verifier name -> what decides its grades on the serving registry


def generation_settings(a: EvalArgs, source: str) -> tuple[bool, int]:
    """(use the chat template, max new tokens): HumanEval is code continuation, so no template."""
    chat = a.chat_template == "on" or (a.chat_template == "auto" and source != "humaneval")
    return chat, a.max_new_tokens or (512 if source == "humaneval" else 256)


@dataclass
class Plan:
    """What to grade: every (id, sample) key in report order, its fingerprint, and what is left to do."""

    keys: list[str]
    fps: dict[str, str]
    reused: dict[str, dict[str, Any]]
    to_grade: list[Sample]  # completions known (file mode, or logged completions to grade again)
    to_generate: list[tuple[Problem, list[int]]]  # model mode: problem and its missing sample indices
    verifiers: set[str]


def _model_stamp(path: str) -> list:
    """Names, sizes and mtimes of a local model's weight files, so a retrained folder is not reused."""
    p = Path(path)
    if not p.is_dir():
        return [path]
    files = sorted(f for f in p.iterdir() if f.suffix in (".safetensors", ".bin", ".json"))
    return [str(p.resolve())] + [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]


def load_samples(a: EvalArgs) -> list[Sample]:
    """File mode: the completions to grade (``--limit``: of the first N problems)."""
    src = a.data or a.suite
    problems = suites.load_problems(src, a.verifier, runs=Path(a.runs)) if src else None
    samples = suites.load_completions(a.completions, a.verifier, problems)
    if a.limit:
        keep = set(list(dict.fromkeys(s.id for s in samples))[: a.limit])
        samples = [s for s in samples if s.id in keep]
    return samples


def plan_completions(a: EvalArgs, log: SampleLog, samples: list[Sample], stamp: Stamp = str) -> Plan:
    """``stamp(verifier)``: what the serving registry says decides that verifier's grades (grade.Stamps)."""
    fps = {
        s.key: fingerprint(
            "file", stamp(s.verifier), s.verifier, s.reference, s.prompt, s.options, s.completion, a.timeout_s
        )
        for s in samples
    }  # timeout_s: the budget decides TIMEOUTs
    reused = {}
    for s in samples:
        rec = log.reusable(s.key, fps[s.key])
        if rec is not None and rec["outcome"] != passk.INFRA:
            reused[s.key] = rec
    todo = [s for s in samples if s.key not in reused]
    return Plan([s.key for s in samples], fps, reused, todo, [], {s.verifier for s in samples})


def load_generation(a: EvalArgs, source: str) -> list[Problem]:
    """Model mode: the problems to generate for."""
    return suites.load_problems(source, a.verifier, a.limit, Path(a.runs))


def plan_generation(
    a: EvalArgs, log: SampleLog, model: str, source: str, problems: list[Problem] | None = None, stamp: Stamp = str
) -> Plan:
    problems = load_generation(a, source) if problems is None else problems
    chat, max_new = generation_settings(a, source)
    gen = {"sample": a.k > 1, "max_new_tokens": max_new, "chat": chat, "seed": a.seed}
    if a.k > 1:
        gen |= {"temperature": a.temperature, "top_p": a.top_p}
    if a.tools is not None:  # samples made with tools are not those made without (nor with other limits)
        gen |= {"tools": a.tools.model_dump()}
    model_stamp = _model_stamp(model)
    keys, fps, reused, regrade, todo = [], {}, {}, [], []
    for p in problems:
        fp = fingerprint(
            "gen", model_stamp, gen, stamp(p.verifier), p.verifier, p.reference, p.prompt, p.options, a.timeout_s
        )
        missing = []
        for idx in range(a.k):
            key = Sample(p.id, idx, "", "", "").key
            keys.append(key)
            fps[key] = fp
            rec = log.reusable(key, fp)
            if rec is None:
                missing.append(idx)
            elif rec["outcome"] == passk.INFRA:  # the completion is fine: grade it again, do not re-generate
                regrade.append(Sample(p.id, idx, rec["completion"], p.reference, p.verifier, p.prompt, p.options))
            else:
                reused[key] = rec
        if missing:
            todo.append((p, missing))
    return Plan(keys, fps, reused, regrade, todo, {p.verifier for p in problems})


def _short(path: str) -> str:
    """8 hex digits naming a file (or a hub id) by where it is, so two files with one name get two reports."""
    p = Path(path)
    return hashlib.sha256(str(p.resolve() if p.exists() else path).encode()).hexdigest()[:8]


def default_out(a: EvalArgs, model: str | None, source: str) -> Path:
    """``runs/eval/<file>-<hash of its path>.json`` for a completions file; for a model, in its run's folder
    (``runs/<run>/eval/<suite or file>[-k<K>].json``) or ``runs/eval/<...>-<model>-<hash of its path>.json``.
    A data or completions file is named with a hash of its full path (the run's own held-out file aside):
    two files that merely share a name never share a report or a resume log."""
    root = Path(a.runs)
    if a.completions:
        return root / "eval" / f"{Path(a.completions).stem}-{_short(a.completions)}.json"
    mp = Path(model or "")
    parts = mp.resolve().parts if mp.exists() else ()
    runs = root.resolve()
    in_run = mp.exists() and runs.parts == parts[: len(runs.parts)] and len(parts) > len(runs.parts)
    run_dir = runs / parts[len(runs.parts)] if in_run else None
    if source in suites.SUITES:
        tag = source
    elif run_dir is not None and Path(source).resolve() == _own_heldout(run_dir):
        tag = Path(source).stem
    else:
        tag = f"{Path(source).stem}-{_short(source)}"
    tag += f"-k{a.k}" if a.k > 1 else ""
    if run_dir is not None:
        return run_dir / "eval" / f"{tag}.json"
    return root / "eval" / f"{tag}-{mp.name or 'model'}-{_short(model or '')}.json"


def _own_heldout(run_dir: Path) -> Path | None:
    try:
        return suites.heldout_path(run_dir).resolve()
    except (DataError, OSError):  # no held-out file: nothing is the run's own
        return None


def apply_run_defaults(a: EvalArgs, model: str) -> dict[str, Any]:
    """For a model saved by a training run, evaluated on that run's held-out set (no --data/--suite, or
    --suite heldout): grade as training's held-out evaluation did (its file, verifier, max_new_tokens,
    batch size and limit; see ``suites.run_eval_settings``; flags still win), and return what training
    reported, so the two can be compared."""
    run_dir = suites.find_run_dir(model)
    if run_dir is None or (a.data or a.suite not in (None, "heldout")):
        return {}
    ev = suites.run_eval_settings(run_dir)
    a.suite, a.data = None, str(suites.heldout_path(run_dir))
    a.max_new_tokens = a.max_new_tokens or ev["max_new_tokens"]
    a.verifier = a.verifier or ev["verifier"]
    a.limit = a.limit or ev["limit"]
    if a.gen_batch is None and a.k == 1:  # the same batches, so greedy decoding sees the same padding
        a.gen_batch = ev["batch_size"]
    if (
        a.chat_template == "auto"
    ):  # trainer.evaluation.evaluator.evaluate (training's evaluation) uses the chat template
        a.chat_template = "on"
    return {"run_dir": str(run_dir), "training_eval": ev["reported"]}
