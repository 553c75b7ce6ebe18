"""Assert mode's Kotlin and Racket programs (verifiers/kinds/code/asserts.py assembles the others; its
``LANGUAGES`` names these two, and its docstring says how a program passes: exit 0 and the sentinel).

* **Kotlin**: the tests are a ``fun main`` calling the candidate (``assert(...)``, which the run's ``-ea``
  turns on, or a thrown exception). It is renamed and called from our ``main``; a ``main`` the candidate
  wrote is renamed out of the way (never called). The tests' imports go to the top of the file, where
  Kotlin wants them. The file compiles to ``MainKt``, the class the run starts.
* **Racket**: one module, ``#lang racket`` (added where the candidate has no ``#lang`` line; the tests'
  own is dropped): the candidate, then rackunit's check handler set to end the run with status 1 (a
  failed ``check-equal?`` outside a test case only prints, and ``racket`` would exit 0), then the tests
  (rackunit checks, or ``(unless ... (error ...))``), then the sentinel.
"""

from __future__ import annotations

import re

from verifiers.kinds.code.java_source import blank_literals


class BadTests(ValueError):
    """The tests cannot be assembled (no entry point where the language needs one)."""


_KT_MAIN = re.compile(r"\bfun\s+main\s*\(([^()]*)\)")
_KT_IMPORT = re.compile(r"(?m)^[ \t]*import[ \t]+[\w.]+(?:\.\*)?(?:[ \t]+as[ \t]+\w+)?[ \t]*;?[ \t]*$")
_KT_HEADER = re.compile(r"(?m)\A(?:\s*(?://[^\n]*|@file:[^\n]*|package[ \t]+[\w.]+[ \t]*;?|import[ \t][^\n]*)\n)*")
_RKT_LANG = re.compile(r"\A\s*#lang[ \t]+[^\n]*\n?")


def _rename_main(code: str, new: str) -> tuple[str, re.Match | None]:
    """``code`` with the name of its first ``fun main(...)`` (literals and comments blanked) changed to ``new``."""
    m = _KT_MAIN.search(blank_literals(code))
    if m is None:
        return code, None
    at = m.start() + m.group(0).index("main")
    return code[:at] + new + code[at + 4 :], m


def kotlin(p) -> tuple[str, dict[str, str]]:
    """``p``: asserts.Parts (program, tests, the sentinel's halves a and b, our names' tag)."""
    t = f"rlvrTests{p.tag}"
    program, _ = _rename_main(p.program, f"rlvrUnusedMain{p.tag}")
    tests, m = _rename_main(p.tests, t)
    if m is None:
        raise BadTests("code: kotlin tests (the reference) need fun main() { assert(...) }")
    imports = "".join(i.group(0).strip() + "\n" for i in _KT_IMPORT.finditer(blank_literals(tests)))
    tests = _KT_IMPORT.sub("", tests)
    head = _KT_HEADER.match(program).end()  # after the candidate's package line and imports
    call = f"{t}(args)" if m.group(1).strip() else f"{t}()"
    ours = (f"\nfun main(args: Array<String>) {{\n"
            f"  try {{ {call} }} catch (e: AssertionError) {{ System.err.println(e); kotlin.system.exitProcess(1) }}\n"
            f'  print("\\n" + "{p.a}" + "{p.b}" + "\\n")\n  System.out.flush()\n}}\n')  # fmt: skip
    return f"{program[:head]}{imports}{program[head:]}\n{tests}\n{ours}", {}


def racket(p) -> tuple[str, dict[str, str]]:
    program = p.program if _RKT_LANG.match(p.program) else "#lang racket\n" + p.program
    tests = _RKT_LANG.sub("", p.tests, count=1)
    h = f"rlvr-{p.tag}-check-handler"
    handler = (
        f"\n(require (rename-in (only-in rackunit current-check-handler) [current-check-handler {h}]))\n"
        f'({h} (lambda (e) (eprintf "Test failed: ~a\\n" (if (exn? e) (exn-message e) e)) (exit 1)))\n'
    )
    say = f'(write-string (string-append "\\n" "{p.a}" "{p.b}" "\\n"))\n(flush-output)\n'
    return f"{program}\n{handler}{tests}\n{say}", {}
