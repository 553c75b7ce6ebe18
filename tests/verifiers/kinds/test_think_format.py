"""think_format: the case table, checked in-process and over real gRPC (same code path as every verifier)."""

import pytest

from verifiers.kinds.format import think_format

# (completion, expected pass, why)
CASES = [
    ("<think>2+2=4</think>4", True, "plain answer after think"),
    ("<think>2+2=4</think><answer>4</answer>", True, "answer tags"),
    ("<think>a</think>\n<answer>4</answer>\n", True, "whitespace around the answer"),
    ("  \n<think>a</think>4", True, "leading whitespace only"),
    ("<think>line1\nline2</think>The answer is \\boxed{4}.", True, "multi-line reasoning, boxed answer"),
    ("<think>x</think> <answer> 4 </answer>", True, "spaces inside answer"),
    ("<think>\u00e9\u4e2d</think>\u03c0", True, "unicode"),
    ("4", False, "no think block"),
    ("", False, "empty"),
    ("Sure! <think>a</think>4", False, "text before <think>"),
    ("<think></think>4", False, "empty think"),
    ("<think>   \n</think>4", False, "whitespace-only think"),
    ("<think>a</think>", False, "no answer"),
    ("<think>a</think>   \n", False, "whitespace-only answer"),
    ("<think>a", False, "unclosed think"),
    ("a</think>4", False, "close without open"),
    ("<think>a</think><think>b</think>4", False, "two think blocks"),
    ("<think>a<think>b</think>4", False, "nested open"),
    ("<think>a</think>4</think>", False, "stray close"),
    ("<think>a</think><answer></answer>", False, "empty answer tags"),
    ("<think>a</think><answer>4</answer><answer>5</answer>", False, "two answers"),
    ("<think>a</think><answer>4", False, "unclosed answer"),
    ("<think>a</think><answer>4</answer> trailing", False, "text after </answer>"),
    ("<think>a</think>pre <answer>4</answer>", False, "text before <answer>"),
    ("</think><think>a</think>4", False, "close before open"),
    ("<think>\u200b\u200b</think>4", False, "zero-width-space think"),
    ("<think>\ufeff\u2060\u200d</think><answer>4</answer>", False, "bom and joiners think"),
    ("<think>a</think>\u200b", False, "zero-width-space answer"),
    ("<think>a</think><answer>\u2060\u0301</answer>", False, "invisible answer tags"),
    ("<think>\u3164</think>4", False, "hangul-filler think"),
    ("<think>\u200bok</think>\u200b4", True, "visible text among zero-width spaces"),
]


@pytest.mark.parametrize("completion,expected,why", CASES, ids=[c[2] for c in CASES])
def test_think_format_in_process(completion, expected, why):
    assert think_format(completion)[0] is expected, why


@pytest.mark.docker
def test_think_format_over_grpc(client):
    from verifiers.client import VerifyItem

    items = [VerifyItem("think_format", c, "", id=str(i)) for i, (c, _, _) in enumerate(CASES)]
    results = client.verify_batch(items)
    assert [r.id for r in results] == [str(i) for i in range(len(CASES))]
    for (_, expected, why), r in zip(CASES, results, strict=True):
        assert r.reward == (1.0 if expected else 0.0), why
        assert r.outcome == ("CORRECT" if expected else "INCORRECT"), why
    single = client.verify("think_format", CASES[0][0])
    assert (single.reward, single.outcome) == (1.0, "CORRECT")


def test_think_format_is_linear_on_hostile_input():
    # 10 MB of tags: a backtracking implementation would never finish; this one scans a few times.
    hostile = "<think>" + "<think></think>" * 700_000
    assert think_format(hostile)[0] is False
    assert think_format("<think>" + "a" * 10_000_000 + "</think>4")[0] is True
