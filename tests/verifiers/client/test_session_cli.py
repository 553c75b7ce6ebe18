"""``python -m verifiers.cli session ...`` run as a user runs it, against a real server (gRPC on loopback, real
Docker): open / exec / fork / grade / list / close, each a separate process, the session bound to --client-id.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def cli(server, *args, stdin: str | None = None, who: str = "cli-user") -> tuple[int, object, str]:
    cmd = [sys.executable, "-m", "verifiers.cli", "--target", server.target, "--timeout-s", "120", "session",
           "--client-id", who, *args]  # fmt: skip
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=180)
    return out.returncode, json.loads(out.stdout) if out.stdout.strip() else None, out.stderr


def test_open_exec_fork_grade_list_close(verifier_server, tmp_path):
    (tmp_path / "data.txt").write_text("6\n")
    rc, info, err = cli(
        verifier_server, "open", "--file", f"data.txt={tmp_path / 'data.txt'}", "--limit", "timeout_s=5"
    )
    assert rc == 0 and info["kind"] == "python" and info["limits"]["timeout_s"] == 5, err
    sid = info["id"]
    rc, r, _ = cli(verifier_server, "exec", sid, "--code", "n = int(open('data.txt').read())\nprint('hi')\nn * 7")
    assert (rc, r["status"], r["stdout"], r["value"]) == (0, "ok", "hi\n", "42")
    rc, r, _ = cli(verifier_server, "exec", sid, "--code-file", "-", stdin="def sq(x):\n    return x * x\n")
    assert (rc, r["status"]) == (0, "ok") and "value" not in r
    rc, r, _ = cli(verifier_server, "exec", sid, "--code", "import time\ntime.sleep(30)", "--cell-timeout-s", "1")
    assert (rc, r["status"]) == (2, "timeout")
    rc, forks, _ = cli(verifier_server, "fork", sid, "2")
    assert rc == 0 and [f["parent"] for f in forks] == [sid, sid]
    cli(verifier_server, "exec", forks[0]["id"], "--code", "def sq(x):\n    return x + x\n")
    tests = tmp_path / "tests.py"
    tests.write_text("assert sq(3) == 9\nassert sq(-2) == 4\n")
    rc, g, _ = cli(verifier_server, "grade", sid, "code", "--reference-file", str(tests))
    assert (rc, g["outcome"], g["reward"]) == (0, "CORRECT", 1.0), g
    rc, g, _ = cli(verifier_server, "grade", forks[0]["id"], "code", "--reference-file", str(tests))
    assert (rc, g["outcome"]) == (0, "INCORRECT")
    rc, mine, _ = cli(verifier_server, "list")
    assert {s["id"] for s in mine} == {sid, forks[0]["id"], forks[1]["id"]}
    rc, theirs, _ = cli(verifier_server, "list", who="someone-else")
    assert (rc, theirs) == (0, [])
    rc, _, err = cli(verifier_server, "exec", sid, "--code", "1", who="someone-else")
    assert rc == 1 and err.startswith("error: PERMISSION_DENIED"), err
    for s in (sid, forks[0]["id"], forks[1]["id"]):
        assert cli(verifier_server, "close", s)[:2] == (0, {"closed": s})
    rc, _, err = cli(verifier_server, "exec", sid, "--code", "1")
    assert rc == 1 and err.startswith("error: FAILED_PRECONDITION") and "closed" in err, err
    assert cli(verifier_server, "list")[1] == []


def test_usage_errors_name_the_input(verifier_server):
    rc, _, err = cli(verifier_server, "open", "--limit", "bogus=1")
    assert rc == 1 and "bogus" in err
    rc, _, err = cli(verifier_server, "open", "--kind", "cobol")
    assert rc == 1 and "INVALID_ARGUMENT" in err and "cobol" in err
