"""Go 1.19: ``go build`` (its standard library ships precompiled); the tests a ``func main`` that panics."""

import re
from dataclasses import replace

from languages.assemble import need, rename
from languages.common import GO_ENV
from languages.parse import blank_literals
from languages.record import Language, Parts, Record

_MAIN = re.compile(r"(?m)^func\s+main\s*\(\s*\)\s*\{")
_PACKAGE = re.compile(r"(?m)^\s*package\s+\w+")


def _package(code: str) -> str:
    return code if _PACKAGE.search(blank_literals(code)) else "package main\n" + code


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    """Three files of ``package main``: the candidate, the tests, ours; mains renamed as in C."""
    t = f"rlvrTests{p.tag}"
    program, _ = rename(_package(p.program), _MAIN, f"rlvrUnusedMain{p.tag}")
    tests, m = rename(_package(p.tests), _MAIN, t)
    need(m, "go", "func main() { ... panic(...) ... }")
    ours = (
        f'package main\n\nimport rlvrOs{p.tag} "os"\n\nfunc main() {{\n  {t}()\n'
        f'  rlvrOs{p.tag}.Stdout.WriteString("\\n" + "{p.a}" + "{p.b}" + "\\n")\n}}\n'
    )
    return program, {"tests.go": tests, "rlvr_main.go": ours}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    return replace(base, compile=[*base.compile, *files])


RECORD = Record(
    name="go",
    rank=5,
    tags=("go", "golang"),
    source="main.go",
    compile=["go", "build", "-ldflags=-s -w", "-o", "main", "main.go"],  # no symbol table, no DWARF: names kept
    run=["./main"],
    env=GO_ENV,
    aliases=("golang",),
    sandboxfusion=("go",),
    shows_compile=True,
    packages=("golang-go",),
    asserts=_assemble,
    adjust=_adjust,
    toolchain_doc="Go 1.19 `go build -ldflags=-s -w`",
)
