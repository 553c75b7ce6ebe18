"""Deprecated alias of ``trainer.pipelines.make_train``, kept for one release.

``import trainer.pipeline`` gives that module (with a DeprecationWarning) and ``python -m trainer.pipeline`` still
runs it; use ``python -m trainer.pipelines.make_train`` instead.
"""

import sys
import warnings

from trainer.pipelines.make_train import main

warnings.warn(
    "trainer.pipeline is now trainer.pipelines.make_train; the old path goes in the next release",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    main()
else:
    import trainer.pipelines.make_train as _moved  # noqa: E402

    sys.modules[__name__] = _moved
