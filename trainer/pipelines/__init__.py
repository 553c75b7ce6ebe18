"""Pipelines: runs made of stages around ``trainer.train``.

- ``make_train``: ``make train`` (``python -m trainer.pipelines.make_train``): data, warm start, GRPO,
  held-out figures, in a run folder (``run_folder``);
- ``r1``: ``make r1``, DeepSeek-R1's recipe (``python -m trainer.pipelines.r1``), with ``rejection``
  sampling;
- ``warmstart``: supervised steps on R1-format completions (``python -m trainer.pipelines.warmstart``);
- ``task``: the embedded default task; ``tiny``: the tiny model and its character tokenizer.
"""
