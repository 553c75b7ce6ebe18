"""The host-side scanners stay linear on hostile inputs: the format rewards on 10 MB, the answer and
code extraction on 1 MB (the same shapes).

No timings: the scans count the characters they look at, and that count must stay within a small
multiple of the input's length (a quadratic re-scan would be millions of times larger)."""

from __future__ import annotations

import pytest

from in_sandbox.answer import boxed_all, extract, last_number
from verifiers.kinds.code.verifier import candidate_code
from verifiers.kinds.format import tag_count, think_format

MB = 1_000_000
HOSTILE = {
    "think-opens": "<think>" * (10 * MB // 7),
    "think-closes": "</think>" * (10 * MB // 8),
    "answer-pairs": "<think>x</think>" + "<answer>1</answer>" * (10 * MB // 17),
    "angle-brackets": "<" * 10 * MB,
    "unclosed-boxed": "\\boxed{" * (10 * MB // 7),
    "many-boxed": "\\boxed{1}" * (10 * MB // 9),
    "deep-braces": "\\boxed{" + "{" * (5 * MB) + "}" * (5 * MB),
    "boxed-no-brace": "\\boxed " * (10 * MB // 7),
    "digits-and-spaces": "1 " * (5 * MB),
    "backticks": "`" * 10 * MB,
}
# The Python-level scanners get a tenth of the size: linearity is what the counting test checks.
SMALL = {name: text[: len(text) // 10] for name, text in HOSTILE.items()}


class CountingStr(str):
    """A str whose ``find`` adds up how many characters each call had to look at."""

    scanned = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        r = super().find(sub, start) if end is None else super().find(sub, start, end)
        CountingStr.scanned += (r if r >= 0 else len(self)) - start
        return r


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_format_rewards_complete(name):
    text = HOSTILE[name]
    ok, why = think_format(text)
    assert isinstance(ok, bool) and why
    assert 0.0 <= tag_count(text) <= 1.0


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("fallback", ["none", "last_number", "full"])
def test_extraction_completes(name, fallback):
    e = extract(SMALL[name], fallback)
    assert e is None or e.answers


@pytest.mark.parametrize("name", ["unclosed-boxed", "many-boxed", "deep-braces", "boxed-no-brace", "angle-brackets"])
def test_boxed_scan_is_linear(name):
    text = CountingStr(SMALL[name])
    CountingStr.scanned = 0
    boxed_all(text)
    assert CountingStr.scanned <= 4 * len(text)


def test_spraying_is_capped():
    e = extract("".join(f"\\boxed{{{i}}}" for i in range(100_000)))
    assert e is not None and e.sprayed == 100_000


def test_candidate_code_on_backticks():
    assert candidate_code("```python\n" * (MB // 10)) == ""


@pytest.mark.parametrize(
    "text,expected",
    [("no numbers", None), ("x = -3.5 and then 1,234", "1234"), ("ratio 3 / 4.", "3/4"), ("1 " * 1000, "1")],
)
def test_last_number(text, expected):
    assert last_number(text) == expected


@pytest.mark.parametrize(
    "completion,ok",
    [
        ("<think>reason</think><answer>4</answer>", True),
        ("<think>reason</think>4", True),
        ("  <think>reason</think>\n4", True),
        ("4<think>reason</think>4", False),
        ("<think></think>4", False),
        ("<think>a</think>", False),
        ("<think>a</think><think>b</think>4", False),
        ("<think>a</think><answer>4</answer> trailing", False),
        ("<think>a</think><answer></answer>", False),
    ],
)
def test_think_format_table(completion, ok):
    assert think_format(completion)[0] is ok


@pytest.mark.parametrize(
    "completion,reward",
    [
        ("<think>a</think><answer>b</answer>", 1.0),
        ("<think>a</think>b", 0.5),
        ("<think>a<think></think>", 0.25),
        ("nothing", 0.0),
    ],
)
def test_tag_count_table(completion, reward):
    assert tag_count(completion) == reward
