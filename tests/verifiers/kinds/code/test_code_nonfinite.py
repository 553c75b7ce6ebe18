"""Not-a-number never passes by accident (issue 49), through the real gRPC service (session ``client``).

Printed where the expected output is a finite number, ``nan``/``inf`` (in any spelling Python's float()
reads, and overflowing literals such as ``1e999``) fail every built-in judge. A user's checker still decides
for itself (round two paid a NaN through a checker written "reject if err > tol", and through an assert
written "not greater than"): the verdict then carries ``code.nonfinite_output``.
"""

from __future__ import annotations

import json

import pytest

from verifiers.kinds.code.judges import nonfinite

SPELLINGS = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+INF", "1e999", "-1e400"]
CASES = json.dumps([{"input": "", "output": "2.0\n"}])
# a checker as a hurried author writes it: NaN compares false, so "err > tol" never rejects it
LAX_CHECKER = (
    "import sys\nout = float(open(sys.argv[2]).read())\nans = float(open(sys.argv[3]).read())\n"
    "sys.exit(1 if abs(out - ans) > 1e-6 else 0)\n"
)


@pytest.mark.parametrize("text", SPELLINGS)
def test_the_scan_finds_every_spelling(text):
    assert nonfinite("2.0\n", f"{text}\n") and not nonfinite(f"{text}\n", f"{text}\n")
    assert not nonfinite("2.0", "2.0 nano infinite") and not nonfinite("", "")


@pytest.mark.docker
@pytest.mark.parametrize("judge", ["exact", "tokens", "float"])
def test_every_builtin_judge_fails_a_nonfinite_number(client, judge):
    for text in SPELLINGS:
        prog = f"```python\nprint({text!r})\n```"
        r = client.verify("code", prog, CASES, options={"mode": "stdio", "judge": judge})
        assert (r.outcome, r.reward) == ("INCORRECT", 0.0), (text, r.detail)


@pytest.mark.docker
def test_a_lax_checker_decides_but_the_verdict_says_so(client):
    ref = json.dumps({"cases": json.loads(CASES), "checker": LAX_CHECKER})
    r = client.verify("code", "```python\nprint(float('nan'))\n```", ref, options={"mode": "stdio", "judge": "checker"})
    assert r.reward == 1.0 and "code.nonfinite_output" in r.signals, (r.outcome, r.signals)
    ok = client.verify("code", "```python\nprint(2.0)\n```", ref, options={"mode": "stdio", "judge": "checker"})
    assert ok.reward == 1.0 and "code.nonfinite_output" not in ok.signals


@pytest.mark.docker
def test_a_nan_through_a_not_greater_than_assert_carries_the_signal(client):
    tests = "def check(candidate):\n    assert not (abs(candidate(1) - 2.0) > 1e-6)\n"
    r = client.verify("code", "```python\ndef f(x):\n    return float('nan')\n```", tests, options={"entry_point": "f"})
    assert "code.nonfinite_output" in r.signals, (r.outcome, r.signals)
    r = client.verify("code", "```python\ndef f(x):\n    return 2.0\n```", tests, options={"entry_point": "f"})
    assert r.reward == 1.0 and "code.nonfinite_output" not in r.signals
