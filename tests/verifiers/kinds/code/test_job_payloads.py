"""Typed jobs across the sandbox wall (in_sandbox/jobs.py): a toolchain job's payload (``DRIVER``), a Python
assert-mode job's (``PYTHON_ASSERT``), stdio mode's checker job's (``CHECKER``) and a python verifier's
(``PYTHON_VERIFIER``) are checked against their declared shapes where they are built and read, so a payload
that does not match fails on the host, naming the field, before a sandbox is used (the service's door is a real VerifierService with no pool: nothing can run)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from in_sandbox.jobs import CHECKER, DRIVER, PYTHON_ASSERT, PYTHON_VERIFIER, PayloadError, shape_of
from sandbox.deadline import Deadline
from verifiers.kinds import python_verifier
from verifiers.kinds.code import judges, languages, stdio, toolchains
from verifiers.kinds.code.options import CodeOptions
from verifiers.kinds.code.verifier import HARNESS, CodeVerifier
from verifiers.service.core import VerifierService
from verifiers.shapes.base import Context
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


def _job():
    return toolchains.driver_job(
        languages.language("c"), "int main(){}", ["1\n"], case_timeout_s=2, compile_timeout_s=30
    )


def test_the_driver_payload_a_job_carries_matches_its_shape():
    job, nonce = _job()
    q = DRIVER.loads(job.stdin)
    assert q["nonce"] == nonce and q["inputs"] == ["1\n"] and job.lane == toolchains.LANE


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda q: dict(q, compile_timout=3), "unknown field(s) compile_timout"),
        (lambda q: {k: v for k, v in q.items() if k != "inputs"}, "field 'inputs' is missing"),
        (lambda q: dict(q, inputs="1\n"), "field 'inputs' must be list[str], got str"),
        (lambda q: dict(q, stop_on_error="yes"), "field 'stop_on_error' must be bool"),
        (lambda q: dict(q, run_nproc=True), "field 'run_nproc' must be int, got bool"),
    ],
)
def test_a_payload_that_does_not_match_fails_on_the_host_before_a_sandbox(edit, says):
    job, _ = _job()
    bad = replace(job, stdin=json.dumps(edit(json.loads(job.stdin))))
    with pytest.raises(PayloadError, match=re.escape(says)):
        DRIVER.loads(bad.stdin)
    svc = VerifierService(None, None)  # no pool: had the job got past the check, it would say "no sandbox pool"
    with pytest.raises(PayloadError, match=re.escape(says)):
        svc.run_job(bad)
    with pytest.raises(PayloadError, match=re.escape(says)):
        DRIVER.dumps(edit(json.loads(job.stdin)))


def _assert_job(reference):
    """The job Python assert mode builds for one request, as it reaches the service's door (no pool behind it)."""
    svc, seen = VerifierService(None, None), []

    def run_job(job):
        seen.append(job)
        return svc.run_job(job)

    ctx = Context(run_job=run_job, lookup=None, deadline=Deadline.after(30))
    req = Request(completion="```python\ndef f(x):\n    return x + 1\n```", reference=reference, verifier="code",
                  options={"entry_point": "f"})  # fmt: skip
    assert CodeVerifier().verify(req, ctx).outcome is Outcome.SANDBOX_ERROR and len(seen) == 1
    return svc, seen[0]


@pytest.mark.parametrize(
    "reference, tests", [("assert f(1) == 2\n", str), ('["assert f(1) == 2", "assert f(2) == 3"]', list)]
)
def test_the_python_assert_payload_a_job_carries_matches_its_shape(reference, tests):
    _, job = _assert_job(reference)
    q = PYTHON_ASSERT.loads(job.stdin)
    assert shape_of(job.code) is PYTHON_ASSERT and job.code == HARNESS
    assert q["entry_point"] == "f" and "return x + 1" in q["candidate"] and type(q["tests"]) is tests


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda q: dict(q, entrypoint="f"), "unknown field(s) entrypoint"),
        (lambda q: {k: v for k, v in q.items() if k != "nonce"}, "field 'nonce' is missing"),
        (lambda q: dict(q, tests=7), "field 'tests' must be str or list[str], got int"),
        (lambda q: dict(q, tests=["assert f(1) == 2", 3]), "field 'tests' must be str or list[str], got list"),
        (lambda q: dict(q, prelude=None), "field 'prelude' is missing"),
    ],
)
def test_a_python_assert_payload_that_does_not_match_fails_on_the_host_before_a_sandbox(edit, says):
    svc, job = _assert_job("assert f(1) == 2\n")
    bad = replace(job, stdin=json.dumps(edit(json.loads(job.stdin))))
    with pytest.raises(PayloadError, match=re.escape(says)):
        PYTHON_ASSERT.loads(bad.stdin)
    with pytest.raises(PayloadError, match=re.escape(says)):
        svc.run_job(bad)
    with pytest.raises(PayloadError, match=re.escape(says)):
        PYTHON_ASSERT.dumps(edit(json.loads(job.stdin)))


def _door_jobs(send):
    """The jobs ``send(ctx)`` takes to the service's door (a real VerifierService with no pool behind it)."""
    svc, seen = VerifierService(None, None), []

    def run_job(job):
        seen.append(job)
        return svc.run_job(job)

    send(Context(run_job=run_job, lookup=None, deadline=Deadline.after(30)))
    return svc, seen


def _checker_job():
    """The job stdio mode's checker judge builds for one case whose program printed 3 (the checker's own job)."""
    reference = json.dumps({"cases": [{"input": "1 2\n", "output": "3\n"}], "checker": "import sys\nsys.exit(0)\n"})
    spec, opts = judges.parse_reference(reference, "checker"), CodeOptions(mode="stdio", judge="checker")
    verdict = []
    svc, seen = _door_jobs(lambda ctx: verdict.append(stdio.grade([stdio.CaseRun("ok", "3\n")], spec, opts, ctx)))
    assert verdict[0].outcome is Outcome.SANDBOX_ERROR and len(seen) == 1
    return svc, seen[0]


def _python_verifier_job():
    """The job a registered ``python`` verifier builds for one request."""
    source = "def verify(completion, reference, options):\n    return completion == reference\n"
    svc, seen = _door_jobs(lambda ctx: python_verifier.run(ctx, source, "verify", "4", "4", {"k": "v"}, 5.0))
    assert len(seen) == 1
    return svc, seen[0]


def test_the_checker_and_python_verifier_payloads_jobs_carry_match_their_shapes():
    _, job = _checker_job()
    q = CHECKER.loads(job.stdin)
    assert shape_of(job.code) is CHECKER and job.code == judges.CHECKER_RUNNER
    assert q == {"checker": "import sys\nsys.exit(0)\n", "input": "1 2\n", "output": "3\n", "answer": "3\n"}
    _, job = _python_verifier_job()
    q = PYTHON_VERIFIER.loads(job.stdin)
    assert shape_of(job.code) is PYTHON_VERIFIER and job.code == python_verifier.HARNESS
    assert q["entrypoint"] == "verify" and q["completion"] == "4" and q["options"] == {"k": "v"}


@pytest.mark.parametrize(
    "build, shape, edit, says",
    [
        (_checker_job, "CHECKER", lambda q: dict(q, expected="3\n"), "unknown field(s) expected"),
        (_checker_job, "CHECKER", lambda q: {k: v for k, v in q.items() if k != "answer"}, "field 'answer' is missing"),
        (_checker_job, "CHECKER", lambda q: dict(q, output=3), "field 'output' must be str, got int"),
        (_checker_job, "CHECKER", lambda q: dict(q, checker=["x"]), "field 'checker' must be str, got list"),
        (_python_verifier_job, "PYTHON_VERIFIER", lambda q: dict(q, entry_point="f"), "unknown field(s) entry_point"),
        (_python_verifier_job, "PYTHON_VERIFIER", lambda q: dict(q, options={"k": 1}), "field 'options' must be"),
        (_python_verifier_job, "PYTHON_VERIFIER", lambda q: dict(q, source=None), "field 'source' is missing"),
    ],
)
def test_a_checker_or_python_verifier_payload_that_does_not_match_fails_on_the_host(build, shape, edit, says):
    shape = {"CHECKER": CHECKER, "PYTHON_VERIFIER": PYTHON_VERIFIER}[shape]
    svc, job = build()
    bad = replace(job, stdin=json.dumps(edit(json.loads(job.stdin))))
    with pytest.raises(PayloadError, match=re.escape(says)):
        shape.loads(bad.stdin)
    with pytest.raises(PayloadError, match=re.escape(says)):
        svc.run_job(bad)  # the door: before a sandbox is used (there is none: it would say "no sandbox pool")
    with pytest.raises(PayloadError, match=re.escape(says)):
        shape.dumps(edit(json.loads(job.stdin)))


def test_a_python_stdio_case_job_is_the_program_itself_with_its_input_as_stdin():
    """Stdio mode's Python cases carry no payload to declare: the job's code is the candidate's program, run as
    __main__, and its stdin the case's input as given (its checker, when there is one, is CHECKER's job)."""
    program = "a, b = map(int, input().split())\nprint(a + b)\n"
    reference = json.dumps([{"input": "1 2\n", "output": "3\n"}, {"input": "5 6\n", "output": "11\n"}])
    req = Request(completion=f"```python\n{program}```", reference=reference, verifier="code",
                  options={"mode": "stdio", "reward": "fraction"})  # fmt: skip
    verdict = []
    _, seen = _door_jobs(lambda ctx: verdict.append(CodeVerifier().verify(req, ctx)))
    assert verdict[0].outcome is Outcome.SANDBOX_ERROR
    assert sorted(j.stdin for j in seen) == ["1 2\n", "5 6\n"]
    assert all(j.code == program and shape_of(j.code) is None for j in seen)
