"""Rollout timing, ``hf`` vs ``vllm`` backend (trainer/rollout/backends.py), in one run, alternated.

    .venv/bin/python -m bench.training.gpu_rollouts [--model FOLDER] [--prompts 16] [--group 8] [--max-new 256] [--rounds 3]
    .venv/bin/python -m bench.training.gpu_rollouts --dry-run      # CPU, tiny sizes: checks the script end to end

Same prompts, same G, same sampling settings (temperature 1, top_p 1, max_new_tokens) for both; each
round generates one batch with each backend (hf then vllm), after one warm-up batch each. Printed:
completion tokens per second per round and the median ratio vllm/hf. Without a GPU or without vllm
the vllm side is skipped with the reason (the hf side still runs). Default model: the tiny Qwen2 of
trainer/pipelines/tiny.py (hidden 512, 8 layers), built into a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def _timed(backend, examples, group: int, max_new: int) -> tuple[float, int]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    ro = backend.generate(examples, group, max_new_tokens=max_new, temperature=1.0, top_p=1.0)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - t0, int(ro.completion_mask.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a model folder (default: build the tiny Qwen2)")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, one round")
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.config import TinyConfig
    from trainer.data import Example
    from trainer.pipelines import tiny
    from trainer.rollout.backends import make_backend
    from trainer.rollout.vllm import unavailable_reason

    if a.dry_run:
        a.prompts, a.group, a.max_new, a.rounds = 2, 2, 8, 1
    device = "cuda" if torch.cuda.is_available() and not a.dry_run else "cpu"
    with tempfile.TemporaryDirectory(prefix="gpu-rollouts-") as d:
        folder = a.model
        if folder is None:
            shape = TinyConfig(hidden_size=64, num_hidden_layers=2, intermediate_size=128)
            if not a.dry_run:
                shape = TinyConfig(hidden_size=512, num_hidden_layers=8, intermediate_size=1536)
            folder = str(tiny.build(Path(d) / "model", shape))
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(device).eval()
        tok = AutoTokenizer.from_pretrained(folder)
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        examples = [Example(f"What is {i} + {2 * i + 7}? Think first.", str(3 * i + 7)) for i in range(a.prompts)]
        backends = {"hf": make_backend("hf", model, tok)}
        reason = unavailable_reason()
        if reason is None and not a.dry_run:
            backends["vllm"] = make_backend("vllm", model, tok, model_path=folder, gpu_memory_utilization=0.3)
        print(
            f"rollouts on {torch.cuda.get_device_name() if device == 'cuda' else 'CPU'}: {a.prompts} prompts x "
            f"G={a.group}, max_new_tokens={a.max_new}, {a.rounds} round(s), model {folder}"
        )
        if "vllm" not in backends:
            print(f"vllm: skipped ({'dry run' if a.dry_run and reason is None else reason})")
        rates: dict[str, list[float]] = {k: [] for k in backends}
        for b in backends.values():  # warm-up
            _timed(b, examples, a.group, a.max_new)
        for r in range(a.rounds):
            for name, b in backends.items():
                dt, tokens = _timed(b, examples, a.group, a.max_new)
                rates[name].append(tokens / dt)
                print(f"round {r + 1} {name:>4}: {tokens / dt:9.1f} completion tok/s ({tokens} tokens, {dt:.2f} s)")
        for name, xs in rates.items():
            print(f"{name:>4}: median {statistics.median(xs):9.1f} completion tok/s")
        if "vllm" in rates:
            ratio = [v / h for v, h in zip(rates["vllm"], rates["hf"], strict=True)]
            print(f"vllm/hf: median {statistics.median(ratio):.2f}x")
        for b in backends.values():
            b.close()
    print("dry run: ok" if a.dry_run else "done")


if __name__ == "__main__":
    main()
