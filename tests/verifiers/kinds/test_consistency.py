"""Consistency rewards: ``language`` (share of the chain of thought's letters in the target script) and
``answer_consistency`` (the final answer equals, by the math verifier, the reasoning's last result), as
case tables and registered in a composite called over real gRPC."""

from __future__ import annotations

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierError
from verifiers.kinds.consistency import LanguageConsistency, last_result, target_script
from verifiers.shapes.base import BadRequest


@pytest.mark.parametrize(
    ("completion", "options", "reward"),
    [
        ("<think>add the two numbers</think><answer>3</answer>", {}, 1.0),
        ("<think>我们 add</think><answer>3</answer>", {"language": "en"}, 0.6),  # 3 of 5 letters latin
        ("<think>我们 add</think><answer>3</answer>", {"language": "zh"}, 0.4),
        ("<think>сложим two</think>", {"script": "cyrillic"}, 6 / 9),
        ("<think>1+8+8, 9+8, 17</think>", {}, 1.0),  # no letters: nothing mixed
        ("<think>café</think>日本語 after the block does not count", {"language": "fr"}, 1.0),
        ("no think block: 全部 counts", {}, 18 / 20),  # the whole completion: 18 latin of 20 letters
        ("<think>ひらがなとカタカナと漢字</think>", {"language": "ja"}, 1.0),
    ],
)
def test_language_share(completion, options, reward):
    got, _ = LanguageConsistency.grade(completion, target_script(options))
    assert got == pytest.approx(reward)


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"language": "xx"}, "not one of"),
        ({"script": "klingon"}, "not one of"),
        ({"script": "latin", "language": "en"}, "not both"),
    ],
)
def test_language_bad_options(options, needle):
    with pytest.raises(BadRequest, match=needle):
        target_script(options)


@pytest.mark.parametrize(
    ("think", "result"),
    [
        ("1+8+8, 9+8, 17", "17"),
        ("3+4 = 7, then 7*2 = 14\nso", "14"),
        ("x = \\frac{1}{2}", "\\frac{1}{2}"),
        ("we get 12 and then 13.5 maybe", "13.5"),
        ("no result here", None),
        ("a = 1; b = 2, done", "2"),
    ],
)
def test_last_result(think, result):
    assert last_result(think) == result


@pytest.mark.docker
def test_consistency_verifiers_in_a_composite_over_grpc(client):
    client.register(
        pb.RegisterVerifierRequest(
            name="r1-consistent",
            replace=True,
            composite=pb.CompositeVerifier(
                components=[
                    pb.Component(verifier="math", weight=0.6),
                    pb.Component(verifier="answer_consistency", weight=0.2),
                    pb.Component(verifier="language", weight=0.2, options={"language": "en"}),
                ]
            ),
        )
    )
    cases = [  # completion, reference → (math, answer_consistency, language)
        ("<think>add them: 3+4 = 7</think><answer>7</answer>", "7", (1.0, 1.0, 1.0)),
        ("<think>3+4 = 7</think><answer>8</answer>", "8", (1.0, 0.0, 1.0)),  # lucky answer the reasoning never reached
        ("<think>half of one = 0.5</think>\\boxed{\\frac{1}{2}}", "1/2", (1.0, 1.0, 1.0)),  # equal by math, not text
        ("<think>先加 then 7</think><answer>7</answer>", "7", (1.0, 1.0, 4 / 6)),
        ("<think>no numbers</think><answer>7</answer>", "7", (1.0, 0.0, 1.0)),  # NO_ANSWER: nothing to compare
    ]
    results = client.verify_batch([{"verifier": "r1-consistent", "completion": c, "reference": r} for c, r, _ in cases])
    for (completion, _, want), r in zip(cases, results, strict=True):
        got = (r.components["math"], r.components["answer_consistency"], r.components["language"])
        assert got == pytest.approx(want), (completion, r.detail)
        assert r.reward == pytest.approx(0.6 * want[0] + 0.2 * want[1] + 0.2 * want[2])
    alone = client.verify("answer_consistency", cases[2][0])
    assert (alone.outcome, alone.reward) == ("CORRECT", 1.0)
    assert client.verify("answer_consistency", cases[4][0]).outcome == "NO_ANSWER"


@pytest.mark.docker
def test_language_bad_option_over_grpc_names_the_item(client):
    with pytest.raises(VerifierError) as e:
        client.verify_batch(
            [
                {"verifier": "language", "completion": "x"},
                {"verifier": "language", "completion": "x", "options": {"script": "klingon"}},
            ]
        )
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "items[1]" in e.value.message


# the final-answer rule (in_sandbox/answer.py) for answer_consistency: (completion, outcome)
CONSISTENCY_RULE = [
    ("<think>3+4 = 7</think><answer>8</answer> so \\boxed{7}", "INCORRECT"),  # a tag and a box disagree
    ("<think>3+4 = 7</think><answer>7</answer> или 8", "INCORRECT"),  # a hedge after the tag, in Russian
    ("<think>3+4 = 7</think><think>so <answer>7</answer>", "NO_ANSWER"),  # an answer in an unclosed think
    ("<think>3+4 = 7</think><think>no: 3+5 = 8</think><answer>7</answer>", "INCORRECT"),  # the last block's result
    ("<think>3+4 = 7</think><think>check: 7</think><answer>7</answer>", "CORRECT"),
]


@pytest.mark.docker
def test_answer_consistency_reads_the_answer_by_the_one_rule(client):
    got = client.verify_batch([{"verifier": "answer_consistency", "completion": c} for c, _ in CONSISTENCY_RULE])
    assert [r.outcome for r in got] == [want for _, want in CONSISTENCY_RULE], [r.detail for r in got]


@pytest.mark.docker
def test_language_measures_every_think_block(client):
    completion = "<think>add them</think><think>然后加起来</think><answer>7</answer>"
    r = client.verify("language", completion, options={"language": "en"})
    assert r.reward == pytest.approx(7 / 12) and r.outcome == "INCORRECT"
    assert client.verify("language", "<think>add</think><think>them</think>7", options={"language": "en"}).reward == 1.0
