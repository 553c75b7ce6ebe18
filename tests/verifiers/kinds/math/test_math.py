"""The ``math`` verifier through a real server: one case table per equivalence category, the false
positives that must stay INCORRECT, extraction and its fallbacks, and pathological inputs."""

from __future__ import annotations

import pytest

from in_sandbox.answer import extract, strip_think
from verifiers.kinds.math.verifier import int_literal


def boxed(s: str) -> str:
    return f"<think>some reasoning</think>The answer is $\\boxed{{{s}}}$."


UNPARSED = "x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}"  # latex2sympy cannot read it
# (category, gold, completion, options, outcome)
CASES = [
    # integers and the host fast path
    ("int", "42", boxed("42"), {}, "CORRECT"),
    ("int", "$42$", boxed("042"), {}, "CORRECT"),
    ("int", "42", boxed("43"), {}, "INCORRECT"),
    ("int", "-7", boxed("-7"), {}, "CORRECT"),
    ("thousands", "1000000", boxed("1,000,000"), {}, "CORRECT"),
    # fractions vs decimals
    ("fraction", "\\frac{1}{2}", boxed("0.5"), {}, "CORRECT"),
    ("fraction", "0.75", boxed("\\dfrac{3}{4}"), {}, "CORRECT"),
    ("fraction", "3/7", boxed("\\frac{3}{7}"), {}, "CORRECT"),
    ("fraction", "\\frac{1}{3}", boxed("0.33"), {}, "INCORRECT"),
    # symbolic simplification, radicals, pi and e
    ("symbolic", "x^2+2x+1", boxed("(x+1)^2"), {}, "CORRECT"),
    ("symbolic", "x^2+2x+1", boxed("(x+1)^3"), {}, "INCORRECT"),
    ("radical", "2\\sqrt{3}", boxed("\\sqrt{12}"), {}, "CORRECT"),
    ("radical", "\\frac{\\sqrt{2}}{2}", boxed("\\frac{1}{\\sqrt{2}}"), {}, "CORRECT"),
    ("pi", "2\\pi", boxed("\\pi \\cdot 2"), {}, "CORRECT"),
    ("e", "e^{2}", boxed("e^2"), {}, "CORRECT"),
    # sets, intervals, tuples, matrices
    ("set", "\\{1, 2, 3\\}", boxed("\\{3, 1, 2\\}"), {}, "CORRECT"),
    ("set", "\\{1, 2\\}", boxed("\\{1, 3\\}"), {}, "INCORRECT"),
    ("interval", "(-\\infty, 2]", boxed("(-\\infty, 2]"), {}, "CORRECT"),
    ("interval", "(-\\infty, 2]", boxed("(-\\infty, 2)"), {}, "INCORRECT"),
    ("tuple", "(1, 2)", boxed("(1,2)"), {}, "CORRECT"),
    (
        "matrix",
        "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
        boxed("\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"),
        {},
        "CORRECT",
    ),
    (
        "matrix",
        "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
        boxed("\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}"),
        {},
        "INCORRECT",
    ),
    # equations, percent, units and text
    ("equation", "x = 3", boxed("3"), {}, "CORRECT"),
    ("equation", "3", boxed("x = 3"), {}, "CORRECT"),
    ("percent", "50\\%", boxed("50"), {}, "CORRECT"),
    ("percent", "50\\%", boxed("0.5"), {}, "CORRECT"),
    ("units", "10", boxed("10 \\text{ cm}"), {}, "CORRECT"),
    ("units", "5", boxed("5 apples"), {}, "CORRECT"),
    ("degrees", "90", boxed("90^\\circ"), {}, "CORRECT"),
    ("dollars", "5", boxed("\\$5"), {}, "CORRECT"),
    # references: bare, $-delimited, \boxed
    ("reference", "$\\frac{1}{2}$", boxed("\\frac{2}{4}"), {}, "CORRECT"),
    ("reference", "\\(x=3\\)", boxed("3"), {}, "CORRECT"),
    ("reference", "\\boxed{7}", boxed("7"), {}, "CORRECT"),
    # exact comparison: no float underflow, no rounding of tiny numbers
    ("exact", "\\frac{1}{2004!}", boxed("\\frac{1}{2006!}"), {}, "INCORRECT"),
    ("exact", "\\frac{1}{2004!}", boxed("\\frac{1}{2004!}"), {}, "CORRECT"),
    ("exact", "\\frac{1}{2^{99}}", boxed("\\frac{1}{2^{98}}"), {}, "INCORRECT"),
    ("exact", "e^{-1000}", boxed("e^{-1001}"), {}, "INCORRECT"),
    ("exact", "10^{-9}", boxed("0.000000002"), {}, "INCORRECT"),
    # options["rel_tol"]
    ("rel_tol", "\\pi", boxed("3.1416"), {"rel_tol": "1e-4"}, "CORRECT"),
    ("rel_tol", "\\pi", boxed("3.1416"), {}, "INCORRECT"),
    ("rel_tol", "100", boxed("101"), {"rel_tol": "0.02"}, "CORRECT"),
    ("rel_tol", "100", boxed("105"), {"rel_tol": "0.02"}, "INCORRECT"),
    # malformed LaTeX is never truncated into a different number
    ("malformed", "4", boxed("4\\sqrt(2)"), {}, "INCORRECT"),
    ("malformed", "4\\sqrt{2}", boxed("4\\sqrt(2)"), {}, "CORRECT"),
    ("malformed", "4", boxed("4\\sqrt)2("), {}, "INCORRECT"),
    ("malformed", "12", boxed("12\\frac{1}"), {}, "INCORRECT"),
    ("malformed", "4", boxed("4 \\ 5"), {}, "INCORRECT"),
    ("unbalanced", "4", boxed("4\\sqrt{") + " then", {}, "NO_ANSWER"),
    # extraction: think is not the answer, last boxed wins, <answer> tag, spraying
    ("extract", "3", "<think>\\boxed{3}</think>so it is 4", {}, "NO_ANSWER"),
    ("extract", "3", "<think>unfinished \\boxed{3}", {}, "NO_ANSWER"),
    ("extract", "3", "<think>r</think><answer>3</answer>", {}, "CORRECT"),
    ("extract", "1/2", "<think>r</think><answer>\\frac{1}{2}</answer>", {}, "CORRECT"),
    ("extract", "3", "\\boxed{x = 3}, that is \\boxed{3}", {}, "CORRECT"),
    ("spraying", "2", "\\boxed{1} or \\boxed{2} or \\boxed{3}", {}, "INCORRECT"),
    ("spraying", "2", "".join(f"\\boxed{{{i}}}" for i in range(20)), {}, "INCORRECT"),
    ("spraying", "\\{2, 3\\}", "\\boxed{2}, \\boxed{3}", {}, "CORRECT"),
    # whitespace: a reference or answer written over several lines is parsed whole, never reduced to a piece
    ("multiline", "\\begin{pmatrix}\n1 & 2 \\\\\n4 & 19\n\\end{pmatrix}", boxed("19"), {}, "INCORRECT"),
    ("multiline", "x^2 +\n 1", boxed("1"), {}, "INCORRECT"),
    (
        "multiline",
        "\\begin{pmatrix}\n1 & 2 \\\\\n4 & 19\n\\end{pmatrix}",
        boxed("\\begin{pmatrix}1&2\\\\4&19\\end{pmatrix}"),
        {},
        "CORRECT",
    ),
    ("multiline", "x^2 +\n 1", boxed("x^2+1"), {}, "CORRECT"),
    ("multiline", "x^2+1", boxed("x^2\t+\r\n\u00a01"), {}, "CORRECT"),
    ("multiline", "$\n\\frac{1}{2}\n$", boxed("0.5"), {}, "CORRECT"),
    # a reference that does not parse as a whole is BAD_REFERENCE (reward 0, masked from training)
    ("bad_reference", "x^2 + 1 ]", boxed("1"), {}, "BAD_REFERENCE"),
    ("bad_reference", "2x +", boxed("2"), {}, "BAD_REFERENCE"),
    ("bad_reference", "\\frac{1}{2", boxed("1/2"), {}, "BAD_REFERENCE"),
    ("bad_reference", "12 hello 3", boxed("12"), {}, "BAD_REFERENCE"),
    ("bad_reference", UNPARSED, boxed(UNPARSED.replace(", ", ",\n")), {}, "CORRECT"),  # the same text
    ("bad_reference", UNPARSED, boxed("\\frac{1}{2}"), {}, "BAD_REFERENCE"),
    ("upright_e", "1 - \\frac{1}{\\mathrm{e}}", boxed("1 + \\frac{1}{\\mathrm{e}}"), {}, "INCORRECT"),
    # a words-only reference is compared as words, not as a product of letters (yes = E*s*y = sey)
    ("text", "yes", boxed("\\text{Yes}"), {}, "CORRECT"),
    ("text", "yes", boxed("sey"), {}, "INCORRECT"),
    ("text", "north east", "<answer>North  East.</answer>", {}, "CORRECT"),
    # fallbacks
    ("fallback", "42", "the answer is 42", {}, "NO_ANSWER"),
    ("fallback", "42", "the answer is 42", {"fallback": "last_number"}, "CORRECT"),
    ("fallback", "42", "41 or maybe 43", {"fallback": "last_number"}, "INCORRECT"),
    ("fallback", "1/3", "So $x = \\frac{1}{3}$.", {"fallback": "full"}, "CORRECT"),
    ("fallback", "1/3", "no math here at all", {"fallback": "full"}, "NO_ANSWER"),
]


@pytest.mark.docker
@pytest.mark.parametrize(
    "gold,completion,options,outcome", [c[1:] for c in CASES], ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_math_cases(client, gold, completion, options, outcome):
    r = client.verify("math", completion, gold, options=options)
    assert r.outcome == outcome, r.detail
    assert r.reward == (1.0 if outcome == "CORRECT" else 0.0)


@pytest.mark.docker
def test_power_tower_times_out_and_service_survives(client):
    r = client.verify("math", boxed("9^{9^{9^{9}}}"), "1", timeout_s=2)
    assert r.outcome == "TIMEOUT"  # the service's own kill, within the client's call deadline
    assert client.verify("math", boxed("\\frac{1}{2}"), "0.5").outcome == "CORRECT"


@pytest.mark.docker
def test_batch_in_order_with_a_poisoned_item(client):
    items = [{"verifier": "math", "completion": boxed(f"\\frac{{{i}}}{{7}}"), "reference": f"{i}/7"} for i in range(12)]
    items[5] = {"verifier": "math", "completion": boxed("9^{9^{9^{9}}}"), "reference": "2", "timeout_s": 2}
    items[8]["reference"] = "100"
    rs = client.verify_batch(items)
    outcomes = [r.outcome for r in rs]
    assert outcomes[5] == "TIMEOUT" and outcomes[8] == "INCORRECT"
    assert all(o == "CORRECT" for i, o in enumerate(outcomes) if i not in (5, 8))


@pytest.mark.docker
def test_bad_options_are_the_callers_mistake(client):
    from verifiers.client import VerifierError

    for opts in ({"fallback": "everything"}, {"rel_tol": "-1"}, {"rel_tol": "abc"}):
        with pytest.raises(VerifierError, match="INVALID_ARGUMENT"):
            client.verify("math", boxed("1"), "1", options=opts)
    with pytest.raises(VerifierError, match="INVALID_ARGUMENT"):
        client.verify("math", boxed("1"), "")
    # in a batch, the same mistakes fail the call up front naming the item (never a SANDBOX_ERROR verdict)
    for bad in ({"reference": " \n"}, {"reference": "1", "options": {"fallback": "everything"}}):
        items = [
            {"verifier": "math", "completion": boxed("1"), "reference": "1"},
            {"verifier": "math", "completion": boxed("1"), **bad},
        ]
        with pytest.raises(VerifierError, match=r"INVALID_ARGUMENT.*items\[1\]"):
            client.verify_batch(items)


@pytest.mark.parametrize(
    "text,expected",
    [("42", "42"), ("$-007$", "-7"), ("+0", "0"), ("-0", "0"), ("4.0", None), ("1,000", None), ("x", None)],
)
def test_int_literal(text, expected):
    assert int_literal(text) == expected


def test_extract_table():
    # the first close ends a templated think block; the second opens nothing, so it closes nothing (issue 48):
    # a reader sees b and c, and the stray tag is blanked
    assert strip_think("a</think>b</think>c") == "b" + " " * len("</think>") + "c"
    assert strip_think("<think><think>r</think>b</think>c") == "c"  # nested blocks: the outer close counts
    assert extract("\\boxed{1} \\boxed{ 1 }").answers == ["1"]
    assert extract("<answer>x \\boxed{2}</answer>").answers == ["2"]
    assert extract("no answer", "none") is None
    assert extract("so 3 then 4.5", "last_number").answers == ["4.5"]
    assert extract("x" * 20_000 + " $5$", "full").answers[0].endswith("$5$")


def test_jobs_in_flight_follow_the_contexts_parallelism():
    # the coalescer keeps Context.parallelism jobs in flight and no more (here the sandbox is a function
    # that answers every item "ok" after a pause: this is about scheduling, not grading)
    import json
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from sandbox.backend import Result
    from verifiers.kinds.math.verifier import MathVerifier
    from verifiers.shapes.base import Context
    from verifiers.shapes.request import Request

    lock, now, peak = threading.Lock(), [0], [0]

    def run_job(job):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.2)
        with lock:
            now[0] -= 1
        n = len(json.loads(job.stdin)["items"])
        return Result(exit_code=0, stdout="".join(json.dumps({"i": i, "ok": True}) + "\n" for i in range(n)))

    ctx = Context(run_job=run_job, lookup=None, deadline=time.monotonic() + 60, parallelism=3)
    v = MathVerifier()
    with ThreadPoolExecutor(24) as ex:
        verdicts = list(ex.map(lambda _: v.verify(Request("math", boxed("1/2"), "0.5"), ctx), range(24)))
    assert {x.outcome for x in verdicts} == {"CORRECT"}
    assert peak[0] == 3


def test_the_items_after_a_killed_one_go_on_together_in_one_job():
    # a job killed while its 4th item runs: that item gets TIMEOUT and the 8 after it go on in ONE fresh job
    # (they were re-run a job each: 9 jobs for 12 items). The sandbox here is a function that times out on
    # the item whose gold is "hang" and answers the others; the real path: test_batch_in_order_with_a_poisoned_item
    import json

    from sandbox.backend import Result
    from sandbox.deadline import Deadline
    from verifiers.kinds.math.verifier import PendingItem, run_items

    jobs = []

    def run_job(job):
        golds = [it["gold"] for it in json.loads(job.stdin)["items"]]
        jobs.append(len(golds))
        done = golds.index("hang") if "hang" in golds else len(golds)
        lines = "".join(json.dumps({"i": i, "ok": True}) + "\n" for i in range(done))
        return Result(exit_code=None, signal=9, stdout=lines, timed_out=done < len(golds))

    golds = ["1", "2", "3", "hang"] + [str(i) for i in range(8)]
    items = [PendingItem({"gold": g, "preds": ["1"], "mode": "answer"}, 5.0, Deadline.after(60)) for g in golds]
    got = run_items(items, run_job)
    assert [c.outcome.name for c in got] == ["CORRECT"] * 3 + ["TIMEOUT"] + ["CORRECT"] * 8
    assert jobs == [12, 8]
