"""Judges, pass-rate rewards and per-case verdicts of the ``code`` verifier's stdio mode.

The judge functions are tested as pure functions; everything else against the real service over real
Docker pools (Python, and C for a checker with a compiled program), plus one gRPC round trip that
shows the per-case verdicts reach the client.
"""

from __future__ import annotations

import json

import pytest

from verifiers.kinds.code.judges import judge_exact, judge_float, judge_tokens, parse_reference
from verifiers.shapes.base import BadRequest
from verifiers.shapes.outcome import CaseStatus
from verifiers.shapes.request import Request

THIRD = json.dumps([{"input": "1 3\n", "output": "0.333333\n"}, {"input": "2 3\n", "output": "0.666667\n"}])
DIVIDE = "a, b = map(int, input().split())\nprint(a / b)\n"  # prints 0.3333333333333333: not the same text


# -- the judges as functions ----------------------------------------------------------------------------
def test_exact_forgives_only_trailing_whitespace():
    assert judge_exact("1 2\n3\n", "1 2   \n3")[0]
    assert judge_exact("1 2\n", "1 2\n\n\n")[0]
    assert not judge_exact("1 2\n", "1  2\n")[0]
    assert not judge_exact("1 2\n", " 1 2\n")[0]
    assert not judge_exact("1\n2\n", "1 2\n")[0]


def test_tokens_ignores_all_whitespace_but_not_tokens():
    assert judge_tokens("1 2\n3\n", "  1\n\n2 3  ")[0]
    assert not judge_tokens("1 2", "12")[0]
    assert not judge_tokens("1 2", "1 2 3")[0]


def test_float_tolerance_absolute_and_relative():
    assert judge_float("0.333333", "0.3333333333333333")[0]
    assert not judge_float("0.333333", "0.3334")[0]
    assert judge_float("0.333333", "0.3334", abs_tol=1e-3)[0]
    assert judge_float("1000000", "1000000.5", abs_tol=0, rel_tol=1e-6)[0]
    assert not judge_float("1000000", "1000002", abs_tol=0, rel_tol=1e-6)[0]
    assert judge_float("YES 1.5", "YES 1.5000001")[0]
    assert not judge_float("YES 1.5", "NO 1.5")[0]


def test_float_refuses_what_is_not_a_decimal_number():
    assert not judge_float("nan", "nan1")[0]
    assert not judge_float("1.0", "nan")[0]
    assert not judge_float("1.0", "inf")[0]
    assert not judge_float("1000", "1_000")[0]  # float() would accept it
    assert not judge_float("1.0", "0x1p0")[0]


def test_the_first_difference_is_reported():
    ok, diff = judge_tokens("1 2 3", "1 9 3")
    assert not ok and "token 2" in diff and "'2'" in diff and "'9'" in diff


def test_reference_shapes():
    assert parse_reference(THIRD, "tokens").cases[0] == ("1 3\n", "0.333333\n")
    spec = parse_reference(json.dumps({"cases": [{"input": "", "output": "x"}], "checker": "pass"}), "checker")
    assert spec.checker == "pass"
    with pytest.raises(BadRequest, match="checker"):
        parse_reference(THIRD, "checker")
    for bad in ("[]", "{}", "not json", json.dumps([{"input": "1"}])):
        with pytest.raises(BadRequest):
            parse_reference(bad, "tokens")


# -- against the real service --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


def _py(svc, source: str, reference: str, **options):
    opts = {"mode": "stdio", "case_timeout_s": "2", **options}
    return svc.verify(Request("code", f"```python\n{source}```", reference, options=opts, timeout_s=30))


@pytest.mark.slow
@pytest.mark.docker
def test_float_case_exact_fails_float_passes(service):
    exact = _py(service, DIVIDE, THIRD, judge="exact")
    assert (exact.outcome, exact.reward) == ("INCORRECT", 0.0), exact.detail
    assert "0.3333333333333333" in exact.detail  # the first failing case's diff
    assert _py(service, DIVIDE, THIRD, judge="tokens").outcome == "INCORRECT"
    v = _py(service, DIVIDE, THIRD, judge="float")
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    tight = _py(service, DIVIDE, THIRD, judge="float", abs_tol="1e-9", rel_tol="1e-9")
    assert tight.outcome == "INCORRECT", tight.detail


@pytest.mark.docker
def test_exact_and_tokens_differ_on_layout(service):
    ref = json.dumps([{"input": "", "output": "1 2\n"}])
    assert _py(service, "print(1)\nprint(2)\n", ref, judge="tokens").outcome == "CORRECT"
    assert _py(service, "print(1)\nprint(2)\n", ref, judge="exact").outcome == "INCORRECT"
    assert _py(service, "print('1 2   ')\n", ref, judge="exact").outcome == "CORRECT"


PERMUTATION_CHECKER = """import sys
inp, out, ans = (open(p).read() for p in sys.argv[1:4])
n = int(inp)
got = out.split()
if sorted(got) != [str(i) for i in range(1, n + 1)]:
    print("not a permutation of 1..n")
    sys.exit(1)
assert ans.split()  # the expected answer is readable by the checker
print("ok")
"""
PERM_REF = json.dumps(
    {
        "cases": [{"input": "3\n", "output": "1 2 3\n"}, {"input": "4\n", "output": "1 2 3 4\n"}],
        "checker": PERMUTATION_CHECKER,
    }
)


@pytest.mark.docker
def test_checker_accepts_any_valid_answer(service):
    reverse = "n = int(input())\nprint(*range(n, 0, -1))\n"
    assert _py(service, reverse, PERM_REF, judge="tokens").outcome == "INCORRECT"  # not the expected text
    v = _py(service, reverse, PERM_REF, judge="checker")
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    bad = _py(service, "n = int(input())\nprint(*range(n))\n", PERM_REF, judge="checker")
    assert bad.outcome == "INCORRECT" and "not a permutation" in bad.detail, bad.detail


@pytest.mark.docker
def test_checker_runs_a_compiled_programs_output(service):
    c = '#include <stdio.h>\nint main(){int n;scanf("%d",&n);for(int i=n;i>0;i--)printf("%d ",i);return 0;}\n'
    opts = {"mode": "stdio", "language": "c", "judge": "checker", "case_timeout_s": "2"}
    v = service.verify(Request("code", f"```c\n{c}```", PERM_REF, options=opts, timeout_s=60))
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail


@pytest.mark.docker
def test_a_broken_checker_is_the_references_fault(service):
    ref = json.dumps({"cases": [{"input": "", "output": "1"}], "checker": "raise ValueError('checker-bug')"})
    v = _py(service, "print(1)\n", ref, judge="checker")
    assert (v.outcome, v.reward) == ("BAD_REFERENCE", 0.0) and "checker-bug" in v.detail, v.detail


# Case 0 passes, 1 is wrong, 2 hangs, 3 crashes, 4 passes.
MIXED = json.dumps([{"input": f"{k}\n", "output": "ok\n"} for k in ("pass", "wrong", "hang", "crash", "pass")])
MIXED_PROGRAM = """k = input().strip()
if k == "wrong":
    print("nope")
elif k == "hang":
    while True:
        pass
elif k == "crash":
    raise RuntimeError("crash-marker")
else:
    print("ok")
"""


@pytest.mark.docker
def test_fraction_reward_and_one_verdict_per_case(service):
    for spelling in ({"reward": "fraction"}, {"reward": "partial"}, {"partial": "true"}):
        v = _py(service, MIXED_PROGRAM, MIXED, case_timeout_s="1", **spelling)
        assert v.reward == pytest.approx(2 / 5), (spelling, v.detail)
        assert [c.status for c in v.cases] == [
            CaseStatus.PASSED,
            CaseStatus.WRONG_ANSWER,
            CaseStatus.TIME_LIMIT,
            CaseStatus.RUNTIME_ERROR,
            CaseStatus.PASSED,
        ]
        assert v.outcome == "INCORRECT" and "case 1" in v.detail and "'nope'" in v.detail, v.detail
        assert "crash-marker" in v.cases[3].detail


@pytest.mark.docker
def test_all_reward_is_all_or_nothing_and_may_skip(service):
    v = _py(service, MIXED_PROGRAM, MIXED, case_timeout_s="1", reward="all")
    assert v.reward == 0.0 and len(v.cases) == 5
    assert v.cases[0].status is CaseStatus.PASSED
    assert {c.status for c in v.cases[1:]} <= {
        CaseStatus.WRONG_ANSWER,
        CaseStatus.TIME_LIMIT,
        CaseStatus.RUNTIME_ERROR,
        CaseStatus.PASSED,
        CaseStatus.SKIPPED,
    }
    c = service.verify(
        Request(
            "code",
            "```c\nint main(){return 3;}\n```",
            MIXED,
            options={"mode": "stdio", "language": "c", "reward": "all"},
            timeout_s=60,
        )
    )
    assert c.outcome == "RUNTIME_ERROR" and c.cases[0].status is CaseStatus.RUNTIME_ERROR, c.detail
    assert [x.status for x in c.cases[1:]] == [CaseStatus.SKIPPED] * 4  # sequential: the rest is not run


@pytest.mark.docker
@pytest.mark.parametrize(
    "options,match",
    [
        ({"judge": "regex"}, "judge"),
        ({"judge": "float", "abs_tol": "-1"}, "abs_tol"),
        ({"judge": "float", "rel_tol": "x"}, "rel_tol"),
        ({"reward": "half"}, "reward"),
        ({"language": "cobol"}, "language"),
        ({"case_timeout_s": "-3"}, "case_timeout_s"),
    ],
)
def test_bad_options_are_bad_requests(service, options, match):
    with pytest.raises(BadRequest, match=match):
        _py(service, "print(1)\n", THIRD, **options)


@pytest.mark.docker
def test_assert_mode_is_refused_for_a_language_without_one(service):
    with pytest.raises(BadRequest, match="has no assert mode"):
        service.verify(Request("code", "echo 1", "assert 1", options={"language": "bash"}))


@pytest.mark.docker
def test_per_case_verdicts_reach_the_grpc_client(client):
    r = client.verify(
        "code",
        f"```python\n{MIXED_PROGRAM}```",
        MIXED,
        timeout_s=20,
        options={"mode": "stdio", "reward": "fraction", "case_timeout_s": "1"},
    )
    assert r.reward == pytest.approx(2 / 5)
    assert [c["status"] for c in r.cases] == ["PASSED", "WRONG_ANSWER", "TIME_LIMIT", "RUNTIME_ERROR", "PASSED"]
    assert "'nope'" in r.cases[1]["detail"]


# -- assert mode, MBPP style: a JSON list of independent asserts ----------------------------------------
MBPP = json.dumps(["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"])
ADD_MOSTLY = "def add(a, b):\n    return a + b if a >= 0 else 99\n"


def _asserts(svc, source: str, reference: str = MBPP, **options):
    return svc.verify(Request("code", f"```python\n{source}```", reference, options=options, timeout_s=5))


@pytest.mark.docker
def test_mbpp_asserts_are_graded_one_by_one(service):
    v = _asserts(service, ADD_MOSTLY, reward="fraction")
    assert v.reward == pytest.approx(2 / 3) and v.outcome == "INCORRECT", v.detail
    assert [c.status for c in v.cases] == [CaseStatus.PASSED, CaseStatus.PASSED, CaseStatus.WRONG_ANSWER]
    assert "case 2" in v.detail and "AssertionError" in v.cases[2].detail
    allv = _asserts(service, ADD_MOSTLY)
    assert (allv.outcome, allv.reward) == ("INCORRECT", 0.0)
    ok = _asserts(service, "def add(a, b):\n    return a + b\n", reward="fraction")
    assert (ok.outcome, ok.reward) == ("CORRECT", 1.0) and len(ok.cases) == 3


@pytest.mark.docker
def test_mbpp_a_hanging_test_is_its_time_limit_and_the_rest_skipped(service):
    hang = "def add(a, b):\n    while a == 2:\n        pass\n    return a + b\n"
    v = _asserts(service, hang, reward="fraction")
    assert v.outcome == "TIMEOUT" and v.reward == pytest.approx(1 / 3), v.detail
    assert [c.status for c in v.cases] == [CaseStatus.PASSED, CaseStatus.TIME_LIMIT, CaseStatus.SKIPPED]


@pytest.mark.docker
def test_mbpp_exiting_during_the_tests_is_not_a_pass(service):
    sneaky = "import sys\ndef add(a, b):\n    if a == 2:\n        sys.exit(0)\n    return a + b\n"
    v = _asserts(service, sneaky, reward="fraction")
    assert v.outcome != "CORRECT" and v.reward == pytest.approx(1 / 3), v.detail
    assert v.cases[0].status is CaseStatus.PASSED and v.cases[1].status is CaseStatus.RUNTIME_ERROR
