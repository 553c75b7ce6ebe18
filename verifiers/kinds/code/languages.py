"""The languages the ``code`` verifier runs, read from their records (languages/<name>.py), and the limits every
toolchain job shares. Python runs in the Python image's warm workers; every other language is one job per
submission in the toolchain lane (in_sandbox/code/driver.py: compile once, run once per case). Budgets and
toolchains: docs/verifiers.md, "Languages" and "How non-Python code runs".
"""

from __future__ import annotations

import languages as records
from languages.record import Language

__all__ = ["ALIASES", "LANGUAGES", "NOT_SERVED", "for_source", "language", "source_text", "tags"]

LANGUAGES = records.LANGUAGES
NOT_SERVED = records.NOT_SERVED
ALIASES = records.ALIASES
COMPILE_TIMEOUT_S = 30.0
COMPILE_AS_MB = 4096
COMPILE_NPROC = 256
RUN_NPROC = 64
_TABLE = {name: r.language() for name, r in records.RECORDS.items() if r.source}


def language(name: str) -> Language:
    return _TABLE[name]


def for_source(lang: Language, code: str) -> Language:
    """``lang`` with the file and class names its record reads from ``code`` (Java, JUnit, Scala, Kotlin)."""
    hook = records.RECORDS[lang.name].for_source
    return hook(lang, code) if hook else lang


def source_text(lang: Language, code: str) -> str:
    """What is written as ``lang.source`` for ``code`` (PHP's opening tag, C#'s implicit usings)."""
    hook = records.RECORDS[lang.name].source_text
    return hook(code) if hook else code


def not_served(name: str) -> str | None:
    """Why this server does not run SandboxFusion's language ``name`` (None: it does, or it is unknown)."""
    return NOT_SERVED.get(name.strip().lower())


def tags(name: str) -> tuple[str, ...]:
    """Fence tags that select ``name``'s code block."""
    return records.RECORDS[name].tags
