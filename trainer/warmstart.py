"""Deprecated alias of ``trainer.pipelines.warmstart``, kept for one release.

``import trainer.warmstart`` gives that module (with a DeprecationWarning) and ``python -m trainer.warmstart`` still
runs it; use ``python -m trainer.pipelines.warmstart`` instead.
"""

from trainer.deprecated import hand_over

hand_over("trainer.warmstart", "trainer.pipelines.warmstart", __name__)
