"""Rollouts: G sampled completions per prompt, their masks, their log-probs, and their rewards.

One module per job; this one keeps the names importable from their old home:

- ``trainer/data.py``: ``Example``, ``load_examples``, ``render_prompt`` (one prompt rendering for warm
  start, training and evaluation), ``DataStream`` (the seeded pass over the examples);
- ``trainer/decode.py``: ``Rollout``, ``generate_rollout``, ``decode`` (the lean one-forward-per-token
  loop) and the ``model.generate`` fallback, both sampling from the trainer's settings only;
- ``trainer/logprobs.py``: ``completion_logprobs`` under any model (policy, old policy, reference);
- ``trainer/rewards.py``: ``RewardFn``, ``VerifierReward`` (one VerifyBatch per step), ``PythonReward``,
  ``Score``, ``grade``;
- ``trainer/batch.py``: ``Batch`` and ``collect_batch`` (stream -> rollout -> grades, DAPO's dynamic
  sampling refills).
"""

from trainer.batch import Batch, collect_batch, concat_rollouts, informative_groups
from trainer.data import DataStream, Example, load_examples, render_prompt
from trainer.decode import (
    Rollout,
    _eos_ids,
    completion_mask_from_eos,
    decode,
    fast_decode_supported,
    generate_rollout,
    rollout_generation_config,
)
from trainer.logprobs import completion_logprobs, whole_groups
from trainer.rewards import SANDBOX_ERROR, UNGRADED, PythonReward, RewardFn, Score, VerifierReward, grade

__all__ = [
    "SANDBOX_ERROR",
    "UNGRADED",
    "Batch",
    "DataStream",
    "Example",
    "PythonReward",
    "RewardFn",
    "Rollout",
    "Score",
    "VerifierReward",
    "_eos_ids",
    "collect_batch",
    "completion_logprobs",
    "completion_mask_from_eos",
    "concat_rollouts",
    "decode",
    "fast_decode_supported",
    "generate_rollout",
    "grade",
    "informative_groups",
    "load_examples",
    "render_prompt",
    "rollout_generation_config",
    "whole_groups",
]
