"""Rollout backends (trainer/rollout/backends.py, trainer/rollout/vllm.py).

On the CPU: the ``hf`` backend is ``generate_rollout`` (same tokens for the same seed); an unknown
backend and an unusable ``vllm`` (no package or no GPU) are clear errors; an engine's token lists become
a Rollout with the hf path's masks; vLLM's sampling settings are the hf path's.
With a GPU and vllm installed (skipped otherwise, with the reason): greedy vLLM rollouts equal greedy
hf rollouts of the same policy, before and after its weights change and are pushed.
"""

from __future__ import annotations

import pytest
import torch

from tests.parts import missing, skip_unless
from trainer.config import TinyConfig
from trainer.data import Example
from trainer.errors import BackendError
from trainer.pipelines import tiny
from trainer.rollout.backends import make_backend
from trainer.rollout.decode import generate_rollout
from trainer.rollout.vllm import rollout_from_ids, sampling_kwargs

EXAMPLES = [Example("1+2=", "3"), Example("10+20=", "30")]


def _policy():
    tok = tiny.build_tokenizer()
    return tiny.build_model(tok, TinyConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=64)), tok


def test_hf_backend_samples_what_generate_rollout_samples():
    model, tok = _policy()
    kw = dict(max_new_tokens=10, temperature=0.9, top_p=0.95, use_chat_template=True)
    torch.manual_seed(3)
    direct = generate_rollout(model, tok, EXAMPLES, 3, **kw)
    torch.manual_seed(3)
    via = make_backend("hf", model, tok).generate(EXAMPLES, 3, **kw)
    assert torch.equal(via.completion_ids, direct.completion_ids) and via.texts == direct.texts


def test_unknown_backend_and_unusable_vllm_are_clear_errors():
    model, tok = _policy()
    with pytest.raises(BackendError, match="one of \\['hf', 'vllm'\\]"):
        make_backend("sglang", model, tok)
    if not missing("vllm"):  # a declared optional part (tests/parts.py), decided from the host's facts
        pytest.skip("optional part vllm present (and a GPU): nothing to refuse")
    with pytest.raises(BackendError, match="vllm"):
        make_backend("vllm", model, tok, model_path="unused")


def test_engine_token_lists_become_a_rollout_with_the_hf_masks():
    _, tok = _policy()
    eos = tok.eos_token_id
    one, two, x = tok.convert_tokens_to_ids(["1", "2", "x"])
    prompts = [[one, two], [two]]
    completions = [[x, eos], [x, x, x], [eos], [x]]  # G=2: rows 0,1 for prompt 0; rows 2,3 for prompt 1
    ro = rollout_from_ids(tok, EXAMPLES, 2, prompts, completions, [eos])
    assert ro.prompt_ids.tolist()[2] == [tok.pad_token_id, two] and ro.prompt_mask.tolist()[2] == [0, 1]
    assert ro.completion_mask.tolist() == [[1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 0, 0]]
    assert ro.truncated.tolist() == [False, True, False, True]
    assert ro.texts == ["x", "xxx", "", "x"] and ro.references == ["3", "3", "30", "30"]
    with pytest.raises(BackendError, match="3 completions for 2 prompts"):
        rollout_from_ids(tok, EXAMPLES, 2, prompts, completions[:3], [eos])


def test_vllm_sampling_settings_are_the_hf_paths():
    kw = sampling_kwargs(8, max_new_tokens=64, eos_ids=[2, 7], temperature=0.7, top_p=0.9)
    assert kw["n"] == 8 and kw["temperature"] == 0.7 and kw["top_p"] == 0.9 and kw["max_tokens"] == 64
    assert kw["top_k"] == 0 and kw["min_p"] == 0.0 and kw["repetition_penalty"] == 1.0
    assert kw["presence_penalty"] == 0.0 and kw["frequency_penalty"] == 0.0
    assert kw["stop_token_ids"] == [2, 7] and kw["ignore_eos"] is False
    assert sampling_kwargs(1, max_new_tokens=4, eos_ids=[2], do_sample=False)["temperature"] == 0.0


@skip_unless("vllm")
def test_vllm_greedy_rollouts_equal_hf_before_and_after_a_weight_push(tmp_path):
    folder = tiny.build(tmp_path / "m")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).cuda()
    tok = AutoTokenizer.from_pretrained(folder)
    backend = make_backend("vllm", model, tok, model_path=str(folder), gpu_memory_utilization=0.2)
    try:
        kw = dict(max_new_tokens=16, do_sample=False, use_chat_template=True)
        for _ in range(2):
            hf = generate_rollout(model, tok, EXAMPLES, 1, **kw)
            vl = backend.generate(EXAMPLES, 1, **kw)
            assert vl.texts == hf.texts
            with torch.no_grad():  # an "update": the next round must see it through sync_weights
                for p in model.parameters():
                    p.add_(torch.randn_like(p) * 0.05)
            backend.sync_weights(model)
    finally:
        backend.close()
