"""Every client command honours its own wait option on a service that cannot be reached (issue 51): it fails
with "cannot reach the verifier service" once ``--wait-s`` has passed, never after the grading deadline
(which was used as the connect window: ``canaries --wait-s 3`` took about 5 minutes on a wrong port).
Run as a user runs them: ``.venv/bin/python -m ...`` in a subprocess, against a loopback port nobody listens on.
The pytest timeouts are hang guards (the old behaviour waited 300 s or more), not timings."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from verifiers.client import VerifierClient, VerifierError
from verifiers.launch import ROOT

PY = str(ROOT / ".venv" / "bin" / "python")


def dead_target() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=150)


@pytest.mark.timeout(160)
def test_canaries_on_a_wrong_port_fail_fast_with_exit_2():
    target = dead_target()
    r = run("verifiers.canaries", target, "--wait-s", "3", "--kinds", "format")
    assert r.returncode == 2, r.stderr
    assert "cannot reach the verifier service" in r.stderr and target in r.stderr


@pytest.mark.timeout(160)
def test_canaries_on_a_wrong_http_port_say_cannot_reach_after_the_wait():
    target = f"http://{dead_target()}"
    r = run("verifiers.canaries", target, "--wait-s", "1", "--kinds", "format")
    assert r.returncode == 2 and "cannot reach the grader at " + target in r.stderr, r.stderr


@pytest.mark.timeout(160)
def test_the_registry_cli_honours_its_wait_option_not_its_call_deadline():
    target = dead_target()
    r = run("verifiers.cli", "--target", target, "--timeout-s", "600", "--wait-s", "1", "list")
    assert r.returncode == 1 and "cannot reach the verifier service" in r.stderr, r.stderr
    r = run("verifiers.cli", "list", "--target", target, "--wait-s", "0")  # also after the subcommand
    assert r.returncode == 1 and "cannot reach the verifier service" in r.stderr, r.stderr


@pytest.mark.timeout(160)
def test_make_eval_honours_its_wait_option_and_leaves_no_samples_file(tmp_path: Path):
    f = tmp_path / "c.jsonl"
    f.write_text(json.dumps({"id": "a", "completion": "\\boxed{2}", "reference": "2"}) + "\n")
    out = tmp_path / "r.json"
    r = run(
        "trainer.evaluation.evaluate",
        "--completions",
        str(f),
        "--verifier",
        "math",
        "--target",
        dead_target(),
        "--wait-s",
        "1",
        "--out",
        str(out),
        "--no-progress",
    )
    assert r.returncode == 1 and "cannot reach the verifier service" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.with_suffix(".samples.jsonl").exists()


@pytest.mark.timeout(60)
def test_the_client_waits_wait_s_even_with_a_long_grading_deadline():
    with VerifierClient(dead_target(), timeout_s=600, wait_s=1) as c:
        with pytest.raises(VerifierError, match="cannot reach the verifier service") as err:
            c.list_verifiers()
    assert err.value.code.name == "UNAVAILABLE"
