"""``make eval``: grade a model (or a file of completions) through the verifier service, as training does.

    python -m trainer.evaluate                                    # runs/latest on the default held-out set
    python -m trainer.evaluate --runs DIR                         # DIR/latest (make train's --runs DIR)
    python -m trainer.evaluate --model DIR --data FILE.jsonl --verifier math --k 8
    python -m trainer.evaluate --model DIR --suite humaneval --k 10
    python -m trainer.evaluate --completions FILE.jsonl [--verifier NAME]     # no model loaded

Grading goes through ``verifiers.client`` only, against ``--target`` or, without one, a service
started here for the duration (``LocalServer``) and stopped afterwards. With a model, K samples per
problem are generated with the trainer's own ``generate_rollout`` (greedy when K = 1).

Output: the report JSON (``--out``; see ``trainer.passk`` for what it holds), the same as a Markdown
table next to it (``.md``, also printed), and ``<out>.samples.jsonl``: every graded sample, appended as
it is graded (id, sample index, completion, reference, reward, outcome, ...). That file is the resume
log: run the same command again after an interruption and samples already graded are reused, never
re-generated or re-graded; samples whose outcome was SANDBOX_ERROR are graded again. A log line is
reused only if its fingerprint (verifier, reference, prompt, options, and the completion or the
model + sampling settings) matches, so changing the command does not mix runs. ``--fresh`` starts over.
It is also a completions file: ``--completions <out>.samples.jsonl`` re-grades it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
import time
import typing
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trainer import passk, suites
from trainer.suites import Problem, Sample
from verifiers.client import VerifierClient, VerifierError, VerifyItem

DETAIL_CHARS = 400


@dataclass
class EvalArgs:
    """Command line of ``python -m trainer.evaluate`` (also ``make eval``)."""

    model: str | None = None
    """Folder or hub id for AutoModelForCausalLM; default: the final checkpoint of runs/latest."""
    data: str | None = None
    """User JSONL of problems: {"prompt", "answer"} (math) or {"prompt", "tests"} (code)."""
    completions: str | None = None
    """JSONL of completions to grade with no model: {"id", "completion", "reference"} per line."""
    verifier: str | None = None
    """Verifier name in the service's registry (default: the suite's, or the row's "verifier")."""
    k: int = 1
    """Samples per problem (greedy when 1); pass@k is reported for every k <= K in 1, 5, 10, 20, ..."""
    out: str | None = None
    """Report JSON path; the Markdown table and the samples log go next to it."""
    suite: str | None = None
    """humaneval | heldout | a JSONL path (default: heldout, the default task's held-out split)."""
    target: str | None = None
    """host:port of a running verifier service; default: start one here for the run."""
    limit: int | None = None
    """Evaluate only the first N problems."""
    max_new_tokens: int | None = None
    """Completion length limit (default: 512 for humaneval, else 256)."""
    temperature: float = 1.0
    """Sampling temperature when K > 1."""
    top_p: float = 1.0
    """Nucleus sampling when K > 1."""
    chat_template: str = "auto"
    """auto | on | off: wrap prompts in the tokenizer's chat template (auto: off for humaneval)."""
    format_verifier: str = "auto"
    """Grades the format rate (auto: think_format, except for code; 'none' to skip)."""
    batch_size: int = 32
    """Samples per VerifyBatch call."""
    gen_batch: int | None = None
    """Rows (prompts x K) per generate call (default: the run's eval batch size for a run's model, else 64)."""
    workers: int = 2
    """VerifyBatch calls in flight at once."""
    timeout_s: float = 0.0
    """Grading budget per sample (0: the verifier's default)."""
    deadline_s: float = 900.0
    """RPC deadline of one VerifyBatch call."""
    pool_size: int = 2
    """Sandbox containers of the service started here (ignored with --target)."""
    runs: str = "runs"
    """Folder of training runs (make train's --runs): the default model is <runs>/latest's final checkpoint."""
    device: str = "auto"
    """Torch device for generation: auto (cuda if available) or a torch device."""
    seed: int = 0
    """Seeds sampling."""
    extra_k: str = ""
    """More k for pass@k, comma-separated (e.g. 3,8)."""
    fresh: bool = False
    """Ignore (and overwrite) the samples log instead of resuming from it."""
    progress: bool = True
    """Show a progress bar (on stderr)."""


def parse_args(argv: list[str] | None = None) -> EvalArgs:
    ap = argparse.ArgumentParser(prog="python -m trainer.evaluate", description=__doc__.split("\n")[0])
    docs, hints = _field_docs(), typing.get_type_hints(EvalArgs)
    for name, default in asdict(EvalArgs()).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=docs.get(name))
        else:
            typ = next(t for t in (typing.get_args(hints[name]) or (hints[name],)) if t is not type(None))
            ap.add_argument(flag, type=typ, default=default, help=docs.get(name))
    args = EvalArgs(**vars(ap.parse_args(argv)))
    if args.k < 1:
        ap.error("--k must be >= 1")
    if args.completions and args.model:
        ap.error("--completions grades existing completions: drop --model (nothing is generated)")
    if args.data and args.suite:
        ap.error("give --data FILE or --suite NAME, not both")
    if args.chat_template not in ("auto", "on", "off"):
        ap.error("--chat-template is auto, on or off")
    return args


def _field_docs() -> dict[str, str]:
    """Field docstrings of EvalArgs (the help text), read from this file's source."""
    import ast
    import inspect

    body = ast.parse(inspect.getsource(EvalArgs)).body[0].body
    return {a.target.id: b.value.value for a, b in zip(body, body[1:], strict=False)
            if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the samples log: append-only, keyed by id + sample index
# ---------------------------------------------------------------------------------------------


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class SampleLog:
    """``<out>.samples.jsonl``: one graded sample a line, flushed as written. Latest line per key wins."""

    def __init__(self, path: Path, fresh: bool = False):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            path.unlink(missing_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        if path.exists():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):  # cut mid-line by the interruption: drop the fragment
                with path.open("r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
            with path.open(encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.done[rec["key"]] = rec
                    except (json.JSONDecodeError, KeyError, TypeError):
                        continue  # a line cut by the interruption: that sample is graded again
        self._f = path.open("a", encoding="utf-8")

    def reusable(self, key: str, fp: str) -> dict[str, Any] | None:
        rec = self.done.get(key)
        return rec if rec is not None and rec.get("fp") == fp else None

    def append(self, records: list[dict[str, Any]]) -> None:
        self._f.write("".join(json.dumps(r) + "\n" for r in records))
        self._f.flush()

    def close(self) -> None:
        self._f.close()


# ---------------------------------------------------------------------------------------------
# grading
# ---------------------------------------------------------------------------------------------


class Grader:
    """Sends samples to the service in VerifyBatch calls, ``workers`` at a time; logs each result."""

    def __init__(self, client: VerifierClient, log: SampleLog, bar, args: EvalArgs):
        self.client, self.log, self.bar, self.args = client, log, bar, args
        self.workers = max(1, args.workers)
        self.pool = ThreadPoolExecutor(self.workers)
        self.pending: set[Future] = set()
        self.records: dict[str, dict[str, Any]] = {}

    def format_verifier(self, s: Sample) -> str | None:
        fv = self.args.format_verifier
        if fv == "none" or (fv == "auto" and s.verifier == "code"):
            return None
        return "think_format" if fv == "auto" else fv

    def _grade(self, batch: list[tuple[Sample, str]]) -> list[dict[str, Any]]:
        a = self.args
        items = [VerifyItem(s.verifier, s.completion, s.reference, s.prompt, s.options, a.timeout_s, s.key)
                 for s, _ in batch]  # fmt: skip
        fmt = [(i, self.format_verifier(s)) for i, (s, _) in enumerate(batch)]
        fmt = [(i, name) for i, name in fmt if name and name != batch[i][0].verifier]
        items += [VerifyItem(name, batch[i][0].completion, "", batch[i][0].prompt, {}, 0.0, "fmt") for i, name in fmt]
        results = self.client.verify_batch(items, deadline_s=a.deadline_s)
        fmt_of = {i: results[len(batch) + j] for j, (i, _) in enumerate(fmt)}
        out = []
        for i, ((s, fp), r) in enumerate(zip(batch, results, strict=False)):
            f = fmt_of.get(i)
            out.append({"key": s.key, "id": s.id, "sample": s.sample, "fp": fp, "verifier": s.verifier,
                        "reward": r.reward, "outcome": r.outcome, "detail": r.detail[:DETAIL_CHARS],
                        "elapsed_s": r.elapsed_s, "components": r.components, "cached": r.cached,
                        "format": None if f is None or f.outcome in passk.UNGRADED else f.reward,
                        "completion": s.completion, "reference": s.reference, "prompt": s.prompt,
                        "options": s.options})  # fmt: skip
        return out

    def submit(self, batch: list[tuple[Sample, str]]) -> None:
        for i in range(0, len(batch), self.args.batch_size):
            while len(self.pending) >= self.workers:
                self.drain(block=True)
            self.pending.add(self.pool.submit(self._grade, batch[i : i + self.args.batch_size]))

    def drain(self, block: bool = False) -> None:
        """Collect finished calls (wait for at least one when ``block``); a failed call raises."""
        done, _ = wait(self.pending, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for fut in done:
            self._take(fut)

    def _take(self, fut: Future) -> None:
        recs = fut.result()
        self.log.append(recs)
        self.records.update((r["key"], r) for r in recs)
        self.pending.discard(fut)
        self.bar.update(len(recs))

    def finish(self) -> None:
        while self.pending:
            self.drain(block=True)

    def close(self) -> None:
        """Stop: calls not started are cancelled; calls under way are waited for and still logged."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        for fut in list(self.pending):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._take(fut)


# ---------------------------------------------------------------------------------------------
# generation (the trainer's own rollout code)
# ---------------------------------------------------------------------------------------------


def _generation_settings(a: EvalArgs, source: str) -> tuple[bool, int]:
    """(use the chat template, max new tokens): HumanEval is code continuation, so no template."""
    chat = a.chat_template == "on" or (a.chat_template == "auto" and source != "humaneval")
    return chat, a.max_new_tokens or (512 if source == "humaneval" else 256)


def load_model(path: str, device: str):
    """Model + tokenizer for generation, in eval mode on ``device`` (bf16 on a GPU that has it)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.train import pick_device, pick_dtype

    dev = pick_device(device)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=pick_dtype("auto", dev))
        tok = AutoTokenizer.from_pretrained(path)
    except OSError as e:
        raise SystemExit(
            f"cannot load model {path!r}: {e}\nGive --model a folder written by save_pretrained."
        ) from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model.to(dev).eval(), tok


def generate_into(grader: Grader, model, tok, todo: list[tuple[Problem, list[int]]], fps: dict, a: EvalArgs,
                  source: str) -> None:  # fmt: skip
    """Generate the missing samples of each problem, a batch of prompts at a time, and hand each batch
    to the grader (grading of one batch overlaps generation of the next)."""
    import torch

    from trainer.data import Example
    from trainer.decode import generate_rollout

    torch.manual_seed(a.seed)
    chat, max_new = _generation_settings(a, source)
    per_call = max(1, (a.gen_batch or 64) // a.k)
    total, made = sum(len(missing) for _, missing in todo), 0
    for i in range(0, len(todo), per_call):
        grader.bar.set_postfix_str(f"generated {made}/{total}")
        part = todo[i : i + per_call]
        g = max(len(missing) for _, missing in part)
        ro = generate_rollout(model, tok, [Example(p.prompt, p.reference) for p, _ in part], g,
                              max_new_tokens=max_new, temperature=a.temperature, top_p=a.top_p, do_sample=a.k > 1,
                              use_chat_template=chat)  # fmt: skip
        batch = []
        for j, (p, missing) in enumerate(part):
            for n, idx in enumerate(missing):
                s = Sample(p.id, idx, p.compose(ro.texts[j * g + n]), p.reference, p.verifier, p.prompt, p.options)
                batch.append((s, fps[s.key]))
        made += len(batch)
        grader.submit(batch)
        grader.drain()
    grader.bar.set_postfix_str(f"generated {made}/{total}")


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


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


def plan_completions(a: EvalArgs, log: SampleLog) -> Plan:
    src = a.data or a.suite
    problems = suites.load_problems(src, a.verifier, runs=Path(a.runs)) if src else None
    samples = suites.load_completions(a.completions, a.verifier, problems)
    if a.limit:
        keep = list(dict.fromkeys(s.id for s in samples))[: a.limit]
        samples = [s for s in samples if s.id in set(keep)]
    fps = {s.key: fingerprint("file", s.verifier, s.reference, s.prompt, s.options, s.completion) for s in samples}
    reused = {}
    for s in samples:
        rec = log.reusable(s.key, fps[s.key])
        if rec is not None and rec["outcome"] != passk.INFRA:
            reused[s.key] = rec
    todo = [s for s in samples if s.key not in reused]
    return Plan([s.key for s in samples], fps, reused, todo, [], {s.verifier for s in samples})


def plan_generation(a: EvalArgs, log: SampleLog, model: str, source: str) -> Plan:
    problems = suites.load_problems(source, a.verifier, a.limit, Path(a.runs))
    chat, max_new = _generation_settings(a, source)
    gen = {"sample": a.k > 1, "max_new_tokens": max_new, "chat": chat, "seed": a.seed}
    if a.k > 1:
        gen |= {"temperature": a.temperature, "top_p": a.top_p}
    stamp = _model_stamp(model)
    keys, fps, reused, regrade, todo = [], {}, {}, [], []
    for p in problems:
        fp = fingerprint("gen", stamp, gen, p.verifier, p.reference, p.prompt, p.options)
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


def default_out(a: EvalArgs, model: str | None, source: str) -> Path:
    root = Path(a.runs)
    if a.completions:
        return root / "eval" / f"{Path(a.completions).stem}.json"
    tag = (Path(source).stem if source not in suites.SUITES else source) + (f"-k{a.k}" if a.k > 1 else "")
    mp = Path(model or "")
    parts = mp.resolve().parts if mp.exists() else ()
    runs = root.resolve()
    if mp.exists() and runs.parts == parts[: len(runs.parts)] and len(parts) > len(runs.parts):
        return runs / parts[len(runs.parts)] / "eval" / f"{tag}.json"
    return root / "eval" / f"{tag}-{mp.name or 'model'}.json"


def check_verifiers(client: VerifierClient, wanted: set[str], a: EvalArgs) -> None:
    """Fail before any work if a verifier is missing; drop the format verifier if it is the one missing."""
    have = {v.name for v in client.list_verifiers()}
    missing = sorted(wanted - have)
    if missing:
        raise SystemExit(f"verifier(s) {', '.join(missing)} not registered on {client.target}; available: "
                         f"{', '.join(sorted(have))}. Register it over gRPC or pass --verifier NAME.")  # fmt: skip
    if a.format_verifier not in ("auto", "none") and a.format_verifier not in have:
        raise SystemExit(f"--format-verifier {a.format_verifier} is not registered on {client.target}")
    if a.format_verifier == "auto" and "think_format" not in have:
        a.format_verifier = "none"


class _Service:
    """The service to talk to: --target, or a LocalServer started for the run and stopped after it."""

    def __init__(self, a: EvalArgs, log_path: Path):
        self.a, self.log_path, self.server = a, log_path, None

    def __enter__(self) -> str:
        if self.a.target:
            return self.a.target
        from verifiers.launch import LocalServer

        print(f"starting a verifier service ({self.a.pool_size} sandboxes; log {self.log_path}) ...", file=sys.stderr)
        self.server = LocalServer(pool_size=self.a.pool_size, log_path=str(self.log_path))
        try:
            self.server.start()
        except BaseException:  # interrupted while it starts: do not leave it running
            self.server.stop()
            raise
        return self.server.target

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()


def _grade_all(a: EvalArgs, plan: Plan, log: SampleLog, model: str | None, source: str, server_log: Path) -> dict:
    """Grade (and generate) what the plan leaves to do; returns the new records by key."""
    from tqdm import tqdm

    left = len(plan.keys) - len(plan.reused)
    with _Service(a, server_log) as target, VerifierClient(target, timeout_s=a.deadline_s) as client:
        check_verifiers(client, plan.verifiers, a)
        bar = tqdm(total=left, desc="grading", unit="sample", disable=not a.progress, file=sys.stderr)
        grader = Grader(client, log, bar, a)
        stopped: str | None = None
        try:
            grader.submit([(s, plan.fps[s.key]) for s in plan.to_grade])
            if plan.to_generate:
                m, tok = load_model(model, a.device)
                generate_into(grader, m, tok, plan.to_generate, plan.fps, a, source)
            grader.finish()
        except KeyboardInterrupt:
            stopped = "interrupted"
        except VerifierError as e:
            stopped = f"verifier service error: {e}"
        finally:
            grader.close()  # calls under way finish and are logged
            bar.close()
    if stopped:
        n = len(plan.reused) + len(grader.records)
        raise SystemExit(f"\n{stopped}\n{n} of {len(plan.keys)} samples are graded and saved in {log.path}; "
                         "run the same command again to continue")  # fmt: skip
    return grader.records


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
    if a.chat_template == "auto":  # trainer.train.evaluate uses the chat template
        a.chat_template = "on"
    return {"run_dir": str(run_dir), "training_eval": ev["reported"]}


def run(a: EvalArgs) -> dict[str, Any]:
    """Plan, grade (generating first if there is a model), report. Returns the report."""
    t0 = time.time()
    model = None if a.completions else (a.model or str(suites.latest_model(Path(a.runs))))
    run_info = apply_run_defaults(a, model) if model else {}
    source = a.completions or a.data or a.suite or "heldout"
    out = Path(a.out) if a.out else default_out(a, model, source)
    log = SampleLog(out.with_suffix(".samples.jsonl"), fresh=a.fresh)
    try:
        plan = plan_completions(a, log) if a.completions else plan_generation(a, log, model, source)
        left = len(plan.keys) - len(plan.reused)
        if plan.reused:
            print(f"resuming: {len(plan.reused)} of {len(plan.keys)} samples already graded in {log.path}",
                  file=sys.stderr)  # fmt: skip
        done = _grade_all(a, plan, log, model, source, out.with_suffix(".server.log")) if left else {}
    finally:
        log.close()
    records = [plan.reused.get(k) or done[k] for k in plan.keys]
    extra = [int(x) for x in a.extra_k.split(",") if x.strip()]
    report = passk.build_report(
        records,
        extra,
        title=Path(source).name + (f" · {Path(model).name}" if model else ""),
        source=source,
        model=model,
        k=a.k if not a.completions else None,
        verifier=sorted(plan.verifiers),
        target=a.target or "local (started for this run)",
        samples_log=str(log.path),
        graded_now=len(done),
        reused=len(plan.reused),
        wall_s=round(time.time() - t0, 2),
        **run_info,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    md = passk.to_markdown(report)
    out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    print(f"report: {out}  table: {out.with_suffix('.md')}  samples: {log.path}")
    return report


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # same path as Ctrl-C: log kept, local service stopped, resume message


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        return run(args)
    except KeyboardInterrupt:
        raise SystemExit("\ninterrupted; run the same command again to continue (graded samples are kept)") from None


if __name__ == "__main__":
    main()
