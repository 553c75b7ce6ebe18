"""Deprecated alias of ``trainer.evaluation.suites``, kept for one release.

``import trainer.suites`` gives that module (with a DeprecationWarning) and ``python -m trainer.suites`` still
runs it; use ``python -m trainer.evaluation.suites`` instead.
"""

from trainer.deprecated import hand_over

hand_over("trainer.suites", "trainer.evaluation.suites", __name__)
