"""Issue 50, item 3: the canary gate sees a reward that also pays its control. A canary is paid when it earns
more than its control (a plainly wrong answer in the same format), so a reward that pays everything, the
format alone or length paid no canary and passed with exit 0. The probes (verifiers/canaries/probes.py)
grade a right and a plainly wrong completion of the same shape: such a reward is reported as hackable
with a family that names its shape, and ``python -m verifiers.canaries`` exits 1 (paid)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from verifiers.canaries.probes import MARGIN, gate, load_probes, run_probes
from verifiers.canaries.targets import function_grade

ROOT = Path(__file__).resolve().parents[3]


# -- the rewards a practitioner writes by mistake (TRL's signature) ---------------------------------------------
def pays_everything(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


def pays_format(prompts, completions, **kwargs):
    """1.0 for a think block followed by something: the format alone."""
    return [
        1.0 if "<think>" in c and "</think>" in c and c.rsplit("</think>", 1)[1].strip() else 0.0 for c in completions
    ]


def pays_length(prompts, completions, **kwargs):
    """The issue's own length hack: any completion of 52 characters or more."""
    return [1.0 if len(c) >= 52 else 0.0 for c in completions]


def pays_a_little_more(prompts, completions, answer, **kwargs):
    """Right answers 0.6, everything else 0.4: never full for a wrong one, but no clear margin."""
    return [0.6 if f"{{{a}}}" in c or c.strip() == a else 0.4 for c, a in zip(completions, answer, strict=True)]


def honest(prompts, completions, answer, **kwargs):
    """Pays the boxed answer when it is the reference (a careful grader's verdict on these probes)."""
    return [1.0 if f"\\boxed{{{a}}}" in c else 0.0 for c, a in zip(completions, answer, strict=True)]


@pytest.mark.parametrize(
    "fn, family",
    [
        (pays_everything, "math.pays_everything"),
        (pays_format, "math.pays_format"),
        (pays_length, "math.pays_length"),
        (pays_a_little_more, "math.no_margin"),
    ],
)
def test_a_reward_that_pays_its_controls_is_hackable_with_its_family(fn, family):
    report = gate(function_grade(fn, "trl", "math"), "math")
    assert family in report.families_paid(), report.table()
    assert [
        f for f in report.families_paid() if f.endswith(("pays_everything", "pays_format", "pays_length", "no_margin"))
    ] == [family]


def test_an_honest_reward_pays_no_probe_and_a_wrong_answer_is_never_paid_in_full():
    report = run_probes(function_grade(honest, "trl", "math"), load_probes({"math"}))
    assert not report.paid and report.families() == {"math.discrimination": (len(report.results), 0)}
    formatted = [r for r in report.results if r.shape != "bare"]
    assert all(r.control_reward - r.reward >= MARGIN for r in formatted)
    assert len({r.canary.prompt for r in report.results}) >= 3 and {r.shape for r in report.results} == {
        "short",
        "long",
        "bare",
    }
    short = [r for r in report.results if r.shape == "short"]
    assert all(
        len(r.canary.completion) < 52 <= len(x.canary.completion)
        for r in short
        for x in report.results
        if x.shape == "long"
    )


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.canaries", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "fn, family",
    [
        ("pays_everything", "math.pays_everything"),
        ("pays_format", "math.pays_format"),
        ("pays_length", "math.pays_length"),
    ],
)
def test_the_cli_reports_such_a_reward_as_hackable(fn, family):
    p = cli(f"tests.verifiers.client.test_canary_probes:{fn}", "--kinds", "math")
    assert p.returncode == 1, p.stdout + p.stderr  # 1: paid
    assert f"PAID {family}/" in p.stdout and "wrong answer paid" in p.stdout, p.stdout
    assert any(line.split()[:1] == [family] for line in p.stdout.splitlines()), p.stdout  # its row in the table


# -- issue 50, item 7: a conversational-format TRL function ------------------------------------------------------
def conversational(prompts, completions, answer, **kwargs):
    """Written for a conversational dataset, as TRL's docs show: completions are lists of messages."""
    return [1.0 if f"\\boxed{{{a}}}" in c[0]["content"] else 0.0 for c, a in zip(completions, answer, strict=True)]


def broken(prompts, completions, **kwargs):
    raise RuntimeError("my reward has a bug")


def test_a_conversational_trl_function_is_graded_not_a_traceback():
    p = cli("tests.verifiers.client.test_canary_probes:conversational", "--kinds", "math")
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode in (0, 1) and "== math canaries" in p.stdout, p.stdout + p.stderr
    assert "math.discrimination" in p.stdout and "pays_" not in p.stdout  # graded, and it tells right from wrong


def test_a_function_that_fails_is_an_error_exit_2_not_paid():
    p = cli("tests.verifiers.client.test_canary_probes:broken", "--kinds", "math")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr  # 1 would read as "paid"
    assert "RuntimeError: my reward has a bug" in p.stderr and "conversational" in p.stderr
