"""Fuzzed requests over gRPC (hypothesis) against a real server on loopback.

Every field of ``VerifyRequest`` and ``VerifyBatchRequest`` gets hostile values: huge and empty strings,
NUL bytes and odd Unicode, unknown verifiers and invalid names, invalid options, negative / NaN / infinite
/ huge timeouts, batches over the server's limit, deeply nested LaTeX and braces. Each call must end in a
graded result (a known outcome, reward in [0, 1], in time) or a clear client-error status
(INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED) with a message — never INTERNAL/UNKNOWN (a crash in a
handler), never UNAVAILABLE (the server died), never past the deadline (a hang). Afterwards the server is
alive with its pool at full size, and stopping it leaves no container behind.

``make test`` runs a bounded number of examples, derandomized (the same ones every run); RLVR_FUZZ_EXAMPLES
raises it and searches afresh (``bench/tools/fuzz.py``).
"""

from __future__ import annotations

import math
import os
import socket
import time

import grpc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.kinds.table import sandbox_count
from verifiers.service.fair import BURST_SANDBOXES

EXAMPLES = int(os.environ.get("RLVR_FUZZ_EXAMPLES", "60"))
MAX_BATCH, MAX_CHARS, MAX_TIMEOUT_S, POOL = 16, 50_000, 30.0, 2
SLACK_S = 10.0  # what a call may take beyond its grading budget (queueing behind other sandbox jobs)
CLIENT_ERRORS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED}
OUTCOMES = {v for k, v in pb.Outcome.items() if k != "OUTCOME_UNSPECIFIED"}
# make test: the same examples every run (derandomized; a failure prints its example); bench/tools/fuzz.py sets
# RLVR_FUZZ_EXAMPLES and searches afresh each time
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize="RLVR_FUZZ_EXAMPLES" not in os.environ,
)

# -- strategies ------------------------------------------------------------------------------------------
odd_chars = st.characters(codec="utf-8", exclude_categories=("Cs",))  # NUL, controls, RTL marks, emoji…
short_text = st.text(odd_chars, max_size=40)


def nested(depth: int, open_: str, close: str, core: str = "1") -> str:
    return open_ * depth + core + close * depth


hostile_text = st.one_of(
    short_text,
    st.just(""),
    st.just("\x00" * 100),
    st.builds(lambda n: "x" * n, st.sampled_from([MAX_CHARS, MAX_CHARS + 1, 5 * MAX_CHARS])),
    st.builds(lambda d: nested(d, "\\frac{1}{", "}"), st.integers(50, 3000)),
    st.builds(lambda d: "\\boxed{" + nested(d, "{", "}") + "}", st.integers(100, 20_000)),
    st.builds(lambda d: "\\boxed{" + nested(d, "\\sqrt{", "}", "2") + "}", st.integers(50, 2000)),
    st.builds(lambda d: "\\boxed{" + "9^{" * d + "9" + "}" * d + "}", st.integers(2, 6)),
    st.builds(lambda d: "\\boxed{" + "(" * d + "1" + ")" * d + "}", st.integers(100, 10_000)),
    st.builds(lambda d: "\\boxed{" + "{" * d, st.integers(1, 50_000)),  # never closed
    st.builds(lambda s: f"<think>{s}</think>\\boxed{{{s}}}", short_text),
    st.sampled_from(
        [
            "\\boxed{}",
            "<answer></answer>",
            "<think></think>",
            "```python\n```",
            "\\boxed{\x00}",
            "```python\nprint('x' * 10**7)\n```",
            "```python\nwhile True: pass\n```",
            "```python\nimport os; os.kill(os.getppid(), 9)\n```",
        ]
    ),
)
verifier_name = st.one_of(
    st.sampled_from(["math", "code", "think_format", "tag_count", "r1"]),
    st.sampled_from(["", "nope", "MATH", "math ", "a" * 65, "../math", "math\x00", "no-such.verifier"]),
    short_text,
)
option_key = st.one_of(
    st.sampled_from(
        [
            "fallback",
            "rel_tol",
            "mode",
            "language",
            "judge",
            "reward",
            "partial",
            "entry_point",
            "abs_tol",
            "case_timeout_s",
            "compile_timeout_s",
        ]
    ),
    short_text,
)
option_value = st.one_of(
    st.sampled_from(
        [
            "",
            "none",
            "full",
            "last_number",
            "nan",
            "inf",
            "-1",
            "1e309",
            "0",
            "python",
            "cobol",
            "stdio",
            "assert",
            "all",
            "fraction",
            "exact",
            "\x00",
            "true",
        ]
    ),
    short_text,
)
timeouts = st.sampled_from(
    [0.0, -1.0, -0.0, math.nan, math.inf, -math.inf, 1e-9, 0.5, 2.0, MAX_TIMEOUT_S, MAX_TIMEOUT_S + 1, 1e308, 5e-324]
)


GOOD_OPTIONS = {
    "math": st.fixed_dictionaries(
        {},
        optional={
            "fallback": st.sampled_from(["none", "last_number", "full"]),
            "rel_tol": st.sampled_from(["1e-6", "0.01", "0"]),
        },
    ),
    "code": st.fixed_dictionaries(
        {}, optional={"mode": st.sampled_from(["assert", "stdio"]), "reward": st.sampled_from(["all", "fraction"])}
    ),
}


@st.composite
def request(draw) -> pb.VerifyRequest:
    """Three times in four a plausible request (a real verifier, a valid timeout and options) carrying
    hostile text, so the graders see it; otherwise every field hostile, so validation does."""
    if draw(st.integers(0, 3)):
        name = draw(st.sampled_from(["math", "math", "code", "think_format", "tag_count", "r1"]))
        options = draw(GOOD_OPTIONS.get(name, st.just({})))
        timeout = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    else:
        name, timeout = draw(verifier_name), draw(timeouts)
        options = draw(st.dictionaries(option_key, option_value, max_size=4))
    return pb.VerifyRequest(
        verifier=name,
        completion=draw(hostile_text),
        reference=draw(hostile_text),
        prompt=draw(st.one_of(st.just(""), hostile_text)),
        options=options,
        timeout_s=timeout,
        id=draw(st.one_of(st.just(""), short_text)),
    )


def budget(r: pb.VerifyRequest) -> float:
    """The longest a well-behaved server may take to answer ``r`` (a bad timeout is rejected at once)."""
    t = r.timeout_s if math.isfinite(r.timeout_s) and 0 < r.timeout_s <= MAX_TIMEOUT_S else 60.0
    return max(t, 0.5) + SLACK_S


# -- the server ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server():
    from verifiers.launch import LocalServer

    args = ["--max-batch", str(MAX_BATCH), "--max-completion-chars", str(MAX_CHARS),
            "--max-timeout-s", str(MAX_TIMEOUT_S)]  # fmt: skip
    with LocalServer(pool_size=POOL, extra_args=args) as srv:
        yield srv
    from sandbox.backends.docker import list_containers

    owner = f"{socket.gethostname()}:{srv.proc.pid}"
    assert list_containers(owner) == [], "the server left sandbox containers behind"


@pytest.fixture(scope="module")
def stub(server):
    opts = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    with grpc.insecure_channel(server.target, options=opts) as ch:
        yield pb_grpc.VerifierServiceStub(ch)


# verifiers whose request mistakes VerifyBatch finds up front (``check``); for composites (r1) a mistake
# found while grading a batch item is still reported as that item's SANDBOX_ERROR
CHECKED_UP_FRONT = {"math", "code", "think_format", "tag_count"}


def check_verdict(r: pb.VerifyRequest, got: pb.VerifyResponse) -> None:
    event(f"graded {pb.Outcome.Name(got.outcome)}")
    if got.outcome == pb.OUTCOME_SANDBOX_ERROR:
        event(f"sandbox error: {r.verifier}: {got.detail[:100]}")
        mistake = got.detail.startswith(("INVALID_ARGUMENT", "NOT_FOUND"))  # not "queued past its deadline"
        assert not (mistake and r.verifier in CHECKED_UP_FRONT), f"a request's mistake graded SANDBOX_ERROR: {got}"
    assert got.outcome in OUTCOMES, got
    assert 0.0 <= got.reward <= 1.0, got
    assert got.id == r.id


def check_error(e: grpc.RpcError, what: str) -> None:
    event(f"status {e.code().name}")
    assert e.code() in CLIENT_ERRORS, f"{what}: {e.code().name}: {e.details()}"
    assert e.details(), f"{what}: {e.code().name} without a message"


def alive(server) -> None:
    assert server.proc.poll() is None, f"the server exited ({server.proc.returncode})"


# -- the tests -------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.docker
@SETTINGS
@given(r=request())
def test_fuzzed_verify(server, stub, r):
    limit = budget(r)
    try:
        got = stub.Verify(r, timeout=limit)
    except grpc.RpcError as e:
        assert e.code() != grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer within {limit:g} s: {r.verifier!r}"
        check_error(e, f"Verify({r.verifier!r}, timeout_s={r.timeout_s})")
    else:
        check_verdict(r, got)  # answered at all: within the call's gRPC deadline (limit), no clock needed
    alive(server)


@pytest.mark.docker
@SETTINGS
@given(items=st.lists(request(), min_size=0, max_size=MAX_BATCH + 4))
def test_fuzzed_batch(server, stub, items):
    limit = max((budget(r) for r in items), default=SLACK_S) + 3 * SLACK_S  # items queue behind each other
    try:
        got = stub.VerifyBatch(pb.VerifyBatchRequest(items=items), timeout=limit)
    except grpc.RpcError as e:
        assert e.code() != grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer within {limit:g} s"
        check_error(e, f"VerifyBatch of {len(items)}")
        if len(items) > MAX_BATCH:
            assert "limit" in e.details()
    else:
        assert len(items) <= MAX_BATCH, "a batch over the limit was accepted"
        assert len(got.results) == len(items)
        for r, v in zip(items, got.results, strict=True):
            check_verdict(r, v)
    alive(server)


@pytest.mark.docker
def test_after_fuzzing_the_pool_is_whole_and_grades(server, stub):
    from sandbox.backends.docker import list_containers

    got = stub.Verify(
        pb.VerifyRequest(verifier="math", completion="\\boxed{\\frac{1}{2}}", reference="0.5"), timeout=60
    )
    assert got.outcome == pb.OUTCOME_CORRECT, got.detail
    owner = f"{socket.gethostname()}:{server.proc.pid}"
    # the pool, the warm sandbox it keeps for callers holding none, the lanes' (math's: started by the request above)
    whole = sandbox_count(POOL, BURST_SANDBOXES, started=("math",))
    deadline = time.monotonic() + 30
    while len(list_containers(owner)) != whole and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(list_containers(owner)) == whole, "sandbox containers leaked or lost"
