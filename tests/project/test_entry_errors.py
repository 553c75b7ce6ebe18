"""Library code raises typed errors; only the entry points turn them into an exit status and a message.

The CLI's usage mistakes (unreadable file, malformed KEY=VALUE, non-numeric weight) and the server's
port already in use come back as ``UsageError`` / ``ListenError`` from the library functions, and as
status 1 plus the same message on stderr from ``main()`` / ``python -m verifiers.fronts.server``.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers import cli
from verifiers.fronts.server import build_server
from verifiers.shapes.errors import ListenError, UsageError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def taken_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    yield s.getsockname()[1]
    s.close()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["register", "v", "--python", "/nonexistent/verifier.py"], "cannot read /nonexistent/verifier.py"),
        (["register", "v", "--composite", "math=heavy"], "the weight must be a number"),
        (["verify", "v", "--completion", "x", "--option", "novalue"], "'novalue' is not KEY=VALUE"),
    ],
)
def test_cli_usage_mistake_is_status_1_with_message(argv, message, capsys):
    # the mistakes are found before any call is made: no service needs to run at this target
    assert cli.main(["--target", "127.0.0.1:9", *argv]) == 1
    assert message in capsys.readouterr().err


def test_cli_helpers_raise_usage_error():
    with pytest.raises(UsageError, match="is not KEY=VALUE"):
        cli.option_pairs(["a"], "--option")
    with pytest.raises(UsageError, match="weight must be a number"):
        cli.component_of("math=x")


def test_build_server_on_a_taken_port_raises_listen_error(taken_port):
    with pytest.raises(ListenError, match="choose another --port"):
        build_server(None, "127.0.0.1", taken_port)


def test_server_entry_point_on_a_taken_port_exits_1(taken_port, tmp_path):
    cmd = [sys.executable, "-m", "verifiers.fronts.server", "--port", str(taken_port),
           "--registry", str(tmp_path / "r.sqlite")]  # fmt: skip
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert f"could not listen on 127.0.0.1:{taken_port} (in use?): choose another --port" in p.stderr
    assert "Traceback" not in p.stderr


def test_cli_with_no_service_says_how_long_it_really_retried():
    """Issue 42: with --timeout-s 3 the CLI said "retrying for up to 300 s", then "unavailable for 0 s"."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiers.cli",
            "--target",
            f"127.0.0.1:{port}",
            "--timeout-s",
            "3",
            "--wait-s",
            "1",
            "list",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "UNAVAILABLE" in out.stderr, out.stderr
    assert "300 s" not in out.stderr and "for 0 s" not in out.stderr, out.stderr
    # issue 51: the window is --wait-s (not --timeout-s, the call's deadline), and the message says so
    assert "retrying for up to 1.0 s" in out.stderr and re.search(r"\(\d+ tries in 1\.\d s", out.stderr), out.stderr
    assert "cannot reach the verifier service" in out.stderr


def test_make_serve_echoes_its_command_as_one_line():
    """Issue 42: the recipe's continuation lines echoed as lines holding only a backslash."""
    out = subprocess.run(
        ["make", "-n", "serve", "HTTP_PORT=8080"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.strip() == "\\"], out.stdout
    serve = [line for line in lines if "-m verifiers.fronts.server" in line]
    assert len(serve) == 1 and serve[0].endswith("--http-port 8080"), out.stdout
