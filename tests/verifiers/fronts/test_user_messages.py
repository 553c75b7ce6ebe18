"""What a new user trips on (issue 51), through the real fronts in-process (a service with no sandbox pool:
think_format grades on the host; no Docker): messages that say what to send, a missing completion refused,
the CLI's words for its own flags, the verifier digests ListVerifiers reports."""

from __future__ import annotations

import subprocess
import sys
from concurrent import futures

import grpc
import httpx
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.client import VerifierClient
from verifiers.fronts.http.api import HttpServer, create_app
from verifiers.fronts.server import AdminToken, Servicer
from verifiers.launch import ROOT
from verifiers.service.core import VerifierService
from verifiers.service.registry import Registry


@pytest.fixture()
def fronts():
    """(HTTP base URL, gRPC target) of one servicer over a pool-less service."""
    registry = Registry(None)
    service = VerifierService(registry, None)
    servicer = Servicer(service, AdminToken(""))
    http = HttpServer(create_app(service, servicer), "127.0.0.1", 0).start()
    rpc = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_VerifierServiceServicer_to_server(servicer, rpc)
    port = rpc.add_insecure_port("127.0.0.1:0")
    rpc.start()
    try:
        yield f"http://127.0.0.1:{http.port}", f"127.0.0.1:{port}"
    finally:
        rpc.stop(0)
        http.stop()
        service.close()
        registry.close()


def error(r: httpx.Response) -> tuple[int, str, str]:
    e = r.json()["error"]
    return r.status_code, e["status"], e["message"]


def test_run_code_with_a_body_that_is_not_json_says_what_to_send(fronts):
    code, status, message = error(httpx.post(fronts[0] + "/run_code", content=b"print(1)"))
    assert (code, status) == (400, "INVALID_ARGUMENT")
    assert "JSON object with `code` and `language`" in message and not message.startswith("0:")
    code, _, message = error(httpx.post(fronts[0] + "/run_code", content=b"[1, 2]"))
    assert code == 400 and "JSON object with `code` and `language`" in message


@pytest.mark.parametrize("path", ["/v1/verify", "/v1/verify_batch", "/v1/verifiers"])
def test_a_json_array_is_refused_as_not_an_object(fronts, path):
    code, status, message = error(httpx.post(fronts[0] + path, content=b"[1, 2]"))
    assert (code, status) == (400, "INVALID_ARGUMENT")
    assert "must be a JSON object" in message and "got a JSON array" in message and "Failed to parse" not in message


@pytest.mark.parametrize(
    "body",
    [
        {"verifier": "think_format"},  # the fast path
        {"verifier": "think_format", "completion": None},  # null is not a completion
        {"verifier": "think_format", "timeoutS": "1"},  # a number as a string: the servicer's way
    ],
)
def test_a_request_without_completion_is_a_400_naming_the_field(fronts, body):
    code, status, message = error(httpx.post(fronts[0] + "/v1/verify", json=body))
    assert (code, status) == (400, "INVALID_ARGUMENT") and "'completion' is missing" in message


def test_a_batch_item_without_completion_is_named_by_its_index(fronts):
    items = [{"verifier": "think_format", "completion": "<think>a</think>b"}, {"verifier": "think_format"}]
    code, _, message = error(httpx.post(fronts[0] + "/v1/verify_batch", json={"items": items}))
    assert code == 400 and message.startswith("items[1]: field 'completion' is missing")
    code, _, message = error(httpx.post(fronts[0] + "/v1/verify_batch", json={"items": [items[0], 3]}))
    assert code == 400 and "items[1] must be a JSON object" in message


def test_an_empty_completion_stays_a_gradable_no_answer(fronts):
    r = httpx.post(fronts[0] + "/v1/verify", json={"verifier": "think_format", "completion": ""})
    assert r.status_code == 200 and r.json()["outcome"] != "OUTCOME_SANDBOX_ERROR" and r.json()["reward"] == 0.0
    # gRPC (proto3): an absent string is the empty string, graded the same way (docs/serve.md says so)
    with VerifierClient(fronts[1]) as c:
        assert c.verify("think_format", "").outcome == r.json()["outcome"].removeprefix("OUTCOME_")


def test_a_misspelled_enforced_signal_gets_a_did_you_mean_and_no_advice_to_edit_the_server(fronts):
    body = {"verifier": "think_format", "completion": "x", "options": {"enforce_signals": "answer.hedgee"}}
    code, status, message = error(httpx.post(fronts[0] + "/v1/verify", json=body))
    assert (code, status) == (400, "INVALID_ARGUMENT")
    assert "did you mean 'answer.hedge'" in message and "signals.py" not in message and "SIGNALS" not in message


def cli(target: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "--target", target, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_the_cli_says_replace_as_its_flag(fronts):
    assert cli(fronts[1], "register", "h51_c", "--composite", "think_format=1").returncode == 0
    again = cli(fronts[1], "register", "h51_c", "--composite", "think_format=1")
    assert again.returncode == 1 and "ALREADY_EXISTS" in again.stderr
    assert "--replace" in again.stderr and "set replace" not in again.stderr
    assert cli(fronts[1], "register", "h51_c", "--composite", "think_format=1", "--replace").returncode == 0


def test_list_reports_digests_that_follow_the_definition_not_the_counter(fronts):
    with VerifierClient(fronts[1]) as c:
        one = c.register(
            pb.RegisterVerifierRequest(
                name="h51_d",
                composite=pb.CompositeVerifier(components=[pb.Component(verifier="think_format", weight=1.0)]),
            )
        )
        same = c.register(
            pb.RegisterVerifierRequest(
                name="h51_d",
                replace=True,
                composite=pb.CompositeVerifier(components=[pb.Component(verifier="think_format", weight=1.0)]),
            )
        )
        other = c.register(
            pb.RegisterVerifierRequest(
                name="h51_d",
                replace=True,
                composite=pb.CompositeVerifier(components=[pb.Component(verifier="think_format", weight=0.5)]),
            )
        )
        listed = {v.name: v for v in c.list_verifiers()}
    assert one.digest and one.grader_version and same.version == one.version + 1
    assert same.digest == one.digest and other.digest != one.digest  # the definition decides, not the counter
    assert listed["h51_d"].digest == other.digest and listed["think_format"].digest
    assert len({v.grader_version for v in listed.values()}) == 1
