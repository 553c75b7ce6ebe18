"""Issue 54: ``make eval`` runs the tool loop training runs (``--tools.*``), its calls in sandbox sessions of the
same service that grades (real Docker, gRPC on loopback), with pass@k; a tiny model trained here to call the tool.

- with tools: every sample makes its call in a session (the report's ``tools`` figures: one call per completion,
  no error, no failed session) and is graded on the model's own tokens; pass@k over k samples per problem; no
  session is left open;
- a session that cannot be set up (the setup cell fails) is an infrastructure outcome: SANDBOX_ERROR, ungraded
  (``infra_errors``), never the model's INCORRECT.
"""

from __future__ import annotations

import json

import pytest

from tests.trainer import tool_helpers as th
from trainer.evaluation import evaluate

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def caller_dir(tmp_path_factory):
    model, tok = th.caller()
    d = tmp_path_factory.mktemp("caller")
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


def run(tmp_path, target, model, *extra: str) -> dict:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": e.prompt, "answer": e.reference}) + "\n" for e in th.examples("a")))
    return evaluate.main(
        [
            "--model",
            str(model),
            "--data",
            str(data),
            "--verifier",
            "math",
            "--k",
            "2",
            "--temperature",
            "0.01",
            "--max-new-tokens",
            "96",
            "--tools.max_calls",
            "2",
            "--target",
            target,
            "--no-progress",
            "--out",
            str(tmp_path / "report.json"),
            "--format-verifier",
            "none",
            *extra,
        ]
    )


def test_make_eval_runs_the_tool_loop_through_the_service(tmp_path, verifier_server, client, caller_dir):
    r = run(tmp_path, verifier_server.target, caller_dir)
    assert r["n"] == 4 and r["outcomes"]["CORRECT"] == 4 and r["accuracy"] == 1.0
    assert r["pass@k"]["2"] == 1.0
    t = r["tools"]
    assert t["completions"] == 4 and t["calls_per_completion"] == 1.0 and t["error_rate"] == 0.0
    assert t["sessions_failed"] == 0 and t["max_calls"] == 2
    assert not client.list_sessions()  # every session closed
    log = [json.loads(x) for x in (tmp_path / "report.samples.jsonl").read_text().splitlines()]
    assert all("<output>" not in x["completion"] for x in log)  # graded: the model's own tokens


def test_a_session_that_cannot_be_set_up_is_an_infrastructure_outcome(tmp_path, verifier_server, caller_dir):
    r = run(tmp_path, verifier_server.target, caller_dir, "--tools.setup", "raise SystemExit(1)")
    assert r["outcomes"]["SANDBOX_ERROR"] == 4 and r["outcomes"]["INCORRECT"] == 0 and r["infra_errors"] == 4
    assert r["tools"]["sessions_failed"] == 4
