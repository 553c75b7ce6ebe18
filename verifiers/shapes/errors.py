"""Errors the command-line entry points turn into an exit status and a message.

Library code raises these; only ``main()`` (``python -m verifiers.cli``, ``python -m verifiers.fronts.server``)
prints the message on stderr and exits with status 1.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A command-line value the user must fix: an unreadable file, a malformed KEY=VALUE or weight."""


class ListenError(OSError):
    """A port of the service (gRPC or HTTP) could not be bound (in use, or not allowed)."""
