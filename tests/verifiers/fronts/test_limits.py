"""Every limit is set where the service starts, validated there, documented, and holds.

The flags come from one model (verifiers/shapes/limits.py): ``--help`` shows each with its default, a bad
value stops the server before it starts a sandbox (exit 2, the flag named), ``make serve`` passes its
variables and ARGS to them, docs/serve.md's Limits section lists them. Then one real server started with small
limits shows each one holding over gRPC, with the right status and a message naming the flag, and the
server still serving afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import grpc
import pytest

from tests.parts import require
from verifiers.client import VerifierClient, VerifierError, VerifyItem
from verifiers.kinds.table import sandbox_count
from verifiers.launch import ROOT, LocalServer
from verifiers.service.fair import BURST_SANDBOXES
from verifiers.shapes.limits import OUTPUT_LIMIT_DETAIL, LimitsError, ServiceLimits, from_args

FLAGS = ["--backend", "--pool-size", "--memory-mb", "--cpus", "--pids", "--output-cap-bytes", "--max-timeout-s",
         "--max-queue-s", "--max-message-mb", "--max-batch", "--max-completion-chars", "--max-concurrent-rpcs",
         "--langs-pool-size", "--langs-memory-mb", "--langs-image", "--compile-cache-mb"]  # fmt: skip
MAKE_VARIABLES = {"--backend": "BACKEND", "--pool-size": "POOL"}  # make serve's own; every other flag: ARGS='…'
SMALL = ["--max-message-mb", "1", "--max-batch", "4", "--max-completion-chars", "1000", "--max-timeout-s", "5",
         "--max-concurrent-rpcs", "3", "--output-cap-bytes", "65536", "--memory-mb", "1024", "--pids", "100",
         "--cpus", "1.5"]  # fmt: skip
ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
ADD_OK = "```python\ndef add(a, b):\n    return a + b\n```"
GOOD = "<think>a</think>b"


def _server(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.fronts.server", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


# -- set where the service starts -----------------------------------------------------------------
def test_help_shows_every_limit_with_its_default():
    out = " ".join(_server("--help").stdout.split())
    for flag in FLAGS:
        assert flag in out, flag
    for name, field in ServiceLimits.model_fields.items():
        assert f"(default: {field.default})" in out, name


@pytest.mark.parametrize(
    "args,named",
    [
        (["--cpus", "0"], "--cpus '0': Input should be greater than 0"),
        (["--memory-mb", "lots"], "--memory-mb 'lots': Input should be a valid integer"),
        (["--output-cap-bytes", "10"], "--output-cap-bytes '10'"),
        (["--max-batch", "0", "--pids", "2"], "--pids '2'"),  # every bad flag is named, not just the first
        (["--max-timeout-s", "nan"], "--max-timeout-s"),
        (["--backend", "chroot"], "invalid choice: 'chroot'"),
        (["--compile-cache-mb", "-1"], "--compile-cache-mb '-1': Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_limit_stops_the_server_before_it_starts(args, named):
    r = _server(*args, "--port", "0")
    assert r.returncode == 2 and named in r.stderr, r.stderr
    assert "SERVING" not in r.stdout  # refused at parse time: exit 2 is argparse's, before any sandbox


def test_the_limits_become_the_pool_configuration():
    import argparse

    from verifiers.shapes.limits import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    limits = from_args(
        p.parse_args(
            [
                "--backend",
                "bwrap",
                "--pool-size",
                "3",
                "--memory-mb",
                "900",
                "--cpus",
                "0.5",
                "--pids",
                "77",
                "--output-cap-bytes",
                "70000",
            ]
        )
    )
    cfg = limits.sandbox_config(warmup="x = 1")
    assert (cfg.backend, cfg.size, cfg.memory_mb, cfg.cpus, cfg.pids, cfg.output_bytes, cfg.warmup) == (
        "bwrap",
        3,
        900,
        0.5,
        77,
        70000,
        "x = 1",
    )
    with pytest.raises(LimitsError, match="--max-batch '-1'"):
        from_args(p.parse_args(["--max-batch", "-1"]))


def test_the_compile_cache_limit_sizes_the_toolchains_cache():
    """--compile-cache-mb sizes the service's toolchain cache (``VerifierService.toolchains``); 0 turns it off."""
    from sandbox.backend import Result
    from verifiers.kinds.code import compile_cache
    from verifiers.service.core import VerifierService

    def failed(i: int) -> compile_cache.Entry:  # a cached compile error: (100 << 10) + 256 bytes
        return compile_cache.Entry({"elapsed": 0.1, "message": "x" * (100 << 10)}, None, Result(id=str(i)), "n")

    assert ServiceLimits().compile_cache_mb == 256
    assert VerifierService(None, None).toolchains.cache.max_bytes == 256 << 20
    cache = VerifierService(None, None, limits=ServiceLimits(compile_cache_mb=1)).toolchains.cache
    assert cache.max_bytes == 1 << 20
    for i in range(8):
        cache.put(str(i), failed(i))
    assert len(cache) == 8 and cache.get("0", 1.0) is not None
    off = VerifierService(None, None, limits=ServiceLimits(compile_cache_mb=0)).toolchains.cache
    off.put("9", failed(9))
    assert (off.max_bytes, len(off)) == (0, 0)  # off: nothing is kept


def test_make_serve_passes_its_variables_and_args_to_the_flags():
    values = {"BACKEND": "bwrap", "POOL": "7"}
    args = " ".join(f"{flag} 7" for flag in FLAGS if flag not in MAKE_VARIABLES)
    cmd = ["make", "-n", "--no-print-directory", "serve", *(f"{k}={v}" for k, v in values.items()), f"ARGS={args}"]
    out = " ".join(subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.split())
    for flag, var in MAKE_VARIABLES.items():
        assert f"{flag} {values[var]}" in out, flag
    assert args in out
    plain = subprocess.run(["make", "-n", "--no-print-directory", "serve"], capture_output=True, text=True, cwd=ROOT)
    assert "--cpus" not in plain.stdout  # unset variables leave the server's defaults alone


def test_the_docs_document_every_limit():
    doc = (ROOT / "docs" / "serve.md").read_text()
    section = doc.split("## Limits", 1)[1].split("\n## ", 1)[0]
    for flag in FLAGS:
        assert flag in section, flag


# -- and each one holds -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    log = tmp_path_factory.mktemp("limits") / "server.log"
    with LocalServer(pool_size=1, extra_args=SMALL, log_path=str(log)) as srv, VerifierClient(srv.target) as c:
        yield srv, c


def _refused(call, code: grpc.StatusCode, *words: str) -> None:
    with pytest.raises(VerifierError) as e:
        call()
    assert e.value.code == code, e.value
    for w in words:
        assert w in e.value.message, e.value.message


def _still_serving(c: VerifierClient) -> None:
    assert c.verify("think_format", GOOD).reward == 1.0


@pytest.mark.docker
def test_message_size(small):
    _, c = small
    _refused(lambda: c.verify("think_format", "x" * (1 << 20)), grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max")
    _still_serving(c)


@pytest.mark.docker
def test_batch_size(small):
    _, c = small
    _refused(
        lambda: c.verify_batch([VerifyItem("think_format", GOOD)] * 5),
        grpc.StatusCode.INVALID_ARGUMENT,
        "5 items",
        "limit of 4",
        "--max-batch",
    )
    assert [r.reward for r in c.verify_batch([VerifyItem("think_format", GOOD)] * 4)] == [1.0] * 4


@pytest.mark.docker
def test_completion_length(small):
    _, c = small
    _refused(
        lambda: c.verify("think_format", "<think>a</think>" + "b" * 985),
        grpc.StatusCode.INVALID_ARGUMENT,
        "1001 characters",
        "--max-completion-chars",
    )
    _refused(
        lambda: c.verify_batch([VerifyItem("think_format", GOOD), VerifyItem("think_format", "x" * 1001)]),
        grpc.StatusCode.INVALID_ARGUMENT,
        "items[1]",
    )
    assert c.verify("think_format", "<think>a</think>" + "b" * 984).reward == 1.0


@pytest.mark.docker
def test_timeout_ceiling(small):
    _, c = small
    _refused(
        lambda: c.verify("think_format", GOOD, timeout_s=5.5),
        grpc.StatusCode.INVALID_ARGUMENT,
        "<= 5",
        "--max-timeout-s",
    )
    assert c.verify("think_format", GOOD, timeout_s=5).reward == 1.0


@pytest.mark.docker
def test_concurrent_requests(small):
    srv, c = small
    slow = "```python\nimport time\ntime.sleep(2)\ndef add(a, b):\n    return a + b\n```"
    results: list = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                c.verify("code", slow, ADD_TESTS, options={"entry_point": "add"}, timeout_s=5)
            )
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    time.sleep(1.0)  # three RPCs in progress: the one sandbox runs one, two wait for it
    _refused(lambda: c.verify("think_format", GOOD), grpc.StatusCode.RESOURCE_EXHAUSTED, "oncurrent")
    for t in threads:
        t.join(60)
    assert [r.outcome for r in results] == ["CORRECT"] * 3
    _still_serving(c)


@pytest.mark.docker
def test_output_cap_reaches_the_sandbox(small):
    _, c = small
    flood = "```python\nprint('x' * 70000)\ndef add(a, b):\n    return a + b\n```"
    r = c.verify("code", flood, ADD_TESTS, options={"entry_point": "add"})
    assert (r.outcome, r.reward) == ("RUNTIME_ERROR", 0.0)
    assert r.detail.startswith(f"{OUTPUT_LIMIT_DETAIL}: more than 65536 bytes"), r.detail
    near = "```python\nprint('x' * 60000)\ndef add(a, b):\n    return a + b\n```"
    assert c.verify("code", near, ADD_TESTS, options={"entry_point": "add"}).outcome == "CORRECT"


@pytest.mark.docker
def test_sandbox_limits_reach_the_containers(small):
    srv, _ = small
    out = subprocess.run(
        ["docker", "ps", "--filter", f"label=rlvr.owner={_owner_of(srv)}", "-q"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(out) == sandbox_count(1, BURST_SANDBOXES)  # the pool, its burst sandbox, the lanes'
    host = json.loads(subprocess.run(["docker", "inspect", out[0]], capture_output=True, text=True).stdout)[0]
    hc = host["HostConfig"]
    assert (hc["Memory"], hc["PidsLimit"], hc["NanoCpus"]) == (1024 << 20, 100, 1_500_000_000)


def _owner_of(srv: LocalServer) -> str:
    import socket

    return f"{socket.gethostname()}:{srv.proc.pid}"


def test_the_bwrap_backend_is_chosen_at_start(tmp_path):
    from sandbox.backends.bwrap import bwrap_usable

    require("bwrap")
    ok, why = bwrap_usable()
    assert ok, f"bubblewrap is installed but the backend is unusable: {why}"
    with (
        LocalServer(pool_size=1, extra_args=["--backend", "bwrap"], log_path=str(tmp_path / "log")) as srv,
        VerifierClient(srv.target) as c,
    ):
        r = c.verify("code", ADD_OK, ADD_TESTS, options={"entry_point": "add"})
        assert r.outcome == "CORRECT", r.detail
        ps = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"label=rlvr.owner={_owner_of(srv)}"], capture_output=True, text=True
        ).stdout
        assert ps.strip() == ""  # no container: the sandboxes are bubblewrap's
    assert "backend=bwrap" in (tmp_path / "log").read_text()
