"""TRL's ``environment_factory`` backed by sessions (verifiers.integrations.trl_tools) against a real service.

TRL's own GRPOTrainer (trl 1.16) trains 2 steps on a tiny Qwen2 built from a config, with Qwen2.5's chat template
(which TRL parses tool calls from). A random tiny model does not call tools by itself, so its generation is steered
with ``sequence_bias`` (a plain ``GenerationConfig`` option passed through ``GRPOConfig.generation_kwargs``) to
write one fixed tool call; everything else is TRL's real loop: it parses the call, runs the environment's
``python`` tool in that rollout's session (state carries from the first call to the second), appends the output,
decodes again, and logs the environment's ``get_reward``: the session graded against the row's hidden tests.
"""

from __future__ import annotations

import json

import pytest

from verifiers.client import VerifierClient
from verifiers.integrations.trl_tools import PythonSessionEnv, format_cell, python_session_env, python_tool

pytestmark = pytest.mark.docker

CODE = "n = globals().get('n', 0) + 1\ndef sq(x): return x * x\nn"
RIGHT, WRONG = "assert sq(3) == 9\n", "assert sq(3) == 10\n"  # the second: no function passes it


def test_the_environment_runs_cells_in_its_own_session_and_grades_it(verifier_server):
    env = python_session_env(verifier_server.target, tests_column="tests", client_id="trl-unit")()
    other = python_session_env(verifier_server.target, tests_column="tests", client_id="trl-unit")()
    assert env.reset(prompt="p", tests=RIGHT, setup="base = 10", files={"in.txt": "5"}) is None
    other.reset(prompt="p", tests=WRONG)
    assert env.python("x = base + int(open('in.txt').read())\nprint('hi')\nx") == "hi\n15\n"
    assert "NameError" in other.python("x")  # the other rollout's session holds nothing of this one
    assert env.python("1/0").endswith("ZeroDivisionError: division by zero\n")
    assert env.python("import time\ntime.sleep(30)").endswith("[cell stopped: time limit]\n")
    env.python("def sq(x):\n    return x * x")
    other.python("def sq(x):\n    return x * x")
    assert (env.get_reward(), other.get_reward()) == (1.0, 0.0)
    first = env._session
    env.reset(prompt="p", tests=RIGHT)  # a pooled instance reused: the old session is closed, a new one opened
    assert env._session != first and env.get_reward() == 0.0  # nothing defined yet: the tests fail
    with VerifierClient(verifier_server.target, client_id="trl-unit") as c:
        assert {s.id for s in c.list_sessions()} == {env._session, other._session}
    env._close(), other._close()
    assert not [m for m in dir(PythonSessionEnv) if not m.startswith("_") and m not in ("reset", "python", "calls")]


def test_format_cell_cuts_long_output():
    from proto.verifier.v1 import verifier_pb2 as pb

    assert (
        format_cell(pb.ExecResponse(status="ok", stdout="x" * 50), max_chars=10)
        == "x" * 10 + "\n[... 40 characters cut]"
    )


@pytest.mark.slow
def test_trl_grpo_trainer_calls_python_in_sessions(tmp_path, verifier_server):
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    from trainer.config import TinyConfig
    from trainer.pipelines.tiny import build_model, build_tokenizer

    torch.set_num_threads(1)
    tok = build_tokenizer()
    tok.chat_template = qwen2_5_chat_template
    tok.model_max_length = 4096
    add_response_schema(tok)
    model = build_model(tok, TinyConfig(max_position_embeddings=4096), seed=0)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    call = '<tool_call>\n{"name": "python", "arguments": {"code": ' + json.dumps(CODE) + "}}\n</tool_call>"
    ids = tok(call + "<|im_end|>", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    steer = [[ids[: k + 1], 20.0 * (k + 1)] for k in range(len(ids))]  # each next token of the call wins

    rows = [
        {"prompt": [{"role": "user", "content": f"square {i}"}], "tests": RIGHT if i % 2 else WRONG} for i in range(8)
    ]
    seen: list[dict] = []

    def capture(prompts, completions, environments, tests, **kw):
        for env, comp, t in zip(environments, completions, tests, strict=True):
            outputs = [m["content"] for m in comp if m.get("role") == "tool"]
            seen.append({"calls": env.calls, "outputs": outputs, "right": t == RIGHT})
        return [0.0] * len(completions)

    logs: list[dict] = []

    class Logs(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                step_logs.append(dict(logs))

    step_logs = logs
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=600,
        temperature=1.0,
        top_k=0,
        beta=0.0,
        learning_rate=1e-4,
        max_steps=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
        max_tool_calling_iterations=2,
        generation_kwargs={"sequence_bias": steer},
        reward_weights=[0.0],
    )
    factory = python_session_env(verifier_server.target, tests_column="tests", client_id="trl-e2e")
    trainer = GRPOTrainer(
        model=str(tmp_path / "tiny"),
        reward_funcs=[capture],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        environment_factory=factory,
        callbacks=[Logs()],
    )
    trainer.train()

    assert len(seen) == 8 and len(logs) == 2, (len(seen), logs)
    for s in seen:  # two calls per rollout, in one session: the second sees the first's n
        assert s["calls"] == 2 and [o.strip() for o in s["outputs"]] == ["1", "2"], s
    for step, log in enumerate(logs):
        batch = seen[4 * step : 4 * step + 4]
        want = sum(s["right"] for s in batch) / 4
        assert log["rewards/GradedPythonSessionEnv/mean"] == pytest.approx(want), log
    with VerifierClient(verifier_server.target, client_id="trl-e2e") as c:
        open_now = c.list_sessions()
    assert len(open_now) <= 4  # the last batch's, until reset or exit closes them; earlier ones were closed


def test_the_stateless_tool_for_tools_lists(verifier_server):
    from transformers.utils import get_json_schema

    tool = python_tool(verifier_server.target, client_id="trl-stateless")
    schema = get_json_schema(tool)  # what TRL renders into the prompt
    assert schema["function"]["name"] == "python" and schema["function"]["parameters"]["required"] == ["code"]
    assert tool("x = 6\nx * 7") == "42\n"
    assert "NameError" in tool("x")  # nothing kept between calls
    with VerifierClient(verifier_server.target, client_id="trl-stateless") as c:
        assert c.list_sessions() == []  # each call's session was closed
