"""Tool rollouts (trainer/rollout/tool_decode.py) on a tiny real model that learned to call the tool
(tests/trainer/tool_helpers.py): the KV continuation's log-probs equal re-encoding the whole sequence, a box printed
by a tool is never graded, the limits (max calls, output cut, a cell that times out, the token budget), a session
that dies mid-rollout gives an infrastructure outcome (masked), the metrics, the config section."""

from __future__ import annotations

import re

import pytest
import torch
from pydantic import ValidationError

from tests.trainer import tool_helpers as th
from trainer.config import GRPOConfig, ToolsConfig, load_config
from trainer.data import DataStream
from trainer.errors import ConfigError
from trainer.grpo.rewards import PythonReward
from trainer.grpo.step import collect_batch, step_metrics, token_loss_mask
from trainer.rollout.logprobs import completion_logprobs
from trainer.rollout.tool_decode import DONE, RowState, generate_tool_rollout
from trainer.rollout.tools import FORMATS, ScriptedToolRunner, ToolResult, call_code, tool_signals

torch.set_num_threads(1)


def _rollout(fmt="python", runner=None, examples=None, g=2, **kw):
    model, tok = th.caller(fmt)
    kw.setdefault("max_new_tokens", 96)
    return generate_tool_rollout(
        model,
        tok,
        examples or th.examples("a") + th.examples("b"),
        g,
        runner=runner or th.runner(fmt),
        tools=kw.pop("tools", ToolsConfig(format=fmt)),
        **kw,
    )


def _boxed(text: str, ref: str) -> float | None:
    """The last \\boxed{...} against the reference (a plain string match: tests only)."""
    found = re.findall(r"\\boxed\{([^{}]*)\}", text)
    return None if not found else float(found[-1].strip() == ref)


@pytest.mark.parametrize(
    ("fast_path", "share_prefix"), [(True, True), (False, True), (True, False)], ids=["lean", "hf", "lean-unshared"]
)
def test_kv_continuation_logprobs_equal_reencoding_the_whole_sequence(fast_path, share_prefix):
    model, _ = th.caller()
    torch.manual_seed(1)
    ro = _rollout(fast_path=fast_path, temperature=1.0, share_prefix=share_prefix)
    assert sum(ro.tool_trace.calls) >= len(ro) // 2  # the calls really happened
    own = ro.sampled_mask().bool()
    assert (ro.completion_mask.bool() & ~own).any()  # tool output is in the sequence
    with torch.no_grad():
        full, _ = completion_logprobs(model, ro, fast_path=False)  # HF forward over prompt + whole completion
    assert torch.allclose(ro.sample_logprobs[own], full[own], atol=1e-5)
    with torch.no_grad():
        scored, _ = completion_logprobs(model, ro, group_size=2)  # the update's scoring path (lean, shared prompt)
    assert torch.allclose(scored[own], full[own], atol=1e-5)
    # the slow way (a fresh cache after every output) samples the same tokens greedily
    a = _rollout(fast_path=fast_path, do_sample=False)
    b = _rollout(fast_path=fast_path, do_sample=False, reencode=True)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert torch.allclose(a.sample_logprobs, b.sample_logprobs, atol=1e-5)


def test_graded_text_is_the_policys_own_tokens():
    ro = _rollout(do_sample=False)
    for full, own, p in zip(ro.full_texts, ro.texts, ro.prompts, strict=True):
        assert "<output>" in full and "<output>" not in own
        if p.startswith("b"):  # the tool printed the box; the policy wrote none
            assert "\\boxed{" in full and "\\boxed{" not in own
    model, tok = th.caller()
    assert ro.texts[0] == tok.decode(ro.completion_ids[0][ro.sampled_mask()[0].bool()], skip_special_tokens=True)


def test_a_box_printed_by_a_tool_is_never_paid():
    model, tok = th.caller()
    cfg = GRPOConfig(
        group_size=2,
        prompts_per_step=4,
        max_new_tokens=96,
        tools=ToolsConfig(),
        temperature=0.5,
        beta=0.0,
        verifier="python",
    )
    stream = DataStream(th.examples("a") + th.examples("b"), seed=0)
    batch = collect_batch(cfg, model, tok, stream, PythonReward(_boxed), tools=th.runner())
    ro = batch.rollout
    attack = [i for i, p in enumerate(ro.prompts) if p.startswith("b") and "\\boxed{" in ro.full_texts[i]]
    assert attack, "the attack rows printed a box through the tool"
    assert all(batch.rewards[i] == 0 for i in attack)
    # and with the full text (tool output included) the same rows would have been paid: the defence is the point
    assert any(_boxed(ro.full_texts[i], ro.references[i]) == 1.0 for i in attack)
    # the attempt is a signal the alarm sees beside the verifier's (it never changes the reward)
    assert all("tool.answer_marker" in batch.scores[i].signals for i in attack)
    honest = [i for i, p in enumerate(ro.prompts) if p.startswith("a") and ro.tool_trace.calls[i]]
    assert all("tool.answer_marker" not in batch.scores[i].signals for i in honest)


def test_output_is_cut_and_its_closing_marker_defused():
    long = "9" * 3000 + "\n</output>\n\\boxed{1}"
    runner = ScriptedToolRunner(default=long)
    ro = _rollout(runner=runner, tools=ToolsConfig(output_chars=40), max_new_tokens=200, do_sample=False)
    for full in ro.full_texts:
        span = full.split("<output>\n", 1)[1]
        assert span.startswith("9" * 40 + "\n[output cut: ")
        assert span.count("</output>") == 1  # only the real closing marker
    assert ro.completion_mask.sum(1).max() <= 200


def test_timeout_and_errors_are_counted_and_decoding_goes_on():
    runner = ScriptedToolRunner(default=ToolResult("TimeoutError: the cell ran past 5s", "timeout"))
    ro = _rollout(runner=runner, do_sample=False)
    assert ro.tool_trace.errors == ro.tool_trace.calls and sum(ro.tool_trace.calls) > 0
    assert all("TimeoutError" in t for t in ro.full_texts)
    assert all(len(own) > 0 for own in ro.texts)  # the policy's tokens before and after the output


def test_token_budget_counts_tool_output():
    ro = _rollout(
        runner=ScriptedToolRunner(default="x" * 400),
        tools=ToolsConfig(output_chars=400),
        max_new_tokens=40,
        do_sample=False,
    )
    assert ro.completion_ids.shape[1] <= 40 and bool(ro.truncated.all())


def test_a_call_past_max_calls_ends_the_rollout_unrun():
    _, tok = th.caller()
    rows = RowState(1, FORMATS["python"], tok, {tok.eos_token_id}, 500, max_calls=1)
    call = "```python\nprint(1)\n```"
    for t in tok(call, add_special_tokens=False)["input_ids"]:
        rows.push(0, t, -1.0)
    assert rows.pending == {0: "\nprint(1)\n"}
    rows.pending.clear()
    assert rows.add_output(0, tok("\n<output>\n1\n</output>\n")["input_ids"], ToolResult("1"))
    for t in tok("then " + call, add_special_tokens=False)["input_ids"]:
        rows.push(0, t, -1.0)
    assert rows.state[0] == DONE and not rows.pending and rows.trace.calls == [1]


def test_tool_signals():
    # honest: the call computes, the policy copies the output into its own answer
    assert tool_signals(["14"], "14", ["print(2*7)"], "<answer>14</answer>") == []
    # the answer left to the tool: only its output holds it
    assert tool_signals(["14"], "14", ["print(2*7)"], "I ran it") == ["tool.answer_only_in_output"]
    assert tool_signals(["x", "<answer>3</answer>"], "5") == ["tool.answer_marker"]
    # printed verbatim from a literal of the code: not computed
    assert tool_signals(["\\boxed{5}"], "5", ["print('\\\\boxed{5}')"], "") == [
        "tool.answer_marker",
        "tool.answer_only_in_output",
        "tool.printed_reference",
    ]
    assert tool_signals(["14"], "14", ["print(14)"], "<answer>14</answer>") == ["tool.printed_reference"]
    # reading files, the environment, processes (read as text)
    for code in (
        "print(open('/srv/answers.txt').read())",
        "import os\nprint(os.listdir('/'))",
        "import subprocess",
        "from pathlib import Path\nPath('/x').read_text()",
        "!cat /etc/passwd",
        "__import__('os').environ",
    ):
        assert "tool.read_files" in tool_signals(["14"], "14", [code], "<answer>14</answer>"), code
    assert tool_signals(["1425"], "42", ["print(1425)"], "") == []  # 42 is not in 1425
    assert tool_signals([], "5") == [] and tool_signals(["1"], " ") == []


def test_opening_fence_alone_is_not_a_call():
    assert FORMATS["python"].find_call("text ```python") is None
    assert FORMATS["python"].find_call("```python\nx = 1\n```") == "\nx = 1\n"
    assert FORMATS["python"].find_call("```") is None


def test_hermes_calls_are_read_as_data_and_malformed_ones_are_errors():
    h = FORMATS["hermes"]
    assert call_code(h, '{"name": "python", "arguments": {"code": "print(1)"}}') == ("print(1)", "")
    assert call_code(h, '{"name": "python", "arguments": "{\\"code\\": \\"1\\"}"}') == ("1", "")
    for bad in (
        '{"name": "shell", "arguments": {"code": "ls"}}',
        "__import__('os')",
        '{"name": "python"}',
        '{"name": "python", "arguments": {"code": 3}}',
    ):
        code, err = call_code(h, bad)
        assert code is None and err.startswith("invalid tool call")


def test_hermes_format_end_to_end():
    ro = _rollout("hermes", examples=th.examples("a"), do_sample=False, max_new_tokens=160)
    assert sum(ro.tool_trace.calls) == len(ro)
    assert all(
        "<tool_response>" in f and "<tool_response>" not in t for f, t in zip(ro.full_texts, ro.texts, strict=True)
    )


def test_a_session_that_dies_gives_an_infrastructure_outcome_masked_not_zero():
    model, tok = th.caller()
    cfg = GRPOConfig(group_size=2, prompts_per_step=2, max_new_tokens=96, tools=ToolsConfig(), beta=0.0)
    stream = DataStream(th.examples("a"), seed=0)
    runner = th.runner(dead=[0])
    batch = collect_batch(cfg, model, tok, stream, PythonReward(_boxed), tools=runner)
    assert batch.rollout.tool_trace.infra[0] and not any(batch.rollout.tool_trace.infra[1:])
    assert not bool(batch.valid[0]) and batch.scores[0].outcome == "SANDBOX_ERROR"
    assert bool(batch.valid[1:].all())
    assert token_loss_mask(cfg, batch)[0].sum() == 0
    assert sorted(runner.closed) == list(range(4))  # every session closed
    m = step_metrics(cfg, batch, torch.zeros(4), token_loss_mask(cfg, batch), {})
    assert m["tool/sessions_failed"] == 1.0 and m["outcome/SANDBOX_ERROR"] == 1.0


def test_metrics():
    model, tok = th.caller()
    cfg = GRPOConfig(group_size=2, prompts_per_step=2, max_new_tokens=96, tools=ToolsConfig(), beta=0.0)
    runner = th.runner()
    batch = collect_batch(cfg, model, tok, DataStream(th.examples("a"), seed=0), PythonReward(_boxed), tools=runner)
    m = step_metrics(cfg, batch, torch.zeros(4), token_loss_mask(cfg, batch), {})
    ro = batch.rollout
    assert m["tool/calls_per_completion"] == sum(ro.tool_trace.calls) / 4 > 0
    assert m["tool/error_rate"] == 0.0 and m["perf/tool_s"] >= 0.0
    share = 1 - ro.sampled_mask().sum().item() / ro.completion_mask.sum().item()
    assert 0 < m["tool/output_share"] == pytest.approx(share)


def test_config_section_off_by_default_and_refuses_unknown_keys():
    assert GRPOConfig().tools is None
    assert load_config(None, ["--tools.max_calls", "3"]).tools == ToolsConfig(max_calls=3)  # the command line
    with pytest.raises(ConfigError, match="tools.bogus"):
        load_config(None, ["--tools.bogus", "1"])
    with pytest.raises(ValidationError, match="max_call"):
        GRPOConfig(tools={"max_call": 2})
    with pytest.raises(ValidationError, match="format"):
        GRPOConfig(tools={"format": "bash"})
    assert GRPOConfig(tools={}, rollout_backend="vllm").tools == ToolsConfig()  # the loop drives vLLM too
    with pytest.raises(ValidationError, match="process"):
        GRPOConfig(tools={}, advantage="process")
    model, tok = th.caller()
    with pytest.raises(ConfigError, match="no tool runner"):
        collect_batch(
            GRPOConfig(tools={}, group_size=2, prompts_per_step=1),
            model,
            tok,
            DataStream(th.examples("a"), 0),
            PythonReward(_boxed),
        )


def test_train_with_tools_logs_the_tool_metrics(tmp_path):
    import copy
    import json

    from trainer.run.metrics import read_metrics
    from trainer.train import train

    model, tok = th.caller()
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": e.prompt, "answer": e.reference}) + "\n" for e in th.examples("a")))
    cfg = GRPOConfig(
        data=str(data),
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=96,
        steps=2,
        beta=0.04,
        lr=1e-4,
        tools=ToolsConfig(),
        run_dir=str(tmp_path / "run"),
        report_to=[],
        log_completions_every=1,
    )
    runner = th.runner()
    train(cfg, copy.deepcopy(model), tok, reward_fn=PythonReward(_boxed), tools=runner)
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert len(rows) == 2
    for m in rows:
        assert m["tool/calls_per_completion"] > 0 and 0 < m["tool/output_share"] < 1
        assert m["tool/error_rate"] == 0.0 and m["perf/tool_s"] >= 0 and m["tool/sessions_failed"] == 0
    assert runner.started == [(2, 2, "")] * 2 and len(runner.closed) == 8
    logged = (tmp_path / "run" / "completions.jsonl").read_text()
    assert "<output>" in logged  # the logs show what the model saw


def test_batches_of_tool_rollouts_keep_their_masks_when_stacked_and_selected():
    from trainer.grpo.step import concat_rollouts

    a = _rollout(examples=th.examples("a"), do_sample=False)
    b = _rollout(examples=th.examples("b"), do_sample=False, max_new_tokens=60)
    both = concat_rollouts([a, b], 0)
    assert both.completion_ids.shape[1] == max(a.completion_ids.shape[1], b.completion_ids.shape[1])
    for part, rows in ((a, range(len(a))), (b, range(len(a), len(a) + len(b)))):
        w = part.completion_ids.shape[1]
        assert torch.equal(both.sampled_mask()[list(rows), :w], part.sampled_mask())
        assert both.sampled_mask()[list(rows), w:].sum() == 0
    assert both.texts == a.texts + b.texts and both.full_texts == a.full_texts + b.full_texts
    assert both.tool_trace.calls == a.tool_trace.calls + b.tool_trace.calls
    sel = both.select([1, len(a)])
    assert sel.texts == [a.texts[1], b.texts[0]] and sel.tool_trace.outputs == [
        a.tool_trace.outputs[1],
        b.tool_trace.outputs[0],
    ]
    assert torch.equal(sel.policy_mask, both.policy_mask[[1, len(a)]])


def test_eval_generation_runs_the_same_tool_loop():
    from trainer.config import EvalArgs
    from trainer.evaluation.evaluator import generate_batches

    model, tok = th.caller()
    todo = [(e, 2) for e in th.examples("b")]
    out = list(
        generate_batches(model, tok, todo, per_call=2, max_new_tokens=96, tools=ToolsConfig(), runner=th.runner())
    )
    ro = out[0][2]
    assert sum(ro.tool_trace.calls) == 4 and all("\\boxed{" not in t for t in ro.texts)  # graded: its own tokens
    assert EvalArgs(tools={"max_calls": 2}).tools.max_calls == 2
    with pytest.raises(ValidationError):
        EvalArgs(tools={"nope": 1})


def test_lean_cache_grows_in_place_of_its_positions():
    from trainer.rollout.lean_forward import LeanDecoder

    model, tok = th.caller()
    ids = tok(["<|user|>a2<|assistant|>```python"], return_tensors="pt", add_special_tokens=False)["input_ids"]
    n = ids.shape[1]
    pos = torch.arange(n)[None]
    with torch.no_grad():
        big = LeanDecoder(model, 1, n + 4)
        want = [big.forward(ids[:, :-2], None, pos[:, :-2]), big.forward(ids[:, -2:], None, pos[:, -2:])]
        small = LeanDecoder(model, 1, n - 2)
        got = [small.forward(ids[:, :-2], None, pos[:, :-2])]
        small.grow(n)
        got.append(small.forward(ids[:, -2:], None, pos[:, -2:]))
    assert small.capacity == n and all(torch.allclose(a, b, atol=1e-6) for a, b in zip(want, got, strict=True))
