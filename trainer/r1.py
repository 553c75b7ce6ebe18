"""Deprecated alias of ``trainer.pipelines.r1``, kept for one release.

``import trainer.r1`` gives that module (with a DeprecationWarning) and ``python -m trainer.r1`` still
runs it; use ``python -m trainer.pipelines.r1`` instead.
"""

import sys
import warnings

from trainer.pipelines.r1 import main

warnings.warn(
    "trainer.r1 is now trainer.pipelines.r1; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    main()
else:
    import trainer.pipelines.r1 as _moved  # noqa: E402

    sys.modules[__name__] = _moved
