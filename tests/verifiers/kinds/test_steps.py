"""Step rewards (process supervision): the arith_steps verifier's per-step verdicts and spans, the
strict validation of steps, and both over real gRPC: arith_steps' steps and a registered python
verifier returning steps (plus one returning bad steps, which gets a clear RUNTIME_ERROR)."""

from __future__ import annotations

import math

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierError
from verifiers.kinds.steps import ArithSteps, BadSteps, chain_value, check_steps
from verifiers.shapes.base import Step

WORKED = "<think>1+8+8, 9+8, 17</think><answer>17</answer>"


def spans(completion: str, steps) -> list[tuple[float, str]]:
    return [
        (
            s.reward if isinstance(s, Step) else s["reward"],
            completion[(s.start if isinstance(s, Step) else s["start"]) : (s.end if isinstance(s, Step) else s["end"])],
        )
        for s in steps
    ]


@pytest.mark.parametrize(
    ("completion", "reference", "prompt", "reward", "steps"),
    [  # the task's own format: each rewrite checked against the one before it (the prompt's for the first)
        (WORKED, "17", "3-2+8+8=?", 1.0, [(1.0, "1+8+8"), (1.0, "9+8"), (1.0, "17")]),
        (
            "<think>1+8+8, 9+9, 18</think><answer>18</answer>",
            "17",
            "3-2+8+8=?",
            0.0,
            [(1.0, "1+8+8"), (0.0, "9+9"), (1.0, "18")],
        ),
        (
            "<think>2+8+8, 10+8, 18</think><answer>18</answer>",
            "17",
            "3-2+8+8=?",
            0.0,
            [(0.0, "2+8+8"), (1.0, "10+8"), (1.0, "18")],
        ),
        # a step that drops a term is wrong even when its value is right
        ("<think>9+8, 17</think><answer>17</answer>", "17", "3-2+8+8=?", 1.0, [(0.0, "9+8"), (1.0, "17")]),
        # "a op b = c" equations, anywhere in a segment, with * before +, negatives
        (
            "<think>so 3-5 = -2\n2*3+1 = 7; 4 × 5 = 21</think><answer>7</answer>",
            "7",
            "",
            1.0,
            [(1.0, "3-5 = -2"), (1.0, "2*3+1 = 7"), (0.0, "4 × 5 = 21")],
        ),
        # no prompt expression: the first rewrite is checked by value against the reference
        ("<think>9+8, 17</think><answer>17</answer>", "17", "", 1.0, [(1.0, "9+8"), (1.0, "17")]),
        # words are not steps; a right process with a wrong final answer scores 0 overall
        (
            "<think>first add them,\n 1+8+8, 9+8, 17</think><answer>16</answer>",
            "17",
            "3-2+8+8=?",
            0.0,
            [(1.0, "1+8+8"), (1.0, "9+8"), (1.0, "17")],
        ),
        ("<think>estimate</think><answer>20</answer>", "17", "3-2+8+8=?", 0.0, []),
    ],
)
def test_arith_steps_table(completion, reference, prompt, reward, steps):
    v = ArithSteps().grade(completion, reference, prompt)
    assert v.reward == reward
    assert spans(completion, v.steps) == steps
    check_steps(v.steps, completion)  # what arith_steps gives is valid by its own rule


def test_arith_steps_outcomes_without_answer_or_reference():
    assert ArithSteps().grade("<think>9+8, 17</think>", "17", "").outcome.value == "NO_ANSWER"
    assert ArithSteps().grade(WORKED, "x", "").outcome.value == "BAD_REFERENCE"


def test_chain_value_is_integer_arithmetic_with_precedence():
    assert chain_value(["2", "*", "3", "+", "1"]) == 7
    assert chain_value(["-3", "-", "4", "*", "2", "+", "10"]) == -1
    assert chain_value(["99999999999999999999", "*", "10"]) == 999999999999999999990  # no float rounding


@pytest.mark.parametrize(
    ("steps", "needle"),
    [
        ([{"reward": 1, "start": 0, "end": 11}], "0 <= start < end <= 10"),
        ([{"reward": 1, "start": 3, "end": 3}], "spans [3, 3)"),
        ([{"reward": 1, "start": -1, "end": 2}], "spans [-1, 2)"),
        ([[1, 0, 4], [1, 2, 6]], "before the previous step ends"),
        ([[1, 5, 6], [1, 0, 2]], "before the previous step ends"),
        ([[math.nan, 0, 2]], "finite"),
        ([[math.inf, 0, 2]], "finite"),
        ([["1", 0, 2]], "finite number"),
        ([[1, 0.5, 2]], "integer character offset"),
        ([{"reward": 1, "start": 0}], "exactly the keys"),
        ([[1, 0]], "give {'reward'"),
        ("0-2", "must be a list"),
    ],
)
def test_check_steps_rejects_with_a_clear_message(steps, needle):
    with pytest.raises(BadSteps) as e:
        check_steps(steps, "0123456789")
    assert needle in str(e.value)


def test_check_steps_accepts_dicts_triples_and_touching_spans():
    got = check_steps([{"reward": 0.5, "start": 0, "end": 3}, (1, 3, 5), [-2, 7, 10]], "0123456789")
    assert got == [Step(0.5, 0, 3), Step(1.0, 3, 5), Step(-2.0, 7, 10)]


# -- over real gRPC -------------------------------------------------------------------------------------
STEPPER = """
import re
def verify(completion, reference, options):
    steps = [{"reward": float(m.group(1) == "ok"), "start": m.start(), "end": m.end()}
             for m in re.finditer(r"(ok|bad)", completion)]
    return {"reward": 1.0 if reference in completion else 0.0, "steps": steps}
"""
TUPLE_STEPPER = "def verify(c, r, o):\n    return 0.5, [(1, 0, 2), (0, 2, len(c))]\n"
BAD_STEPPER = "def verify(c, r, o):\n    return {'reward': 1, 'steps': [[1, 0, len(c) + 5]]}\n"


@pytest.mark.docker
def test_arith_steps_over_grpc_with_spans(client):
    r = client.verify("arith_steps", WORKED, "17", prompt="3-2+8+8=?")
    assert (r.reward, r.outcome) == (1.0, "CORRECT")
    assert spans(WORKED, r.steps) == [(1.0, "1+8+8"), (1.0, "9+8"), (1.0, "17")]
    bad = "<think>1+8+8, 9+9, 18</think><answer>18</answer>"
    results = client.verify_batch(
        [{"verifier": "arith_steps", "completion": c, "reference": "17", "prompt": "3-2+8+8=?"} for c in (WORKED, bad)]
    )
    assert [s["reward"] for s in results[1].steps] == [1.0, 0.0, 1.0]
    assert [s["reward"] for s in results[0].steps] == [1.0, 1.0, 1.0]


@pytest.mark.docker
def test_python_verifier_returning_steps_over_grpc(client):
    client.register(pb.RegisterVerifierRequest(name="stepper", python=pb.PythonVerifier(source=STEPPER), replace=True))
    completion = "ok then bad then ok: 42"
    r = client.verify("stepper", completion, "42")
    assert (r.reward, r.outcome) == (1.0, "CORRECT")
    assert spans(completion, r.steps) == [(1.0, "ok"), (0.0, "bad"), (1.0, "ok")]
    client.register(
        pb.RegisterVerifierRequest(
            name="tuple-stepper",
            python=pb.PythonVerifier(source=TUPLE_STEPPER, example_completion="abcd"),
            replace=True,
        )
    )
    r = client.verify("tuple-stepper", "abcdef")
    assert r.reward == 0.5 and spans("abcdef", r.steps) == [(1.0, "ab"), (0.0, "cdef")]


@pytest.mark.docker
def test_python_verifier_with_bad_steps_is_refused_then_a_runtime_error(client):
    with pytest.raises(VerifierError) as e:
        client.register(pb.RegisterVerifierRequest(name="bad-stepper", python=pb.PythonVerifier(source=BAD_STEPPER)))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "0 <= start < end" in str(e.value)
    # registered with an example it passes, the same bug shows on a later call as RUNTIME_ERROR, not a reward
    ok_for_example = "def verify(c, r, o):\n    return {'reward': 1, 'steps': [[1, 0, len(c) if len(c) == 1 else 4]]}\n"
    client.register(
        pb.RegisterVerifierRequest(
            name="bad-stepper", python=pb.PythonVerifier(source=ok_for_example, example_completion="x"), replace=True
        )
    )
    r = client.verify("bad-stepper", "ab")
    assert (r.reward, r.outcome) == (0.0, "RUNTIME_ERROR")
    assert "returned steps[0] spans [0, 4)" in r.detail


@pytest.mark.docker
def test_remote_verifier_carries_the_steps(client, tmp_path):
    from verifiers.launch import LocalServer

    with LocalServer(pool_size=1, log_path=str(tmp_path / "remote.log")) as other:
        client.register(
            pb.RegisterVerifierRequest(
                name="arith-remote", replace=True, remote=pb.RemoteVerifier(target=other.target, verifier="arith_steps")
            )
        )
        r = client.verify("arith-remote", WORKED, "17", prompt="3-2+8+8=?")
    assert (r.reward, r.outcome) == (1.0, "CORRECT")
    assert spans(WORKED, r.steps) == [(1.0, "1+8+8"), (1.0, "9+8"), (1.0, "17")]


# the final-answer rule (in_sandbox/answer.py): what arith_steps used to pay with an extraction of its own
ANSWER_RULE = [
    ("<think>1+8+8, 9+8, 17</think>\\boxed{18} \\boxed{17}", "INCORRECT"),  # two different boxes
    ("<think>1+8+8, 9+8, 17</think><answer>17</answer> so \\boxed{18}", "INCORRECT"),  # a tag and a box disagree
    ("<think>1+8+8, 9+8, 17</think><answer>17</answer> oder 18", "INCORRECT"),  # a hedge after the tag
    ("<think>1+8+8, 9+8, 17</think><answer>17</answer> (or maybe 18)", "INCORRECT"),
    ("<think>1+8+8, 9+8, 17</think><think>still going <answer>17</answer>", "NO_ANSWER"),  # unclosed think
    ("<think>1+8+8, 9+8, 17</think><answer>17</answer>", "CORRECT"),
    ("<think>1+8+8, 9+8, 17</think><answer>17</answer> so \\boxed{17}", "CORRECT"),  # the same answer restated
]


@pytest.mark.docker
def test_arith_steps_reads_the_answer_by_the_one_rule(client):
    items = [
        {"verifier": "arith_steps", "completion": c, "reference": "17", "prompt": "3-2+8+8=?"} for c, _ in ANSWER_RULE
    ]
    got = [r.outcome for r in client.verify_batch(items)]
    assert got == [want for _, want in ANSWER_RULE]


@pytest.mark.docker
def test_arith_steps_checks_every_think_block(client):
    completion = "<think>1+8+8</think><think>9+9, 18</think><answer>18</answer>"
    r = client.verify("arith_steps", completion, "17", prompt="3-2+8+8=?")
    assert spans(completion, r.steps) == [(1.0, "1+8+8"), (0.0, "9+9"), (1.0, "18")]
