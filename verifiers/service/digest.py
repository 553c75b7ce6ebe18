"""What decides a verifier's grades on this server, as digests a client can compare (``VerifierInfo.digest``
and ``grader_version``): ``make eval`` reuses a logged grade only while both are unchanged
(trainer/evaluation/evaluate.py), so a verifier replaced with ``--replace``, or another server with another
registry or other grading code, never hands out stale grades.

``grader_version``: a content hash of the grading code this process serves: ``in_sandbox/`` (what runs in
the sandbox, the image's content), ``languages/`` (the language records), ``verifiers/kinds/`` and ``verifiers/shapes/`` (the host-side verifiers,
the final-answer rule's host half, outcomes and signals). Computed once per process.

``definition_digest``: the grader version, the verifier's name, kind and definition (its spec: a python
verifier's source, a remote's target, a reward model's path and mapping), and for a composite its components'
digests, so replacing a component changes the composite's. Not covered, by design: what a remote server
serves behind its name, the weights at a reward model's path, and the service's limits (``--memory-mb``,
default timeouts), which decide only ``TIMEOUT``/``RUNTIME_ERROR`` outcomes at the margin.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GRADING_CODE = ("in_sandbox", "languages", "verifiers/kinds", "verifiers/shapes")


@cache
def grader_version() -> str:
    h = hashlib.sha256()
    for folder in GRADING_CODE:
        for f in sorted((ROOT / folder).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".pyo"):
                h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def definition_digest(v: Any, lookup: Callable[[str], Any], _seen: frozenset[str] = frozenset()) -> str:
    """The digest of ``v`` (a registry entry); ``lookup`` finds a composite's components by name."""
    spec = v.spec() if hasattr(v, "spec") else {}
    parts: dict[str, str] = {}
    for p in getattr(v, "parts", []) or []:
        if p.verifier in _seen:  # the registry refuses cycles; never loop on one
            continue
        try:
            parts[p.verifier] = definition_digest(lookup(p.verifier), lookup, _seen | {v.name})
        except Exception:  # a component gone meanwhile: its absence is part of the digest
            parts[p.verifier] = "missing"
    blob = json.dumps([grader_version(), v.name, v.kind, spec, parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
