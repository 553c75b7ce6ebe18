"""A tiny real model that has learned to call the Python tool (trained here in seconds, nothing downloaded), and
the scripted runner's answers for it. Prompts ``a<k>``: the policy computes k*7 with a call and boxes the result
itself; prompts ``b<k>``: the policy makes the tool PRINT the box and writes nothing after it (the attack: a box in
tool output must never be graded)."""

from __future__ import annotations

import functools

import torch

from trainer.config import TinyConfig
from trainer.data import Example
from trainer.pipelines import tiny
from trainer.rollout.tools import FORMATS, ScriptedToolRunner

KS = (2, 3)


def honest_call(k: int) -> str:
    return f"print({k}*7)"


def attack_call(k: int) -> str:
    return f"print('boxed', {k}*7)"


def script(fmt: str = "python") -> tuple[dict[str, str], list[str]]:
    """(code -> tool output, the training texts: prompt + completion with the output span)."""
    f = FORMATS[fmt]
    outputs, texts = {}, []
    for k in KS:
        outputs[honest_call(k)] = str(k * 7)
        outputs[attack_call(k)] = f"\\boxed{{{k * 7}}}"
        for name, code, after in (("a", honest_call(k), f"so \\boxed{{{k * 7}}}"), ("b", attack_call(k), "")):
            call = f"{f.start}\n{code}\n{f.stop}" if fmt == "python" else _hermes(code)
            texts.append((f"{name}{k}", call + f.wrap(outputs[code], 512) + after))
    return outputs, texts


def _hermes(code: str) -> str:
    import json

    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def examples(kind: str = "a") -> list[Example]:
    return [Example(f"{kind}{k}", str(k * 7)) for k in KS]


@functools.lru_cache(maxsize=4)
def caller(fmt: str = "python", steps: int = 200):
    """(model, tokenizer): a tiny Qwen2 trained until greedy decoding reproduces the script's completions."""
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, TinyConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128, max_position_embeddings=256), seed=0)  # fmt: skip
    _, texts = script(fmt)
    rows = [tok(tiny.USER + p + tiny.ASSISTANT + c + tiny.EOS, add_special_tokens=False)["input_ids"] for p, c in texts]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tok.pad_token_id)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    mask = (ids != tok.pad_token_id).long()
    labels = ids.masked_fill(mask == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    del g
    model.eval()
    return model, tok


def runner(fmt: str = "python", **kw) -> ScriptedToolRunner:
    return ScriptedToolRunner(script(fmt)[0], default="NameError: name is not defined", **kw)
