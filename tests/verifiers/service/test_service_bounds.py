"""Every input is bounded before it is buffered (issue 30): HTTP request head (431), body (413), JSON
nesting (400, no traceback at ERROR). A real uvicorn server on loopback, in process (no sandbox pool:
think_format grades on the host)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys

import httpx
import pytest

from verifiers.fronts.http.api import HttpServer, create_app
from verifiers.fronts.server import AdminToken, Servicer
from verifiers.launch import ROOT
from verifiers.service.bounds import ServiceBounds, machine_memory_bytes
from verifiers.service.cache import VerdictCache
from verifiers.service.core import VerifierService, cut_details
from verifiers.service.registry import Registry
from verifiers.shapes.base import CaseVerdict, Verdict
from verifiers.shapes.outcome import CaseStatus, Outcome
from verifiers.shapes.request import Request

BOUNDS = ServiceBounds()


@pytest.fixture()
def base(tmp_path):
    registry = Registry(str(tmp_path / "r.sqlite"))
    service = VerifierService(registry, None)
    app = create_app(service, Servicer(service, AdminToken("")), max_body_bytes=1 << 20, bounds=BOUNDS)
    srv = HttpServer(app, "127.0.0.1", 0, bounds=BOUNDS).start()
    srv.set_serving(True)
    try:
        yield f"http://127.0.0.1:{srv.port}"
    finally:
        srv.stop()
        service.close()
        registry.close()


def _raw(base: str, head: bytes, body: bytes = b"") -> bytes:
    """Send ``head`` (request line + headers, without the blank line) and ``body``; the status line back."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        try:
            s.sendall(head + b"\r\n" + body)
        except (BrokenPipeError, ConnectionResetError):  # the server answered and closed mid-send
            pass
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


GOOD = b'{"verifier": "think_format", "completion": "<think>a</think>b"}'


def _post(path: str, extra: bytes, body: bytes = GOOD) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    ).encode() + extra


def test_a_plain_request_still_answers(base):
    assert _raw(base, _post("/v1/verify", b""), GOOD).startswith(b"HTTP/1.1 200")


def test_an_oversized_header_gets_431(base):
    big = b"X-Big: " + b"a" * (128 << 10) + b"\r\n"  # 128 KiB in one header (was 200 OK)
    assert _raw(base, _post("/v1/verify", big), GOOD).startswith(b"HTTP/1.1 431")


def _endless_header(base: str, wait_s: float = 10) -> tuple[int, str, bytes]:
    """Send a head that never ends (up to 16 MiB): (bytes sent, what the server did, its first bytes).

    What it did: "answered" (bytes came back), "closed" (EOF or reset without an answer we could read:
    the 431 may be lost to the reset while we were still sending), "silent" (neither, within wait_s)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        s.settimeout(wait_s)
        try:
            while sent < (16 << 20):
                s.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        try:
            status = s.recv(4096)
        except ConnectionResetError:
            return sent, "closed", b""
        except TimeoutError:
            return sent, "silent", b""
    return sent, "answered" if status else "closed", status


def test_an_unfinished_huge_header_is_cut_off_at_the_limit(base):
    # the head never ends: the server answers 431 once the limit is passed, without waiting for the rest
    sent, did, status = _endless_header(base)
    assert sent < (16 << 20), f"the server read {sent} bytes of one head"
    assert did != "silent", "the server neither answered nor closed the connection"
    assert did == "closed" or status.startswith(b"HTTP/1.1 431"), status[:40]


def test_a_server_that_never_answers_fails_that_check():
    """The check above cannot pass against a server that stops reading and never answers (it once could:
    an empty status counted as a pass)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        base = f"http://127.0.0.1:{listener.getsockname()[1]}"
        sent, did, _ = _endless_header(base, wait_s=1)  # accepted by the kernel, never read, never answered
    assert (sent < (16 << 20), did) == (True, "silent")


def test_too_many_headers_get_431(base):
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(5000))  # 5,000 small headers (was 200 OK)
    assert _raw(base, _post("/v1/verify", many), GOOD).startswith(b"HTTP/1.1 431")


def test_just_under_the_header_limits_is_fine(base):
    some = b"".join(b"X-H%d: v\r\n" % i for i in range(BOUNDS.max_headers - 10))
    assert _raw(base, _post("/v1/verify", some), GOOD).startswith(b"HTTP/1.1 200")


def test_a_body_over_the_limit_gets_413(base):
    r = httpx.post(base + "/v1/verify", content=b" " * (2 << 20), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "--max-message-mb" in r.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/verify", "/v1/verify_batch", "/v1/verifiers", "/get_reward", "/run_code"])
def test_deep_json_is_400_without_a_traceback(base, path, caplog):
    deep = b"[" * 1200 + b"]" * 1200  # 2.4 kB (was 500 and a RecursionError at ERROR)
    with caplog.at_level(logging.ERROR):
        r = httpx.post(base + path, content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert f"nested deeper than {BOUNDS.max_json_depth}" in r.json()["error"]["message"]
    assert "--max-json-depth" in r.json()["error"]["message"]
    assert not [x for x in caplog.records if x.levelno >= logging.ERROR]


def test_deep_json_inside_a_string_is_not_nesting(base):
    body = b'{"verifier": "think_format", "completion": "<think>' + b"[{" * 2000 + b'</think>b"}'
    r = httpx.post(base + "/v1/verify", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["outcome"] == "OUTCOME_CORRECT"


# -- memory bounded by bytes ------------------------------------------------------------------------
def _stdio_verdict(i: int) -> Verdict:
    """The shape of a stdio verdict of 1,000 cases (~300 kB: each case's detail a diff)."""
    cases = [CaseVerdict(CaseStatus.WRONG_ANSWER, f"case {k}: expected {i} got " + "x" * 280) for k in range(1000)]
    return Verdict(0.0, Outcome.INCORRECT, "wrong answer on 1000 of 1000 cases", cases=cases)


def test_the_cache_holds_bytes_not_just_entries():
    cache = VerdictCache(max_items=50_000, max_bytes=8 << 20)
    for i in range(200):  # 200 x ~300 kB = ~60 MB offered to an 8 MiB budget
        cache.put(str(i), _stdio_verdict(i))
    assert cache.bytes <= 8 << 20 and 0 < len(cache) < 30
    assert cache.get("199") is not None and cache.get("0") is None  # the oldest went first


def test_one_verdict_too_big_for_the_budget_is_not_kept():
    cache = VerdictCache(max_items=10, max_bytes=1 << 20)
    cache.put("big", _stdio_verdict(0))  # ~300 kB: more than an eighth of 1 MiB
    assert len(cache) == 0 and cache.bytes == 0


def test_details_are_cut_to_the_cap_saying_so():
    v = _stdio_verdict(0)
    v.detail = "d" * 10_000
    cut_details(v, 256)
    assert len(v.detail) < 400 and "--max-detail-chars" in v.detail and "9744 more characters" in v.detail
    assert all(len(c.detail) < 400 and c.detail.endswith("--max-detail-chars]") for c in v.cases)
    short = Verdict(0.0, Outcome.INCORRECT, "short")
    cut_details(short, 256)
    assert short.detail == "short"


def test_the_default_budget_is_a_small_fraction_of_the_machine():
    assert 16 << 20 <= ServiceBounds().cache_bytes() <= max(16 << 20, machine_memory_bytes() // 32)
    assert ServiceBounds(cache_mb=64).cache_bytes() == 64 << 20


def test_the_service_uses_the_budget(tmp_path):
    registry = Registry(str(tmp_path / "r.sqlite"))
    service = VerifierService(registry, None, bounds=ServiceBounds(cache_mb=32, max_detail_chars=300))
    try:
        assert service.cache.max_bytes == 32 << 20
        v = service.verify(Request("think_format", "no think tag at all " * 100))
        assert len(v.detail) <= 300 + 100
    finally:
        service.close()
        registry.close()


@pytest.mark.parametrize(
    "args,named", [(["--cache-mb", "-1"], "--cache-mb '-1'"), (["--max-headers", "2"], "--max-headers '2'")]
)
def test_a_bad_bound_stops_the_server_before_it_starts(args, named):
    r = subprocess.run(
        [sys.executable, "-m", "verifiers.fronts.server", *args, "--port", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert r.returncode == 2 and named in r.stderr, r.stderr
