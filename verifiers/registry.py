"""Name → verifier. Built-ins are fixed; registered verifiers (python, remote, composite) are added
over gRPC and persisted (see ``verifiers/store.py`` once registration lands)."""

from __future__ import annotations

import re
import threading

from verifiers.base import NotFound, Verifier
from verifiers.composite import Composite, Part
from verifiers.format import TagCount, ThinkFormat

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def builtin_verifiers() -> dict[str, Verifier]:
    from verifiers.math_verifier import MathVerifier

    found: list[Verifier] = [ThinkFormat(), TagCount(), MathVerifier()]
    try:
        from verifiers.code_verifier import CodeVerifier

        found.append(CodeVerifier())
    except ImportError:
        pass
    found.append(
        Composite(
            "r1",
            [Part("math", 0.9), Part("think_format", 0.1)],
            description="DeepSeek-R1 style reward: 0.9 * math + 0.1 * think_format",
            kind="builtin",
        )
    )
    return {v.name: v for v in found}


class Registry:
    def __init__(self, path: str | None = None):
        self.path = path
        self._builtins = builtin_verifiers()
        self._custom: dict[str, Verifier] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Verifier:
        v = self._builtins.get(name)
        if v is None:
            with self._lock:
                v = self._custom.get(name)
        if v is None:
            raise NotFound(f"unknown verifier {name!r}; ListVerifiers shows the registered names")
        return v

    def all(self) -> list[Verifier]:
        with self._lock:
            return list(self._builtins.values()) + sorted(self._custom.values(), key=lambda v: v.name)

    def is_builtin(self, name: str) -> bool:
        return name in self._builtins
