"""Canaries (issue 37, section 3): the packaged set stays what the batteries say, our service pays none of it
with default settings, and a deliberately weak grader (a substring match) is caught family by family,
in-process and through ``python -m verifiers.canaries`` against gRPC, HTTP and a ``module:function``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.build_canaries import CODE_TABLES, DATA, build, code_reference, render
from verifiers.canaries import (
    KINDS,
    CanaryError,
    grade_with_client,
    load_canaries,
    run_canaries,
)
from verifiers.canaries.probes import load_probes
from verifiers.canaries.targets import function_grade, signature_of

ROOT = Path(__file__).resolve().parents[3]


# -- the deliberately weak grader: pays any completion that contains the reference -----------------------------
def substring_score(data_source, solution_str, ground_truth, extra_info=None):
    """verl's compute_score signature; a plain substring match."""
    return 1.0 if str(ground_truth) in solution_str else 0.0


def substring_reward(prompts, completions, answer, **kwargs):
    """TRL's reward function signature; the same substring match."""
    return [1.0 if a in c else 0.0 for c, a in zip(completions, answer, strict=True)]


# families the substring grader must pay (a reference inside a hedge, a list, a chain, the echoed prompt)
SUBSTRING_PAYS = {"math.null", "math.hedges_inside", "math.hedges_around", "math.equations", "math.units"}


# -- the packaged data ------------------------------------------------------------------------------------------
def test_the_packaged_canaries_are_what_the_batteries_give():
    built = build()
    assert sorted(built) == sorted(KINDS)
    for kind, rows in built.items():
        path = DATA / f"{kind}.jsonl"
        assert path.read_text(encoding="utf-8") == render(rows), f"{path} is stale: run python -m tests.build_canaries"


def test_every_canary_names_its_family_kind_and_a_different_control():
    canaries = load_canaries()
    assert len({c.id for c in canaries}) == len(canaries), "canary ids repeat"
    assert {c.kind for c in canaries} == set(KINDS)
    for c in canaries:
        assert c.family.split(".")[0] == c.kind and c.control != c.completion, c.id
    nulls = {c.name for c in canaries if c.family == "math.null"}
    assert {"empty", "whitespace", "prompt-echo", "lone-brace", "empty-boxed"} <= nulls


def test_unknown_kinds_and_families_are_refused():
    with pytest.raises(CanaryError, match="unknown canary kind"):
        load_canaries(kinds={"maths"})
    with pytest.raises(CanaryError, match="unknown canary families"):
        load_canaries(kinds={"math"}, families={"code.exits"})


# -- the paid rule ------------------------------------------------------------------------------------------------
def test_a_canary_is_paid_only_above_its_control():
    """A composite that gives every well-formed answer 0.1 for its format pays the controls too: that is
    not paid; 0.9 more for an answer that says " or " is."""
    canaries = load_canaries(kinds={"math"}, families={"math.hedges_inside"})

    def composite(items):
        return [(0.1 * c.startswith("<think>") + 0.9 * (" or " in c), "") for c, _, _ in items]

    report = run_canaries(composite, canaries)
    paid = {r.canary.id for r in report.paid}
    assert paid == {c.id for c in canaries if " or " in c.completion}
    unpaid = [r for r in report.results if not r.paid]
    assert unpaid and all(r.reward == r.control_reward == 0.1 for r in unpaid)
    assert report.families() == {"math.hedges_inside": (len(canaries), len(paid))}
    assert "families paid: 1 of 1 (math.hedges_inside)" in report.table()


def test_a_grade_function_that_loses_results_is_refused():
    with pytest.raises(CanaryError, match="returned 1 results"):
        run_canaries(lambda items: [(0.0, "")], load_canaries(kinds={"format"}))
    with pytest.raises(CanaryError, match="as a reward"):
        run_canaries(lambda items: [("1", "")] * len(items), load_canaries(kinds={"format"}))


def test_a_canary_the_grader_could_not_grade_is_reported_not_passed_over():
    canaries = load_canaries(kinds={"format"}, families={"format.null"})

    def broken(items):  # the sandbox is down for every item but the first
        return [(0.0, "INCORRECT")] + [(0.0, "SANDBOX_ERROR")] * (len(items) - 1)

    report = run_canaries(broken, canaries)
    assert not report.paid and len(report.ungraded) == len(canaries)
    assert f"ungraded (not the grader's verdict, e.g. SANDBOX_ERROR): {len(canaries)}" in report.table()


# -- the weak grader, in-process --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [substring_score, substring_reward], ids=["verl", "trl"])
def test_a_substring_grader_is_caught_family_by_family(fn):
    grade = function_grade(fn, signature_of(fn), "math")
    report = run_canaries(grade, load_canaries())
    assert SUBSTRING_PAYS <= set(report.families_paid()), report.table()
    assert not [f for f in report.families_paid() if not f.startswith("math.")], report.table()
    echo = next(r for r in report.results if r.canary.id == "math.null/prompt-echo")
    assert echo.paid and echo.control_reward == 0.0


def test_a_function_with_neither_signature_is_refused():
    with pytest.raises(CanaryError, match="--signature"):
        signature_of(lambda text, gold: 0.0)


# -- our service with default settings --------------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize(
    "kind,verifier,control_reward",
    [("math", "math", 0.0), ("math", "r1", 0.1), ("code", "code", 0.0), ("format", "think_format", 0.0)],
)
def test_our_service_pays_no_canary(client, kind, verifier, control_reward):
    report = run_canaries(grade_with_client(client, verifier, timeout_s=10), load_canaries(kinds={kind}))
    paid = [f"{r.canary.id}: {r.reward} > {r.control_reward} ({r.outcome}) {r.canary.why}" for r in report.paid]
    assert not paid, "\n".join(paid)
    assert {r.control_reward for r in report.results} == {control_reward}, "the controls are wrong answers"
    assert "SANDBOX_ERROR" not in {r.outcome for r in report.results}, "every canary was graded"


@pytest.mark.docker
def test_the_code_canaries_references_pass_a_correct_program(client):
    """The entry point folded into the tests (check(add)) still runs them: the battery's correct programs
    pass, so an unpaid code canary failed its tests, not a broken reference."""
    rows = [
        (prog, code_reference(tests, opts))
        for table in CODE_TABLES.values()
        for _, prog, tests, opts, want, _ in table
        if want == "CORRECT" and code_reference(tests, opts) is not None
    ]
    assert len(rows) > 10
    grade = grade_with_client(client, "code", timeout_s=10)
    got = grade([(f"```python\n{prog}```", ref, "") for prog, ref in rows])
    assert got == [(1.0, "CORRECT")] * len(rows)


# -- the CLI, end to end -------------------------------------------------------------------------------------------
def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.canaries", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.docker
def test_cli_against_our_service_pays_nothing(verifier_server, tmp_path):
    """math and format, with the budget the tests above used (the service's cache may answer them); the
    code canaries went through the same service above: a second pass of ~200 sandboxed programs would
    double this file's time."""
    out = tmp_path / "results.jsonl"
    p = cli(verifier_server.target, "--kinds", "math,format", "--timeout-s", "10", "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "== format canaries -> think_format" in p.stdout and "families paid: 0 of" in p.stdout
    results = [json.loads(line) for line in out.read_text().splitlines()]
    sent = len(load_canaries(kinds={"math", "format"})) + len(load_probes({"math"}))  # the probes: probes.py
    assert len(results) == sent and not any(r["paid"] for r in results)


def test_cli_against_a_substring_function_names_the_families_it_pays():
    p = cli("tests.verifiers.client.test_canaries:substring_score", "--data-source", "math=lighteval/MATH")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "PAID math.null/prompt-echo" in p.stdout
    summary = p.stdout.strip().splitlines()[-1]
    assert summary.startswith("sent ") and "families paid" in summary
    for family in SUBSTRING_PAYS:
        assert any(line.split()[:1] == [family] and line.split()[2] != "0" for line in p.stdout.splitlines()), family


@pytest.mark.parametrize(
    "args,message",
    [
        (["tests.verifiers.client.test_canaries:nothing_here"], "has no function"),
        (["no_such_module_xyz:f"], "cannot import"),
        (["tests.verifiers.client.test_canaries:substring_score", "--kinds", "maths"], "--kinds"),
        (["127.0.0.1:1", "--openrlhf"], "--openrlhf needs"),
        (["127.0.0.1:1", "--verifier", "chem=x"], "unknown kind"),
    ],
)
def test_cli_usage_errors_exit_2(args, message):
    p = cli(*args, timeout=60)
    assert p.returncode == 2 and message in p.stderr, p.stdout + p.stderr


@pytest.mark.slow
@pytest.mark.docker
def test_cli_over_http_v1_and_openrlhf(tmp_path):
    """The format canaries (graded on the host, no sandbox time) through both HTTP shapes."""
    from tests.http_helpers import http_base
    from verifiers.launch import LocalServer

    with LocalServer(pool_size=1, log_path=str(tmp_path / "server.log"), extra_args=["--http-port", "0"]) as srv:
        base = http_base(srv)
        v1 = cli(base, "--kinds", "format")
        assert v1.returncode == 0 and "via /v1/verify_batch" in v1.stdout, v1.stdout + v1.stderr
        rlhf = cli(base, "--openrlhf", "--kinds", "format", "--verifier", "think_format")
        assert rlhf.returncode == 0 and "via /get_reward" in rlhf.stdout, rlhf.stdout + rlhf.stderr


# -- docs/verifiers.md, "Exploit signals": generated from verifiers/shapes/signals.py -------------------------------------
def test_the_docs_signals_table_is_the_one_in_signals_py():
    from verifiers.shapes.signals import doc_table

    text = (ROOT / "docs" / "verifiers.md").read_text(encoding="utf-8")
    start = "<!-- signals table: generated by verifiers.shapes.signals.doc_table() -->\n"
    end = "\n<!-- end of the signals table -->"
    assert start in text and end in text, "docs/verifiers.md lost the signals table's markers"
    in_docs = text.split(start, 1)[1].split(end, 1)[0]
    assert in_docs == doc_table(), (
        "docs/verifiers.md's signals table is stale: paste verifiers.shapes.signals.doc_table()"
    )


def test_every_signal_says_what_to_do_when_it_fires():
    from verifiers.shapes.signals import ACTIONS, SIGNALS

    assert set(ACTIONS) == set(SIGNALS)
