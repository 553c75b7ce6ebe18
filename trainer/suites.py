"""Deprecated alias of ``trainer.evaluation.suites``, kept for one release.

``import trainer.suites`` gives that module (with a DeprecationWarning) and ``python -m trainer.suites`` still
runs it; use ``python -m trainer.evaluation.suites`` instead.
"""

import sys
import warnings

from trainer.evaluation.suites import main

warnings.warn(
    "trainer.suites is now trainer.evaluation.suites; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    main()
else:
    import trainer.evaluation.suites as _moved  # noqa: E402

    sys.modules[__name__] = _moved
