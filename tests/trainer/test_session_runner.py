"""SessionToolRunner through a real verifier service (real Docker, gRPC on loopback): a group forks from one
session set up once, forks are independent, errors and timeouts get their status, closed sessions are gone, and a
tool rollout of the tiny caller model runs its calls there. Needs the sessions service (VerifierClient.open_session,
h53's branch): it fails, not skips, without it (a required part must not go missing quietly)."""

from __future__ import annotations

import pytest
import torch

from tests.trainer import tool_helpers as th
from trainer.config import ToolsConfig
from trainer.rollout.session_runner import SessionToolRunner
from trainer.rollout.tool_decode import generate_tool_rollout

pytestmark = pytest.mark.docker


def test_group_forks_errors_timeouts_and_close(client):
    runner = SessionToolRunner(client)
    handles = runner.start(2, 2, setup="base = 6")
    try:
        assert len(set(handles)) == 4 and None not in handles
        assert runner.run(handles[0], "print(base * 7)", 10).output.strip() == "42"
        assert runner.run(handles[0], "x = 1", 10).status == "ok"
        assert runner.run(handles[1], "print('x' in globals())", 10).output.strip() == "False"  # forks are apart
        err = runner.run(handles[2], "1/0", 10)
        assert err.status == "error" and "ZeroDivisionError" in err.output
        assert runner.run(handles[3], "while True: pass", 1).status == "timeout"
    finally:
        runner.close(handles)
    assert not client.list_sessions()
    assert runner.run(handles[0], "print(1)", 5).status == "infra"  # a session that is gone: not the policy's doing


def test_a_session_the_policy_ended_is_not_an_infrastructure_outcome(client):
    runner = SessionToolRunner(client, memory_mb=128)  # a cell over the session's memory ends the session
    handles = runner.start(1, 2)
    try:
        first = runner.run(handles[0], "x = bytearray(600 * 2**20); x[::4096] = b'1' * len(x[::4096])", 20)
        assert first.status == "error"
        # escaping a bad grade by ending one's own session must not get the rollout masked
        assert runner.run(handles[0], "print(1)", 10).status == "error"
        assert runner.run(handles[0], "import os; os._exit(3)", 10).status == "error"
        assert runner.run(handles[1], "print(1)", 10).output.strip() == "1"  # the other fork lives on
    finally:
        runner.close(handles)


def test_tool_rollout_runs_its_calls_in_the_sandbox(client):
    model, tok = th.caller()
    runner = SessionToolRunner(client)
    torch.manual_seed(0)
    ro = generate_tool_rollout(
        model, tok, th.examples("a"), 2, runner=runner, tools=ToolsConfig(), max_new_tokens=96, do_sample=False
    )
    assert all(
        f"<output>\n{int(p[1:]) * 7}\n</output>" in full for p, full in zip(ro.prompts, ro.full_texts, strict=True)
    )
    assert not client.list_sessions()


def test_a_group_of_one_without_setup_uses_its_session_directly(client):
    runner = SessionToolRunner(client)
    handles = runner.start(2, 1)
    try:
        assert len(set(handles)) == 2 and None not in handles and runner._parents == []  # no fork, no parent
        assert runner.run(handles[0], "print(6*7)", 10).output.strip() == "42"
        assert runner.run(handles[1], "print('x' in globals())", 10).output.strip() == "False"
    finally:
        runner.close(handles)
    assert runner.run(handles[0], "print(1)", 5).status == "infra"  # closed
