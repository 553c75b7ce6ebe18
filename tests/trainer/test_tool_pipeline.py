"""Issue 54: ``make train TASK=tools`` end to end at tiny sizes against a real service (configs/tools.yaml as
shipped, sizes cut by flags): the warm start, held-out accuracy with tools, GRPO with tools in sandbox sessions, the
control arm without tools from the same warm start, and summary.json holding both arms."""

from __future__ import annotations

import json

import pytest

from trainer.pipelines import make_train

pytestmark = pytest.mark.docker


def test_make_train_task_tools_runs_both_arms(tmp_path, verifier_server):
    summary = make_train.run(
        [
            "--config",
            "configs/tools.yaml",
            "--runs",
            str(tmp_path),
            "--name",
            "t",
            "--target",
            verifier_server.target,
            "--task.warmstart_size",
            "200",
            "--task.train_size",
            "40",
            "--task.heldout_size",
            "8",
            "--warmstart.steps",
            "5",
            "--grpo.steps",
            "2",
            "--grpo.prompts_per_step",
            "2",
            "--grpo.group_size",
            "2",
            "--grpo.eval_every",
            "2",
            "--grpo.eval_limit",
            "4",
        ]
    )
    run = tmp_path / "t"
    assert summary["eval_before"]["n"] == 8 and summary["tools"]["max_calls"] == 2
    w = summary["without_tools"]
    assert (
        w["eval_before"]["n"] == 8
        and w["eval_after"]["n"] == 8
        and (run / "without_tools" / "eval_after.jsonl").exists()
    )
    with_tools = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    without = [json.loads(x) for x in (run / "without_tools" / "metrics.jsonl").read_text().splitlines()]
    assert any("tool/calls_per_completion" in m for m in with_tools)  # the tool arm's steps ran the loop
    assert not any("tool/calls_per_completion" in m for m in without) and any("reward/mean" in m for m in without)
    assert [m["step"] for m in without if "eval/accuracy" in m] == [0, 2]  # its own curve, from the warm start
    assert json.loads((run / "summary.json").read_text())["without_tools"] == w
