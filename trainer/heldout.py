"""Held-out figures of a policy beyond greedy accuracy: the sampled (temperature 1) accuracy and pass@k.

Greedy accuracy says what the policy's most likely answer is; the sampled accuracy is what GRPO
actually optimises (the expected reward of one sample), and pass@k (k samples per problem, the
unbiased estimator of Chen et al. 2021, trainer/passk.py) says how often the right answer is in reach
at all. `make train` prints all three before and after GRPO and writes them to summary.json.
"""

from __future__ import annotations

from typing import Any

import torch

from trainer import passk
from trainer.data import Example
from trainer.decode import generate_rollout
from trainer.rewards import RewardFn


def sampled_figures(
    model,
    tokenizer,
    examples: list[Example],
    reward_fn: RewardFn,
    *,
    k: int = 8,
    max_new_tokens: int,
    temperature: float = 1.0,
    batch_size: int = 128,
    use_chat_template: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """k samples per problem: {"sampled_accuracy", f"pass@{k}", "k", "n_samples"}. Samples graded
    SANDBOX_ERROR or BAD_REFERENCE are left out of both (trainer.passk.UNGRADED)."""
    torch.manual_seed(seed)
    per_problem = max(1, batch_size // k)
    counts: list[tuple[int, int]] = []  # (graded samples, correct) per problem
    for i in range(0, len(examples), per_problem):
        part = examples[i : i + per_problem]
        ro = generate_rollout(
            model, tokenizer, part, k, max_new_tokens=max_new_tokens, temperature=temperature,
            do_sample=True, use_chat_template=use_chat_template,
        )  # fmt: skip
        scores = reward_fn(ro.texts, ro.references, ro.prompts)
        for p in range(len(part)):
            group = [s.outcome for s in scores[p * k : (p + 1) * k] if s.outcome not in passk.UNGRADED]
            counts.append((len(group), sum(o == "CORRECT" for o in group)))
    graded = sum(n for n, _ in counts)
    usable = [(n, c) for n, c in counts if n >= k]
    return {
        "sampled_accuracy": sum(c for _, c in counts) / graded if graded else None,
        f"pass@{k}": sum(passk.pass_at_k(n, c, k) for n, c in usable) / len(usable) if usable else None,
        "k": k,
        "temperature": temperature,
        "n_samples": graded,
    }
