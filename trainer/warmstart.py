"""Deprecated alias of ``trainer.pipelines.warmstart``, kept for one release.

``import trainer.warmstart`` gives that module (with a DeprecationWarning) and ``python -m trainer.warmstart`` still
runs it; use ``python -m trainer.pipelines.warmstart`` instead.
"""

import sys
import warnings

from trainer.pipelines.warmstart import main

warnings.warn(
    "trainer.warmstart is now trainer.pipelines.warmstart; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    main()
else:
    import trainer.pipelines.warmstart as _moved  # noqa: E402

    sys.modules[__name__] = _moved
