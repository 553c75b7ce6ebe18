"""The verl adapter (verifiers.integrations.verl) against a real service on loopback.

verl itself is not installed here, so the functions are called exactly as verl's reward managers call
them (volcengine/verl: verl/workers/reward_manager/naive.py and batch.py, verl/trainer/ppo/reward.py):
keyword arguments, ``custom_reward_function.reward_kwargs`` merged in by ``_call_with_kwargs``, numpy
object arrays from ``DataProto.non_tensor_batch``, and the returned dicts folded into ``reward_extra_info``.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierError, VerifyItem
from verifiers.integrations import client_for
from verifiers.integrations.verl import (
    UnknownDataSource,
    UnsupportedGroundTruth,
    compute_score,
    compute_score_batch,
    route_for,
)
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker

ADD = "```python\nprint(sum(map(int, input().split())))\n```"
SUB = "```python\nprint(-sum(map(int, input().split())))\n```"
IO_TESTS = json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]})


def call_with_kwargs(fn, reward_kwargs, **kwargs):
    """verl/trainer/ppo/reward.py `_call_with_kwargs`: reward_kwargs from the config win over call-time ones."""
    return fn(**{**kwargs, **reward_kwargs})


def naive_manager(fn, reward_kwargs, rows):
    """What verl's NaiveRewardManager does per row, and how it folds the dicts into reward_extra_info."""
    rewards, extra = [], defaultdict(list)
    for data_source, response, ground_truth in rows:
        extra_info = {"index": 0, "num_turns": None, "rollout_reward_scores": {}}
        score = call_with_kwargs(
            fn,
            reward_kwargs,
            data_source=data_source,
            solution_str=response,
            ground_truth=ground_truth,
            extra_info=extra_info,
        )
        rewards.append(score["score"] if isinstance(score, dict) else score)
        for k, v in score.items():
            extra[k].append(v)
    return rewards, dict(extra)


def batch_manager(fn, reward_kwargs, rows):
    """What verl's BatchRewardManager.verify passes: numpy object arrays for the non-tensor columns."""
    data_sources = np.array([r[0] for r in rows], dtype=object)
    extras = np.array([{"rollout_reward_scores": {}} for _ in rows], dtype=object)
    return call_with_kwargs(
        fn,
        reward_kwargs,
        data_sources=data_sources,
        solution_strs=[r[1] for r in rows],
        ground_truths=[r[2] for r in rows],
        extra_infos=extras,
    )


ROWS = [
    ("openai/gsm8k", "3 + 4 = 7 apples, then 7 * 10 = 70.\n#### 70", "70"),
    ("openai/gsm8k", "#### 71", "70"),
    ("DigitalLearningGmbH/MATH-lighteval", "so the answer is $\\boxed{\\frac{1}{2}}$", "0.5"),
    ("HuggingFaceH4/MATH-500", "no boxed answer", "2"),
    ("aime_2024", "\\boxed{033}", "33"),
    ("apps", ADD, IO_TESTS),
    ("codecontests", SUB, IO_TESTS),
    ("taco", ADD, json.loads(IO_TESTS)),  # the ground truth may come as a dict
]
EXPECTED = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]


def test_naive_manager_calls_one_row_at_a_time(verifier_server, monkeypatch):
    monkeypatch.setenv("VERIFIER_TARGET", verifier_server.target)  # the service is found through the environment
    rewards, extra = naive_manager(compute_score, {}, ROWS)
    assert rewards == EXPECTED
    assert extra["outcome"][:4] == ["CORRECT", "INCORRECT", "CORRECT", "NO_ANSWER"]
    assert extra["acc"] == EXPECTED and extra["graded"] == [1.0] * len(ROWS)
    assert set(extra) == {"score", "acc", "outcome", "graded", "signals"} and all(
        len(v) == len(ROWS) for v in extra.values()
    )


def test_batch_manager_gets_the_services_verdicts_in_one_call(verifier_server, client, monkeypatch):
    calls = []
    real = type(client).verify_batch

    def spy(self, items, **kw):
        items = list(items)
        calls.append(items)
        return real(self, items, **kw)

    monkeypatch.setattr(type(client), "verify_batch", spy)
    scores = batch_manager(compute_score_batch, {"target": verifier_server.target}, ROWS)
    assert [s["score"] for s in scores] == EXPECTED and len(calls) == 1
    sent = calls[0]
    assert [i.verifier for i in sent] == ["math"] * 5 + ["code"] * 3
    assert sent[0].options == {"fallback": "last_number"} and sent[5].options == {"mode": "stdio"}
    assert json.loads(sent[5].reference) == [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]
    # the same items sent straight through the client get the same verdicts: the adapter only translates
    direct = real(client, [VerifyItem(i.verifier, i.completion, i.reference, options=i.options) for i in sent])
    assert [s["outcome"] for s in scores] == [r.outcome for r in direct]
    assert [s["score"] for s in scores] == [r.reward for r in direct]


def test_routes_and_overrides_from_reward_kwargs(verifier_server):
    kw = {
        "target": verifier_server.target,
        "routes": {
            "my_format_set": "think_format",
            "myorg/math-*": {"verifier": "math", "options": {"fallback": "last_number"}},
        },
    }
    rows = [("my_format_set", "<think>a</think>b", ""), ("myorg/math-hard", "it is 12", "12")]
    assert [s["score"] for s in batch_manager(compute_score_batch, kw, rows)] == [1.0, 1.0]
    with pytest.raises(UnknownDataSource, match="'openai/gsm8k' has no verifier route.*verifier="):
        batch_manager(compute_score_batch, kw, [("openai/gsm8k", "#### 1", "1")])  # user routes replace defaults
    # verifier= names the verifier for every item, whatever the data source
    one = call_with_kwargs(
        compute_score,
        {"verifier": "think_format", "target": verifier_server.target},
        data_source="anything/else",
        solution_str="<think>x</think>y",
        ground_truth=None,
    )
    assert one == {"score": 1.0, "acc": 1.0, "outcome": "CORRECT", "graded": 1.0, "signals": ""}


def test_unknown_source_and_untranslatable_ground_truth_are_clear_errors(verifier_server):
    with pytest.raises(UnknownDataSource, match="'my/dataset' has no verifier route") as e:
        compute_score("my/dataset", "x", "1", target=verifier_server.target)
    assert "custom_reward_function.reward_kwargs" in str(e.value)
    call_based = json.dumps({"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]})
    with pytest.raises(UnsupportedGroundTruth, match="fn_name"):
        compute_score("apps", ADD, call_based, target=verifier_server.target)
    assert route_for("aime25").verifier == "math" and route_for("livecodebench/v5").verifier == "code"


@pytest.mark.slow
def test_infrastructure_failure_scores_zero_but_says_so(verifier_server, client, tmp_path):
    with LocalServer(pool_size=1, log_path=str(tmp_path / "second.log")) as second:
        far = pb.RemoteVerifier(target=second.target, verifier="math")
        client.register(pb.RegisterVerifierRequest(name="verl_gone", remote=far, replace=True))
    s = compute_score("openai/gsm8k", "#### 1", "1", verifier="verl_gone", target=verifier_server.target)
    assert s == {"score": 0.0, "acc": 0.0, "outcome": "SANDBOX_ERROR", "graded": 0.0, "signals": ""}


def test_unreachable_target_from_the_environment_is_an_error(monkeypatch):
    monkeypatch.setenv("VERIFIER_TARGET", "127.0.0.1:1")
    assert client_for().target == "127.0.0.1:1"
    with pytest.raises(VerifierError, match="UNAVAILABLE|DEADLINE_EXCEEDED"):
        compute_score("openai/gsm8k", "#### 1", "1", deadline_s=2.0)


# What verl's own grader for each data source accepts (verl/utils/reward_score/__init__.py): prime_math
# (numina_*) takes the whole response as the answer when there is no \boxed{} or "answer is" marker, and
# math_dapo (math_dapo, aime*) reads the last "Answer: ..." line. Each must be graded, not NO_ANSWER.
VERL_ACCEPTS = [
    ("numina_olympiads", "\\frac{1}{2}", "\\frac{1}{2}", "CORRECT"),
    ("numina_cn_k12", "The answer is \\frac{3}{4}", "\\frac{3}{4}", "CORRECT"),
    ("numina_synthetic_math", "$\\sqrt{2}$", "\\sqrt{2}", "CORRECT"),
    ("numina_amc_aime", "7 * 6 = 42, so the answer is 42.", "42", "CORRECT"),
    ("numina_aops_forum", "\\frac{1}{3}", "\\frac{1}{2}", "INCORRECT"),
    ("math_dapo", "Adding them up.\nAnswer: 42", "42", "CORRECT"),
    ("aime_2025", "Answer: 33", "33", "CORRECT"),
    ("aime_2025", "Answer: 34", "33", "INCORRECT"),
    ("BytedTsinghua-SIA/DAPO-Math-17k", "Answer: \\frac{1}{2}", "\\frac{1}{2}", "CORRECT"),
]


@pytest.mark.parametrize("source,response,truth,outcome", VERL_ACCEPTS, ids=[f"{c[0]}-{c[3]}" for c in VERL_ACCEPTS])
def test_routes_grade_what_verls_own_grader_accepts(verifier_server, source, response, truth, outcome):
    s = compute_score(source, response, truth, target=verifier_server.target)
    assert s["outcome"] == outcome, s
    assert s["score"] == (1.0 if outcome == "CORRECT" else 0.0)


def test_boxed_only_sources_stay_boxed_only(verifier_server):
    # verl's math.compute_score (lighteval/MATH) reads only the last \boxed{}: a bare answer is not one
    s = compute_score("lighteval/MATH", "\\frac{1}{2}", "\\frac{1}{2}", target=verifier_server.target)
    assert s["outcome"] == "NO_ANSWER"


@pytest.mark.parametrize(
    "answer, reference, outcome",
    [
        ("so the answer is $\\boxed 5$.", "5", "CORRECT"),  # verl's last_boxed_only_string reads '\boxed 5'
        ("so the answer is $\\boxed 6$.", "5", "INCORRECT"),
        ("$\\boxed 5$ (or possibly 6)", "5", "INCORRECT"),  # a hedge around a brace-less box is still a hedge
    ],
)
def test_a_brace_less_box_is_read_as_verls_math_grader_reads_it(verifier_server, answer, reference, outcome):
    s = compute_score("lighteval/MATH", answer, reference, target=verifier_server.target)
    assert s["outcome"] == outcome
