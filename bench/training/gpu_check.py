"""A few GRPO optimisation steps on a Qwen2-0.5B-shaped model built from a config (random weights), fp32
weights + AdamW state with bf16 autocast (trainer/train.py forward_context), on one GPU.

    bash bench/gpu_check.sh            # CUDA: Qwen2-0.5B shape (hidden 896, 24 layers, vocab 151936)
    bash bench/gpu_check.sh --dry-run  # the same path on the CPU with a small config

Each step is the trainer's own optimize(): completion log-probs, grpo_loss, backward, AdamW, on a batch of
random prompt/completion token ids (rollout timing is bench/training/gpu_rollouts.py). Printed: tokens/s, step time,
peak GPU memory, and the fraction of parameters one lr-1e-6 step changed (fp32 master weights: ~all).
"""

from __future__ import annotations

import argparse
import time

import torch

QWEN05B = dict(
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    vocab_size=151936,
    tie_word_embeddings=True,
)
SMALL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=512,
    tie_word_embeddings=True,
)


def main() -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from trainer.config import GRPOConfig
    from trainer.grpo.rewards import Batch
    from trainer.grpo.update import Learner, UpdateBatch, optimize
    from trainer.policy import autocast_dtype, load_policy, make_optimizer
    from trainer.rollout.decode import Rollout

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, small config (autocast bf16 forced on)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--n", type=int, default=32, help="completions per step")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--completion-len", type=int, default=256)
    a = ap.parse_args()
    if not a.dry_run and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --dry-run for the CPU path")
    shape, device = (SMALL, "cpu") if a.dry_run else (QWEN05B, "cuda")
    if a.dry_run:
        a.n, a.prompt_len, a.completion_len, a.steps = 8, 16, 32, 2
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**shape))
    cfg = GRPOConfig(
        device=device,
        autocast="bf16",
        lr=1e-6,
        warmup_steps=0,
        weight_decay=0.0,
        beta=0.0,
        group_size=8,
        prompts_per_step=a.n // 8,
        max_new_tokens=a.completion_len,
        micro_batch_size=8,
        gradient_checkpointing=not a.dry_run,
    )
    model, _ = load_policy(cfg, model=model, tokenizer=_Tok())
    dev = next(model.parameters()).device
    print(
        f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, {shape['num_hidden_layers']} "
        f"layers, on {dev}; params {next(model.parameters()).dtype}, autocast {autocast_dtype(cfg, dev)}"
    )
    opt, sched = make_optimizer(cfg, model)
    v = shape["vocab_size"]
    ro = Rollout(
        torch.randint(3, v, (a.n, a.prompt_len), device=dev),
        torch.ones(a.n, a.prompt_len, device=dev, dtype=torch.long),
        torch.randint(3, v, (a.n, a.completion_len), device=dev),
        torch.ones(a.n, a.completion_len, device=dev, dtype=torch.long),
        torch.zeros(a.n, dtype=torch.bool, device=dev),
        [""] * a.n,
    )
    batch = Batch(ro, torch.rand(a.n), torch.ones(a.n, dtype=torch.bool), [], 0.0, 1)
    adv = torch.randn(a.n, device=dev)
    mask = ro.completion_mask.float()
    before = [p.detach().clone() for p in model.parameters()]
    times = []
    for step in range(a.steps):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        optimize(cfg, Learner(model, opt, sched), UpdateBatch(batch, adv, mask))
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if step == 0:
            changed = sum(int((p.detach() != b).sum()) for p, b in zip(model.parameters(), before, strict=True))
            frac = changed / sum(b.numel() for b in before)
    tok_s = a.n * (a.prompt_len + a.completion_len) / min(times)
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev.type == "cuda" else float("nan")
    print(f"step time: {' '.join(f'{t:.2f}' for t in times)} s (best {min(times):.2f} s)")
    print(f"tokens/s (prompt+completion, forward+backward): {tok_s:,.0f}")
    print(f"peak GPU memory: {peak:.1f} GiB" if dev.type == "cuda" else "peak GPU memory: n/a (CPU)")
    print(f"parameters changed by one lr-1e-6 step: {frac:.3f}")
    print("dry run: ok" if a.dry_run else "done")


class _Tok:  # load_policy needs a pad token; nothing is tokenised here
    pad_token_id = 0
    eos_token = "<eos>"


if __name__ == "__main__":
    main()
