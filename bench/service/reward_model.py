"""Reward-model batching, in process: N (prompt, completion) pairs scored by concurrent callers through
``verifiers.kinds.reward_model`` (gathered into batched forward passes, as a VerifyBatch's items are) against
the baseline of the same pairs one forward pass each, with the same loaded model, alternated per round.

    .venv/bin/python -m bench.service.reward_model [--pairs 64] [--rounds 3] [--hidden 256 --layers 4]

Prints wall time per round for both, forward passes used, and the largest score difference between
the two (batching must not change a score).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from transformers import Qwen2Config, Qwen2ForSequenceClassification

from trainer.pipelines.tiny import build_tokenizer
from verifiers.kinds import reward_model


def build(path: str, hidden: int, layers: int) -> None:
    tok = build_tokenizer()
    tok.model_max_length = 512
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=3 * hidden,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        num_labels=1,
    )
    torch.manual_seed(0)
    Qwen2ForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    pairs = [
        (f"{i}+{i * 7 % 13}=?", f"<think>{i}+{i * 7 % 13}, adding {'step ' * (i % 9)}</think><answer>{i}</answer>")
        for i in range(args.pairs)
    ]
    with tempfile.TemporaryDirectory() as d:
        build(d, args.hidden, args.layers)
        scorer = reward_model.load(d)
        scorer.forward([reward_model.ScoreItem("warm", "up")])
        serial_s, batched_s, passes, diff = [], [], [], 0.0
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            alone = [scorer.forward([reward_model.ScoreItem(p, c)])[0] for p, c in pairs]
            serial_s.append(time.perf_counter() - t0)
            before = scorer.forward_passes
            t0 = time.perf_counter()
            with ThreadPoolExecutor(64) as ex:
                items = list(ex.map(lambda pc: scorer.score(pc[0], pc[1], 600.0), pairs))
            batched_s.append(time.perf_counter() - t0)
            passes.append(scorer.forward_passes - before)
            diff = max(diff, max(abs(a - it.score) for a, it in zip(alone, items, strict=True)))
    s, b = statistics.median(serial_s), statistics.median(batched_s)
    print(
        f"reward model hidden={args.hidden} layers={args.layers}, {args.pairs} pairs, {args.rounds} rounds, "
        f"device={scorer.device}, torch threads={torch.get_num_threads()}"
    )
    print(f"  one forward pass per pair (baseline): median {s * 1000:.0f} ms  ({args.pairs} passes)")
    print(f"  gathered from {args.pairs} concurrent callers: median {b * 1000:.0f} ms  (passes per round: {passes})")
    print(f"  speed-up {s / b:.2f}x; largest score difference batched vs alone {diff:.2e}")


if __name__ == "__main__":
    main()
