"""trainer/rollout/replay.py: the training forward that takes its matmul products from the decode's recording.

Against the HF model's own forward (the ordinary path of completion_logprobs), on a tiny Qwen2 (GQA, q/k/v
biases, tied embeddings) and a tiny Llama (biases incl. o_proj, untied), prompts shared or not, left
padding, rows ending at different steps, temperature 1.2:
- log-probs and entropies equal to 1e-5, every parameter's gradient to 1e-5 relative;
- a subset of whole groups (a micro-batch) replays its rows;
- after the weights change (an optimizer step) the recording is stale: the ordinary forward runs;
- a GRPO step (run_step) with the recording moves the weights exactly as without it;
- scoring without gradients (the reference, the old policy) runs the same lean forward in full: the
  HF forward's log-probs to 1e-5.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import trainer.rollout.decode_loop as decode_mod
import trainer.rollout.logprobs as logprobs_mod
from tests.trainer.test_lean_forward import MODELS
from tests.trainer.test_train_step import parts
from trainer.data import Example
from trainer.grpo.step import run_step
from trainer.pipelines.tiny import build_tokenizer
from trainer.rollout.decode import generate_rollout
from trainer.rollout.logprobs import completion_logprobs
from trainer.rollout.replay import Recording, replay_logits

torch.set_num_threads(1)
G = 4
EXAMPLES = [Example("1+2=", "3"), Example("12+30=", "42"), Example("99-1=", "98")]


def _rollout(arch: str, share_prefix: bool):
    tok = build_tokenizer()
    model = MODELS[arch](vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, *tok.convert_tokens_to_ids(["1", "="])]
    model.train()
    torch.manual_seed(5)
    kw = {"max_new_tokens": 10, "temperature": 1.2, "use_chat_template": False, "share_prefix": share_prefix}
    ro = generate_rollout(model, tok, EXAMPLES, G, record=True, **kw)
    assert ro.replay is not None and ro.truncated.any() and not ro.truncated.all()
    assert (ro.prompt_mask == 0).any()  # left padding
    return model, ro


def _logprobs_and_grads(model, ro, rows, replay: bool):
    """Log-probs, entropies and every parameter's gradient of a token-weighted sum of the log-probs."""
    saved = ro.replay
    ro.replay = saved if replay else None
    calls: list[str] = []
    real = replay_logits
    logprobs_mod.replay_logits = _counting(calls)
    try:
        model.zero_grad(set_to_none=True)
        lp, ent = completion_logprobs(model, ro, temperature=1.2, with_entropy=True, rows=rows, group_size=G)
        weights = torch.linspace(-1.0, 2.0, lp.numel()).view_as(lp)  # every token counts differently
        (lp * weights * ro.completion_mask[rows]).sum().backward()
    finally:
        logprobs_mod.replay_logits = real
        ro.replay = saved
    assert calls == (["replay"] if replay else [])  # the recording was used exactly when it was there
    return lp.detach(), ent, {n: p.grad.clone() for n, p in model.named_parameters()}


def _assert_same(a, b, mask):
    (lp_a, ent_a, g_a), (lp_b, ent_b, g_b) = a, b
    m = mask.bool()
    assert torch.allclose(lp_a[m], lp_b[m], atol=1e-5, rtol=0), (lp_a - lp_b)[m].abs().max()
    assert torch.allclose(ent_a[m], ent_b[m], atol=1e-5, rtol=0)
    for name, grad in g_b.items():
        err = ((g_a[name] - grad).norm() / grad.norm().clamp(min=1e-12)).item()
        assert err < 1e-5, (name, err)


@pytest.mark.parametrize("arch", list(MODELS))
@pytest.mark.parametrize("share_prefix", [True, False])
def test_replayed_forward_equals_the_hf_forward(arch, share_prefix):
    model, ro = _rollout(arch, share_prefix)
    rows = torch.arange(len(ro))
    assert ro.replay.usable(model, ro.completion_ids.shape[1])
    got = _logprobs_and_grads(model, ro, rows, replay=True)
    want = _logprobs_and_grads(model, ro, rows, replay=False)
    _assert_same(got, want, ro.completion_mask)


@pytest.mark.parametrize("groups", [[1, 2], [2, 0]])
def test_a_minibatch_of_whole_groups_replays_its_rows(groups):
    """Rows of whole groups, in order or shuffled (minibatches > 1 shuffle the groups)."""
    model, ro = _rollout("qwen2", share_prefix=True)
    rows = torch.tensor([gi * G + j for gi in groups for j in range(G)])
    got = _logprobs_and_grads(model, ro, rows, replay=True)
    want = _logprobs_and_grads(model, ro, rows, replay=False)
    _assert_same(got, want, ro.completion_mask[rows])


def test_a_stale_recording_is_not_used():
    """After an optimizer step the products belong to the old weights: the ordinary forward runs, and the
    log-probs are the new weights' (they differ from the recording's)."""
    model, ro = _rollout("qwen2", share_prefix=True)
    rows = torch.arange(len(ro))
    before = _logprobs_and_grads(model, ro, rows, replay=True)
    torch.optim.AdamW(model.parameters(), lr=1e-2).step()  # the gradients of the call above
    assert not ro.replay.usable(model, ro.completion_ids.shape[1])
    after = _logprobs_and_grads(model, ro, rows, replay=False)
    m = ro.completion_mask.bool()
    assert (before[0][m] - after[0][m]).abs().max() > 1e-3
    lp, _ = completion_logprobs(model, ro, temperature=1.2, rows=rows, group_size=G)
    assert torch.allclose(lp.detach()[m], after[0][m], atol=1e-6, rtol=0)


def _counting(calls: list[str]):
    """trainer.rollout.replay.replay_logits, noting each call in ``calls``: "replay" (from a recording) or "lean"."""
    from trainer.rollout.replay import replay_logits

    def counted(*a, **kw):
        calls.append("replay" if kw.get("recording") is not None else "lean")
        return replay_logits(*a, **kw)

    return counted


def test_a_grpo_step_moves_the_weights_as_without_the_recording(tmp_path, monkeypatch):
    """run_step twice from one seed, the decode recording or not: the same weights after two steps, to 1e-6
    while they moved by more than 1e-3. Plain SGD, whose step is the gradient itself (AdamW's first step is
    sign(gradient) * lr, which float rounding flips where a gradient is ~0)."""
    weights = []
    start = [t.detach().clone() for t in parts(tmp_path / "start").model.parameters()]
    for keep in (True, False):
        if not keep:
            monkeypatch.setattr(Recording, "fits", staticmethod(lambda *a: False))
        used: list[str] = []
        monkeypatch.setattr(logprobs_mod, "replay_logits", _counting(used))
        p = parts(tmp_path / str(keep))
        sgd = torch.optim.SGD(p.model.parameters(), lr=0.5)
        p = dataclasses.replace(p, optimizer=sgd, scheduler=torch.optim.lr_scheduler.LambdaLR(sgd, lambda i: 1.0))
        run_step(p, 1), run_step(p, 2)
        p.logger.close()
        assert ("replay" in used) == keep and "lean" in used  # the reference pass is the lean forward
        weights.append([t.detach().clone() for t in p.model.parameters()])
    assert max((a - s).abs().max().item() for a, s in zip(weights[0], start, strict=True)) > 1e-3
    for a, b in zip(*weights, strict=True):
        assert torch.allclose(a, b, atol=1e-6, rtol=0), (a - b).abs().max()


def test_model_generate_and_hf_forward_rollouts_keep_no_recording(monkeypatch):
    """Only the lean decoder records: a rollout from the HF forward has nothing to replay."""
    monkeypatch.setattr(decode_mod, "lean_supported", lambda m: False)
    tok = build_tokenizer()
    model = MODELS["qwen2"](vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    ro = generate_rollout(model, tok, EXAMPLES, G, max_new_tokens=4, use_chat_template=False, record=True)
    assert ro.replay is None


@pytest.mark.parametrize("arch", list(MODELS))
@pytest.mark.parametrize("group_size", [G, 0])
def test_scoring_without_gradients_takes_the_lean_forward(arch, group_size, monkeypatch):
    """A reference-model pass (inference_mode, no recording): the lean forward computes the log-probs the
    HF forward does, for shared prompts and not."""
    model, ro = _rollout(arch, share_prefix=True)
    ro.replay = None
    rows = torch.arange(len(ro))
    calls: list[str] = []
    monkeypatch.setattr(logprobs_mod, "replay_logits", _counting(calls))
    with torch.inference_mode():
        got, _ = completion_logprobs(model, ro, temperature=1.2, rows=rows, group_size=group_size)
        assert calls == ["lean"]
        monkeypatch.setattr(logprobs_mod, "lean_supported", lambda m: False)
        want, _ = completion_logprobs(model, ro, temperature=1.2, rows=rows, group_size=group_size)
    assert calls == ["lean"]
    m = ro.completion_mask.bool()
    assert torch.allclose(got[m], want[m], atol=1e-5, rtol=0), (got - want)[m].abs().max()
