"""Racket 8.7: ``raco make`` compiles the module once. Assert mode: one module (``#lang racket`` added where the
candidate has none, the tests' own dropped), rackunit's check handler set to end the run with status 1 (a failed
check outside a test case only prints), then the tests, then our line."""

import re

from languages.record import Parts, Record

_LANG = re.compile(r"\A\s*#lang[ \t]+[^\n]*\n?")


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    program = p.program if _LANG.match(p.program) else "#lang racket\n" + p.program
    tests = _LANG.sub("", p.tests, count=1)
    h = f"rlvr-{p.tag}-check-handler"
    handler = (
        f"\n(require (rename-in (only-in rackunit current-check-handler) [current-check-handler {h}]))\n"
        f'({h} (lambda (e) (eprintf "Test failed: ~a\\n" (if (exn? e) (exn-message e) e)) (exit 1)))\n'
    )
    say = f'(write-string (string-append "\\n" "{p.a}" "{p.b}" "\\n"))\n(flush-output)\n'
    return f"{program}\n{handler}{tests}\n{say}", {}


RECORD = Record(
    name="racket",
    rank=24,
    tags=("racket", "rkt", "scheme"),
    source="main.rkt",
    compile=["raco", "make", "main.rkt"],
    run=["racket", "main.rkt"],
    aliases=("rkt",),
    sandboxfusion=("racket",),
    packages=("racket",),
    asserts=_assemble,
    toolchain_doc="Racket 8.7 (`raco make`, `racket`)",
    served_doc="yes (stdio or `/run_code`)",
)
