"""GRPO against the verifier service (docs/architecture.md has the map).

Public surface, by room:

- ``trainer.train``: ``train(cfg)`` runs GRPO as a ``GRPOConfig`` says; ``python -m trainer.train``.
- ``trainer.config``: every config model (``GRPOConfig``, the pipelines' sections, each entry point's command
  line), ``load_config``; ``trainer.cli`` the one ``--key value`` parser.
- ``trainer.grpo``: one GRPO step (``step.run_step``) and its parts: the update, the loss, the rewards.
- ``trainer.rollout``: sampling and log-probs (``decode.generate_rollout``, ``logprobs.completion_logprobs``).
- ``trainer.evaluation``: ``make eval`` (``python -m trainer.evaluation.evaluate``), held-out figures, pass@k.
- ``trainer.pipelines``: ``make train`` (``make_train``), ``make r1`` (``r1``), warm start, task, tiny model.
- ``trainer.run``: the run around the algorithm: checkpoints and resume, interrupt, metrics, progress, own model.
- ``trainer.alarm``: the reward-hacking alarm (audit, canaries, rules).
"""
