"""Typed jobs across the sandbox wall (in_sandbox/jobs.py ``MATH``): the math kind builds its batch through the
shape and the grader reads it through the same shape, so a payload that does not match fails on the host, naming
the field, before a sandbox is used (the service is a real VerifierService with no pool: nothing can run)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from in_sandbox.jobs import MATH, PayloadError, shape_of
from sandbox.deadline import Deadline
from verifiers.kinds.math.verifier import JOB_CODE, MathVerifier
from verifiers.service.core import VerifierService
from verifiers.shapes.base import Context
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


def _job():
    """The job the math kind builds for one request, as it reaches the service's door (no pool behind it)."""
    svc, seen = VerifierService(None, None), []

    def run_job(job):
        seen.append(job)
        return svc.run_job(job)

    ctx = Context(run_job=run_job, lookup=None, deadline=Deadline.after(30))
    v = MathVerifier().verify(Request(completion=r"so \boxed{x^2+1}", reference="1+x^2", verifier="math"), ctx)
    assert v.outcome is Outcome.SANDBOX_ERROR and len(seen) == 1  # the door said "no sandbox pool"
    return svc, seen[0]


def test_the_math_payload_a_job_carries_matches_its_shape():
    _, job = _job()
    q = MATH.loads(job.stdin)
    assert shape_of(job.code) is MATH and job.code == JOB_CODE
    item = q["items"][0]
    assert item["gold"] == "1+x^2" and item["preds"] == ["x^2+1"] and item["together"] is True
    assert item["timeout"] > 0 and item["left"] > 0


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda q: dict(q, batch=1), "unknown field(s) batch"),
        (lambda q: {"items": [dict(q["items"][0], togther=True)]}, "unknown field(s) items[0].togther"),
        (lambda q: {"items": [dict(q["items"][0], together="yes")]}, "field 'items[0].together' must be bool, got str"),
        (
            lambda q: {"items": [{k: v for k, v in q["items"][0].items() if k != "gold"}]},
            "field 'items[0].gold' is missing",
        ),
        (lambda q: {"items": [dict(q["items"][0], preds="x")]}, "field 'items[0].preds' must be list[str], got str"),
        (lambda q: {"items": q["items"][0]}, "field 'items' must be list[math item], got dict"),
    ],
)
def test_a_math_payload_that_does_not_match_fails_on_the_host_before_a_sandbox(edit, says):
    svc, job = _job()
    bad = replace(job, stdin=json.dumps(edit(json.loads(job.stdin))))
    with pytest.raises(PayloadError, match=re.escape(says)):
        MATH.loads(bad.stdin)
    with pytest.raises(PayloadError, match=re.escape(says)):
        svc.run_job(bad)  # had it got past the check, the door would answer "no sandbox pool"
    with pytest.raises(PayloadError, match=re.escape(says)):
        MATH.dumps(edit(json.loads(job.stdin)))
