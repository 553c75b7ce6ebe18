"""Stopping a training run cleanly on SIGINT (Ctrl-C) or SIGTERM.

Inside ``deferred()`` the first signal only sets a flag: the GRPO loop finishes the step it is in,
writes a checkpoint of that step and raises ``Interrupted`` (trainer/train.py checks ``requested()``
after each step), so the checkpoint is a consistent state (weights, optimizer, data cursor, RNG) and
resuming from it gives the same run as one never interrupted. A second signal stops at once
(``KeyboardInterrupt``; the newest checkpoint on disk is then the one to resume from).

Handlers are installed only from the main thread of a single process (not under torchrun, where the
ranks would stop at different steps).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainer.errors import Stopped

_flag = threading.Event()
_signal: list[int] = []


class Interrupted(Stopped):
    """The run stopped at ``step`` on a signal, after writing ``checkpoint``."""

    def __init__(self, step: int, checkpoint: Path, message: str = ""):
        super().__init__(message or f"interrupted at step {step}; checkpoint {checkpoint}")
        self.step, self.checkpoint = step, checkpoint


def requested() -> bool:
    """True once a signal asked the run to stop (inside ``deferred``)."""
    return _flag.is_set()


def exit_status() -> int:
    """128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a killed command."""
    return 128 + (_signal[-1] if _signal else signal.SIGINT)


def _usable() -> bool:
    return threading.current_thread() is threading.main_thread() and int(os.environ.get("WORLD_SIZE", "1")) <= 1


def _on_signal(signum: int, frame: object) -> None:
    _signal.append(signum)
    if _flag.is_set():
        raise KeyboardInterrupt
    _flag.set()
    print(
        f"\n{signal.Signals(signum).name}: stopping after the current step and writing a checkpoint "
        "(send it again to stop at once)",
        file=sys.stderr,
        flush=True,
    )


def _raise(signum: int, frame: object) -> None:
    _signal.append(signum)
    raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT/SIGTERM set the flag (the loop stops after its step) instead of stopping at once."""
    if not _usable():
        yield
        return
    _flag.clear()
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _flag.clear()


@contextmanager
def immediate() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, like Ctrl-C (outside the GRPO loop: nothing to save mid-stage)."""
    if not _usable():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
