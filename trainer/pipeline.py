"""Deprecated alias of ``trainer.pipelines.make_train``, kept for one release.

``import trainer.pipeline`` gives that module (with a DeprecationWarning) and ``python -m trainer.pipeline`` still
runs it; use ``python -m trainer.pipelines.make_train`` instead.
"""

from trainer.deprecated import hand_over

hand_over("trainer.pipeline", "trainer.pipelines.make_train", __name__)
