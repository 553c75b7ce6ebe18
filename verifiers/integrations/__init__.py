"""Drop-in rewards for other trainers: thin adapters over ``verifiers.client``.

* ``verifiers.integrations.trl``: ``reward_function(...)``, a reward function for TRL's ``GRPOTrainer``;
* ``verifiers.integrations.verl``: ``compute_score`` / ``compute_score_batch`` for verl's reward managers.

Adapters translate between another tool's call shape and a ``VerifyBatch`` request; they never grade.
Every verdict comes from the service, so the sandbox, the math and code grading and the registered
verifiers are the same ones our own trainer uses.

The service is reached through one ``VerifierClient`` per process and target (``client_for``): a gRPC
channel is thread-safe and cheap to share, but must not cross a ``fork`` (TRL's and verl's worker
processes, Ray actors), so the cache is keyed by the process id too.
"""

from __future__ import annotations

import os
import threading

from verifiers.client import OUTCOMES, UNGRADED, VerifierClient  # noqa: F401 - re-exported for the adapters

DEFAULT_TARGET = "127.0.0.1:50051"
TARGET_ENV = "VERIFIER_TARGET"
# UNGRADED: a verdict that says nothing about the completion (SANDBOX_ERROR, BAD_REFERENCE): training on a
# fake 0 for these would punish the model. OUTCOMES: every outcome the wire can carry, in the proto's order
# (for per-outcome metrics that always have every key). Both from verifiers.client (names from the proto).

_clients: dict[tuple[int, str], VerifierClient] = {}
_lock = threading.Lock()


def default_target() -> str:
    """``$VERIFIER_TARGET``, read at call time, else ``127.0.0.1:50051``."""
    return os.environ.get(TARGET_ENV) or DEFAULT_TARGET


def client_for(target: str | None = None) -> VerifierClient:
    """The shared client of this process for ``target`` (default: ``default_target()``)."""
    key = (os.getpid(), target or default_target())
    c = _clients.get(key)
    if c is None:
        with _lock:
            c = _clients.get(key)
            if c is None:
                c = _clients[key] = VerifierClient(key[1])
    return c
