"""The HTTP/JSON API of a real server process on loopback (httpx): /v1 routes against gRPC's answers,
the error table (same status and message as gRPC), registration with the admin token, malformed bodies,
OpenAPI, /healthz, and /metrics parsed with prometheus-client's own parser after gRPC and HTTP traffic."""

from __future__ import annotations

import json

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.http_helpers import http_service
from verifiers.client import VerifierClient, VerifierError
from verifiers.kinds.code.languages import LANGUAGES
from verifiers.kinds.table import sandbox_count
from verifiers.service.fair import BURST_SANDBOXES

pytestmark = pytest.mark.docker

TOKEN = "http-admin-token-9c1d"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with http_service(tmp_path_factory.mktemp("http"), token=TOKEN, extra_args=("--max-message-mb", "1")) as s:
        yield s


@pytest.fixture(scope="module")
def http(service):
    return service[1]


@pytest.fixture(scope="module")
def grpc_client(service):
    with VerifierClient(service[0].target, retries=0, token=TOKEN) as c:
        yield c


def still_serving(http) -> None:
    r = http.post("/v1/verify", json={"verifier": "think_format", "completion": "<think>a</think>b"})
    assert r.status_code == 200 and r.json()["reward"] == 1.0


def metrics(http) -> dict[tuple[str, tuple], float]:
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(r.text)
        for s in fam.samples
    }


# -- grading ----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "item",
    [
        {"verifier": "think_format", "completion": "<think>2+2=4</think>4"},
        {"verifier": "think_format", "completion": "4 <think>late</think>"},
        {"verifier": "math", "completion": "so \\boxed{\\frac{1}{2}}", "reference": "0.5"},
        {"verifier": "math", "completion": "so \\boxed{3}", "reference": "0.5", "id": "m2"},
        {"verifier": "math", "completion": "no answer at all", "reference": "1"},
    ],
    ids=["format-ok", "format-bad", "math-ok", "math-wrong", "math-none"],
)
def test_verify_matches_grpc(http, grpc_client, item):
    r = http.post("/v1/verify", json=item)
    assert r.status_code == 200, r.text
    got = r.json()
    want = grpc_client.verify(item["verifier"], item["completion"], item.get("reference", ""), id=item.get("id", ""))
    assert (got["reward"], got["outcome"], got["detail"], got["id"]) == (
        want.reward,
        f"OUTCOME_{want.outcome}",
        want.detail,
        want.id,
    )
    assert {"elapsedS", "components", "cached"} <= got.keys()  # canonical JSON names, defaults printed


def test_verify_batch_keeps_order_and_accepts_proto_field_names(http):
    items = [
        {"verifier": "math", "completion": f"\\boxed{{{i}}}", "reference": "3", "id": f"q{i}", "timeout_s": 5}
        for i in range(6)
    ]
    r = http.post("/v1/verify_batch", json={"items": items})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["id"] for x in results] == [f"q{i}" for i in range(6)]
    assert [x["reward"] for x in results] == [1.0 if i == 3 else 0.0 for i in range(6)]


# -- errors: the gRPC status and message, as HTTP ---------------------------------------------------------
@pytest.mark.parametrize(
    "item,grpc_code,http_code",
    [
        ({"verifier": "no_such_verifier", "completion": "x"}, grpc.StatusCode.NOT_FOUND, 404),
        ({"verifier": "", "completion": "x"}, grpc.StatusCode.INVALID_ARGUMENT, 400),
        ({"verifier": "think_format", "completion": "x", "timeoutS": -1}, grpc.StatusCode.INVALID_ARGUMENT, 400),
    ],
    ids=["unknown-verifier", "empty-verifier", "negative-timeout"],
)
def test_errors_have_grpc_status_and_message(http, grpc_client, item, grpc_code, http_code):
    r = http.post("/v1/verify", json=item)
    with pytest.raises(VerifierError) as e:
        grpc_client.verify(item["verifier"], item["completion"], timeout_s=item.get("timeoutS", 0))
    assert e.value.code == grpc_code
    assert r.status_code == http_code
    assert r.json()["error"] == {"code": http_code, "status": grpc_code.name, "message": e.value.message}
    still_serving(http)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"verifier": "think_format", "completion": 3.5, "reference": [1]}',
        b'{"verifier": "think_format", "no_such_field": 1}',
        b"[1, 2]",
        b"\xff\xfe",
    ],
    ids=["broken-json", "wrong-types", "unknown-field", "not-an-object", "not-utf8"],
)
def test_malformed_body_is_400_and_the_service_keeps_serving(http, body):
    r = http.post("/v1/verify", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["status"] == "INVALID_ARGUMENT" and "verifier.v1.VerifyRequest" in err["message"]
    still_serving(http)


def test_body_over_the_limit_is_413(http):
    big = {"verifier": "think_format", "completion": "x" * (2 << 20)}  # the server runs with --max-message-mb 1
    r = http.post("/v1/verify", json=big)
    assert r.status_code == 413 and r.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    still_serving(http)


# -- registration -----------------------------------------------------------------------------------------
COMPOSITE = {
    "name": "r1_http",
    "description": "format + math",
    "composite": {"components": [{"verifier": "think_format", "weight": 0.5}, {"verifier": "math", "weight": 0.5}]},
}


def test_registration_needs_the_token_and_round_trips(http, grpc_client):
    r = http.post("/v1/verifiers", json=COMPOSITE)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "admin token" in r.json()["error"]["message"]
    r = http.post("/v1/verifiers", json=COMPOSITE, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"]["message"] == "the admin token is wrong"

    r = http.post("/v1/verifiers", json=COMPOSITE, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "composite" and r.json()["version"] == 1
    assert http.post("/v1/verifiers", json=COMPOSITE, headers=AUTH).status_code == 409  # ALREADY_EXISTS
    # visible to gRPC and HTTP alike, and gradable by name
    assert grpc_client.get_verifier("r1_http").kind == "composite"
    names = [v["name"] for v in http.get("/v1/verifiers").json()["verifiers"]]
    assert "r1_http" in names and "math" in names
    got = http.get("/v1/verifiers/r1_http", headers=AUTH).json()  # the definition: the admin's (issue 30)
    assert [c["verifier"] for c in got["composite"]["components"]] == ["think_format", "math"]
    assert "composite" not in http.get("/v1/verifiers/r1_http").json()  # name, kind, description only
    r = http.post(
        "/v1/verify", json={"verifier": "r1_http", "completion": "<think>t</think>\\boxed{2}", "reference": "2"}
    )
    assert r.json()["reward"] == 1.0 and r.json()["components"] == {"think_format": 1.0, "math": 1.0}

    # a composite that uses it: removing r1_http is then FAILED_PRECONDITION
    outer = {"name": "outer_http", "composite": {"components": [{"verifier": "r1_http", "weight": 1}]}}
    assert http.post("/v1/verifiers", json=outer, headers=AUTH).status_code == 200
    r = http.delete("/v1/verifiers/r1_http", headers=AUTH)
    assert r.status_code == 412 and r.json()["error"]["status"] == "FAILED_PRECONDITION"
    r = http.delete("/v1/verifiers/outer_http")
    assert (
        r.status_code == 401 and "admin token for unregistering a verifier (outer_http)" in r.json()["error"]["message"]
    )
    assert http.delete("/v1/verifiers/outer_http", headers=AUTH).status_code == 200
    assert http.delete("/v1/verifiers/r1_http", headers=AUTH).json() == {}
    assert http.get("/v1/verifiers/r1_http").status_code == 404
    assert http.delete("/v1/verifiers/math", headers=AUTH).status_code == 403  # built-in: PERMISSION_DENIED


def test_the_code_verifiers_description_lists_the_languages_it_serves(http):
    """Derived from the language table (issue 42: it listed 7 of 9); ListVerifiers over HTTP shows it."""
    info = {v["name"]: v for v in http.get("/v1/verifiers").json()["verifiers"]}["code"]
    listed = info["description"].split("options language: ", 1)[1].split(")", 1)[0].split(", ")
    assert listed == list(LANGUAGES) and isinstance(info["version"], int)


def test_registration_with_no_spec_is_400(http):
    r = http.post("/v1/verifiers", json={"name": "empty_spec"}, headers=AUTH)
    assert r.status_code == 400 and "no spec given" in r.json()["error"]["message"]


# -- operations -------------------------------------------------------------------------------------------
def test_openapi_and_health(http):
    doc = http.get("/openapi.json").json()
    for path in (
        "/v1/verify",
        "/v1/verify_batch",
        "/v1/verifiers",
        "/v1/verifiers/{name}",
        "/get_reward",
        "/run_code",
        "/healthz",
        "/metrics",
    ):
        assert path in doc["paths"], path
    body = doc["paths"]["/v1/verify"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"verifier", "completion", "reference", "options", "timeoutS"} <= body["properties"].keys()
    assert "query" in json.dumps(doc["paths"]["/get_reward"]) or "RewardRequest" in json.dumps(doc)
    assert http.get("/docs").status_code == 200
    assert http.get("/healthz").json() == {"status": "SERVING"}


def test_metrics_count_grpc_and_http_traffic(http, grpc_client):
    before = metrics(http)
    key = ("rlvr_verify_requests_total", (("outcome", "CORRECT"), ("verifier", "think_format")))
    bad = ("rlvr_verify_requests_total", (("outcome", "INCORRECT"), ("verifier", "think_format")))
    for i in range(3):  # gRPC
        grpc_client.verify("think_format", f"<think>{i}</think>ok")
    grpc_client.verify("think_format", "no think")
    items = [{"verifier": "think_format", "completion": f"<think>h{i}</think>ok"} for i in range(5)]
    assert http.post("/v1/verify_batch", json={"items": items}).status_code == 200  # HTTP
    http.post("/v1/verify", json={"verifier": "no_such_verifier", "completion": "x"})
    math = {"verifier": "math", "completion": "\\boxed{(y+1)^2}", "reference": "y^2 + 2y + 1"}  # sympy: sandboxed
    http.post("/v1/verify", json=math)
    http.post("/v1/verify", json=math)  # the same pair again: a cache hit
    ran = http.post("/run_code", json={"code": "print(6 * 7)", "language": "python", "run_timeout": 10})
    assert ran.status_code == 200 and ran.json()["run_result"]["stdout"] == "42\n", ran.text  # the pool's own
    after = metrics(http)

    def delta(k):
        return after.get(k, 0.0) - before.get(k, 0.0)

    assert delta(key) == 8 and delta(bad) == 1
    assert delta(("rlvr_verify_errors_total", (("status", "NOT_FOUND"),))) == 1
    assert delta(("rlvr_cache_hits_total", ())) >= 1
    assert delta(("rlvr_verify_seconds_count", (("verifier", "think_format"),))) == 9
    assert delta(("rlvr_verify_batch_items_count", ())) == 1 and delta(("rlvr_verify_batch_items_sum", ())) == 5
    assert after[("rlvr_sandbox_pool_size", ())] == 2 and after[("rlvr_sandbox_pool_live", ())] == sandbox_count(
        2,
        BURST_SANDBOXES,
        started=("math", ""),  # started by the first math request and by /run_code
    )
    assert after[("rlvr_sandbox_pool_busy", ())] == 0
    assert ("rlvr_sandbox_restarts_total", ()) in after
    assert delta(("rlvr_sandbox_jobs_total", (("result", "ok"),))) >= 1  # the math item ran in the sandbox
    assert delta(("rlvr_verify_requests_total", (("outcome", "CORRECT"), ("verifier", "math")))) == 2
