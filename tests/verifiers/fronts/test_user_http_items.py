"""Issue 31's smaller service findings, over a real server process: ``/get_reward`` reads a JSON body sent
without a Content-Type (or with curl's form type), as the ``/v1`` routes do; a registered Python verifier
can say "this reference is bad" (``raise BadReference(...)``), graded BAD_REFERENCE and masked by the
trainer like SANDBOX_ERROR."""

from __future__ import annotations

import json

import pytest

from verifiers.client import UNGRADED, VerifierClient

pytestmark = pytest.mark.docker

CHECKED = """
def verify(completion, reference, options):
    if not reference.strip().lstrip("-").isdigit():
        raise BadReference(f"reference {reference!r} is not a whole number")
    return completion.strip() == reference.strip()
"""
OWN_CLASS = """
class BadReference(ValueError):  # defined here so the module runs on its own too
    pass

def verify(completion, reference, options):
    if not reference:
        raise BadReference("empty reference")
    return 1.0
"""


@pytest.fixture(scope="module")
def served(served_http):
    return served_http  # the session's server (tests/conftest.py): --reward-verifier math, HTTP on


@pytest.mark.slow
@pytest.mark.parametrize("headers", [{}, {"content-type": "application/x-www-form-urlencoded"}])
def test_get_reward_reads_json_without_a_json_content_type(served, headers):
    _, http = served
    body = json.dumps({"query": ["Q: 1+1? \\boxed{2}"], "prompts": ["Q: 1+1?"], "labels": ["2"]}).encode()
    r = http.post("/get_reward", content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [1.0]
    v1 = http.post(
        "/v1/verify",
        content=json.dumps({"verifier": "math", "completion": "\\boxed{2}", "reference": "2"}),
        headers=headers,
    )
    assert v1.status_code == 200 and v1.json()["reward"] == 1.0  # the /v1 routes, for comparison
    assert v1.json()["outcome"] == "OUTCOME_CORRECT"  # protobuf's JSON mapping, as docs/serve.md says


def test_a_python_verifier_can_say_the_reference_is_bad(served):
    srv, http = served
    for name, source in (("whole_number", CHECKED), ("own_class", OWN_CLASS)):
        r = http.post("/v1/verifiers", json={"name": name, "python": {"source": source}})  # dry run on "" accepted
        assert r.status_code == 200, r.text
    with VerifierClient(srv.target, timeout_s=120) as client:
        bad = client.verify("whole_number", "7", "seven")
        assert (bad.outcome, bad.reward) == ("BAD_REFERENCE", 0.0) and "not a whole number" in bad.detail
        assert bad.outcome in UNGRADED  # masked out of the loss (trainer/rewards.grade: valid = not UNGRADED)
        good = client.verify("whole_number", "7", "7")
        assert (good.outcome, good.reward) == ("CORRECT", 1.0)
        assert client.verify("own_class", "x", "").outcome == "BAD_REFERENCE"
        assert client.verify("own_class", "x", "1").outcome == "CORRECT"
    from trainer.grpo.rewards import VerifierReward

    reward = VerifierReward("whole_number", srv.target)
    try:
        scores = reward(["7", "7"], ["seven", "7"], ["", ""])
    finally:
        reward.close()
    assert [s.outcome for s in scores] == ["BAD_REFERENCE", "CORRECT"]
