"""The command line of ``python -m trainer.evaluation.evaluate`` (``make eval``) read into its model,
``EvalArgs`` (trainer/config/commands.py), by trainer/cli.py like every trainer entry point. Flags are the
field names with dashes (``--format-verifier think_format``, ``--max-new-tokens 64``); switches go alone
(``--fresh``, ``--no-progress``)."""

from __future__ import annotations

from collections.abc import Sequence

from trainer import cli
from trainer.config import EvalArgs


def parse_args(argv: Sequence[str] | None = None) -> EvalArgs:
    """``make eval``'s command line -> EvalArgs (a ConfigError says what is wrong)."""
    return cli.load(EvalArgs, list(argv or []))
