"""Registering verifiers over real gRPC, with real sandboxes: each kind end to end, the error table,
the admin token, replace/version and the cache, registering during a batch, a remote verifier served
by a second server process, and the CLI. Restarts and crashes: tests/verifiers/service/test_registry_restart.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.client import VerifierClient, VerifierError, VerifyItem
from verifiers.launch import ROOT, LocalServer

pytestmark = pytest.mark.docker

TOKEN = "s3cret-admin-token-1f2e"
COUNTDOWN = (ROOT / "examples" / "countdown.py").read_text()
Code = grpc.StatusCode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("reg")
    with LocalServer(
        pool_size=2,
        registry=str(d / "registry.sqlite"),
        log_path=str(d / "server.log"),
        extra_args=["--max-message-mb", "4"],
        env={"VERIFIER_ADMIN_TOKEN": TOKEN},
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def admin(server):
    with VerifierClient(server.target, token=TOKEN, retries=0) as c:
        yield c


@pytest.fixture(scope="module")
def anon(server):
    with VerifierClient(server.target, retries=0) as c:
        yield c


def python(name: str, source: str, **kw) -> pb.RegisterVerifierRequest:
    replace = kw.pop("replace", False)
    return pb.RegisterVerifierRequest(name=name, python=pb.PythonVerifier(source=source, **kw), replace=replace)


def composite(name: str, *parts: tuple[str, float], replace: bool = False) -> pb.RegisterVerifierRequest:
    comps = [pb.Component(verifier=n, weight=w) for n, w in parts]
    return pb.RegisterVerifierRequest(name=name, composite=pb.CompositeVerifier(components=comps), replace=replace)


def status_of(fn, *args, **kw) -> tuple[Code, str]:
    with pytest.raises(VerifierError) as e:
        fn(*args, **kw)
    return e.value.code, e.value.message


def cli(server, *args: str, token: str | None = TOKEN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VERIFIER_ADMIN_TOKEN"}
    if token:
        env["VERIFIER_ADMIN_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "verifiers.cli", *args, "--target", server.target],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# -- python ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_countdown_from_the_command_line_then_by_name(server, admin):
    r = cli(server, "register", "countdown", "--python", "examples/countdown.py", "--description", "Countdown")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["kind"] == "python"
    ref = json.dumps({"numbers": [3, 4, 13, 25], "target": 75})
    cases = [("<think>ok</think><answer>(25 - 3) * 4 - 13</answer>", 1.0, "CORRECT"),
             ("<answer>25 * 3</answer>", 0.0, "INCORRECT"),  # 4 and 13 unused
             ("<answer>__import__('os').system('touch /tmp/x')</answer>", 0.0, "INCORRECT"),
             ("no expression here\n", 0.0, "INCORRECT"), ("", 0.0, "NO_ANSWER")]  # fmt: skip
    got = admin.verify_batch([VerifyItem("countdown", c, ref) for c, _, _ in cases])
    assert [(g.reward, g.outcome) for g in got] == [(w, o) for _, w, o in cases]
    r = cli(server, "verify", "countdown", "--completion", "<answer>(25-3)*4-13</answer>", "--reference", ref)
    assert r.returncode == 0 and json.loads(r.stdout)["outcome"] == "CORRECT", r.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "verifiers.cli", "--target", server.target, "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = [v["name"] for v in json.loads(listed.stdout)]
    assert "countdown" in names and "math" in names


BEHAVIOURS = """
import time
def verify(completion, reference, options):
    if completion == "float": return 0.25
    if completion == "big": return 7
    if completion == "negative": return -3
    if completion == "true": return True
    if completion == "none": return None
    if completion == "str": return "1.0"
    if completion == "nan": return float("nan")
    if completion == "raise": raise KeyError("nope")
    if completion == "exit": raise SystemExit(0)
    if completion == "hard_exit": __import__("os")._exit(0)
    if completion == "slow": time.sleep(60)
    if completion == "spoof":
        print('{"reward": 1.0}')
        __import__("os").write(1, b'{"reward": 1.0}\\n')
        return 0.0
    return 0.0
"""


@pytest.mark.parametrize(
    "completion,reward,outcome",
    [
        ("float", 0.25, "INCORRECT"),
        ("big", 1.0, "CORRECT"),
        ("negative", 0.0, "INCORRECT"),
        ("true", 1.0, "CORRECT"),
        ("none", 0.0, "NO_ANSWER"),
        ("str", 0.0, "RUNTIME_ERROR"),
        ("nan", 0.0, "RUNTIME_ERROR"),
        ("raise", 0.0, "RUNTIME_ERROR"),
        ("exit", 0.0, "RUNTIME_ERROR"),
        ("hard_exit", 0.0, "RUNTIME_ERROR"),
        ("slow", 0.0, "TIMEOUT"),
        ("spoof", 0.0, "INCORRECT"),
    ],
)
def test_python_return_values(admin, completion, reward, outcome):
    try:
        admin.register(python("behaviours", BEHAVIOURS))
    except VerifierError as e:
        assert e.code == Code.ALREADY_EXISTS
    r = admin.verify("behaviours", completion, timeout_s=1.5)
    assert (r.reward, r.outcome) == (reward, outcome), r.detail
    if completion == "raise":
        assert "KeyError" in r.detail and "line 11" in r.detail


@pytest.mark.parametrize(
    "source,kw,needle",
    [
        ("def verify(c, r, o):\n    return (\n", {}, "line 2"),
        ("def verify(c, r, o):\n  x = 1\n y = 2\n", {}, "line 3"),
        ("def grade(c, r, o):\n    return 1\n", {}, "no function 'verify'"),
        ("def grade(c, r, o):\n    return 1\n", {"entrypoint": "verify2"}, "no function 'verify2'"),
        ("import json\ndef verify(c, r, o):\n    return json.loads(r)['x']\n", {}, "example_reference"),
        ("def verify(c, r, o):\n    return 'yes'\n", {}, "not a float"),
        ("def verify(c):\n    return 1\n", {}, "TypeError"),
        ("raise RuntimeError('at import')\n", {}, "at import"),
        ("while True:\n    pass\n", {}, "longer than"),
        ("", {}, "empty"),
    ],
    ids=[
        "syntax",
        "indent",
        "no-entrypoint",
        "named-entrypoint",
        "raises-on-empty",
        "returns-str",
        "arity",
        "import-raises",
        "hangs",
        "empty",
    ],
)
def test_python_checked_at_registration(admin, source, kw, needle):
    code, msg = status_of(admin.register, python("broken", source, **kw))
    assert code == Code.INVALID_ARGUMENT and needle in msg, msg
    assert status_of(admin.get_verifier, "broken")[0] == Code.NOT_FOUND  # nothing half-registered


def test_python_example_lets_a_verifier_that_needs_input_register(admin):
    src = "import json\ndef verify(c, r, o):\n    return float(json.loads(r)['x'] == c)\n"
    admin.register(python("needs_input", src, example_completion="1", example_reference='{"x": "1"}'))
    assert admin.verify("needs_input", "1", '{"x": "1"}').reward == 1.0


def test_the_admin_token_never_reaches_the_sandbox(admin):
    # the verifier looks for the token everywhere it can read (its environment, every process's
    # environment and command line) and says 1 if it finds it
    src = f"""
import os
def verify(c, r, o):
    seen = repr(dict(os.environ))
    for p in os.listdir("/proc"):
        for f in ("environ", "cmdline"):
            try:
                seen += open(f"/proc/{{p}}/{{f}}", "rb").read().decode(errors="replace")
            except OSError:
                pass
    return float({TOKEN!r} in seen) if "PATH" in seen else None
"""
    admin.register(python("snoop", src))
    r = admin.verify("snoop", "x")
    assert (r.reward, r.outcome) == (0.0, "INCORRECT"), r.detail


# -- composite --------------------------------------------------------------------------------------
def test_composite_end_to_end_with_components(admin):
    admin.register(python("exact", "def verify(c, r, o):\n    return float(c.split('</think>')[-1].strip() == r)\n"))
    admin.register(composite("exact_fmt", ("exact", 0.8), ("think_format", 0.2)))
    r = admin.verify("exact_fmt", "<think>hm</think>42", "42")
    assert (r.reward, r.outcome, r.components) == (1.0, "CORRECT", {"exact": 1.0, "think_format": 1.0})
    r = admin.verify("exact_fmt", "42", "42")
    assert r.reward == pytest.approx(0.8) and r.components == {"exact": 1.0, "think_format": 0.0}
    info = admin.get_verifier("exact_fmt")
    assert info.kind == "composite" and [c.verifier for c in info.composite.components] == ["exact", "think_format"]


def test_composite_errors(admin):
    admin.register(python("leaf", "def verify(c, r, o):\n    return 1\n"))
    admin.register(composite("upper", ("leaf", 1.0)))
    assert status_of(admin.register, composite("nope", ("leaf", 1), ("missing_one", 1)))[0] == Code.NOT_FOUND
    assert status_of(admin.register, composite("selfish", ("selfish", 1)))[0] == Code.INVALID_ARGUMENT
    code, msg = status_of(admin.register, composite("leaf", ("upper", 1.0), replace=True))
    assert code == Code.INVALID_ARGUMENT and "cycle" in msg
    code, msg = status_of(admin.unregister, "leaf")
    assert code == Code.FAILED_PRECONDITION and "upper" in msg


# -- replace, version, cache ---------------------------------------------------------------------------
def test_replace_bumps_the_version_and_the_cache_never_serves_the_old_verdict(admin):
    admin.register(python("flip", "def verify(c, r, o):\n    return 0\n"))
    admin.register(composite("flip_fmt", ("flip", 0.5), ("think_format", 0.5)))
    first = [admin.verify(n, "<think>a</think>b") for n in ("flip", "flip_fmt")]
    again = [admin.verify(n, "<think>a</think>b") for n in ("flip", "flip_fmt")]
    assert [r.reward for r in first] == [0.0, 0.5] and all(r.cached for r in again)
    assert status_of(admin.register, python("flip", "def verify(c, r, o):\n    return 1\n"))[0] == Code.ALREADY_EXISTS
    info = admin.register(python("flip", "def verify(c, r, o):\n    return 1\n", replace=True))
    assert info.version == 2 == admin.get_verifier("flip").version
    after = [admin.verify(n, "<think>a</think>b") for n in ("flip", "flip_fmt")]
    assert [(r.reward, r.cached) for r in after] == [(1.0, False), (1.0, False)]


# -- the error table -----------------------------------------------------------------------------------
def test_error_table(server, admin, anon):
    ok_src = "def verify(c, r, o):\n    return 1\n"
    table = [
        (anon.register, (python("anon_try", ok_src),), Code.UNAUTHENTICATED),
        (anon.unregister, ("countdown",), Code.UNAUTHENTICATED),
        (admin.register, (python("Bad Name", ok_src),), Code.INVALID_ARGUMENT),
        (admin.register, (python("x" * 65, ok_src),), Code.INVALID_ARGUMENT),
        (admin.register, (pb.RegisterVerifierRequest(name="nospec"),), Code.INVALID_ARGUMENT),
        (admin.register, (python("math", ok_src),), Code.PERMISSION_DENIED),
        (admin.register, (python("r1", ok_src, replace=True),), Code.PERMISSION_DENIED),
        (admin.unregister, ("think_format",), Code.PERMISSION_DENIED),
        (admin.unregister, ("never_registered",), Code.NOT_FOUND),
        (admin.get_verifier, ("never_registered",), Code.NOT_FOUND),
        (admin.get_verifier, ("",), Code.INVALID_ARGUMENT),
        (admin.unregister, ("",), Code.INVALID_ARGUMENT),
        (anon.verify, ("never_registered", "x"), Code.NOT_FOUND),
        (anon.verify, ("", "x"), Code.INVALID_ARGUMENT),
        (anon.verify, ("Not/A/Name", "x"), Code.INVALID_ARGUMENT),
        (lambda: anon.verify("think_format", "x", timeout_s=float("nan")), (), Code.INVALID_ARGUMENT),
        (lambda: anon.verify("think_format", "x", timeout_s=1e9), (), Code.INVALID_ARGUMENT),
        (anon.verify_batch, ([VerifyItem("think_format", "x"), VerifyItem("", "x")],), Code.INVALID_ARGUMENT),
        (anon.verify_batch, ([VerifyItem("think_format", "x"), VerifyItem("nope", "x")],), Code.NOT_FOUND),
        (anon.verify, ("think_format", "x"), None),  # verifying stays open without a token
        (anon.list_verifiers, (), None),
    ]
    for fn, args, want in table:
        if want is None:
            fn(*args)
        else:
            assert status_of(fn, *args)[0] == want, (fn.__name__, args)
    admin.register(python("dup", ok_src))
    assert status_of(admin.register, python("dup", ok_src))[0] == Code.ALREADY_EXISTS
    with VerifierClient(server.target, token="wrong", retries=0) as bad:
        assert status_of(bad.register, python("x1", ok_src))[0] == Code.UNAUTHENTICATED
        assert status_of(bad.unregister, "dup")[0] == Code.UNAUTHENTICATED
    admin.unregister("dup")
    assert status_of(admin.get_verifier, "dup")[0] == Code.NOT_FOUND


def test_oversized_message_is_resource_exhausted(server):
    # the server here accepts 4 MiB (--max-message-mb 4); send 5 MiB on a channel that allows it
    opts = [("grpc.max_send_message_length", 64 << 20)]
    with grpc.insecure_channel(server.target, options=opts) as ch:
        stub = pb_grpc.VerifierServiceStub(ch)
        with pytest.raises(grpc.RpcError) as e:
            stub.Verify(pb.VerifyRequest(verifier="think_format", completion="x" * (5 << 20)), timeout=30)
        assert e.value.code() == Code.RESOURCE_EXHAUSTED
        ok = stub.Verify(pb.VerifyRequest(verifier="think_format", completion="<think>a</think>b"), timeout=30)
        assert ok.reward == 1.0


def test_cli_reports_refusals_on_stderr(server):
    r = cli(server, "register", "math", "--python", "examples/countdown.py")
    assert r.returncode == 1 and "PERMISSION_DENIED" in r.stderr
    r = cli(server, "register", "x", "--python", "examples/countdown.py", token=None)
    assert r.returncode == 1 and "UNAUTHENTICATED" in r.stderr


# -- concurrency -----------------------------------------------------------------------------------
def test_registering_while_a_batch_is_verified(admin):
    items = [VerifyItem("math", f"\\boxed{{{i}}}", str(i), id=str(i)) for i in range(60)]
    out: list = []
    t = threading.Thread(target=lambda: out.append(admin.verify_batch(items)))
    t.start()
    names = [f"during_{i}" for i in range(3)]
    for n in names:
        admin.register(python(n, "def verify(c, r, o):\n    return 1\n"))
    t.join(120)
    assert [r.outcome for r in out[0]] == ["CORRECT"] * 60
    got = admin.verify_batch([VerifyItem(n, "x") for n in names] + items[:2])
    assert [r.outcome for r in got] == ["CORRECT"] * 5


# -- remote ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_remote_served_by_a_second_server(tmp_path, server, admin):
    itself = pb.RemoteVerifier(target=server.target, verifier="math")
    code, msg = status_of(admin.register, pb.RegisterVerifierRequest(name="loop", remote=itself))
    assert code == Code.INVALID_ARGUMENT and "this server itself" in msg
    code, msg = status_of(
        admin.register,
        pb.RegisterVerifierRequest(name="far", remote=pb.RemoteVerifier(target="127.0.0.1:1", verifier="math")),
    )
    assert code == Code.FAILED_PRECONDITION and "not reachable" in msg
    with LocalServer(pool_size=1, log_path=str(tmp_path / "second.log")) as second:
        with VerifierClient(second.target, retries=0) as c2:
            c2.register(python("half", "def verify(c, r, o):\n    return 0.5\n"))
        far = pb.RemoteVerifier(target=second.target, verifier="nonexistent")
        code, msg = status_of(admin.register, pb.RegisterVerifierRequest(name="far", remote=far))
        assert code == Code.FAILED_PRECONDITION and "nonexistent" in msg
        admin.register(
            pb.RegisterVerifierRequest(name="far_math", remote=pb.RemoteVerifier(target=second.target, verifier="math"))
        )
        admin.register(pb.RegisterVerifierRequest(name="half", remote=pb.RemoteVerifier(target=second.target)))
        r = admin.verify("far_math", "so \\boxed{1/2}", "0.5")
        assert (r.reward, r.outcome) == (1.0, "CORRECT")
        assert admin.verify("half", "x").reward == 0.5
        admin.register(composite("far_mix", ("far_math", 0.5), ("half", 0.5)))
        r = admin.verify("far_mix", "\\boxed{2}", "2")
        assert r.components == {"far_math": 1.0, "half": 0.5} and r.reward == 0.75
    r = admin.verify("far_math", "\\boxed{2}", "2")  # the second server is gone
    assert (r.reward, r.outcome) == (0.0, "SANDBOX_ERROR") and "UNAVAILABLE" in r.detail
    assert admin.verify("far_mix", "\\boxed{2}", "2").outcome == "SANDBOX_ERROR"


def test_registered_specs_come_back_from_get_and_list(admin):
    admin.register(python("spec_back", "def verify(c, r, o):\n    return 1\n", entrypoint="verify"))
    info = admin.get_verifier("spec_back")
    assert info.kind == "python" and not info.builtin and "return 1" in info.python.source
    listed = {v.name: v for v in admin.list_verifiers()}
    assert listed["math"].builtin and listed["spec_back"].version == 1
