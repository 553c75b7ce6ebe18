"""Deprecated alias of ``trainer.evaluation.evaluate``, kept for one release.

``import trainer.evaluate`` gives that module (with a DeprecationWarning) and ``python -m trainer.evaluate`` still
runs it; use ``python -m trainer.evaluation.evaluate`` instead.
"""

from trainer.deprecated import hand_over

hand_over("trainer.evaluate", "trainer.evaluation.evaluate", __name__)
