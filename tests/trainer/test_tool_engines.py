"""Issue 54: the tool loop drives any generator with the ``ToolEngine`` contract (trainer/rollout/tool_engines.py).
The contract a serving engine such as vLLM meets (``ResubmitEngine``: each round resends a row's whole sequence
with the call's stop marker as a stop string) is checked here on a CPU with the policy itself serving it
(``hf_generate``): the same tokens, the same masks, the same graded texts and the same log-probs as the hf path's
KV engine, for the python and hermes call shapes. vLLM's own request (``tool_sampling_kwargs``) is checked as data.
vLLM itself is not installed here: the GPU check is bench/training/gpu_check.py's."""

from __future__ import annotations

import pytest
import torch

from tests.trainer import tool_helpers as th
from trainer.config import ToolsConfig
from trainer.rollout.decode_loop import eos_token_ids
from trainer.rollout.tool_decode import generate_tool_rollout
from trainer.rollout.tool_engines import ResubmitEngine, hf_generate, prompt_lists
from trainer.rollout.tools import FORMATS
from trainer.rollout.vllm import tool_sampling_kwargs


@pytest.mark.parametrize("fmt", ["python", "hermes"])
def test_a_stateless_engine_gives_what_the_kv_engine_gives(fmt):
    model, tok = th.caller(fmt)
    tools = ToolsConfig(format=fmt, max_calls=2)
    kw = dict(runner=th.runner(fmt), tools=tools, max_new_tokens=160, do_sample=False)
    ex = th.examples("a") + th.examples("b")
    kv = generate_tool_rollout(model, tok, ex, 2, **kw)
    serve = hf_generate(model, tok, eos_token_ids(model, tok))
    calls = []

    def counted(seqs, max_new, sampling):
        calls.append(len(seqs))
        assert sampling["stop"] == [FORMATS[fmt].stop]
        return serve(seqs, max_new, sampling)

    rs = generate_tool_rollout(
        model,
        tok,
        ex,
        2,
        **kw,
        engine=lambda ids, attn, rows: ResubmitEngine(counted, prompt_lists(ids, attn), FORMATS[fmt].stop),
    )
    assert torch.equal(rs.completion_ids, kv.completion_ids) and torch.equal(rs.policy_mask, kv.policy_mask)
    assert torch.equal(rs.completion_mask, kv.completion_mask)
    assert rs.texts == kv.texts and rs.full_texts == kv.full_texts and rs.tool_trace.calls == kv.tool_trace.calls
    torch.testing.assert_close(rs.sample_logprobs, kv.sample_logprobs, atol=1e-5, rtol=0)
    assert len(calls) >= 2 and sum(kv.tool_trace.calls) > 0  # it resent the rows after their calls


def test_vllm_tool_request_stops_at_the_call_and_keeps_the_marker():
    kw = tool_sampling_kwargs(40, ["```"], do_sample=True, temperature=0.7, top_p=0.9, eos_ids=[2])
    assert kw["n"] == 1 and kw["max_tokens"] == 40 and kw["stop"] == ["```"] and kw["include_stop_str_in_output"]
    assert kw["detokenize"] and kw["stop_token_ids"] == [2] and kw["temperature"] == 0.7 and kw["top_p"] == 0.9
    assert kw["top_k"] == 0 and kw["repetition_penalty"] == 1.0 and kw["logprobs"] == 0
    assert tool_sampling_kwargs(8, ["x"], do_sample=False, eos_ids=[2])["temperature"] == 0.0
