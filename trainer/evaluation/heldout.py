"""Held-out figures of a policy beyond greedy accuracy: the sampled (temperature 1) accuracy and pass@k.

Greedy accuracy says what the policy's most likely answer is; the sampled accuracy is what GRPO
actually optimises (the expected reward of one sample), and pass@k (k samples per problem, the
unbiased estimator of Chen et al. 2021, trainer/evaluation/passk.py) says how often the right answer is in reach
at all. `make train` prints all three before and after GRPO and writes them to summary.json
(``evaluate_heldout``, ``figure_lines``); `make r1` reports the greedy one after every stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainer.config import EvalSection, ToolsConfig
from trainer.data import Example, read_jsonl, write_jsonl
from trainer.errors import Stopped
from trainer.evaluation import passk
from trainer.evaluation.evaluator import evaluate, generate_batches, score_records
from trainer.grpo.rewards import RewardFn, Score
from trainer.rollout.tools import ToolRunner


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
    tools: ToolsConfig | None = None,
    runner: ToolRunner | None = None,
) -> dict[str, Any]:
    """k samples per problem: {"sampled_accuracy", f"pass@{k}", "k", "temperature", "n_samples",
    "sampled_ungraded"}, aggregated by trainer.evaluation.passk as ``make eval`` does: samples graded SANDBOX_ERROR or
    BAD_REFERENCE are left out of both (and counted), pass@k over problems with at least k graded samples."""
    torch.manual_seed(seed)
    scores: list[Score] = []
    for _, g, ro in generate_batches(
        model,
        tokenizer,
        [(ex, k) for ex in examples],
        per_call=max(1, batch_size // k),
        max_new_tokens=max_new_tokens,
        use_chat_template=use_chat_template,
        do_sample=True,
        temperature=temperature,
        tools=tools,
        runner=runner,
    ):
        if g != k:
            raise ValueError(f"expected {k} completions per problem, got {g}")
        scores += reward_fn(ro.texts, ro.references, ro.prompts)
    records = score_records(scores, k)
    fig = passk.graded_figures(records)
    pk, _ = passk.pass_at_k_table(records, extra_ks=[k])
    return {
        "sampled_accuracy": fig["accuracy"],
        f"pass@{k}": pk.get(k),
        "k": k,
        "temperature": temperature,
        "n_samples": fig["n_graded"],
        "sampled_ungraded": fig["ungraded"],
    }


def evaluate_heldout(
    model,
    tok,
    heldout: Path,
    ev: EvalSection,
    target: str,
    out: Path,
    *,
    seed: int = 0,
    use_chat_template: bool = True,
    tools: ToolsConfig | None = None,
) -> dict[str, Any]:
    """Greedy accuracy (and, with ``ev.k``, sampled accuracy and pass@k) on ``heldout``, graded by the
    service's ``ev.verifier``; the greedy completions go to ``out`` (JSONL). With ``tools`` the completions call
    Python in sandbox sessions of the same service, as the run's rollouts do."""
    from trainer.data import load_examples
    from trainer.grpo.rewards import VerifierReward

    examples = load_examples(heldout)
    reward = VerifierReward(ev.verifier, target)
    gen: dict[str, Any] = {"max_new_tokens": ev.max_new_tokens, "batch_size": ev.batch_size,
                           "use_chat_template": use_chat_template}  # fmt: skip
    if tools is not None:
        from trainer.rollout.session_runner import SessionToolRunner

        gen |= {"tools": tools, "runner": SessionToolRunner(reward.client, workers=tools.workers)}
    try:
        greedy = evaluate(model, tok, examples, reward, **gen)
        sampled = sampled_figures(model, tok, examples, reward, k=ev.k, seed=seed, **gen) if ev.k else {}
    finally:
        reward.close()
    rows = read_jsonl(heldout)
    write_jsonl(
        (
            {"prompt": r["prompt"], "answer": r["answer"], "completion": c}
            for r, c in zip(rows, greedy["completions"], strict=True)
        ),
        out,
    )
    if greedy["accuracy"] is None and examples:
        raise Stopped(
            f"held-out evaluation graded none of its {greedy['n']} samples (outcomes {greedy['outcomes']}: "
            "SANDBOX_ERROR or BAD_REFERENCE, not the model's fault); see the verifier service's log"
        )
    return {k: greedy[k] for k in ("accuracy", "n", "reward_mean", "outcomes", "ungraded")} | sampled


def figure_lines(
    before: dict[str, Any], after: dict[str, Any], verifier: str, start: str = "after warm start"
) -> list[str]:
    """The end-of-run figures, greedy first: the same numbers summary.json holds. ``start`` names the
    "before" model ("after warm start" for the embedded task, "before GRPO" for a model of one's own)."""
    gain = 100 * (after["accuracy"] - before["accuracy"])
    lines = [
        f"held-out accuracy (greedy, {after['n']} problems, verifier {verifier}): "
        f"{before['accuracy']:.3f} {start} -> {after['accuracy']:.3f} after GRPO ({gain:+.1f} points)"
    ]
    k = after.get("k")
    if k and before.get("sampled_accuracy") is not None and after.get("sampled_accuracy") is not None:
        lines.append(
            f"held-out accuracy (sampled, T={after['temperature']:g}, {k} per problem): "
            f"{before['sampled_accuracy']:.3f} -> {after['sampled_accuracy']:.3f}"
        )
    if k and before.get(f"pass@{k}") is not None and after.get(f"pass@{k}") is not None:
        lines.append(
            f"held-out pass@{k} (T={after['temperature']:g}): {before[f'pass@{k}']:.3f} -> {after[f'pass@{k}']:.3f}"
        )
    return lines
