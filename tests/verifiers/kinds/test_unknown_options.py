"""A misspelled option key is refused, never ignored (issue 42): ``{"fallbak": "last_number"}`` on ``math``
graded NO_ANSWER with reward 0 and ``{"languag": "c"}`` on ``code`` ran the program as Python, so a typo in
a training config zeroed a run's rewards or graded the wrong language. Every front refuses it with
INVALID_ARGUMENT (HTTP 400) naming the key and the keys the verifier knows: gRPC, HTTP, the CLI, the TRL,
verl and OpenRLHF adapters at their first call, and registration of a composite whose component options
hold one. All against a real service (tests/conftest.py); the one check is in verifiers/service/core.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from tests.http_helpers import http_service
from verifiers.client import Outcome, VerifierError, VerifyItem
from verifiers.integrations.trl import reward_function
from verifiers.integrations.verl import compute_score, compute_score_batch

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[3]
ECHO = "def verify(completion, reference, options):\n    return float(options.get('want', '') == completion)\n"


def refused(call) -> str:
    with pytest.raises(VerifierError) as e:
        call()
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, e.value
    return e.value.message


def test_grpc_refuses_the_typo_naming_the_key_and_the_keys_known(client):
    msg = refused(lambda: client.verify("math", "\\boxed{2}", "2", options={"fallbak": "last_number"}))
    assert "'fallbak'" in msg and "did you mean 'fallback'" in msg and "fallback, rel_tol" in msg
    msg = refused(lambda: client.verify("code", "print(1)", "assert True", options={"languag": "c"}))
    assert "'languag'" in msg and "'language'" in msg and "entry_point" in msg
    msg = refused(
        lambda: client.verify_batch(
            [VerifyItem("math", "\\boxed{2}", "2"), VerifyItem("math", "2", "2", options={"fallbak": "full"})]
        )
    )
    assert msg.startswith("items[1]") and "'fallbak'" in msg
    # the right spelling grades as documented
    assert client.verify("math", "it is 2", "2", options={"fallback": "last_number"}).outcome == Outcome.CORRECT


def test_a_composite_knows_the_union_of_its_parts_keys(client):
    assert client.verify("r1", "<think>x</think> 2", "2", options={"fallback": "last_number"}).reward == 1.0
    msg = refused(lambda: client.verify("r1", "<think>x</think> 2", "2", options={"fallbak": "last_number"}))
    assert "'fallbak'" in msg and "r1 knows" in msg and "fallback" in msg


def test_a_composites_stored_component_options_are_checked_at_registration(client):
    comp = pb.CompositeVerifier(components=[pb.Component(verifier="math", weight=1.0, options={"fallbak": "full"})])
    msg = refused(lambda: client.register(pb.RegisterVerifierRequest(name="typo_comp", composite=comp, replace=True)))
    assert "composite.components[0] (math).options" in msg and "'fallbak'" in msg
    with pytest.raises(VerifierError) as e:
        client.get_verifier("typo_comp")
    assert e.value.code == grpc.StatusCode.NOT_FOUND  # nothing was stored
    comp.components[0].options.clear()
    comp.components[0].options["fallback"] = "full"
    client.register(pb.RegisterVerifierRequest(name="typo_comp", composite=comp, replace=True))
    assert client.verify("typo_comp", "3", "3").reward == 1.0


def test_a_python_verifier_takes_free_form_options(client):
    client.register(pb.RegisterVerifierRequest(name="opt_echo", python=pb.PythonVerifier(source=ECHO), replace=True))
    assert client.verify("opt_echo", "yes", "", options={"want": "yes"}).reward == 1.0  # any key reaches verify()
    # a composite over it accepts any key too (its python part reads what it likes)
    comp = pb.CompositeVerifier(components=[pb.Component(verifier="opt_echo", weight=1.0, options={"anything": "1"})])
    client.register(pb.RegisterVerifierRequest(name="opt_echo_comp", composite=comp, replace=True))
    assert client.verify("opt_echo_comp", "yes", "", options={"want": "yes"}).reward == 1.0


def test_enforce_signals_is_known_to_every_verifier_and_its_names_are_checked(client):
    for name in ("math", "think_format", "code", "r1"):
        client.verify(
            name,
            "<think>x</think> \\boxed{2}",
            "assert True" if name == "code" else "2",
            options={"enforce_signals": "all"},
        )
    msg = refused(lambda: client.verify("math", "\\boxed{2}", "2", options={"enforce_signals": "answer.sevral"}))
    assert "answer.sevral" in msg and "enforce_signals" in msg


def test_http_answers_400_in_the_documented_error_shape(tmp_path):
    with http_service(tmp_path) as (_, http):
        r = http.post(
            "/v1/verify",
            json={"verifier": "math", "completion": "2", "reference": "2", "options": {"fallbak": "last_number"}},
        )
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["error"]["status"] == "INVALID_ARGUMENT" and "'fallbak'" in body["error"]["message"]
        r = http.post(
            "/v1/verify_batch",
            json={
                "items": [
                    {
                        "verifier": "code",
                        "completion": "print(1)",
                        "reference": "assert True",
                        "options": {"languag": "c"},
                    }
                ]
            },
        )
        assert r.status_code == 400 and "'languag'" in r.json()["error"]["message"], r.text
        # OpenRLHF: query parameters other than ?verifier= are the verifier's options, checked the same way
        r = http.post("/get_reward?verifier=math&fallbak=last_number", json={"query": ["2"], "labels": ["2"]})
        assert r.status_code == 400 and "'fallbak'" in r.json()["error"]["message"], r.text
        r = http.post("/get_reward?verifier=math&fallback=last_number", json={"query": ["it is 2"], "labels": ["2"]})
        assert r.status_code == 200 and r.json()["rewards"] == [1.0], r.text


def test_the_cli_says_which_key_it_refused(verifier_server):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiers.cli",
            "--target",
            verifier_server.target,
            "verify",
            "math",
            "--completion",
            "2",
            "--reference",
            "2",
            "--option",
            "fallbak=last_number",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "INVALID_ARGUMENT" in out.stderr and "'fallbak'" in out.stderr, out.stderr


def test_trl_reward_function_raises_at_its_first_call(verifier_server):
    f = reward_function("math", target=verifier_server.target, options={"fallbak": "last_number"})
    msg = refused(lambda: f(prompts=["q"], completions=["2"], answer=["2"]))
    assert "'fallbak'" in msg
    f = reward_function("code", target=verifier_server.target, options={"languag": "c"})
    assert "'languag'" in refused(lambda: f(prompts=["q"], completions=["print(1)"], answer=["assert True"]))


def test_verl_compute_score_raises_at_its_first_call(verifier_server):
    kw = {"target": verifier_server.target, "verifier": "math", "options": {"fallbak": "last_number"}}
    assert "'fallbak'" in refused(lambda: compute_score("x", "2", "2", **kw))
    assert "'fallbak'" in refused(lambda: compute_score_batch(["x"], ["2"], ["2"], **kw))
