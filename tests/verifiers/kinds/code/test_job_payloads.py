"""Typed jobs across the sandbox wall (in_sandbox/jobs.py): a toolchain job's payload (``DRIVER``) and a Python
assert-mode job's (``PYTHON_ASSERT``) are checked against their declared shapes where they are built and read, so a payload that does not match fails on the host, naming the field,
before a sandbox is used (the service's door is a real VerifierService with no pool: nothing can run)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from in_sandbox.jobs import DRIVER, PYTHON_ASSERT, PayloadError, shape_of
from sandbox.deadline import Deadline
from verifiers.kinds.code import languages, toolchains
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
