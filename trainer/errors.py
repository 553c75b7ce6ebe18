"""Errors the trainer's library code raises; only the entry points turn them into an exit status.

Every ``main()`` (``python -m trainer.train``, ``trainer.evaluation.evaluate``, ``trainer.pipelines.make_train``, ``trainer.pipelines.r1``,
``trainer.pipelines.warmstart``) wraps its body in :func:`exit_on_error`: a :class:`TrainerError` prints its message
on stderr and exits with status 1; anything else is a bug and keeps its traceback. Library callers (tests,
notebooks, other tools) catch the specific class instead of seeing the interpreter exit.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


class TrainerError(Exception):
    """Something the user must fix (a setting, a file, a missing service); the message says what."""


class ConfigError(TrainerError, ValueError):
    """A configuration file or ``--section.key value`` override that cannot be used as written."""


class DataError(TrainerError, ValueError):
    """A data file (prompts, suites, completions) that cannot be read as documented."""


class ModelError(TrainerError):
    """No model or tokenizer given, or an optional dependency (peft) the setting needs is missing."""


class CheckpointError(TrainerError):
    """A ``--resume`` folder that is missing its state or does not match the model."""


class VerifierSetupError(TrainerError):
    """The verifier service does not offer what the run needs (an unregistered verifier)."""


class BackendError(TrainerError, RuntimeError):
    """A rollout backend that cannot run here (missing package, no GPU, unsupported setting)."""


class Stopped(TrainerError):
    """A run stopped early (interrupted, or too many grading failures); its finished work is kept."""


def exit_on_error(main: F) -> F:
    """Decorate an entry point: a TrainerError becomes its message on stderr and exit status 1."""

    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except TrainerError as e:
            print(f"error: {e}" if str(e) else f"error: {type(e).__name__}", file=sys.stderr)
            raise SystemExit(1) from None

    return wrapper  # type: ignore[return-value]
