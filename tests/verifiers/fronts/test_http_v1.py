"""/v1/verify and /v1/verify_batch served directly (verifiers/fronts/http/v1.py) answer exactly what the gRPC
servicer answers, over the real HTTP server on loopback.

A real service grades (a Docker Python pool and the toolchain pool; and one with no pool, whose sandboxed
verifiers answer SANDBOX_ERROR). The app's service is a ``Recorder`` around it and its servicer another
``Recorder`` around the same service, so each test also knows which way a body went. For every verdict
the direct path sent, the servicer's way is run on the *same* verdicts (``Replay``: two gradings differ in
elapsed_s and cache hits) — ``Servicer.VerifyBatch(json_format.Parse(body))`` then
``json_format.MessageToDict(always_print_fields_with_no_presence=True)`` — and the two documents must be
equal after json parse, dumped with sorted keys (so 1 and 1.0 differ); the servicer must have asked with
the same Requests the direct path built. Errors: a plain body (direct) and the same body in a form only
json_format takes (``"timeoutS": "0"``: the servicer's way) get the same status and the same body.
"""

from __future__ import annotations

import copy
import json

import httpx
import pytest
from google.protobuf import json_format

from proto.verifier.v1 import verifier_pb2 as pb
from tests.langs_helpers import SUM_CASES
from verifiers.fronts.http.api import HttpContext, HttpServer, create_app
from verifiers.fronts.server import AdminToken, Servicer
from verifiers.shapes.limits import ServiceLimits

FENCE = "```"
ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
STDIO = json.dumps(
    [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}, {"input": "0 0\n", "output": "0\n"}]
)
ECHO = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def code(src: str, lang: str = "python") -> str:
    return f"Here:\n{FENCE}{lang}\n{src}{FENCE}\n"


# every outcome, steps, cases, components, unicode, options, proto field names, a cache hit
ITEMS = [
    {"verifier": "think_format", "completion": "<think>2+2=4</think>4", "id": "tf-ok"},
    {"verifier": "think_format", "completion": "4 <think>late</think>", "prompt": "p"},
    {"verifier": "math", "completion": "so \\boxed{\\frac{1}{2}} ✓ é 日本", "reference": "0.5", "id": "m1"},
    {"verifier": "math", "completion": "so \\boxed{3}", "reference": "0.5", "timeoutS": 30},
    {"verifier": "math", "completion": "no answer at all", "reference": "1", "timeout_s": 20.5},
    {"verifier": "math", "completion": "\\boxed{1}", "reference": "x^2 + 1 ]", "id": "bad-ref"},
    {"verifier": "r1", "completion": "<think>t</think>\\boxed{2}", "reference": "2", "id": "composite"},
    {"verifier": "arith_steps", "completion": "<think>1+8+8, 9+9, 18</think><answer>18</answer>",
     "reference": "17", "prompt": "3-2+8+8=?"},
    {"verifier": "code", "completion": code("def add(a, b):\n    return a + b\n"), "reference": ADD_TESTS,
     "options": {"entry_point": "add"}},
    {"verifier": "code", "completion": code("def add(a, b):\n    raise ValueError('boom')\n"),
     "reference": ADD_TESTS, "options": {"entry_point": "add"}},
    {"verifier": "code", "completion": code(ECHO), "reference": STDIO, "options": {"mode": "stdio"}},
    {"verifier": "code", "completion": code("print(3)\n"), "reference": STDIO, "options": {"mode": "stdio"}},
    {"verifier": "code", "completion": code("while True: pass\n"), "reference": STDIO,
     "options": {"mode": "stdio", "case_timeout_s": "1"}},
    {"verifier": "code", "completion": code("int main(){ return undefined_name; }\n", "c"), "reference": SUM_CASES,
     "options": {"mode": "stdio", "language": "c", "case_timeout_s": "2"}},
    {"verifier": "tag_count", "completion": "<think>\na\n</think>\n<answer>\nb\n</answer>", "id": "tc"},
]  # fmt: skip
CACHE_HIT = ITEMS[2]  # graded by an earlier call, so the batch test sees cached=true


class Recorder:
    """The real service, keeping what each verify/verify_batch call got and gave (copies: a cache hit
    updates the cached verdict's elapsed_s in place)."""

    def __init__(self, service):
        self.service = service
        self.asked = 0  # calls, including those that raised
        self.calls: list[tuple[list, list]] = []

    def __getattr__(self, name):
        return getattr(self.service, name)

    def verify(self, req, deadline=None, *, caller=None):
        self.asked += 1
        v = self.service.verify(req, deadline, caller=caller)
        self.calls.append(([req], [copy.deepcopy(v)]))
        return v

    def verify_batch(self, reqs, deadline=None, *, caller=None):
        self.asked += 1
        vs = self.service.verify_batch(reqs, deadline, caller=caller)
        self.calls.append((reqs, copy.deepcopy(vs)))
        return vs


class Replay:
    """Gives the servicer the recorded verdicts, checking that it asks with the same Requests."""

    def __init__(self, reqs, verdicts):
        self.reqs, self.verdicts = reqs, verdicts

    def verify(self, req, deadline=None, *, caller=None):
        assert [req] == self.reqs
        return self.verdicts[0]

    def verify_batch(self, reqs, deadline=None, *, caller=None):
        assert reqs == self.reqs
        return self.verdicts


def canonical(doc) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


def servicer_way(method: str, body: dict, reqs, verdicts) -> dict:
    cls = pb.VerifyRequest if method == "Verify" else pb.VerifyBatchRequest
    reply = getattr(Servicer(Replay(reqs, verdicts)), method)(
        json_format.Parse(json.dumps(body), cls()), HttpContext({})
    )
    return json_format.MessageToDict(reply, always_print_fields_with_no_presence=True)


class Api:
    """The HTTP server over Recorder(service); ``fast``/``slow`` record the direct and the servicer's way."""

    def __init__(self, service):
        self.fast, self.slow = Recorder(service), Recorder(service)
        self.server = HttpServer(create_app(self.fast, Servicer(self.slow, AdminToken(""))), "127.0.0.1", 0).start()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.server.port}", timeout=120)

    def post(self, path: str, body) -> tuple[httpx.Response, str]:
        """(response, which way it went: 'fast' or 'slow')."""
        before = self.fast.asked, self.slow.asked
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        r = self.http.post(path, content=raw, headers={"content-type": "application/json"})
        way = "fast" if self.fast.asked > before[0] else "slow" if self.slow.asked > before[1] else "-"
        return r, way

    def close(self):
        self.http.close()
        self.server.stop()


def _no_pool_service(tmp_path_factory):
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry

    reg = Registry(str(tmp_path_factory.mktemp("reg") / "r.sqlite"))
    limits = ServiceLimits(max_batch=20, max_completion_chars=1000, max_timeout_s=60)
    svc = VerifierService(reg, None, limits=limits)
    return svc, lambda: (svc.close(), reg.close())


@pytest.fixture(scope="module", params=["no-pool", pytest.param("docker", marks=pytest.mark.docker)])
def api(request, tmp_path_factory):
    if request.param == "docker":
        from tests.langs_helpers import make_service

        service, close = make_service(tmp_path_factory, langs_pool_size=1)
    else:
        service, close = _no_pool_service(tmp_path_factory)
    a = Api(service)
    try:
        yield a
    finally:
        a.close()
        close()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """No pool, small limits (max_batch 20, completions of 1000 characters, timeout_s up to 60)."""
    service, close = _no_pool_service(tmp_path_factory)
    a = Api(service)
    try:
        yield a
    finally:
        a.close()
        close()


def test_verify_each_item_equals_the_servicers(api):
    for item in ITEMS:
        r, way = api.post("/v1/verify", item)
        assert (r.status_code, way) == (200, "fast"), r.text
        reqs, verdicts = api.fast.calls[-1]
        assert canonical(r.json()) == canonical(servicer_way("Verify", item, reqs, verdicts)), item


def test_verify_batch_equals_the_servicers_verdict_by_verdict(api):
    api.post("/v1/verify", CACHE_HIT)
    body = {"items": [*ITEMS, CACHE_HIT, {**ITEMS[0], "id": "again"}]}
    r, way = api.post("/v1/verify_batch", body)
    assert (r.status_code, way) == (200, "fast"), r.text
    reqs, verdicts = api.fast.calls[-1]
    got, want = r.json(), servicer_way("VerifyBatch", body, reqs, verdicts)
    assert list(got) == ["results"] and len(got["results"]) == len(want["results"]) == len(body["items"])
    for i, (g, w) in enumerate(zip(got["results"], want["results"], strict=True)):
        assert canonical(g) == canonical(w), (i, body["items"][i])
    outcomes = {x["outcome"] for x in got["results"]}
    if api.fast.service.pool is None:
        assert pb.Outcome.Name(pb.OUTCOME_SANDBOX_ERROR) in outcomes
    else:  # every outcome the real sandbox gives here, and each optional part of a verdict
        assert outcomes >= {
            pb.Outcome.Name(o)
            for o in (
                pb.OUTCOME_CORRECT,
                pb.OUTCOME_INCORRECT,
                pb.OUTCOME_NO_ANSWER,
                pb.OUTCOME_TIMEOUT,
                pb.OUTCOME_RUNTIME_ERROR,
                pb.OUTCOME_COMPILE_ERROR,
                pb.OUTCOME_BAD_REFERENCE,
            )
        }, outcomes
        assert got["results"][len(ITEMS)]["cached"] is True
        assert any(x["cases"] for x in got["results"]) and any(x["components"] for x in got["results"])
    assert any(x["steps"] for x in got["results"])


def test_empty_batch_and_empty_body(api):
    for body in ({"items": []}, {}, b""):
        r, way = api.post("/v1/verify_batch", body)
        assert (r.status_code, r.json(), way) == (200, {"results": []}, "fast")


def slow_form(item: dict) -> dict:
    """The same request in a form only json_format takes (a number as a string): the servicer's way."""
    return {**item, "timeoutS": str(item.get("timeoutS", 0))}


ERRORS = [  # (route, plain body, expected status)
    ("/v1/verify", {"verifier": "no_such_verifier", "completion": "x"}, 404),
    ("/v1/verify", {"verifier": "", "completion": "x"}, 400),
    ("/v1/verify", {"verifier": "Bad Name!", "completion": "x"}, 400),
    ("/v1/verify", {"verifier": "think_format", "completion": "x", "timeoutS": -1}, 400),
    ("/v1/verify", {"verifier": "think_format", "completion": "x", "timeoutS": 61}, 400),
    ("/v1/verify", {"verifier": "think_format", "completion": "x" * 1001}, 400),
    ("/v1/verify_batch", {"items": [ITEMS[0], {"verifier": "no_such_verifier", "completion": "x"}]}, 404),
    ("/v1/verify_batch", {"items": [ITEMS[0], {"verifier": "code", "completion": "x", "options": {"mode": "z"}}]}, 400),
    ("/v1/verify_batch", {"items": [ITEMS[0], {"verifier": "code", "completion": "x"}]}, 400),
    ("/v1/verify_batch", {"items": [ITEMS[0]] * 21}, 400),
]


@pytest.mark.parametrize(("path", "body", "status"), ERRORS, ids=lambda x: x if isinstance(x, str) else None)
def test_errors_equal_the_servicers(small, path, body, status):
    fast, way = small.post(path, body)
    slow_body = slow_form(body) if "items" not in body else {"items": [slow_form(body["items"][0]), *body["items"][1:]]}
    slow, slow_way = small.post(path, slow_body)
    assert (way, slow_way) == ("fast", "slow")
    assert (fast.status_code, fast.json()) == (slow.status_code, slow.json())
    assert fast.status_code == status and fast.json()["error"]["message"], fast.text


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"verifier": "think_format", "completion": "a\\ud800"}', "Unpaired surrogate"),
        (b'{"verifier": "think_format", "verifier": "x", "completion": "a"}', "duplicate key"),
        (b'{"verifier": "think_format", "nope": 1}', "nope"),
        (b'{"verifier": "think_format", "options": {"k": 1}}', "options"),
        (b'{"verifier": "think_format"', "VerifyRequest"),
        (b"[1]", "VerifyRequest"),
    ],
    ids=[
        "surrogate",
        "duplicate-key",
        "unknown-field",
        "option-not-string",
        "bad-json",
        "not-an-object",
    ],
)
def test_forms_the_direct_path_leaves_get_json_formats_error(small, raw, needle):
    r, way = small.post("/v1/verify", raw)
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", r.text
    assert needle in r.json()["error"]["message"] and way == "-"


def test_other_valid_forms_go_the_servicers_way(small):
    for body in (
        {"verifier": "think_format", "completion": "<think>a</think>b", "timeoutS": "1.5"},
        {"verifier": "think_format", "completion": "<think>a</think>b", "prompt": None},
        {"verifier": "think_format", "completion": "<think>a</think>b", "timeoutS": 1, "timeout_s": 2},
    ):
        r, way = small.post("/v1/verify", body)
        assert (r.status_code, r.json()["outcome"], way) == (200, pb.Outcome.Name(pb.OUTCOME_CORRECT), "slow"), r.text
