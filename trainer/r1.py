"""Deprecated alias of ``trainer.pipelines.r1``, kept for one release.

``import trainer.r1`` gives that module (with a DeprecationWarning) and ``python -m trainer.r1`` still
runs it; use ``python -m trainer.pipelines.r1`` instead.
"""

from trainer.deprecated import hand_over

hand_over("trainer.r1", "trainer.pipelines.r1", __name__)
