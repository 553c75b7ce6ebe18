"""Warm start: a short supervised phase on completions in the R1 format (DeepSeek-R1's cold start).

The policy learns the format (``<think>…</think><answer>…</answer>``, then EOS) and whatever the
completions show, so that GRPO starts from a non-zero reward. The loss is the mean cross-entropy of
the completion tokens only (the prompt, rendered through the chat template exactly as the trainer
renders it, is context). AdamW with linear warmup and cosine decay; examples are visited in a seeded
order, one pass or more. Tool-output spans in a completion (``tool_format``) are context, never targets.

    rows = read_jsonl("warmstart.jsonl")   # {"prompt", "completion"} (+ "answer", unused here)
    stats = warm_start(model, tokenizer, rows, WarmStartConfig(steps=300))

On its own, from one model folder to another (flags are the fields of ``WarmStartArgs``, trainer/config/commands.py,
parsed by trainer/cli.py)::

    python -m trainer.pipelines.warmstart --model DIR --data warmstart.jsonl --out DIR2 --steps 300 --lr 3e-3
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from trainer.config import WarmStartArgs, WarmStartConfig
from trainer.data import read_jsonl, render_prompt
from trainer.errors import DataError, ModelError, exit_on_error
from trainer.policy import build_optimizer, load_tokenizer
from trainer.rollout.tools import CallFormat


def encode(
    tokenizer,
    rows: Sequence[dict],
    device: torch.device | str = "cpu",
    use_chat_template: bool = True,
    tool_format: CallFormat | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Right-padded (input_ids, attention_mask, loss_mask), each (B, T); loss_mask marks completion tokens.

    The completion is followed by EOS, so the model learns to stop. With ``tool_format`` the tool-output spans of
    a completion (``<output>...</output>``, as the tool loop appends them) are context, not targets: in a tool
    rollout the tool writes them, and the policy is never trained on what it did not write.
    """
    seqs: list[list[int]] = []
    n_prompt: list[int] = []
    tool_masks: list[list[int]] = []
    for r in rows:
        p = tokenizer(render_prompt(tokenizer, r["prompt"], use_chat_template), add_special_tokens=False)["input_ids"]
        c, own = _completion_ids(tokenizer, r["completion"], tool_format)
        seqs.append(p + c + [tokenizer.eos_token_id])
        tool_masks.append([0] * len(p) + own + [1])
        n_prompt.append(len(p))
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    loss_mask = torch.zeros((len(seqs), width), dtype=torch.float)
    for i, (s, p) in enumerate(zip(seqs, n_prompt, strict=True)):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
        loss_mask[i, p : len(s)] = torch.tensor(tool_masks[i][p:], dtype=torch.float)
    return ids.to(device), attn.to(device), loss_mask.to(device)


def _completion_ids(tokenizer, text: str, fmt: CallFormat | None) -> tuple[list[int], list[int]]:
    """A completion's ids and, per id, 1 where the policy writes it, 0 inside a tool-output span of ``fmt``."""
    if fmt is None or fmt.open_output not in text:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids, [1] * len(ids)
    spans, at = [], 0
    while (a := text.find(fmt.open_output, at)) >= 0:
        b = text.find(fmt.close_output, a + len(fmt.open_output))
        b = len(text) if b < 0 else b + len(fmt.close_output)
        spans.append((a, b))
        at = b
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    own = [int(not any(a <= s and e <= b for a, b in spans)) for s, e in enc["offset_mapping"]]
    return enc["input_ids"], own


def sft_loss(model, ids: Tensor, attn: Tensor, loss_mask: Tensor) -> Tensor:
    """Mean next-token cross-entropy over the completion tokens."""
    logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1]  # (B, T-1, V)
    target, m = ids[:, 1:], loss_mask[:, 1:]
    ce = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), target.reshape(-1), reduction="none")
    return (ce.view_as(m) * m).sum() / m.sum().clamp(min=1)


def warm_start(
    model,
    tokenizer,
    rows: Sequence[dict],
    cfg: WarmStartConfig,
    *,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    use_chat_template: bool = True,
    tool_format: CallFormat | None = None,
) -> dict[str, float]:
    """Train ``model`` in place on ``rows`` (``{"prompt", "completion"}``). Returns the last loss, steps,
    examples seen and wall seconds. ``on_step(step, {"loss", "lr", "step_s"})`` is called after each step."""
    if cfg.steps == 0:
        return {"loss": float("nan"), "steps": 0, "examples": 0, "wall_s": 0.0}
    if not rows:
        raise DataError("warm start: no examples (rows need 'prompt' and 'completion')")
    device = next(model.parameters()).device
    params = [p for p in model.parameters() if p.requires_grad]
    opt, sched = build_optimizer(  # the warm start's own betas; GRPO's are GRPOConfig.adam_betas
        model,
        lr=cfg.lr,
        betas=(0.9, 0.98),
        weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_steps,
        total_steps=cfg.steps,
        schedule="cosine",
        fused=False,
    )
    rng = random.Random(cfg.seed)
    order: list[int] = []
    model.train()
    t0 = time.perf_counter()
    loss = torch.tensor(float("nan"))
    for step in range(1, cfg.steps + 1):
        ts = time.perf_counter()
        while len(order) < cfg.batch_size:  # one shuffled pass after another
            nxt = list(range(len(rows)))
            rng.shuffle(nxt)
            order += nxt
        idx, order = order[: cfg.batch_size], order[cfg.batch_size :]
        loss = sft_loss(model, *encode(tokenizer, [rows[i] for i in idx], device, use_chat_template, tool_format))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        sched.step()
        if on_step is not None:
            on_step(step, {"loss": loss.item(), "lr": sched.get_last_lr()[0], "step_s": time.perf_counter() - ts})
    model.eval()
    return {
        "loss": loss.item(),
        "steps": cfg.steps,
        "examples": cfg.steps * cfg.batch_size,
        "wall_s": time.perf_counter() - t0,
    }


@exit_on_error
def main(argv: list[str] | None = None) -> dict[str, float]:
    """``python -m trainer.pipelines.warmstart --model DIR --data rows.jsonl --out DIR [--steps N --lr X ...]``."""
    import sys

    from transformers import AutoModelForCausalLM

    from trainer import cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(WarmStartArgs, __doc__))
        return {}
    a = cli.load(WarmStartArgs, argv)
    try:
        model, tok = AutoModelForCausalLM.from_pretrained(a.model), load_tokenizer(a.model)
    except OSError as e:
        raise ModelError(f"cannot load model {a.model!r}: {e}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    try:
        rows = read_jsonl(a.data)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot read {a.data}: {e}") from None
    stats = warm_start(
        model,
        tok,
        rows,
        WarmStartConfig(**a.model_dump(include=set(WarmStartConfig.model_fields))),
        use_chat_template=a.use_chat_template,
    )
    model.save_pretrained(a.out)
    tok.save_pretrained(a.out)
    print(f"warm start: {stats['steps']} steps, last loss {stats['loss']:.4f}, {stats['wall_s']:.1f} s; model: {a.out}")
    return stats


if __name__ == "__main__":
    main()
