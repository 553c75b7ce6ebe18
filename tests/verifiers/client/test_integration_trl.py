"""The TRL adapter (verifiers.integrations.trl) against a real service on loopback.

- TRL's own GRPOTrainer (trl 1.16) trains 2 steps on a tiny Qwen2 built from a config with our reward
  function, and the rewards TRL logged are the service's verdicts for exactly the completions TRL passed
  (captured by a second, zero-weight reward function and graded again through the client);
- the async variant is detected and awaited by TRL; a verifier whose infrastructure fails gives None, which
  TRL keeps out of its statistics (its logged mean is None, not 0.0);
- plain-text and conversational completions, per-row options from dataset columns, one VerifyBatch per call,
  a missing answer column is a clear error.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierClient, VerifyItem, VerifyResult
from verifiers.integrations import OUTCOMES
from verifiers.integrations.trl import RewardFunction, async_reward_function, completion_text, reward_function
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def broken_verifier(verifier_server, client, tmp_path_factory):
    """A remote verifier whose server is gone: every verdict is SANDBOX_ERROR (infrastructure, not the model)."""
    log = tmp_path_factory.mktemp("second") / "second.log"
    with LocalServer(pool_size=1, log_path=str(log)) as second:
        far = pb.RemoteVerifier(target=second.target, verifier="tag_count")
        client.register(pb.RegisterVerifierRequest(name="trl_gone", remote=far, replace=True))
    return "trl_gone"


def test_plain_and_conversational_completions_get_the_services_verdicts(verifier_server, client):
    f = reward_function("math", target=verifier_server.target)
    texts = ["so \\boxed{\\frac{1}{2}}", "\\boxed{3}", "no answer here", "<think>x</think>\\boxed{7}"]
    answers = ["0.5", "4", "1", 7]  # dataset cells need not be strings
    want = [
        r.reward
        for r in client.verify_batch([VerifyItem("math", t, str(a)) for t, a in zip(texts, answers, strict=True)])
    ]
    assert want == [1.0, 0.0, 0.0, 1.0]
    assert f(prompts=["q"] * 4, completions=texts, answer=answers) == want
    chat = [[{"role": "assistant", "content": t}] for t in texts]
    chat[0] = [{"role": "assistant", "content": "\\boxed{9}"}, {"role": "tool", "content": "ok"},
               {"role": "assistant", "content": texts[0]}]  # fmt: skip  # the last assistant message is graded
    prompts = [[{"role": "user", "content": "what is 1/2?"}]] * 4
    assert f(prompts=prompts, completions=chat, answer=answers) == want
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "\\boxed{1}"}]}]) == "\\boxed{1}"


def test_one_batched_call_per_invocation(verifier_server, monkeypatch):
    calls = []
    real = VerifierClient.verify_batch

    def spy(self, items, **kw):
        items = list(items)
        calls.append(len(items))
        return real(self, items, **kw)

    monkeypatch.setattr(VerifierClient, "verify_batch", spy)
    monkeypatch.setattr(VerifierClient, "verify", lambda *a, **k: pytest.fail("single Verify call"))
    f = reward_function("think_format", target=verifier_server.target, answer_column=None)
    out = f(prompts=["p"] * 64, completions=["<think>a</think>b", "b"] * 32)
    assert out == [1.0, 0.0] * 32 and calls == [64]


def test_infrastructure_failures_are_none_and_logged(verifier_server, broken_verifier):
    logged: dict[str, float] = {}
    extra: dict[str, list] = {}
    f = reward_function(broken_verifier, target=verifier_server.target, answer_column=None)
    out = f(prompts=["p"] * 3, completions=["<think>"] * 3, log_metric=logged.__setitem__, log_extra=extra.__setitem__)
    assert out == [None, None, None]
    assert logged[f"{broken_verifier}/outcome/SANDBOX_ERROR"] == 1.0 and sum(logged.values()) == 1.0
    assert len(logged) == len(OUTCOMES)  # every outcome every call, so TRL's per-name averages are not biased
    assert extra == {f"{broken_verifier}_outcome": ["SANDBOX_ERROR"] * 3, f"{broken_verifier}_signals": [""] * 3}
    # BAD_REFERENCE (the reference cannot be graded) is not the model's fault either
    results = [VerifyResult(0.0, o) for o in ("BAD_REFERENCE", "INCORRECT", "TIMEOUT", "CORRECT")]
    assert f.rewards(results) == [None, 0.0, 0.0, 0.0]


def test_per_row_options_and_a_missing_column(verifier_server):
    f = reward_function("math", target=verifier_server.target, option_columns=["fallback"])
    out = f(prompts=["p"] * 2, completions=["the answer is 3"] * 2, answer=["3", "3"], fallback=["last_number", "none"])
    assert out == [1.0, 0.0]
    with pytest.raises(KeyError, match="no column 'solution'.*answer_column="):
        reward_function("math", answer_column="solution")(prompts=["p"], completions=["x"], answer=["1"])


def test_async_variant_matches_and_trl_detects_it(verifier_server):
    from trl.trainer.utils import get_callable_name, is_async_callable

    sync = reward_function("math", target=verifier_server.target, name="math_reward")
    asyn = async_reward_function("math", target=verifier_server.target)
    args = dict(prompts=["p"] * 2, completions=["\\boxed{2}", "\\boxed{3}"], answer=["2", "2"])
    assert asyncio.run(asyn(**args)) == sync(**args) == [1.0, 0.0]
    assert is_async_callable(asyn) and not is_async_callable(sync)
    assert get_callable_name(sync) == "math_reward" and get_callable_name(asyn) == "math"


# ---------------------------------------------------------------------------------------------
# TRL's own GRPOTrainer
# ---------------------------------------------------------------------------------------------


class Capture:
    """A zero-weight reward function beside ours: records the completions TRL passes, changes nothing."""

    __name__ = "capture"

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, prompts, completions, **kw):
        self.calls.append(list(completions))
        return [0.0] * len(completions)


def test_trl_grpo_trainer_logs_the_services_rewards(tmp_path, verifier_server, client, broken_verifier):
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from trainer.pipelines.tiny import build

    torch.set_num_threads(1)
    model = str(build(tmp_path / "tiny", seed=0))  # TRL loads its reference model from the same folder
    tok = AutoTokenizer.from_pretrained(model)
    data = Dataset.from_list([{"prompt": f"{a}+{a + 1}=", "answer": str(2 * a + 1)} for a in range(10, 26)])
    step_logs: list[dict] = []

    class Logs(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                step_logs.append(dict(logs))

    ours = reward_function("tag_count", target=verifier_server.target, answer_column=None)
    gone = async_reward_function(broken_verifier, target=verifier_server.target, answer_column=None)
    capture = Capture()
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=16,
        temperature=1.0,
        top_k=0,
        beta=0.04,
        learning_rate=1e-3,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
        reward_weights=[1.0, 1.0, 0.0],
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[ours, gone, capture],
        args=args,
        train_dataset=data,
        processing_class=tok,
        callbacks=[Logs()],
    )
    trainer.train()

    assert len(capture.calls) == 2 and len(step_logs) == 2 and all(len(c) == 8 for c in capture.calls)
    graded = [
        [r.reward for r in client.verify_batch([VerifyItem("tag_count", c) for c in call])] for call in capture.calls
    ]
    assert any(r > 0 for call in graded for r in call), graded  # a non-trivial check: some tags were sampled
    for log, rewards in zip(step_logs, graded, strict=True):
        mean = sum(rewards) / len(rewards)
        assert log["rewards/tag_count/mean"] == pytest.approx(mean, abs=1e-6)
        assert log["reward"] == pytest.approx(mean, abs=1e-6)  # the None rows of trl_gone add nothing
        assert log[f"rewards/{broken_verifier}/mean"] is None  # all None: not a fake 0.0
        assert log[f"{broken_verifier}/outcome/SANDBOX_ERROR"] == 1.0
        fractions = [v for k, v in log.items() if k.startswith("tag_count/outcome/")]
        assert math.isclose(sum(fractions), 1.0)


def test_reward_function_is_a_plain_picklable_object():
    import pickle

    f = reward_function("math", target="127.0.0.1:1", options={"fallback": "last_number"})
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, RewardFunction) and g.options == {"fallback": "last_number"} and g.__name__ == "math"
