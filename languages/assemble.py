"""What assert-mode templates share: finding and renaming an entry point, and the two common shapes (a C-like
program whose ``main`` ours calls, a script that runs top to bottom). How a program passes:
verifiers/kinds/code/asserts.py."""

from __future__ import annotations

import re

from languages.parse import blank_literals
from languages.record import Assemble, BadTests, Parts

C_MAIN = re.compile(r"\b(int|void)\s+main\s*\(([^()]*)\)\s*\{")


def closing(clean: str, at: int) -> int:
    """Index of the brace closing the one at ``at`` (in literal-blanked text), or -1."""
    depth = 0
    for j in range(at, len(clean)):
        depth += {"{": 1, "}": -1}.get(clean[j], 0)
        if depth == 0:
            return j
    return -1


def rename(code: str, pattern: re.Pattern, new: str, ret: str = "") -> tuple[str, re.Match | None]:
    """``code`` with the first function ``pattern`` finds (literals and comments blanked) renamed to ``new``
    (its word ``main``), ``ret`` put before its closing brace; (code, the match or None)."""
    clean = blank_literals(code)
    m = pattern.search(clean)
    if m is None:
        return code, None
    at = clean.index("main", m.start())
    close = closing(clean, m.end() - 1)
    if close < 0:
        return code, None
    body = code[at + 4 : close]
    return code[:at] + new + body + ret + code[close:], m


def need(found: object, lang: str, what: str) -> None:
    if not found:
        raise BadTests(f"code: {lang} tests (the reference) need {what}")


def c_like(header: str, lang: str) -> Assemble:
    """Candidate, tests, our ``main`` calling the tests' (renamed); a candidate's ``main`` renamed away."""

    def assemble(p: Parts) -> tuple[str, dict[str, str]]:
        t = f"rlvr_tests_{p.tag}"
        program, _ = rename(p.program, C_MAIN, f"rlvr_unused_main_{p.tag}")
        tests, m = rename(p.tests, C_MAIN, t, "\nreturn 0;\n")  # a main may fall off its end: 0, as main's
        need(m, lang, "a main function (int main() { assert(...); })")
        args = "argc, argv" if m.group(2).strip() not in ("", "void") else ""
        ours = (
            f"\n{header}\nint main(int argc, char **argv) {{\n  int rc = {t}({args});\n  (void)argc; (void)argv;\n"
            f'  if (rc != 0) return rc;\n  fputs("\\n" "{p.a}" "{p.b}" "\\n", stdout);\n  fflush(stdout);\n'
            "  return 0;\n}\n"
        )
        return f"{program}\n{tests}\n{ours}", {}

    return assemble


def script(say: str, before: str = "\n", between: str = "\n") -> Assemble:
    """Candidate, ``between``, the tests, ``before``, then the statement ``say`` (``{a}``, ``{b}``: the halves)."""

    def assemble(p: Parts) -> tuple[str, dict[str, str]]:
        return f"{p.program}{between}{p.tests}{before}{say.format(a=p.a, b=p.b)}\n", {}

    return assemble
