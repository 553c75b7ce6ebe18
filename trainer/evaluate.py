"""Deprecated alias of ``trainer.evaluation.evaluate``, kept for one release.

``import trainer.evaluate`` gives that module (with a DeprecationWarning) and ``python -m trainer.evaluate`` still
runs it; use ``python -m trainer.evaluation.evaluate`` instead.
"""

import sys
import warnings

from trainer.evaluation.evaluate import main

warnings.warn(
    "trainer.evaluate is now trainer.evaluation.evaluate; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    main()
else:
    import trainer.evaluation.evaluate as _moved  # noqa: E402

    sys.modules[__name__] = _moved
