"""One output policy: a program that writes more than the cap (stdout and stderr together) is ended
and graded RUNTIME_ERROR "output limit exceeded", reward 0, in every mode and on both backends.

The floods write far more than the cap (64 MiB) and *then* pass their tests: a policy that discards
output and lets the program go on would grade them CORRECT. The service here is the real
VerifierService over a real pool of each backend (the gRPC path is covered in tests/verifiers/fronts/test_limits.py).
"""

from __future__ import annotations

import json

import pytest

from sandbox.backend import Job, Limits
from tests.security.conftest import BACKENDS, make_pool
from verifiers.service.core import VerifierService
from verifiers.service.registry import Registry
from verifiers.shapes.limits import OUTPUT_LIMIT_DETAIL
from verifiers.shapes.request import Request

CAP = 256 * 1024
FLOOD_MB = 64
ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"
ADD_OK = "def add(a, b):\n    return a + b\n"
SUM_CASES = json.dumps([{"input": "1 2\n", "output": "3\n"}, {"input": "5 5", "output": "10"}])
SUM_OK = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def flood(stream: str) -> str:
    return f"import sys\nfor _ in range({FLOOD_MB}):\n    sys.{stream}.write('x' * (1 << 20))\nsys.{stream}.flush()\n"


@pytest.fixture(scope="module", params=BACKENDS)
def service(request, tmp_path_factory):
    from verifiers.kinds.table import sandbox_warmup

    pool = make_pool(request.param, size=2, warmup=sandbox_warmup(), output_bytes=CAP).start()
    reg = Registry(str(tmp_path_factory.mktemp("reg") / "registry.sqlite"))
    svc = VerifierService(reg, pool)
    try:
        yield svc
    finally:
        svc.close()
        pool.close()
        reg.close()


def _assert_limit_verdict(v) -> None:
    assert (v.outcome, v.reward) == ("RUNTIME_ERROR", 0.0), v.detail
    assert v.detail.startswith(OUTPUT_LIMIT_DETAIL), v.detail


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flood_then_passing_tests_is_runtime_error_in_assert_mode(service, stream):
    completion = f"```python\n{flood(stream)}{ADD_OK}```"
    v = service.verify(Request("code", completion, ADD_TESTS, options={"entry_point": "add"}, timeout_s=20))
    _assert_limit_verdict(v)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flood_then_the_right_answer_is_runtime_error_in_stdio_mode(service, stream):
    completion = f"```python\n{flood(stream)}{SUM_OK}```"
    for partial in ("false", "true"):  # partial credit does not buy back an abuse
        v = service.verify(
            Request("code", completion, SUM_CASES, options={"mode": "stdio", "partial": partial}, timeout_s=20)
        )
        _assert_limit_verdict(v)


def test_the_same_verdict_in_both_modes_and_for_both_streams(service):
    details = set()
    for stream in ("stdout", "stderr"):
        a = service.verify(
            Request(
                "code",
                f"```python\n{flood(stream)}{ADD_OK}```",
                ADD_TESTS,
                options={"entry_point": "add"},
                timeout_s=20,
            )
        )
        s = service.verify(
            Request(
                "code", f"```python\n{flood(stream)}{SUM_OK}```", SUM_CASES, options={"mode": "stdio"}, timeout_s=20
            )
        )
        details |= {(a.outcome, a.reward, a.detail), (s.outcome, s.reward, s.detail)}
    assert len(details) == 1, details


def test_output_within_the_cap_still_passes(service):
    chatty = "import sys\nprint('debug ' * 1000)\nsys.stderr.write('warn ' * 1000)\n"
    v = service.verify(Request("code", f"```python\n{chatty}{ADD_OK}```", ADD_TESTS, options={"entry_point": "add"}))
    assert v.outcome == "CORRECT", v.detail
    v = service.verify(
        Request(
            "code", f"```python\n{SUM_OK}print('x' * 1000, file=sys.stderr)\n```", SUM_CASES, options={"mode": "stdio"}
        )
    )
    assert v.outcome == "CORRECT", v.detail


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_registered_python_verifier_that_floods_is_runtime_error(service, stream):
    name = f"flooder-{stream}"
    source = (
        "import sys\ndef verify(completion, reference, options):\n"
        f"    if completion == 'flood':\n        for _ in range({FLOOD_MB}):\n"
        f"            sys.{stream}.write('x' * (1 << 20))\n    return 1.0\n"
    )
    service.register(
        name,
        "python",
        "",
        {"source": source, "entrypoint": "verify", "example_completion": "ok", "example_reference": ""},
        replace=True,
    )
    _assert_limit_verdict(service.verify(Request(name, "flood", timeout_s=20)))
    assert service.verify(Request(name, "fine")).outcome == "CORRECT"


def test_the_pool_applies_its_cap_to_every_job_and_a_job_cannot_raise_it(service):
    pool = service.pool
    for limits in (Limits(), Limits(output_bytes=CAP * 64)):
        r = pool.run(Job(code=flood("stdout"), timeout_s=20, limits=limits))
        assert r.output_limit_exceeded and r.signal == 9 and len(r.stdout) <= CAP
    # stdout and stderr count together: 60% of the cap on each is over it (the program may have ended
    # by the time the worker reads the last pipe buffer; it is over the cap all the same)
    half = int(CAP * 0.6)
    r = pool.run(
        Job(code=f"import sys\nsys.stdout.write('a' * {half})\nsys.stdout.flush()\nsys.stderr.write('b' * {half})")
    )
    assert r.output_limit_exceeded
    r = pool.run(Job(code=f"import sys\nsys.stdout.write('a' * {CAP // 3})\nsys.stderr.write('b' * {CAP // 3})"))
    assert r.ok and not r.output_limit_exceeded and len(r.stdout) + len(r.stderr) == 2 * (CAP // 3)


# -- compiled languages: the server's cap, not a default ----------------------------------------------------
C_SUM_AFTER = (
    "#include <stdio.h>\n#include <string.h>\nint main(){{static char b[1024];memset(b,120,sizeof b);"
    "for(int i=0;i<{kib};i++)fwrite(b,1,sizeof b,{stream});fflush({stream});"
    'long x,y;scanf("%ld %ld",&x,&y);printf("%ld\\n",x+y);return 0;}}\n'
)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_c_program_past_the_servers_cap_is_runtime_error(tmp_path, stream):
    # 256 KiB then the right answer: within the default 1 MiB cap it would be graded on its output
    # (stderr: CORRECT); a server started with --output-cap-bytes 65536 must end it at 64 KiB
    from tests.langs_helpers import ensure_langs_image
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    ensure_langs_image()
    source = C_SUM_AFTER.format(kib=256, stream=stream)
    quiet = C_SUM_AFTER.format(kib=8, stream="stderr")  # 8 KiB of warnings: within the cap
    opts = {"mode": "stdio", "language": "c", "case_timeout_s": "5"}
    with (
        LocalServer(
            pool_size=1,
            extra_args=["--output-cap-bytes", "65536"],
            log_path=str(tmp_path / "s.log"),
            registry=str(tmp_path / "registry.sqlite"),
        ) as srv,
        VerifierClient(srv.target) as c,
    ):
        v = c.verify("code", f"```c\n{source}```", SUM_CASES, options=opts, timeout_s=60)
        assert (v.outcome, v.reward) == ("RUNTIME_ERROR", 0.0), v.detail
        assert v.detail.startswith(OUTPUT_LIMIT_DETAIL), v.detail
        ok = c.verify("code", f"```c\n{quiet}```", SUM_CASES, options=opts, timeout_s=60)
        assert ok.outcome == "CORRECT", ok.detail
