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


def script(
    fmt: str = "python", calls: int = 1, preamble: str = "", kinds: str = "ab"
) -> tuple[dict[str, str], list[str]]:
    """(code -> tool output, the training texts: prompt + completion with the output spans). ``calls`` > 1: the
    honest completions make that many calls in a row (bench/training/tool_rollout.py); ``preamble`` goes before each prompt."""
    f = FORMATS[fmt]
    outputs, texts = {}, []
    for k in KS:
        outputs[attack_call(k)] = f"\\boxed{{{k * 7}}}"
        honest = [honest_call(k)] + [f"print({k}*7+{j})" for j in range(1, calls)]
        for j, code in enumerate(honest):
            outputs[code] = str(k * 7 + j)
        for name, codes, after in (("a", honest, f"so \\boxed{{{k * 7}}}"), ("b", [attack_call(k)], "")):
            if name not in kinds:
                continue
            spans = [
                (f"{f.start}\n{code}\n{f.stop}" if fmt == "python" else _hermes(code)) + f.wrap(outputs[code], 512)
                for code in codes
            ]
            texts.append((preamble + f"{name}{k}", "".join(spans) + after))
    return outputs, texts


def _hermes(code: str) -> str:
    import json

    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def examples(kind: str = "a", preamble: str = "") -> list[Example]:
    return [Example(f"{preamble}{kind}{k}", str(k * 7)) for k in KS]


@functools.lru_cache(maxsize=4)
def caller(
    fmt: str = "python",
    steps: int = 200,
    calls: int = 1,
    preamble: str = "",
    kinds: str = "ab",
    hidden: int = 64,
    layers: int = 2,
):
    """(model, tokenizer): a tiny Qwen2 trained until greedy decoding reproduces the script's completions."""
    tok = tiny.build_tokenizer()
    size = TinyConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=2 * hidden,
        max_position_embeddings=1024,
    )
    model = tiny.build_model(tok, size, seed=0)
    _, texts = script(fmt, calls, preamble, kinds)
    rows = [tok(tiny.USER + p + tiny.ASSISTANT + c + tiny.EOS, add_special_tokens=False)["input_ids"] for p, c in texts]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tok.pad_token_id)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    mask = (ids != tok.pad_token_id).long()
    labels = ids.masked_fill(mask == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(0)
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model, tok


def runner(fmt: str = "python", calls: int = 1, **kw) -> ScriptedToolRunner:
    return ScriptedToolRunner(script(fmt, calls)[0], default="NameError: name is not defined", **kw)
