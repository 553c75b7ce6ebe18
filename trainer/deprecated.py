"""The module paths kept for one release after they moved (``trainer.pipeline``, ``trainer.r1``,
``trainer.warmstart``, ``trainer.evaluate``, ``trainer.suites``): each is one ``hand_over`` call, and this
module goes with them."""

from __future__ import annotations

import importlib
import sys
import warnings


def hand_over(old: str, new: str, name: str) -> None:
    """Warn that module ``old`` is now ``new``. Run as a script (``name``, the old module's ``__name__``, is
    "__main__"), run ``new``'s ``main()``; imported, put ``new`` in its place, so the import gives that module."""
    moved = importlib.import_module(new)
    as_script = name == "__main__"
    warnings.warn(
        f"{old} is now {new}; the old path goes in the next release",
        DeprecationWarning,
        stacklevel=2 if as_script else 3,  # the script itself, or the code that imported the old path
    )
    if as_script:
        moved.main()
    else:
        sys.modules[old] = moved
