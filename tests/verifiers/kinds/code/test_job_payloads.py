"""Typed jobs across the sandbox wall (in_sandbox/jobs.py): a toolchain job's payload is checked against its declared
shape where it is built and where it is read, so a payload that does not match fails on the host, naming the field,
before a sandbox is used (the service's door is a real VerifierService with no pool: nothing can run)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from in_sandbox.jobs import DRIVER, PayloadError
from verifiers.kinds.code import languages, toolchains
from verifiers.service.core import VerifierService


def _job():
    return toolchains.driver_job(languages.language("c"), "int main(){}", ["1\n"], case_timeout_s=2, compile_timeout_s=30)


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
