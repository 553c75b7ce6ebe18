"""``code``: does the completion's program pass the reference tests, run in the sandbox?

Options (language, mode, entry_point, prelude, judge and tolerances, reward, ...): docs/verifiers.md,
"Options of `code`", the one table, generated from verifiers/kinds/code/options.py. The candidate is the last
block fenced with the language's tag after the reasoning, else the last bare block, else the whole visible
text. Assert mode in Python runs the tests in a process of their own, never the candidate's
(in_sandbox/code/harness.py): the names the tests use that the candidate defines are proxies exchanging plain
data with the candidate's process; passing means the tests' process reached its end and printed a marker
carrying a per-job nonce on a private copy of stdout, and it says what ran (test functions, asserts, calls:
zero is BAD_REFERENCE, never CORRECT). Assert mode in the other languages assembles the tests (code in the
candidate's language) and the candidate into one program (verifiers/kinds/code/asserts.py): refused unless
the request sets allow_shared_program, and such a verdict carries code.shared_program; JavaScript and
TypeScript run their tests apart instead (verifiers/kinds/code/asserts_apart.py).
Stdio mode judges each case's output on the host (verifiers/kinds/code/judges.py) or by a checker in a
separate job (verifiers/kinds/code/stdio.py); other languages are compiled once per program and run in the
toolchain pool (verifiers/kinds/code/toolchains.py).

What is defended (each family is a table in ``tests/verifiers/kinds/code/test_code_adversarial.py``): exiting before the tests
finish (``sys.exit(0)``, ``os._exit(0)``, killing itself or the tests' process, forging the worker's
"finished" byte); results that are not plain data (lying ``__eq__``, subclasses of built-in types) from
any kind of callable; shadowing the tests' builtins, modules or helpers; walking frames to the harness,
patching it or forging its verdict; re-reading the tests; a stdio checker crashed on purpose; flooding
stdout or stderr (the sandbox's output cap ends the program: RUNTIME_ERROR "output limit exceeded",
reward 0, in both modes, even with partial credit). What is not: see ``docs/verifiers.md`` ("Not
defended, or not supported").
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, replace

from in_sandbox.answer import strip_think
from in_sandbox.jobs import PYTHON_ASSERT
from sandbox.backend import Job, Limits, Result
from verifiers.kinds.code import asserts, judges, languages, stdio, toolchains
from verifiers.kinds.code.apart_compiled import CANNOT_CROSS
from verifiers.kinds.code.apart_sig import CannotCross
from verifiers.kinds.code.options import CASE_TIMEOUT_S, DESCRIPTIONS, CodeOptions
from verifiers.shapes.base import BadRequest, Builtin, CaseVerdict, Context, Verdict
from verifiers.shapes.limits import cut_short_verdict
from verifiers.shapes.outcome import CaseStatus, Outcome
from verifiers.shapes.request import Request
from verifiers.shapes.signals import SIGNALS

PY_TAGS = ("python", "py", "python3", "py3")
STDERR_TAIL = 600

# Standard modules that tests, preludes and candidates commonly import (every HumanEval prompt imports typing),
# imported once per warm worker: the code kind's lane preloads nothing else (CodeVerifier.lane), and a job that
# imports one of these from disk pays for it twice (the tests' process and the candidate's).
COMMON_IMPORTS = ("typing", "math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string",
                  "hashlib", "copy", "operator", "fractions", "decimal", "statistics", "random", "datetime")  # fmt: skip
# The code kind's declared warm-up (CodeVerifier.warmup): the common imports and the harness (in_sandbox/code/,
# shipped in the image), imported once per worker; the job then only calls it.
CODE_WARMUP = f"import {', '.join(COMMON_IMPORTS)}\nimport in_sandbox.code.harness\n"
HARNESS = PYTHON_ASSERT.entry  # in_sandbox/code/harness.py, reading in_sandbox/jobs.py PYTHON_ASSERT


def candidate_code(completion: str, tags: tuple[str, ...] = PY_TAGS) -> str:
    """The last block fenced with one of ``tags`` (default: Python's) after the reasoning, else the last
    bare ``` block, else the whole text.

    >>> candidate_code("try:\\n```python\\nx = 1\\n```\\nbetter:\\n```py\\nx = 2\\n```")
    'x = 2\\n'
    """
    text = strip_think(completion) or completion
    parts = text.split("```")
    if len(parts) < 2:
        return text
    tagged, bare = None, None
    for block in parts[1::2]:  # odd segments are inside fences (an unclosed last fence runs to the end)
        info, _, body = block.partition("\n")
        tag = info.strip().lower()
        if tag in tags:
            tagged = body
        elif not tag:
            bare = body
    return tagged if tagged is not None else bare if bare is not None else text


def normalise_output(s: str) -> list[str]:
    """Non-blank lines with runs of whitespace collapsed (so trailing spaces and blank lines never matter)."""
    return [" ".join(line.split()) for line in s.splitlines() if line.strip()]


def _tail(s: str) -> str:
    s = s.strip()
    return ("…" + s[-STDERR_TAIL:]) if len(s) > STDERR_TAIL else s


@dataclass
class CodeVerifier(Builtin):
    name: str = "code"
    description: str = (
        f"the completion's last code block (options language: {', '.join(languages.LANGUAGES)}) passes the "
        "reference tests in the sandbox: an assert script or MBPP list (Python; other languages: tests in the "
        "language), or mode=stdio cases with "
        "judge=tokens|exact|float|checker; reward=all|fraction"
    )
    default_timeout_s: float = 60.0  # non-Python: compile + every case (the service's deadline for a request)
    python_timeout_s: float = 10.0  # Python's default budget
    case_timeout_s: float = CASE_TIMEOUT_S  # a request's default case_timeout_s
    stdio_parallelism: int = max(2, os.cpu_count() or 2)
    options = DESCRIPTIONS  # parsed by CodeOptions.parse (verifiers/kinds/code/options.py)
    sandbox_entry = HARNESS  # Python; compiled languages run in_sandbox/code/driver.py in the toolchain pool
    warmup = CODE_WARMUP
    # Python jobs (assert mode and stdio's cases) run in sandboxes warmed with this kind's warm-up alone
    # (sandbox/lanes.py, Lane): a job's processes fork from a small worker instead of the one holding sympy.
    lane = stdio.LANE  # verifiers/kinds/table.py sandbox_lanes

    def check(self, req: Request) -> CodeOptions:
        """The request's own mistakes (bad options, no tests), found before grading: VerifyBatch calls this
        for every item up front, so a malformed item fails the call naming it. Returns its options, parsed."""
        opts = CodeOptions.parse(req.options, self.case_timeout_s)
        if opts.mode == "assert" and not req.reference.strip():
            raise BadRequest("code: 'reference' must hold the tests (an assert script, or JSON cases with mode=stdio)")
        if opts.mode == "stdio":
            judges.parse_reference(req.reference, opts.judge)
        elif opts.language != "python":
            asserts.check(opts.language, req.reference)
        return opts

    def verify(self, req: Request, ctx: Context) -> Verdict:
        opts = self.check(req)
        code = candidate_code(req.completion, languages.tags(opts.language))
        if not code.strip():
            return Verdict.of(Outcome.NO_ANSWER, "no code in the completion")
        default = self.python_timeout_s if opts.language == "python" else self.default_timeout_s
        budget = req.timeout_s or default  # the submission's programs' time, spent from the request's deadline
        if opts.mode == "stdio":
            return self._stdio(req, opts, code, budget, ctx)
        if opts.language != "python":  # the tests in the candidate's language, one program (asserts.py)
            try:
                prog = asserts.assemble(opts.language, opts.prelude + code, req.reference)
            except CannotCross as e:  # the candidate's entry function has a type no call can carry (apart_sig.py)
                return Verdict.of(Outcome.COMPILE_ERROR, f"{CANNOT_CROSS.format(opts.language)}: {e}")
            error, runs, _ = stdio.run_compiled(
                prog.source, [""], opts, ctx, ctx.deadline.within(budget), req.id, prog.lang, prog.blobs
            )
            verdict = asserts.verdict(prog, error, runs)
            return verdict.signal("code.shared_program") if opts.language in asserts.SHARED_PROGRAM else verdict
        return self._assert(req, opts, code, budget, ctx)

    # -- assert style -------------------------------------------------------------------------------
    def _assert(self, req: Request, opts: CodeOptions, code: str, budget: float, ctx: Context) -> Verdict:
        nonce = secrets.token_hex(16)
        tests = _test_list(req.reference)
        stdin = PYTHON_ASSERT.dumps(
            {
                "candidate": code,
                "tests": req.reference if tests is None else tests,
                "entry_point": opts.entry_point,
                "prelude": opts.prelude,
                "nonce": nonce,
            }
        )
        job = Job(
            code=HARNESS,
            stdin=stdin,
            timeout_s=budget,
            limits=Limits(memory_mb=1024),
            id=req.id,
            deadline=ctx.deadline,
            lane=self.lane,
        )
        res = ctx.run_job(job)
        verdict = assert_verdict(res, nonce, res.time_limit_s or job.timeout_s)
        if tests is not None and verdict.outcome is not Outcome.SANDBOX_ERROR and not res.output_limit_exceeded:
            verdict = _list_verdict(res, nonce, len(tests), verdict, opts.reward)
        return verdict.signal(*assert_signals(res, nonce, verdict))

    # -- stdin/stdout cases (verifiers/kinds/code/stdio.py) ------------------------------------------------
    def _stdio(self, req: Request, opts: CodeOptions, code: str, budget: float, ctx: Context) -> Verdict:
        spec = judges.parse_reference(req.reference, opts.judge)
        opts = replace(opts, case_timeout_s=min(opts.case_timeout_s, budget))  # a case's limit: at most the budget
        deadline = ctx.deadline.within(budget)  # no case runs past the submission's budget
        inputs = [i for i, _ in spec.cases]
        if opts.language == "python":
            runs = stdio.run_python(
                code,
                inputs,
                ctx,
                opts.case_timeout_s,
                opts.reward == "all",
                self.stdio_parallelism,
                req.id,
                deadline,
                self.lane,
            )
        else:
            error, runs, _ = stdio.run_compiled(code, inputs, opts, ctx, deadline, req.id)
            if error is not None:
                return Verdict.of(Outcome.COMPILE_ERROR, error)
        verdict = stdio.grade(runs, spec, opts, ctx)
        statuses = {c.status for c in verdict.cases}
        ran = sum(c.status is not CaseStatus.SKIPPED for c in verdict.cases)
        verdict.components = {"tests_ran": float(ran)}  # the cases that ran (proof that tests ran)
        odd = any(judges.nonfinite(exp, run.stdout) for (_, exp), run in zip(spec.cases, runs, strict=False))
        return verdict.signal(
            *(["code.output_cap"] if CaseStatus.OUTPUT_LIMIT in statuses else []),
            *(["code.time_limit"] if CaseStatus.TIME_LIMIT in statuses else []),
            *(["code.nonfinite_output"] if odd else []),
        )


def _test_list(reference: str) -> list[str] | None:
    """The independent asserts of an MBPP-style reference (a JSON list of strings), else None."""
    if not reference.lstrip().startswith("["):
        return None
    try:
        tests = json.loads(reference)
    except ValueError:
        return None
    if isinstance(tests, list) and tests and all(isinstance(t, str) for t in tests):
        return tests
    return None


_TEST_STATUS = {"pass": CaseStatus.PASSED, "assert": CaseStatus.WRONG_ANSWER, "error": CaseStatus.RUNTIME_ERROR}


def _list_verdict(res: Result, nonce: str, n: int, whole: Verdict, reward: str) -> Verdict:
    """One verdict per independent assert; a test the program never finished is its time-out or crash,
    the rest are skipped. ``whole`` (the script's verdict) says whether the program ran to its end."""
    lines = toolchains.driver_lines(res.stdout, nonce)
    done = {d["case"]: d for d in lines if isinstance(d.get("case"), int) and 0 <= d["case"] < n}
    if not done and whole.outcome is not Outcome.CORRECT:
        return whole  # the candidate's own code failed before any test ran
    cases, stopped = [], False
    for i in range(n):
        d = done.get(i)
        if d is not None:
            cases.append(
                CaseVerdict(_TEST_STATUS.get(d.get("status"), CaseStatus.RUNTIME_ERROR), _tail(d.get("detail", "")))
            )
        elif not stopped:
            stopped = True
            cases.append(
                CaseVerdict(CaseStatus.TIME_LIMIT if res.timed_out else CaseStatus.RUNTIME_ERROR, whole.detail)
            )
        else:
            cases.append(CaseVerdict(CaseStatus.SKIPPED))
    v = stdio.verdict(cases, reward)
    v.components = dict(whole.components)
    if v.outcome is Outcome.CORRECT and whole.outcome is not Outcome.CORRECT:  # every test passed, then it exited
        return Verdict(0.0, whole.outcome, whole.detail, cases=cases)
    return v


def _script_line(res: Result, nonce: str) -> dict | None:
    """The whole script's verdict line (not one MBPP assert's, not a signals line), the last one written."""
    return next(
        (d for d in reversed(toolchains.driver_lines(res.stdout, nonce)) if "case" not in d and d.get("status")), None
    )


def assert_verdict(res: Result, nonce: str, timeout_s: float) -> Verdict:
    cut = cut_short_verdict(res, f"tests did not finish in {timeout_s:.3g} s; stderr: {_tail(res.stderr)}")
    if cut is not None:
        return cut
    verdict = _script_line(res, nonce)
    if verdict is None or not verdict.get("status"):
        how = f"signal {res.signal}" if res.signal is not None else f"exit code {res.exit_code}"
        return Verdict.of(
            Outcome.INCORRECT if res.exit_code == 0 or res.signal == 9 else Outcome.RUNTIME_ERROR,
            f"the program ended ({how}) before the tests finished; stderr: {_tail(res.stderr)}",
        )
    status = verdict["status"]
    ran = _ran(verdict)
    if status == "pass" and res.exit_code == 0 and res.finished:
        if not ran["calls"]:  # tests that never called the candidate tested nothing of it (asserts on builtins alone)
            return _ran_nothing(ran)
        return _with_counts(Verdict.correct(f"all tests passed ({_say_ran(ran)})"), ran)
    if status == "pass":
        how = f"signal {res.signal}" if res.signal is not None else f"exit code {res.exit_code}"
        return Verdict.of(Outcome.INCORRECT, f"the tests finished but the program then ended ({how})")
    if status == "assert":
        return Verdict.of(Outcome.INCORRECT, f"a test failed: {_tail(verdict.get('detail', ''))}")
    if status == "exited":
        return Verdict.of(Outcome.INCORRECT, f"{verdict.get('detail', '')}; stderr: {_tail(res.stderr)}")
    if status == "bad_reference":
        detail = verdict.get("detail", "")
        said = detail if not detail.startswith("Traceback") else f"the prelude failed: {detail}"
        head, _, rest = said.partition(":")  # what failed, then the traceback's tail
        return Verdict.of(Outcome.BAD_REFERENCE, f"{head}:{_tail(rest)}" if rest else _tail(said))
    return Verdict.of(Outcome.RUNTIME_ERROR, _tail(verdict.get("detail", "") or res.stderr))


RAN_KEYS = ("tests", "asserts", "calls")  # what the tests' process counts (in_sandbox/code/harness.py RAN)


def _ran(line: dict) -> dict[str, int]:
    """The counts a verdict line carries: test functions, assert statements and calls into the candidate run."""
    got = line.get("ran") if isinstance(line.get("ran"), dict) else {}
    return {k: v if type(v) is int and v >= 0 else 0 for k in RAN_KEYS for v in [got.get(k)]}


def _say_ran(ran: dict[str, int]) -> str:
    def n(k: str, one: str) -> str:
        return f"{ran[k]} {one}{'' if ran[k] == 1 else 's'}"

    return f"ran {n('tests', 'test')}, {n('asserts', 'assert')}, {n('calls', 'call')} into the candidate"


def _with_counts(v: Verdict, ran: dict[str, int]) -> Verdict:
    """``v`` carrying the counts as components (``tests_ran``, ``asserts_ran``, ``calls``): proof the tests ran."""
    v.components = {
        "tests_ran": float(ran["tests"]),
        "asserts_ran": float(ran["asserts"]),
        "calls": float(ran["calls"]),
    }
    return v


def _ran_nothing(ran: dict[str, int]) -> Verdict:
    """The tests reached their end without running anything: never CORRECT (the tests' fault, not the candidate's)."""
    return _with_counts(
        Verdict.of(
            Outcome.BAD_REFERENCE,
            "the tests ran no call into the candidate (functions or classes only defined, asserts on builtins alone, "
            "calls under an `if __name__ == '__main__':` guard?): send asserts or check(candidate), def test_...() "
            "functions without arguments, or unittest.TestCase classes",
        ),
        ran,
    )


# Lines a test harness prints for a pass (unittest, pytest, a JSON verdict, ours): printed by the candidate
# (its output is the job's stderr), they fool a grader that reads output; ours reads only its nonce line.
_VERDICT_LINE = re.compile(
    r"^(?:(?:all )?(?:tests?|cases?) (?:passed|ok)\b|(?:ok|pass(?:ed)?|success|accepted)[.!]?$|ran \d+ tests? in |"
    r"=+ .*\b\d+ passed\b|.*\.\.\. ok$|\{.*\"(?:status|nonce|passed|verdict|result)\"\s*:)",
    re.IGNORECASE,
)


def assert_signals(res: Result, nonce: str, verdict: Verdict) -> list[str]:
    """The exploit signals of an assert-mode run: those the harness wrote on its nonce lines (what the candidate's
    process did, in_sandbox/code/harness.py), and what the run itself shows (its output, its end)."""
    found = set()
    for d in toolchains.driver_lines(res.stdout, nonce):
        if isinstance(d.get("signals"), list):
            found.update(n for n in d["signals"] if isinstance(n, str) and n.startswith("code.") and n in SIGNALS)
    if res.output_limit_exceeded:
        found.add("code.output_cap")
    if res.timed_out:
        found.add("code.time_limit")
    if verdict.outcome is not Outcome.SANDBOX_ERROR and not res.timed_out and not res.output_limit_exceeded:
        line = _script_line(res, nonce)
        if line is None or (line["status"] == "pass" and not (res.exit_code == 0 and res.finished)):
            found.add("code.early_exit")  # something ended the tests' process before or as it said its verdict
    if any(_VERDICT_LINE.match(line.strip()) for line in res.stderr.splitlines()[-200:]):
        found.add("code.verdict_lines")
    return sorted(found)
