"""One GRPO step, readable top to bottom in four modules.

- ``step``: ``StepParts``, ``run_step`` (batch collection, rewards, advantages, loss call, update,
  metrics), ``collect_batch``, ``step_metrics``;
- ``update``: ``score_logprobs``, ``Learner``, ``UpdateBatch``, ``optimize``;
- ``loss``: ``group_advantages``, ``masked_group_advantages``, ``grpo_loss`` (its settings: ``LossConfig``),
  ``k3_kl``, ``tis_weights``, and process supervision's ``process_advantages`` / ``batch_process_advantages``
  (pure functions of tensors);
- ``rewards``: ``RewardFn``, ``VerifierReward``, ``PythonReward``, ``Score``, ``grade``,
  ``Batch``, and ``GroupScorer`` (grading groups while the rest still decode).

Rollouts come only through trainer.rollout's two doors.
"""
