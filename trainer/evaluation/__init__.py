"""Evaluation: ``make eval`` and the held-out figures training reports.

- ``evaluate``: ``python -m trainer.evaluation.evaluate`` (``main``, ``run``; ``parse_args`` into
  ``trainer.config.EvalArgs``), built from ``plan`` (what to generate and grade), ``generate``, ``grade``
  (``Grader``), ``log`` (the resumable sample log);
- ``evaluator``: ``evaluate``, ``evaluate_accuracy``, ``generate_batches`` (one generation loop, shared with
  training); ``heldout``: sampled accuracy and pass@k of a policy; ``passk``: the one aggregation;
  ``suites``: benchmark suites (HumanEval), ``python -m trainer.evaluation.suites``.
"""
