"""The evaluator: held-out problems -> rendered prompts -> completions -> grades -> figures.

One generation loop, ``generate_batches``, serves every evaluation: training's periodic and final greedy
evaluation (``evaluate``, here; trainer/train.py and trainer/evaluation/heldout.py call it), the sampled figures
(trainer/evaluation/heldout.py) and ``make eval`` (trainer/evaluation/generate.py). It renders each prompt as training
does (``generate_rollout``: chat template or not), generates K completions per problem (greedy when
sampling is off) a batch of problems at a time, so the same settings give the same completions whichever
entry point asks.

Grading: ``evaluate`` grades each batch with a ``RewardFn`` (``VerifierReward``: one VerifyBatch call
through ``verifiers.client``, the same reward training uses), ``make eval`` with its Grader (the client,
per-sample verifiers, a resume log). Aggregation is one definition, ``trainer.evaluation.passk.graded_figures``, for
training's figures (``greedy_figures`` here, the sampled ones in trainer/evaluation/heldout.py) and ``make eval``'s
report alike: accuracy and reward mean over the graded samples; SANDBOX_ERROR and BAD_REFERENCE (not the
model's fault) are left out of the denominator and counted under ``ungraded``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from trainer.config.tools import ToolsConfig
from trainer.data import Example, load_examples
from trainer.evaluation import passk
from trainer.grpo.rewards import RewardFn, Score, VerifierReward
from trainer.rollout.decode import Rollout, generate_rollout
from trainer.rollout.tool_decode import generate_tool_rollout
from trainer.rollout.tools import ToolRunner


def generate_batches(
    model,
    tokenizer,
    todo: Sequence[tuple[Example, int]],
    *,
    per_call: int,
    max_new_tokens: int,
    use_chat_template: bool = True,
    do_sample: bool = False,
    tools: ToolsConfig | None = None,
    runner: ToolRunner | None = None,
    **sampling: float,
) -> Iterator[tuple[int, int, Rollout]]:
    """Completions for ``todo`` (example, how many), ``per_call`` examples per ``generate_rollout`` call.

    Yields (start, g, rollout) per call: ``todo[start : start + per_call]`` was generated with g completions
    each (g the largest count among them), example j's at rows j*g .. j*g+g-1 of the rollout. ``sampling``
    (temperature, top_p) goes to ``generate_rollout`` as given; greedy when ``do_sample`` is False. With ``tools``
    the rollouts call tools through ``runner`` (trainer/rollout/tool_decode.py), as training's do.
    """
    if per_call < 1:
        raise ValueError(f"per_call must be >= 1, got {per_call}")
    for start in range(0, len(todo), per_call):
        part = todo[start : start + per_call]
        g = max(n for _, n in part)
        sample = generate_rollout if tools is None else partial(generate_tool_rollout, runner=runner, tools=tools)
        ro = sample(
            model,
            tokenizer,
            [ex for ex, _ in part],
            g,
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            use_chat_template=use_chat_template,
            **sampling,
        )
        yield start, g, ro


def score_records(scores: Sequence[Score], k: int = 1) -> list[dict[str, Any]]:
    """The records ``trainer.evaluation.passk`` aggregates: score i is sample i % k of problem i // k."""
    return [
        {
            "id": i // k,
            "sample": i % k,
            "reward": s.reward,
            "outcome": s.outcome,
            "components": s.components,
            "elapsed_s": s.elapsed_s,
        }
        for i, s in enumerate(scores)
    ]


def greedy_figures(scores: Sequence[Score], completions: list[str]) -> dict[str, Any]:
    """accuracy and reward mean over the graded samples (``passk.graded_figures``: None when none was),
    ``ungraded`` (SANDBOX_ERROR, BAD_REFERENCE), outcome counts, the completions and n."""
    fig = passk.graded_figures(score_records(scores))
    return {
        "accuracy": fig["accuracy"],
        "reward_mean": fig["reward_mean"],
        "ungraded": fig["ungraded"],
        "outcomes": dict(Counter(s.outcome for s in scores)),
        "completions": completions,
        "n": len(scores),
    }


def evaluate(
    model,
    tokenizer,
    examples: list[Example],
    reward_fn: RewardFn,
    *,
    max_new_tokens: int,
    batch_size: int = 64,
    use_chat_template: bool = True,
    tools: ToolsConfig | None = None,
    runner: ToolRunner | None = None,
) -> dict[str, Any]:
    """Greedy completions for ``examples`` graded by ``reward_fn``, a batch at a time: ``greedy_figures``. With
    ``tools`` the completions call tools through ``runner``, as training's rollouts do (what is graded is the policy's
    own tokens)."""
    scores: list[Score] = []
    texts: list[str] = []
    todo = [(ex, 1) for ex in examples]
    for _, _, ro in generate_batches(
        model,
        tokenizer,
        todo,
        per_call=batch_size,
        max_new_tokens=max_new_tokens,
        use_chat_template=use_chat_template,
        tools=tools,
        runner=runner,
    ):
        scores += reward_fn(ro.texts, ro.references, ro.prompts)
        texts += ro.texts
    return greedy_figures(scores, texts)


def evaluate_accuracy(
    model,
    tokenizer,
    examples: list[Example] | str | Path,
    *,
    verifier: str = "math",
    target: str = "127.0.0.1:50051",
    max_new_tokens: int = 64,
    batch_size: int = 64,
    use_chat_template: bool = True,
) -> dict[str, Any]:
    """Greedy held-out accuracy through the verifier service (examples: a list or a JSONL path)."""
    if not isinstance(examples, list):
        examples = load_examples(examples)
    reward = VerifierReward(verifier, target)
    try:
        return evaluate(
            model,
            tokenizer,
            examples,
            reward,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            use_chat_template=use_chat_template,
        )
    finally:
        reward.close()
