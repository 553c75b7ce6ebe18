"""``make eval``: grade a model (or a file of completions) through the verifier service, as training does.

    python -m trainer.evaluation.evaluate                                    # runs/latest on the default held-out set
    python -m trainer.evaluation.evaluate --runs DIR                         # DIR/latest (make train's --runs DIR)
    python -m trainer.evaluation.evaluate --model DIR --data FILE.jsonl --verifier math --k 8
    python -m trainer.evaluation.evaluate --model DIR --suite humaneval --k 10
    python -m trainer.evaluation.evaluate --completions FILE.jsonl [--verifier NAME]     # no model loaded

Grading goes through ``verifiers.client`` only, against ``--target`` or, without one, a service
started here for the duration (``LocalServer``) and stopped afterwards. With a model, K samples per
problem are generated with the trainer's own ``generate_rollout`` (greedy when K = 1).

Output: the report JSON (``--out``; see ``trainer.evaluation.passk`` for what it holds), the same as a Markdown
table next to it (``.md``, also printed), and ``<out>.samples.jsonl``: every graded sample, appended as
it is graded (id, sample index, completion, reference, reward, outcome, ...). That file is the resume
log: run the same command again after an interruption and samples already graded are reused, never
re-generated or re-graded; samples whose outcome was SANDBOX_ERROR are graded again. A log line is
reused only if its fingerprint matches: the verifier as the serving registry defines it (name, version,
``digest`` and the service's ``grader_version`` from ListVerifiers: ``grade.Stamps``), reference, prompt,
options, grading budget, and the completion or the model + sampling settings; so a replaced verifier,
another server's registry or a changed command grades again. Deciding that needs the service, which is
asked even when nothing is left to grade. ``--fresh`` starts over. A run that grades nothing leaves no
samples file; ``--wait-s`` bounds the wait for a ``--target`` that cannot be reached.
It is also a completions file: ``--completions <out>.samples.jsonl`` re-grades it.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer import cli
from trainer.config import EvalArgs
from trainer.errors import ModelError, Stopped, exit_on_error
from trainer.evaluation import passk, suites
from trainer.evaluation import plan as plan_mod
from trainer.evaluation.generate import generate_into, load_model
from trainer.evaluation.grade import Grader, LocalService, check_verifiers
from trainer.evaluation.log import SampleLog
from trainer.evaluation.plan import Plan, apply_run_defaults, default_out, plan_completions, plan_generation
from trainer.run import preflight
from verifiers.client import VerifierClient, VerifierError


def parse_args(argv: Sequence[str] | None = None) -> EvalArgs:
    """The command line read into ``EvalArgs`` (trainer/config/commands.py) by trainer/cli.py, like every entry
    point: flags are the field names with dashes (``--format-verifier think_format``, ``--max-new-tokens 64``),
    switches go alone (``--fresh``, ``--no-progress``); a ConfigError says what is wrong."""
    return cli.load(EvalArgs, list(argv or []))


def _grade_all(
    a: EvalArgs, plan: Plan, log: SampleLog, client: VerifierClient, model: str | None, source: str, tools: dict
) -> dict:
    """Grade (and generate) what the plan leaves to do; returns the new records by key (``tools`` gets what the
    tool calls did, with --tools)."""
    from tqdm import tqdm

    left = len(plan.keys) - len(plan.reused)
    bar = tqdm(total=left, desc="grading", unit="sample", disable=not a.progress, file=sys.stderr)
    grader = Grader(client, log, bar, a)
    stopped: str | None = None
    try:
        grader.submit([(s, plan.fps[s.key]) for s in plan.to_grade])
        if plan.to_generate:
            m, tok = load_model(model, a.device)
            tools.update(generate_into(grader, m, tok, plan.to_generate, plan.fps, a, source))
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
        raise Stopped(
            f"{stopped}\n{n} of {len(plan.keys)} samples are graded and saved in {log.path}; "
            "run the same command again to continue"
        )
    return grader.records


def _plan_and_grade(
    a: EvalArgs, log: SampleLog, model: str | None, source: str, server_log: Path, tools: dict
) -> tuple:
    """Ask the serving registry what decides each verifier's grades, plan against the log with it, grade what
    is left. Returns (plan, new records by key)."""
    work = plan_mod.load_samples(a) if a.completions else plan_mod.load_generation(a, source)
    with (
        LocalService(a, server_log) as target,
        VerifierClient(target, timeout_s=a.deadline_s, wait_s=a.wait_s) as client,
    ):
        stamps = check_verifiers(client, {w.verifier for w in work}, a)
        if a.completions:
            plan = plan_completions(a, log, work, stamps)
        else:
            plan = plan_generation(a, log, model, source, work, stamps)
        if plan.reused:
            print(
                f"resuming: {len(plan.reused)} of {len(plan.keys)} samples already graded in {log.path}",
                file=sys.stderr,
            )
        if plan.to_generate:
            check_model(a, plan, model, source)  # before the model is loaded
        left = len(plan.keys) - len(plan.reused)
        return plan, (_grade_all(a, plan, log, client, model, source, tools) if left else {})


def run(a: EvalArgs) -> dict[str, Any]:
    """Plan, grade (generating first if there is a model), report. Returns the report."""
    t0 = time.time()
    model = None if a.completions else (a.model or str(suites.latest_model(Path(a.runs))))
    run_info = apply_run_defaults(a, model) if model else {}
    source = a.completions or a.data or a.suite or "heldout"
    out = Path(a.out) if a.out else default_out(a, model, source)
    log = SampleLog(out.with_suffix(".samples.jsonl"), fresh=a.fresh)
    try:
        tools: dict[str, float] = {}  # with --tools: calls per completion, error rate, ... (generate.tool_figures)
        plan, done = _plan_and_grade(a, log, model, source, out.with_suffix(".server.log"), tools)
    finally:
        log.close()
    records = [plan.reused.get(k) or done[k] for k in plan.keys]
    extra = a.extra_ks()
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
    if a.tools is not None:  # generated with tool calls in sandbox sessions of the same service
        report["tools"] = {**a.tools.model_dump(), **tools}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    md = passk.to_markdown(report)
    out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    print(f"report: {out}  table: {out.with_suffix('.md')}  samples: {log.path}")
    return report


def check_model(a: EvalArgs, plan: Plan, model: str, source: str) -> None:
    """Preflight (trainer/run/preflight.py) on the model's tokenizer: a tag a verifier needs that decoding drops
    is an error; one the format verifier (or math) reads is a warning."""
    from trainer.evaluation.plan import generation_settings
    from trainer.policy import load_tokenizer

    try:
        tok = load_tokenizer(model)
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot load the tokenizer of {model!r}: {e}") from None
    chat, max_new = generation_settings(a, source)
    rep = preflight.check(
        tok,
        None,
        sorted(plan.verifiers),
        plan.to_generate[0][0].prompt,
        use_chat_template=chat,
        max_new_tokens=max_new,
        model_dir=model,
    )
    fmt = a.format_verifier if a.format_verifier not in ("auto", "none") else "think_format"
    code_only = a.format_verifier == "auto" and plan.verifiers <= {"code"}  # auto: no format rate for code
    if a.format_verifier != "none" and not code_only and fmt not in plan.verifiers:
        errors, warnings = preflight.tag_findings(tok, [fmt], model)
        rep.warnings += [f"the format rate will read 0: {w}" for w in errors + warnings]
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    preflight.raise_errors(rep)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # same path as Ctrl-C: log kept, local service stopped, resume message


@exit_on_error
def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``python -m trainer.evaluation.evaluate [--flag value ...]``; ``--help`` lists every flag (EvalArgs)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(EvalArgs, __doc__))
        return {}
    args = parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        return run(args)
    except KeyboardInterrupt:
        raise Stopped("interrupted; run the same command again to continue (graded samples are kept)") from None


if __name__ == "__main__":
    main()
