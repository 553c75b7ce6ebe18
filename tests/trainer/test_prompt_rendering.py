"""One prompt rendering (issue 14 item 5): warm start, rollouts and evaluation render a prompt with the same
function and honour use_chat_template alike, so the three see the same prompt tokens."""

from __future__ import annotations

from trainer.data import Example, render_prompt
from trainer.pipelines.tiny import build_model, build_tokenizer
from trainer.pipelines.warmstart import encode
from trainer.rollout.decode import generate_rollout


def test_warm_start_and_rollouts_render_prompts_alike():
    tok = build_tokenizer()
    model = build_model(tok)
    rows = [{"prompt": "12+30=", "completion": "42"}]
    for chat in (True, False):
        want = tok(render_prompt(tok, "12+30=", chat), add_special_tokens=False)["input_ids"]
        ids, attn, loss_mask = encode(tok, rows, use_chat_template=chat)
        assert ids[0, : len(want)].tolist() == want
        assert loss_mask[0, : len(want)].sum() == 0  # the prompt is not trained on
        ro = generate_rollout(model, tok, [Example("12+30=", "42")], 1, max_new_tokens=2, use_chat_template=chat)
        assert ro.prompt_ids[0][ro.prompt_mask[0].bool()].tolist() == want
    assert render_prompt(tok, "12+30=", True) != render_prompt(tok, "12+30=", False)
