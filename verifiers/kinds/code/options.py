"""The ``code`` verifier's request options, parsed and validated once into ``CodeOptions``.

A request's ``options`` arrive as a str -> str map (the wire's). ``CodeOptions.parse`` reads every key
the ``code`` kind knows, checks it and raises ``BadRequest`` naming the first bad one; everything below
``CodeVerifier.check`` (stdio runs, judges, the toolchain job) reads the typed object, never the map.
Options that do not apply to the request's mode are neither read nor checked: ``judge``, ``abs_tol``
and ``rel_tol`` only with ``mode=stdio``, ``compile_timeout_s`` only for a language other than Python;
such fields keep their defaults.

>>> CodeOptions.parse({"mode": "stdio", "language": "c++", "partial": "true"}).language
'cpp'
>>> CodeOptions.parse({"partial": "true", "reward": "all"}).reward  # reward wins over the old spelling
'all'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from verifiers.kinds.code.asserts import LANGUAGES as ASSERT_LANGUAGES
from verifiers.kinds.code.asserts import SHARED_PROGRAM
from verifiers.kinds.code.judges import DEFAULT_TOL, JUDGES
from verifiers.kinds.code.languages import ALIASES, COMPILE_TIMEOUT_S, LANGUAGES, not_served
from verifiers.shapes.base import BadRequest

CASE_TIMEOUT_S = 5.0
MAX_SECONDS = 3600.0
# option name -> what it does (the kind's declared schema: ListVerifiers shows it)
DESCRIPTIONS = {
    "mode": "assert (default: an assert script or MBPP list in Python; in other languages, test code in the "
    "language run after the candidate's, docs/verifiers.md) or stdio (stdin/stdout cases)",
    "language": f"{LANGUAGES[0]} (default), {', '.join(LANGUAGES[1:])}",  # the language table's, as it grows
    "entry_point": "the function check(candidate) is called with (assert mode, Python)",
    "prelude": "trusted problem code run before the tests, in their process (assert mode; e.g. HumanEval's prompt; "
    "other languages: put before the candidate's code, e.g. HumanEval-X's includes)",
    "case_timeout_s": "seconds per test case (default 5; in assert mode outside Python, the whole test program)",
    "compile_timeout_s": "seconds for the compiler (compiled languages, both modes, default 30)",
    "reward": "all (default: every test passes) or fraction (the share passed)",
    "partial": "true: reward=fraction (an older spelling; reward wins when both are given)",
    "allow_shared_program": "true: accept assert mode in a language whose tests still share the candidate's program "
    "(refused without it: the candidate could rewrite them; docs/verifiers.md says each language's guarantee); the "
    "verdict then carries the signal code.shared_program",
    "judge": "stdio: tokens (default), exact, float (abs_tol, rel_tol) or checker",
    "abs_tol": "judge=float: absolute tolerance",
    "rel_tol": "judge=float: relative tolerance",
}


@dataclass(frozen=True)
class CodeOptions:
    """One ``code`` request's options, validated."""

    mode: str = "assert"  # assert | stdio
    language: str = "python"  # canonical name (languages.LANGUAGES; aliases resolved)
    entry_point: str = ""  # assert mode: the function check(candidate) is called with
    prelude: str = ""  # assert mode: trusted problem code run before the tests
    case_timeout_s: float = CASE_TIMEOUT_S  # each case's own time limit, in (0, 3600)
    compile_timeout_s: float = COMPILE_TIMEOUT_S  # the compiler's, in (0, 3600)
    reward: str = "all"  # all | fraction (``partial=true`` is the older spelling of fraction)
    judge: str = "tokens"  # stdio: exact | tokens | float | checker
    abs_tol: float = DEFAULT_TOL  # judge=float
    rel_tol: float = DEFAULT_TOL  # judge=float
    allow_shared_program: bool = False  # assert mode: a language whose tests share the candidate's program, opted in

    @classmethod
    def parse(cls, options: Mapping[str, str], case_timeout_s: float = CASE_TIMEOUT_S) -> CodeOptions:
        """The validated options; ``BadRequest`` naming the first bad one. ``case_timeout_s``: the
        default for a request that gives none (the verifier's)."""
        mode = options.get("mode", "assert") or "assert"
        if mode not in ("assert", "stdio"):
            raise BadRequest(f"code: options['mode'] must be 'assert' or 'stdio', got {mode!r}")
        lang = _language(options)
        if lang != "python" and mode == "assert" and lang not in ASSERT_LANGUAGES:
            raise BadRequest(
                f"code: language {lang!r} has no assert mode (assert mode: python, "
                f"{', '.join(ASSERT_LANGUAGES)}); grade it with mode=stdio"
            )
        if lang != "python" and mode == "assert" and options.get("entry_point"):
            raise BadRequest(f"code: options['entry_point'] is Python's; {lang} tests call the candidate by name")
        shared = _flag(options, "allow_shared_program")
        if lang != "python" and mode == "assert" and lang in SHARED_PROGRAM and not shared:
            raise BadRequest(
                f"code: assert mode in {lang} runs the tests inside the candidate's own program, where the candidate "
                "can rewrite them (redefine what they call, undo the harness, read the nonce), so it is refused for "
                "training: grade with mode=stdio, or set options allow_shared_program=true to accept that weaker "
                "guarantee (the verdict then carries the signal code.shared_program; docs/verifiers.md, "
                "'Assert mode in other languages')"
            )
        reward = _reward(options)
        case_s = _seconds(options, "case_timeout_s", case_timeout_s)
        judge, abs_tol, rel_tol, compile_s = "tokens", DEFAULT_TOL, DEFAULT_TOL, COMPILE_TIMEOUT_S
        if mode == "stdio":
            judge = (options.get("judge") or "tokens").lower()
            if judge not in JUDGES:
                raise BadRequest(f"code: options['judge'] must be one of {', '.join(JUDGES)}, got {judge!r}")
            if judge == "float":
                abs_tol, rel_tol = _tol(options, "abs_tol"), _tol(options, "rel_tol")
        if lang != "python":
            compile_s = _seconds(options, "compile_timeout_s", COMPILE_TIMEOUT_S)
        return cls(
            mode,
            lang,
            options.get("entry_point", ""),
            options.get("prelude", ""),
            case_s,
            compile_s,
            reward,
            judge,
            abs_tol,
            rel_tol,
            shared,
        )


def _language(options: Mapping[str, str]) -> str:
    """The canonical language (``python`` by default); ``BadRequest`` if unknown."""
    raw = (options.get("language") or "python").strip().lower()
    name = ALIASES.get(raw, raw)
    if name not in LANGUAGES:
        why = not_served(raw)  # a SandboxFusion language this server does not run: say why
        because = f"; {raw!r} is not served: {why}" if why else f", got {raw!r}"
        raise BadRequest(f"code: options['language'] must be one of {', '.join(LANGUAGES)}{because}")
    return name


def _flag(options: Mapping[str, str], key: str) -> bool:
    """A true/false option (absent or empty: false); ``BadRequest`` for anything else."""
    raw = (options.get(key) or "false").strip().lower()
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise BadRequest(f"code: options[{key!r}] must be true or false, got {raw!r}")
    return raw in ("true", "1", "yes")


def _reward(options: Mapping[str, str]) -> str:
    """``all`` or ``fraction`` (``partial=true``, the old spelling, means ``fraction``; ``reward`` wins)."""
    raw = (options.get("reward") or "").strip().lower()
    if not raw:
        return "fraction" if options.get("partial", "").lower() in ("true", "1", "yes") else "all"
    if raw not in ("all", "fraction", "partial"):
        raise BadRequest(f"code: options['reward'] must be 'all' or 'fraction', got {raw!r}")
    return "all" if raw == "all" else "fraction"


def _seconds(options: Mapping[str, str], key: str, default: float) -> float:
    """Seconds in (0, 3600); empty or ``0``: ``default``."""
    raw = options.get(key, "")
    try:
        v = float(raw) if raw not in ("", "0") else default
    except ValueError:
        v = -1.0
    if not (0 < v < MAX_SECONDS):
        raise BadRequest(f"code: options[{key!r}] must be a number of seconds in (0, 3600), got {raw!r}")
    return v


def _tol(options: Mapping[str, str], key: str) -> float:
    raw = options.get(key, "")
    try:
        v = float(raw) if raw != "" else DEFAULT_TOL
    except ValueError:
        v = -1.0
    if not (v >= 0 and math.isfinite(v)):
        raise BadRequest(f"code: options[{key!r}] must be a non-negative number, got {raw!r}")
    return v
