"""Assert mode for the toolchain languages: the request's tests are code in the candidate's language, assembled
with the candidate's program into one program by the language's template (its record, languages/<name>.py:
prelude and candidate, the tests, then our code printing a sentinel line after the tests returned), compiled
and run once in the toolchain lane as a stdio submission is, the whole test program one case.

Passing means the program ran to the end: exit 0 **and** the sentinel on its stdout. The sentinel carries
a nonce the candidate is not told, written in the source as two halves joined at run time (a program that
prints its own source text, as PHP after ``?>``, does not print it); our names carry another secret tag,
so a C macro cannot aim at them. So ``exit(0)``, ``System.exit(0)``, ``process.exit(0)``, ``os.Exit(0)``
or a signal before the tests finished is not paid (INCORRECT, signal ``code.early_exit``). The nonce is
an HMAC of the program (language, candidate, tests) under a key drawn once per process: unknown to the
candidate, and the same for identical programs, so a batch's identical programs share one compile
(``toolchains.Toolchains.run``, behind the service's door) as stdio's do.

JavaScript, TypeScript, Ruby, PHP, Perl, Lua, R and Racket no longer go this way: their tests run apart
(verifiers/kinds/code/asserts_apart.py ``SEPARATE``; the scripting languages: apart_scripts.py). For the others, not defended, by construction, hence refused unless the request sets
``allow_shared_program`` (``SHARED_PROGRAM``, options.py; docs/verifiers.md, "Assert mode in other languages"): the tests share the
candidate's process and source, so a candidate can read its own source or binary to find the nonce,
redefine what the tests call (a C macro, a patched ``assert`` module, ``console.assert``), or answer
asynchronous tests after the sentinel. That is why Python keeps its two-process harness (in_sandbox/code/harness.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field, replace

import languages as records
from languages.record import Assemble, BadTests, Language, Parts
from verifiers.kinds.code import languages
from verifiers.kinds.code.asserts_apart import SEPARATE, apart_lines, counted, shared_ran
from verifiers.shapes.base import BadRequest, CaseVerdict, Verdict
from verifiers.shapes.outcome import CaseStatus, Outcome

SENTINEL = "RLVR-TESTS-RAN-TO-THE-END"
_KEY = secrets.token_bytes(32)  # the nonce's key: drawn once per process, never leaves it
# a failed test's stderr (else a crash: RUNTIME_ERROR): asserts, MultiPL-E's "Test failed", R's stopifnot,
# D's unittest summary, a Go panic that is not the runtime's
_FAILED = re.compile(r"(?i)assert|test failed|is not TRUE|are not all TRUE|FAILED unittests|(?-i:\bpanic: (?!runtime))")


@dataclass(frozen=True)
class Program:
    """One assembled test program: its language (argv, file name), its main source, its other files."""

    lang: Language
    source: str
    sentinel: str
    blobs: dict[str, str] = field(default_factory=dict)  # relative path -> base64
    apart: bool = False  # the tests run in a process of their own (SEPARATE): the sentinel line says what ran


# language -> its shared program's template (its record, languages/<name>.py), where it keeps one
_SHARED: dict[str, Assemble] = {name: r.asserts for name, r in records.RECORDS.items() if r.asserts}
# language -> how its assert mode's program is assembled: its tests apart (SEPARATE), else its shared template
LANGUAGES: dict[str, Assemble] = {
    name: SEPARATE[name].assemble if name in SEPARATE else _SHARED[name]
    for name in records.RECORDS
    if name in SEPARATE or name in _SHARED
}


# Languages whose assert mode still puts the tests in the candidate's program (no separate process or unit, a
# verdict the candidate can reach): refused unless the request sets allow_shared_program (options.py), and the
# verdict then carries code.shared_program. A language leaves this set when its tests run apart.
SHARED_PROGRAM: frozenset[str] = frozenset(LANGUAGES) - frozenset(SEPARATE)


def assemble(lang: str, program: str, tests: str) -> Program:
    """The test program of ``lang`` for ``program`` (prelude + candidate) and ``tests``; ``BadTests``
    where the tests lack the entry point the language needs."""
    digest = hmac.new(_KEY, "\0".join((lang, program, tests)).encode(), hashlib.sha256).hexdigest()
    sentinel, tag = f"{SENTINEL}-{digest[:32]}", digest[32:40]
    half = len(sentinel) // 2
    parts = Parts(program, tests, sentinel[:half], sentinel[half:], tag)
    base = languages.language(lang)
    if lang in SEPARATE:
        apart = SEPARATE[lang]
        source, files = apart.assemble(parts)
        blobs = {name: base64.b64encode(text.encode()).decode() for name, text in files.items()}
        base = replace(base, source=apart.source, run=apart.run, compile=apart.compile)
        return Program(base, source, sentinel, blobs, apart=True)
    source, files = _SHARED[lang](parts)
    adjust = records.RECORDS[lang].adjust
    base = adjust(base, source, files, tag) if adjust else base
    blobs = {name: base64.b64encode(text.encode()).decode() for name, text in files.items()}
    return Program(base, source, sentinel, blobs)


def check(lang: str, tests: str) -> None:
    """``BadRequest`` where ``lang``'s tests cannot be assembled (they lack the entry point it needs)."""
    try:
        assemble(lang, "", tests)
    except BadTests as e:
        raise BadRequest(str(e)) from None


# how the run ended -> (outcome, the case's status, signals, detail: "{}" is the run's message)
_ENDS = {
    "pass": (Outcome.CORRECT, CaseStatus.PASSED, (), "the tests ran to the end"),
    "early": (
        Outcome.INCORRECT,
        CaseStatus.WRONG_ANSWER,
        ("code.early_exit",),
        "the program exited 0 before the tests finished (no sentinel line after the last test)",
    ),
    "failed": (Outcome.INCORRECT, CaseStatus.WRONG_ANSWER, (), "a test failed: {}"),
    "runtime": (Outcome.RUNTIME_ERROR, CaseStatus.RUNTIME_ERROR, (), "{}"),
    "timeout": (Outcome.TIMEOUT, CaseStatus.TIME_LIMIT, ("code.time_limit",), "{}"),
    "output": (Outcome.RUNTIME_ERROR, CaseStatus.OUTPUT_LIMIT, ("code.output_cap",), "{}"),
}


def verdict(prog: Program, compile_error: str | None, runs: list) -> Verdict:
    """The verdict of one test program's run: ``stdio.run_compiled``'s answer (``runs``: its one ``CaseRun``)."""
    if compile_error is not None:
        return Verdict.of(Outcome.COMPILE_ERROR, compile_error)
    run = runs[0]
    if run.status == "sandbox":
        return Verdict.of(Outcome.SANDBOX_ERROR, run.message)
    if prog.apart:
        said = apart_lines(prog.sentinel, run.stdout)
        if "bad_reference" in said:
            return Verdict.of(
                Outcome.BAD_REFERENCE,
                f"the tests failed before any call into the candidate: {said['bad_reference'][-600:]}",
            )
    if run.status == "ok":
        end = "pass" if prog.sentinel in (line.strip() for line in run.stdout.splitlines()) else "early"
    else:
        end = run.status if run.status in ("timeout", "output") else "runtime"
        end = "failed" if end == "runtime" and _FAILED.search(run.message) else end
    outcome, status, signals, say = _ENDS[end]
    v = Verdict.of(outcome, say.format(run.message))
    v.cases = [CaseVerdict(status, "" if status is CaseStatus.PASSED else v.detail, run.elapsed_s)]
    if end == "pass":  # what ran: counted apart, or the one test program of a shared one
        return counted(v, apart_lines(prog.sentinel, run.stdout).get("ran", "")) if prog.apart else shared_ran(v)
    return v.signal(*signals)
