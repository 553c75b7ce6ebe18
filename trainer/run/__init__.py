"""The run: what a training run needs around the algorithm, not the algorithm itself.

- ``checkpoint``: a folder per step (``save_checkpoint``, ``list_checkpoints``, ``resolve_resume``) and a run's
  whole state saved and resumed (``save_run``, ``resume_run``);
- ``interrupt``: Ctrl-C/SIGTERM finishes the step, checkpoints it and stops (``deferred``, ``requested``);
- ``metrics``: ``MetricsLogger`` (metrics.jsonl, TensorBoard/W&B/Trackio, completions, curves.png), ``read_metrics``;
- ``progress``: ``MetricsBar``, the progress line of ``make train``; ``outcome_watch``: ``OutcomeWatch``, the
  warning when a run's first steps all grade one outcome;
- ``own_model``: ``MODEL=`` as a practitioner gives it (a saved folder, a hub id or a PEFT adapter);
- ``preflight``: the checks made before a run starts anything (the verifier's tags survive decoding),
  ``python -m trainer.run.preflight MODEL_DIR [--fix-tags]``.
"""
