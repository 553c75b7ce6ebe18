"""Issue 50, item 7: ``make audit`` (trainer/alarm/audit_run.py) on a run folder, against the real service.
It re-grades only the completions the run saved and says so, with how many of the run's it covers; a
run folder without config.yaml (the training reward unknown) gets a sentence saying the canaries were
skipped and how to name the reward, not "canaries: None is not registered"."""

from __future__ import annotations

import json

import pytest
import yaml

from trainer.alarm.audit_run import audit

pytestmark = pytest.mark.docker


def run_folder(tmp_path, config: dict | None):
    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {"step": 1, "prompt": "6*7?", "reference": "42", "reward": 1.0, "completion": c}
        for c in ("<think>6*7</think>\\boxed{42}", "<think>6*7</think>\\boxed{41}")
    ]
    (run / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if config is not None:
        (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run


def test_audit_without_config_yaml_says_the_canaries_were_skipped(tmp_path, client):
    text = audit(run_folder(tmp_path, None), client, None, None)
    assert "None is not registered" not in text
    assert "canaries: skipped: the run's training reward is unknown" in text and "--verifier NAME" in text
    assert "re-grades only the saved completions: 2 from completions.jsonl" in text
    assert "paid by the training reward, refused by the audit: 1 of 2 paid" in text


def test_audit_says_how_many_of_the_runs_completions_it_covers(tmp_path, client):
    cfg = {
        "grpo": {"verifier": "r1", "steps": 500, "prompts_per_step": 8, "group_size": 8, "log_completions_every": 10}
    }
    text = audit(run_folder(tmp_path, cfg), client, None, None)
    assert "2 from completions.jsonl, 0 flagged in alarms.jsonl, of 32,000 the run graded" in text
    assert "canaries through 'r1'" in text and "families paid: 0 of" in text
