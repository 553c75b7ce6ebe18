"""verifiers.fronts.http.protojson gives json_format's answers: the same dicts for every response message of the
API, the same messages for plain request bodies, and json_format's own errors for anything malformed."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.fronts.http import protojson as pj

RESPONSES = [
    pb.VerifyResponse(),
    pb.VerifyResponse(reward=float("nan"), elapsed_s=float("inf")),
    pb.VerifyBatchResponse(
        results=[
            pb.VerifyResponse(
                reward=0.5,
                outcome=pb.OUTCOME_CORRECT,
                detail="ok ✓",
                elapsed_s=1e-4,
                id="q1",
                components={"math": 1.0, "think_format": 0.0},
                cached=True,
                steps=[pb.StepReward(reward=0.25, start=0, end=7)],
                cases=[pb.CaseVerdict(status=pb.CaseVerdict.STATUS_WRONG_ANSWER, detail="diff", elapsed_s=0.2)],
            ),
            pb.VerifyResponse(outcome=pb.OUTCOME_SANDBOX_ERROR),
        ]
    ),
    pb.VerifierInfo(name="m", kind="builtin", description="d", builtin=True, version=1),
    pb.VerifierInfo(
        name="c",
        kind="composite",
        version=2**40,
        composite=pb.CompositeVerifier(components=[pb.Component(verifier="a", weight=0.5, options={"k": "v"})]),
    ),
    pb.VerifierInfo(name="p", kind="python", python=pb.PythonVerifier(source="def verify(c, r, o): return 1")),
    pb.VerifierInfo(name="r", kind="remote", remote=pb.RemoteVerifier(target="h:1")),
    pb.VerifierInfo(name="rm", kind="reward_model", reward_model=pb.RewardModelVerifier(path="/m", low=-1.5)),
    pb.ListVerifiersResponse(verifiers=[pb.VerifierInfo(name="a"), pb.VerifierInfo(name="b", builtin=True)]),
    pb.UnregisterVerifierResponse(),
]


@pytest.mark.parametrize("msg", RESPONSES, ids=lambda m: type(m).__name__)
def test_to_dict_equals_json_format(msg):
    want = json_format.MessageToDict(msg, always_print_fields_with_no_presence=True)
    assert json.loads(pj.to_json(msg)) == want


BODIES = [
    (pb.VerifyRequest, '{"verifier": "math", "completion": "\\\\boxed{1}", "reference": "1", "timeoutS": 2}'),
    (pb.VerifyRequest, '{"verifier": "code", "options": {"mode": "stdio"}, "timeout_s": 1.5, "id": "x"}'),
    (pb.VerifyRequest, '{"verifier": "m", "timeoutS": "2.5"}'),  # number as a string: json_format's form
    (pb.VerifyRequest, '{"verifier": null}'),
    (pb.VerifyBatchRequest, '{"items": [{"verifier": "a", "completion": "b"}, {"verifier": "c", "prompt": "p"}]}'),
    (pb.RegisterVerifierRequest, '{"name": "n", "composite": {"components": [{"verifier": "a", "weight": 2}]}}'),
    (pb.RegisterVerifierRequest, '{"name": "n", "python": {"source": "s", "exampleCompletion": "c"}, "replace": true}'),
    (pb.RegisterVerifierRequest, '{"name": "n", "rewardModel": {"path": "/m", "maxLength": 128}}'),
    # malformed: json_format's own error
    (pb.VerifyRequest, '{"verifier": "m", "nope": 1}'),
    (pb.VerifyRequest, '{"verifier": 3}'),
    (pb.VerifyRequest, '{"verifier": "m", "verifier": "n"}'),
    (pb.VerifyRequest, '{"verifier": "m", "timeoutS": true}'),
    (pb.VerifyRequest, '{"options": {"a": 1}}'),
    (pb.VerifyRequest, "[1, 2]"),
    (pb.VerifyRequest, "{broken"),
    (pb.VerifyBatchRequest, '{"items": {"verifier": "a"}}'),
    (pb.RegisterVerifierRequest, '{"name": "n", "python": {"source": "s"}, "remote": {"target": "h:1"}}'),
    (pb.RegisterVerifierRequest, '{"rewardModel": {"maxLength": 1.5}}'),
]


@pytest.mark.parametrize("cls,body", BODIES)
def test_parse_equals_json_format(cls, body):
    try:
        want = json_format.Parse(body, cls())
    except json_format.ParseError as e:
        with pytest.raises(json_format.ParseError) as got:
            pj.parse(body, cls)
        assert str(got.value) == str(e)
        return
    assert pj.parse(body, cls) == want
