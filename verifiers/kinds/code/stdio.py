"""The ``code`` verifier's stdio mode: run each case, judge it on the host, one verdict per case.

Running: Python runs each case as its own job in the Python pool (own process, own timeout, cases in
parallel). Other languages run as one job in the pool's toolchain lane (verifiers/kinds/code/toolchains.py): the driver
(in_sandbox/code/driver.py) compiles once and runs the cases one after another, each with its own
timeout; it reports a line per case as it goes, so a submission that overruns its whole budget still
has the verdicts of the cases it finished.

Judging (verifiers/kinds/code/judges.py) happens here, on the host, or for ``judge=checker`` in a separate
sandbox job that starts after the program's job ended: the expected output never shares a sandbox
with the program. Reward: ``all`` (default) 1 if every case passed, else 0; ``fraction`` the share
of cases passed. Two rules override both: a sandbox failure is ``SANDBOX_ERROR`` (not the model's
fault) and a program over the output cap is ``RUNTIME_ERROR`` with reward 0 (one policy in every mode).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from languages.record import Language
from sandbox.backend import Job, Limits, Result
from sandbox.deadline import Deadline
from verifiers.kinds.code import judges, languages, toolchains
from verifiers.kinds.code.options import CodeOptions
from verifiers.shapes.base import CaseVerdict, Context, Verdict
from verifiers.shapes.limits import OUTPUT_LIMIT_DETAIL, output_limit_verdict
from verifiers.shapes.outcome import CaseStatus, Outcome

DETAIL_CHARS = 600
CHECKER_TIMEOUT_S = 10.0
LANE = "code"  # the pool's lane of lean workers the code kind's Python jobs fork from (CodeVerifier.lane)
_OUTCOME = {
    CaseStatus.WRONG_ANSWER: Outcome.INCORRECT,
    CaseStatus.TIME_LIMIT: Outcome.TIMEOUT,
    CaseStatus.RUNTIME_ERROR: Outcome.RUNTIME_ERROR,
    CaseStatus.OUTPUT_LIMIT: Outcome.RUNTIME_ERROR,
    CaseStatus.SKIPPED: Outcome.INCORRECT,
}


@dataclass
class CaseRun:
    """What running one case produced, before judging."""

    status: str  # ok | timeout | runtime | output | skipped | sandbox
    stdout: str = ""
    message: str = ""  # stderr tail, exit status, or the sandbox's error
    elapsed_s: float = 0.0


def _clip(s: str, n: int = DETAIL_CHARS) -> str:
    s = s.strip()
    return s if len(s) <= n else "…" + s[-n:]


# -- running -------------------------------------------------------------------------------------------
def run_python(
    code: str,
    inputs: list[str],
    ctx: Context,
    per_case: float,
    stop: bool,
    width: int,
    rid: str,
    deadline: Deadline,
    lane: str = "",
):
    """Each case its own job in the Python pool (in ``lane``, the pool's lane of lean workers the code kind's
    jobs fork from, when named: sandbox/lanes.py ``Lane``); with ``stop``, cases not yet started after a failure
    are skipped. Every case spends from the submission's ``deadline``: none starts after it, and each
    runs at most ``per_case`` seconds or what is left of it (the pool keeps the worker's share)."""
    failed: list[bool] = []

    def one(text: str) -> CaseRun:
        if failed and stop:
            return CaseRun("skipped")
        if deadline.expired():
            return CaseRun("timeout", message="no time left for this case")
        job = Job(
            code=code,
            stdin=text,
            timeout_s=per_case,
            limits=Limits(memory_mb=1024),
            id=rid,
            deadline=deadline,
            lane=lane,
        )
        run = _from_result(ctx.run_job(job), per_case)
        if run.status != "ok":
            failed.append(True)
        return run

    return ctx.map(one, inputs, min(width, len(inputs)))


def _from_result(res: Result, timeout_s: float) -> CaseRun:
    if res.sandbox_error:
        return CaseRun("sandbox", message=res.sandbox_error)
    if res.output_limit_exceeded:
        return CaseRun("output", message=output_limit_verdict(res).detail, elapsed_s=res.wall_s)  # every mode's detail
    if res.timed_out:
        took = res.time_limit_s or timeout_s
        return CaseRun("timeout", message=f"did not finish in {took:.3g} s", elapsed_s=res.wall_s)
    if res.exit_code != 0:
        how = f"signal {res.signal}" if res.signal is not None else f"exit code {res.exit_code}"
        return CaseRun("runtime", message=f"{how}; stderr: {_clip(res.stderr)}", elapsed_s=res.wall_s)
    return CaseRun("ok", res.stdout, elapsed_s=res.wall_s)


def run_compiled(
    code: str,
    inputs: list[str],
    opts: CodeOptions,
    ctx: Context,
    deadline: Deadline,
    rid: str,
    lang: Language | None = None,
    blobs: dict[str, str] | None = None,
):
    """One job in the toolchain lane for ``opts.language`` (through ``ctx.run_job``, the one door), by the
    submission's ``deadline``: (compile
    error message or None, runs, compile seconds). Each case runs at most ``opts.case_timeout_s``; with
    ``reward=all`` the cases after the first failure are skipped. ``lang`` and ``blobs`` (more files,
    base64): as assert mode assembles them (verifiers/kinds/code/asserts.py); else the language's, as given."""
    lang = lang or languages.for_source(languages.language(opts.language), code)
    per_case = opts.case_timeout_s
    compile_s = opts.compile_timeout_s if lang.compile else 0.0
    job, nonce = toolchains.driver_job(
        lang,
        code,
        inputs,
        case_timeout_s=per_case,
        compile_timeout_s=compile_s,
        stop_on_error=opts.reward == "all",
        blobs=blobs,
        job_id=rid,
        output_cap=ctx.output_cap,
    )
    need = job.timeout_s  # the driver's own need (compile, then every case with its start-up), spent from the deadline
    job.timeout_s, job.deadline = min(need, deadline.remaining()), deadline
    res = ctx.run_job(job)
    timeout = float(f"{res.time_limit_s or need:.3g}")
    if res.sandbox_error:
        return None, [CaseRun("sandbox", message=res.sandbox_error) for _ in inputs], 0.0
    lines = toolchains.driver_lines(res.stdout, nonce)
    comp = next((d["compile"] for d in lines if "compile" in d), None)
    if comp is None and res.timed_out:  # the request's budget ended before the compiler did: a time-out
        why = f"the submission's {timeout:g} s ran out while compiling"
        return None, [CaseRun("timeout" if i == 0 else "skipped", message=why) for i in range(len(inputs))], timeout
    if comp is None:  # the driver itself failed: not the program's fault
        why = f"the toolchain driver reported nothing (exit {res.exit_code}): {_clip(res.stderr, 300)}"
        return None, [CaseRun("sandbox", message=why) for _ in inputs], 0.0
    if not comp["ok"]:
        return _clip(comp["message"], 2000) or "compilation failed", [], comp["elapsed"]
    runs = {d["case"]: _case_run(d, per_case) for d in lines if "case" in d}
    missing = "output" if res.output_limit_exceeded else "timeout" if res.timed_out else "runtime"
    out = [runs.get(i) for i in range(len(inputs))]
    first_gap = next((i for i, r in enumerate(out) if r is None), None)
    for i in range(len(inputs)):
        if out[i] is None:
            why = {
                "output": f"{OUTPUT_LIMIT_DETAIL}: the submission's output passed the cap",
                "timeout": f"the submission ran out of its {timeout:g} s budget",
            }.get(missing, "the driver died")
            out[i] = CaseRun(missing if i == first_gap else "skipped", message=why)
    return None, out, comp["elapsed"]


def _case_run(d: dict, per_case: float) -> CaseRun:
    st, el = d["status"], float(d.get("elapsed") or 0.0)
    if st == "skipped":
        return CaseRun("skipped")
    if st == "ok":
        return CaseRun("ok", base64.b64decode(d["stdout"]).decode("utf-8", "replace"), elapsed_s=el)
    if st == "timeout":
        return CaseRun("timeout", message=f"did not finish in {per_case:g} s", elapsed_s=el)
    if st == "output":
        return CaseRun("output", message=f"{OUTPUT_LIMIT_DETAIL}: the program's output passed the cap", elapsed_s=el)
    how = f"signal {d['signal']}" if d.get("signal") is not None else f"exit code {d.get('exit')}"
    return CaseRun("runtime", message=f"{how}; stderr: {_clip(d.get('stderr', ''))}", elapsed_s=el)


# -- judging ------------------------------------------------------------------------------------------
def judge_runs(runs: list[CaseRun], spec: judges.StdioSpec, opts: CodeOptions, ctx: Context) -> list[CaseVerdict]:
    fn = judges.host_judge(opts.judge, opts.abs_tol, opts.rel_tol)
    check: Callable[[int, str], tuple[bool, str]] = (
        (lambda i, out: fn(spec.cases[i][1], out)) if fn else (lambda i, out: _checker(spec, i, out, ctx))
    )
    status = {
        "timeout": CaseStatus.TIME_LIMIT,
        "runtime": CaseStatus.RUNTIME_ERROR,
        "output": CaseStatus.OUTPUT_LIMIT,
        "skipped": CaseStatus.SKIPPED,
    }

    def one(i: int) -> CaseVerdict:
        r = runs[i]
        if r.status == "ok":
            ok, why = check(i, r.stdout)
            return CaseVerdict(CaseStatus.PASSED if ok else CaseStatus.WRONG_ANSWER, _clip(why), r.elapsed_s)
        if r.status == "sandbox":
            raise _SandboxFailed(r.message)
        return CaseVerdict(status[r.status], _clip(r.message), r.elapsed_s)

    if opts.judge != "checker":
        return [one(i) for i in range(len(runs))]
    return ctx.map(one, range(len(runs)), min(ctx.parallelism, len(runs)))


class _SandboxFailed(Exception):
    pass


class _BadChecker(Exception):
    pass


def _checker(spec: judges.StdioSpec, i: int, actual: str, ctx: Context) -> tuple[bool, str]:
    """The checker's word on one case. A checker that fails (crashes, times out) on the program's output
    rejects it, unless it also fails on the expected output: then the checker is broken (BAD_REFERENCE),
    and printing garbage that crashes it never turns a 0 into a masked sample."""
    case_input, expected = spec.cases[i]
    ok, said, failed = _run_checker(spec.checker, case_input, expected, actual, ctx)
    if not failed:
        return ok, said or ("accepted" if ok else "rejected by the checker")
    _, said_on_expected, broken = _run_checker(spec.checker, case_input, expected, expected, ctx)
    if broken:
        raise _BadChecker(f"the checker failed on case {i} ({failed}), on the expected output too: {said_on_expected}")
    return False, f"the checker failed on this output ({failed}), not on the expected one: {said}"


def _run_checker(checker: str, case_input: str, expected: str, actual: str, ctx: Context) -> tuple[bool, str, str]:
    """(accepted, what it said, how it failed: '' when it accepted or rejected)."""
    stdin = judges.checker_stdin(checker, case_input, expected, actual)
    job = Job(
        code=judges.CHECKER_RUNNER,
        stdin=stdin,
        timeout_s=CHECKER_TIMEOUT_S,
        limits=Limits(memory_mb=1024),
        deadline=ctx.deadline,
        lane=LANE,  # the checker imports only what it names, like a program (in_sandbox/code/checker.py)
    )
    res = ctx.run_job(job)
    if res.sandbox_error:
        raise _SandboxFailed(res.sandbox_error)
    said = _clip(res.stdout + res.stderr, 300)
    if res.exit_code in (0, 1) and not res.timed_out:
        return res.exit_code == 0, said, ""
    return False, said, "timed out" if res.timed_out else f"exited {res.exit_code}"


def verdict(cases: list[CaseVerdict], reward: str) -> Verdict:
    """The submission's verdict from its cases (first failing case decides the outcome); ``reward``:
    ``all`` or ``fraction`` (``CodeOptions.reward``)."""
    n = len(cases)
    passed = sum(c.status is CaseStatus.PASSED for c in cases)
    fail = next((i for i, c in enumerate(cases) if c.status is not CaseStatus.PASSED), None)
    if fail is None:
        return Verdict(1.0, Outcome.CORRECT, f"{passed}/{n} cases passed", cases=cases)
    first = cases[fail]
    detail = f"{passed}/{n} cases passed; case {fail}: {first.status.value.lower().replace('_', ' ')}: {first.detail}"
    over = next((c for c in cases if c.status is CaseStatus.OUTPUT_LIMIT), None)
    if over is not None:  # one policy for every mode: the whole answer is a RUNTIME_ERROR, reward 0
        return Verdict(0.0, Outcome.RUNTIME_ERROR, over.detail, cases=cases)
    share = passed / n if reward == "fraction" else 0.0
    return Verdict(share, _OUTCOME[first.status], detail, cases=cases)


def grade(runs: list[CaseRun], spec: judges.StdioSpec, opts: CodeOptions, ctx: Context) -> Verdict:
    try:
        return verdict(judge_runs(runs, spec, opts, ctx), opts.reward)
    except _SandboxFailed as e:
        return Verdict.of(Outcome.SANDBOX_ERROR, str(e))
    except _BadChecker as e:
        return Verdict.of(Outcome.BAD_REFERENCE, str(e))
