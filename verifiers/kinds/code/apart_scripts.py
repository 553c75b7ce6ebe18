"""Assert mode's scripting languages whose tests run apart from the candidate (issue 49), as JavaScript's do
(verifiers/kinds/code/asserts_apart.py, which registers these in ``SEPARATE``).

Each is two processes of the language's interpreter in the toolchain sandbox, both our own code shipped with the
job (in_sandbox/code/<lang>_tests.*, <lang>_candidate.*, <lang>_wire.*):

* the **tests' process** reads the sentinel (``rlvr_nonce``) and the tests, deletes both, loads what the tests
  need while no candidate exists, makes itself non-dumpable (a copy of the interpreter its user cannot read, or
  ``prctl`` where the interpreter must read its own binary: Racket), starts the candidate's process and talks to
  it over two FIFOs; every function the tests call that the candidate defines is a stub here that sends plain
  data and converts the plain answer back; the tests run in this pristine interpreter; the verdict (the sentinel
  line, then ``{sentinel}:ran:{json}`` or ``{sentinel}:bad_reference:{why}``) goes on this process's stdout;
* the **candidate's process** loads the candidate's code, says which of the names the tests read it defines,
  then answers calls. Its stdout is the tests' stderr: it cannot write the verdict, and nothing it defines
  (a shadowed ``die``/``error``/``assert``/``stopifnot``, a patched runtime, an equal-to-everything value, an
  exit hook, a comment swallowing what follows) exists in the tests' process.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import in_sandbox.code
from languages.php import source_text as php_source

_DIR = Path(in_sandbox.code.__file__).parent
_RKT_LANG = re.compile(r"\A\s*#lang[ \t]+[^\n]*\n?")


@dataclass(frozen=True)
class Apart:
    """How one language's tests run apart: the candidate's file, the run (and compile) argv, the job's files."""

    source: str  # the candidate's code, as the job's main source
    run: list[str]
    assemble: Callable  # asserts.Parts -> (the candidate's source, {file name: text})
    compile: list[str] | None = None


def _unreadable(binary: str, runner: str, *args: str, env: str = "") -> list[str]:
    """Run ``runner`` with a copy of ``binary`` its user cannot read: the kernel makes that process non-dumpable
    (its /proc files, memory and descriptors closed to the candidate's process, same uid)."""
    run = f"exec {env} ./rlvr-interp {' '.join(args)} {runner}"
    return ["sh", "-c", f"cp {binary} ./rlvr-interp && chmod 100 ./rlvr-interp && {run}"]


def _shipped(tests: str, ours: dict[str, str], program: Callable[[str], str] = str) -> Callable:
    """An assembler: the candidate's ``program`` (its code as is, by default), our files (job name ->
    in_sandbox/code file), the tests as ``tests``, the sentinel as ``rlvr_nonce``."""

    def assemble(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
        files = {name: (_DIR / src).read_text(encoding="utf-8") for name, src in ours.items()}
        return program(p.program), {**files, tests: p.tests, "rlvr_nonce": p.a + p.b}

    return assemble


def _ours(ext: str, prefix: str) -> dict[str, str]:
    """The job's names of a language's three files -> their files here."""
    return {
        f"rlvr_{part}.{ext}": f"{prefix}_{src}.{ext}"
        for part, src in (("tests_runner", "tests"), ("candidate", "candidate"), ("wire", "wire"))
    }


RUBY = Apart(
    "solution.rb", _unreadable("/usr/bin/ruby", "rlvr_tests_runner.rb"), _shipped("rlvr_tests.rb", _ours("rb", "rb"))
)
PHP = Apart(
    "solution.php",
    _unreadable("/usr/bin/php", "rlvr_tests_runner.php", "-d", "zend.assertions=1", "-d", "assert.exception=1"),
    _shipped("rlvr_tests.php", _ours("php", "php"), php_source),  # an opening tag where the code has none
)

PERL = Apart(
    "solution.pl", _unreadable("/usr/bin/perl", "rlvr_tests_runner.pl"), _shipped("rlvr_tests.pl", _ours("pl", "pl"))
)

LUA = Apart(
    "solution.lua",
    _unreadable("/usr/bin/lua5.4", "rlvr_tests_runner.lua"),
    _shipped("rlvr_tests.lua", {**_ours("lua", "lua"), "rlvr_luaunit.lua": "lua_luaunit.lua"}),
)

# R: its executable, as Rscript runs it (R_HOME set), with what Rscript's --vanilla means
R = Apart(
    "solution.R",
    _unreadable(
        "/usr/lib/R/bin/exec/R", "--file=rlvr_tests_runner.R", "--vanilla", "--no-echo", env="env R_HOME=/usr/lib/R"
    ),
    _shipped("rlvr_tests.R", _ours("R", "r")),
)

# Racket: the runner makes itself non-dumpable (prctl); -U: no user-specific collections. No ``raco make`` of the
# candidate's module: its macros would run before the tests' process, with the sentinel still on disk.
RACKET = Apart(
    "solution.rkt",
    ["racket", "-U", "rlvr_tests_runner.rkt"],
    _shipped(
        "rlvr_tests.rkt", _ours("rkt", "rkt"), lambda code: code if _RKT_LANG.match(code) else "#lang racket\n" + code
    ),
)

# language -> how its tests run apart (asserts_apart.SEPARATE takes these)
SCRIPTS: dict[str, Apart] = {"ruby": RUBY, "php": PHP, "perl": PERL, "lua": LUA, "r": R, "racket": RACKET}
