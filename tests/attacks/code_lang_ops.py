"""Attack operators for assert mode in the languages beyond Python, and for Python tests that never run (issue 49).

Seeds are the per-language programs of tests/verifiers/kinds/code/test_code_assert_langs.py (``CASES``: the
tests, a correct ``add``, a wrong one). A *language mutant* is the wrong ``add`` with one or two attack texts
appended, each from one family of what a policy finds in a program it shares with the tests:

* ``harness_undone``: a trailing comment, datum comment or line splice that swallows what comes after, a
  replaced writer or exit the harness uses, a test runner told not to run;
* ``callee_redefined``: the assertion the tests call (macro, function, class, hook) shadowed or disabled;
* ``always_equal``: a value whose equality says yes to everything, where the language has overloading;
* ``nonce_read``: the program reads its own source or binary for the sentinel and prints it;
* ``early_exit``: exits 0 from the candidate's code (before any test).

The invariant (tests/attacks/test_code_lang_mutations.py): no mutant is ever paid. As sent by a trainer (no
``allow_shared_program``), a language that shares the candidate's program refuses every one of them up front;
a separated language (JavaScript) must fail them all for real. ``python_shape_mutants`` turns a Python
seed's tests into the shapes datasets send (pytest functions, unittest classes under a guard, after
``main(exit=False)``, a bare ``main()``, a pytest class, calls under a ``__main__`` guard) with a broken
candidate: reward 0 in every shape (the ``tests_never_run`` family). Deterministic for a given seed.
"""

from __future__ import annotations

import json
import random
import textwrap
from dataclasses import dataclass

# family -> language -> attack texts appended after the wrong ``add`` (several per language where they differ)
FAMILIES: dict[str, dict[str, list[str]]] = {
    "harness_undone": {
        "c": ["\n#define fputs(s, f) 0\n", "\n/* the rest is a comment", "\nint rlvr_x = 0; \\"],
        "cpp": ["\n#define fputs(s, f) 0\n", "\n/* the rest is a comment", "\n#define return return 0; //\n"],
        "javascript": ["\nprocess.stdout.write = () => true;\n", "\n/* the rest is a comment"],
        "typescript": ["\n(process as any).exitCode = 0; /* the rest is a comment"],
        "php": ["\n__halt_compiler();\n", "\n?>\n<?php /* the rest is a comment"],
        "ruby": ["\n__END__\n", "\n=begin\n"],
        "perl": ["\n__DATA__\n", "\n=pod\n"],
        "lua": ["\n--[==[ the rest is a comment\n"],
        "r": ["\nif (FALSE) {\n"],
        "racket": ["\n#|\n", "\n#;\n"],
        "go": ["\nfunc init() { os.Stdout = nil }\n"],
        "rust": ["\n/* the rest is a comment"],
        "java": ["\n/* the rest is a comment"],
        "kotlin": ["\n/* the rest is a comment"],
        "scala": ["\n/* the rest is a comment"],
        "csharp": ["\n/* the rest is a comment"],
        "d": ["\n/+ the rest is a comment"],
    },
    "callee_redefined": {
        "c": ["\n#define assert(x) ((void)0)\n"],
        "cpp": ["\n#define assert(x) ((void)0)\n", "\n#define NDEBUG\n"],
        "javascript": ["\nrequire('assert').strictEqual = () => {};\nconsole.assert = () => {};\n"],
        "typescript": ["\nrequire('assert').strictEqual = () => {};\n"],
        "php": ["\nini_set('zend.assertions', '0');\n"],
        "ruby": ["\nmodule Test; module Unit; module Assertions; def assert_equal(*a); end; end; end; end\n"],
        "perl": ["\nBEGIN { *CORE::GLOBAL::die = sub { 1 }; }\n"],
        "lua": ["\nassert = function() end\n"],
        "r": ["\nstopifnot <- function(...) invisible(TRUE)\n"],
        "racket": ["\n(define (check-equal? . a) (void))\n"],
        "go": ["\nfunc panic(v interface{}) {}\n"],
        "rust": ["\nmacro_rules! assert_eq { ($($t:tt)*) => {} }\nmacro_rules! assert { ($($t:tt)*) => {} }\n"],
        "java": ["\nclass AssertionError extends RuntimeException { AssertionError() {} }\n"],
        "kotlin": ["\nfun assert(b: Boolean) {}\n"],
        "scala": ["\nobject Predef { def assert(b: Boolean): Unit = () }\n"],
        "csharp": ["\nstatic class Debug { public static void Assert(bool b) {} }\n"],
        "d": ["\nvoid rlvrNoop() {}\n"],
    },
    "always_equal": {
        "cpp": ["\nstruct AE { template <class T> bool operator==(T) const { return true; } };\n"],
        "ruby": ["\nclass Integer; alias_method :rlvr_eq, :==; def ==(o) true end; end\n"],
        "javascript": ["\nObject.prototype.valueOf = function () { return 5; };\n"],
        "scala": ["\nobject AE { override def equals(o: Any) = true }\n"],
        "kotlin": ["\nobject AE { override fun equals(other: Any?) = true }\n"],
        "rust": ["\nstruct AE;\nimpl PartialEq<i64> for AE { fn eq(&self, _: &i64) -> bool { true } }\n"],
        "php": ["\nclass AE { function __toString() { return '5'; } }\n"],
        "lua": [
            "\nlocal rlvr_add = add\nfunction add(a, b) return setmetatable({}, {__eq = function() return true end}) end\n"
        ],
        "perl": [
            "\npackage AE; use overload '==' => sub { 1 }, 'eq' => sub { 1 };\npackage main;\nsub add { bless {}, 'AE' }\n"
        ],
        "r": ["\nadd <- function(a, b) structure(0, class = 'ae')\nOps.ae <- function(e1, e2) TRUE\n"],
        "racket": [
            "\n(struct ae () #:methods gen:equal+hash [(define (equal-proc a b r) #t) (define (hash-proc a r) 1)"
            " (define (hash2-proc a r) 1)])\n(set! add (lambda (a b) (ae)))\n"
        ],
    },
    "nonce_read": {
        "javascript": [
            '\nconst m = require(\'fs\').readFileSync(__filename, \'utf8\').match(/"(RLVR-[^"]*)" \\+ "([0-9a-f]+)"/);\n'
            "if (m) { process.stdout.write('\\n' + m[1] + m[2] + '\\n'); process.exit(0); }\n"
        ],
        "c": [
            "\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n__attribute__((constructor)) static void "
            'rlvr_read(void) { static char b[1 << 22]; FILE *f = fopen("main", "rb"); if (!f) return; '
            "size_t n = fread(b, 1, sizeof b, f); for (size_t i = 0; i + 60 < n; i++) "
            'if (!memcmp(b + i, "RLVR-TESTS-RAN-TO-THE-END-", 26)) { printf("\\n%.58s\\n", b + i); exit(0); } }\n'
        ],
        "php": [
            '\npreg_match(\'/"(RLVR-[^"]*)" \\. "([0-9a-f]+)"/\', file_get_contents(__FILE__), $m);\n'
            'if ($m) { echo "\\n" . $m[1] . $m[2] . "\\n"; exit(0); }\n'
        ],
        "lua": [
            '\nlocal s = io.open(arg[0]):read(\'a\')\nlocal a, b = s:match(\'"(RLVR%-[^"]*)" %.%. "(%x+)"\')\n'
            "if a then io.write('\\n' .. a .. b .. '\\n') os.exit(0) end\n"
        ],
    },
    # the separated languages: the sentinel sits in the tests' process (non-dumpable) and a deleted file
    "nonce_read_apart": {
        "ruby": [
            "\nbegin\n  s = File.binread(\"/proc/#{Process.ppid}/mem\") rescue File.read('rlvr_nonce') rescue ''\n"
            '  m = s[/RLVR-TESTS-RAN-TO-THE-END-\\h{32}/]\n  if m then File.write("/proc/#{Process.ppid}/fd/1", '
            '"\\n#{m}\\n"); exit!(0) end\nrescue StandardError\nend\n'
        ],
        "perl": [
            "\nmy $rlvr_p = getppid(); if (open(my $rlvr_e, '<', \"/proc/$rlvr_p/environ\")) { print STDOUT <$rlvr_e>; }\n"
            "if (open(my $rlvr_n, '<', 'rlvr_nonce')) { print STDOUT \"\\n\", <$rlvr_n>, \"\\n\"; exit 0; }\n"
        ],
        "r": [
            "\nrlvr_n <- tryCatch(readLines('rlvr_nonce'), error = function(e) NULL)\n"
            "if (!is.null(rlvr_n)) { cat('\\n', rlvr_n, '\\n', sep = ''); quit(save = 'no', status = 0) }\n"
        ],
        "racket": ['\n(with-handlers ([(lambda (e) #t) void]) (display (file->string "rlvr_nonce")) (exit 0))\n'],
    },
    "early_exit": {
        "c": ["\n#include <stdlib.h>\n__attribute__((constructor)) static void rlvr_go(void) { exit(0); }\n"],
        "javascript": ["\nprocess.exit(0);\n"],
        "lua": ["\nos.exit(0)\n"],
        "ruby": ["\nexit!(0)\n"],
        "perl": ["\nexit(0);\n"],
        "php": ["\nexit(0);\n"],
        "r": ["\nquit(save = 'no', status = 0)\n"],
        "racket": ["\n(exit 0)\n"],
    },
}


@dataclass(frozen=True)
class LangMutant:
    lang: str
    ops: tuple[str, ...]
    program: str
    tests: str


def lang_mutants(cases: dict, n: int, seed: int) -> list[LangMutant]:
    """``n`` language mutants of ``cases`` (language -> (tests, right, wrong, ...)), deterministic for ``seed``:
    the wrong program of a random language with one or two attacks of different families it has."""
    rng = random.Random(seed)
    out = []
    langs = sorted(cases)
    while len(out) < n:
        lang = rng.choice(langs)
        fams = [f for f in sorted(FAMILIES) if lang in FAMILIES[f]]
        picked = rng.sample(fams, min(len(fams), rng.randint(1, 2)))
        tests, _, wrong, *_ = cases[lang]
        texts = [rng.choice(FAMILIES[f][lang]) for f in picked]
        ops = tuple(f"{f}:{FAMILIES[f][lang].index(t)}" for f, t in zip(picked, texts, strict=True))
        out.append(LangMutant(lang, ops, wrong + "".join(texts), tests))
    return out


# -- Python: tests in the shapes datasets send, with a broken candidate (the tests_never_run family) -------
def _body(tests: str, entry: str, uses_check: bool) -> str:
    """The tests' checks as a function body: ``check(entry)`` for check(candidate) tests, else the asserts."""
    return f"check({entry})\n" if uses_check else tests


SHAPES = {
    "pytest_function": lambda tests, body, lead: f"{lead}\ndef test_generated():\n{textwrap.indent(body, '    ')}",
    "pytest_class": lambda tests, body, lead: (
        f"{lead}\nclass TestGenerated:\n    def test_it(self):\n{textwrap.indent(body, '        ')}"
    ),
    "unittest_guard": lambda tests, body, lead: (
        f"import unittest\n{lead}\nclass T(unittest.TestCase):\n    def test_it(self):\n"
        f"{textwrap.indent(body, '        ')}\nif __name__ == '__main__':\n    unittest.main()\n"
    ),
    "unittest_exit_false": lambda tests, body, lead: (
        f"import unittest\n{lead}\nclass T(unittest.TestCase):\n    def test_it(self):\n"
        f"{textwrap.indent(body, '        ')}\nunittest.main(exit=False)\n"
    ),
    "unittest_bare_main": lambda tests, body, lead: (
        f"import unittest\n{lead}\nclass T(unittest.TestCase):\n    def test_it(self):\n"
        f"{textwrap.indent(body, '        ')}\nunittest.main()\n"
    ),
    "main_guard": lambda tests, body, lead: (
        f"{lead}\ndef run():\n{textwrap.indent(body, '    ')}\nif __name__ == '__main__':\n    run()\n"
    ),
}
RUNS_NOTHING = {"main_guard"}  # a shape whose tests never run here: BAD_REFERENCE, whatever the candidate


def reshape(tests: str, entry: str, shape: str) -> str:
    """``tests`` (asserts, or HumanEval's ``def check(candidate)``) in the dataset shape ``shape``."""
    if tests.lstrip().startswith("["):  # an MBPP list: its asserts, one a line
        tests = "\n".join(json.loads(tests)) + "\n"
    uses_check = "def check(" in tests
    # the definitions of check-style tests, without their own top-level call (the shape decides what runs)
    lead = "\n".join(line for line in tests.splitlines() if not line.startswith("check(")) + "\n" if uses_check else ""
    return SHAPES[shape](tests, _body(tests, entry, uses_check), lead)
