"""Assert mode in the toolchain languages (issue 40), through a real VerifierService and the real toolchain
image (verifiers/kinds/code/asserts.py): per language with asserts, a correct ``add`` passes the tests, a wrong one
fails them; a candidate that ends its process with status 0 before the tests finished (``exit(0)``,
``System.exit(0)``, ``process.exit(0)``, ...) is not paid, where a naive exit-code rule would pay it. All of them go
to the service as one batch. The residual gap (a program sharing the tests'
process can read the nonce from its own source) is a strict xfail."""

from __future__ import annotations

import pytest

from tests.langs_helpers import make_service
from verifiers.shapes.base import BadRequest
from verifiers.kinds.code.asserts import LANGUAGES
from verifiers.shapes.outcome import CaseStatus
from verifiers.shapes.request import Request

pytestmark = pytest.mark.docker

# language -> (tests, a correct add, a wrong add, an add that ends the process with status 0)
CASES = {
    "c": ("#include <assert.h>\nint main(void) {\n  assert(add(2, 3) == 5);\n  assert(add(-1, 1) == 0);\n}\n",
          "int add(int a, int b) { return a + b; }\n", "int add(int a, int b) { return a - b; }\n",
          "#include <stdlib.h>\nint add(int a, int b) { exit(0); }\n"),
    "cpp": ("#undef NDEBUG\n#include <cassert>\nint main() {\n  auto candidate = add;\n  assert(candidate(2, 3) == 5);\n"
            "  assert(candidate(-1, 1) == 0);\n}\n",
            "#include <vector>\nlong add(long a, long b) { return a + b; }\nint main() { return 3; }\n",
            "long add(long a, long b) { return a * b; }\n",
            "#include <cstdlib>\nlong add(long a, long b) { std::quick_exit(0); }\n"),
    "java": ("import java.util.*;\npublic class Main {\n  public static void main(String[] args) {\n"
             "    Solution s = new Solution();\n    assert s.add(2, 3) == 5;\n"
             "    if (s.add(-1, 1) != 0) throw new AssertionError();\n  }\n}\n",
             "class Solution { int add(int a, int b) { return a + b; } }\n",
             "class Solution { int add(int a, int b) { return a - b; } }\n",
             "class Solution { int add(int a, int b) { System.exit(0); return 0; } }\n"),
    "javascript": ("const assert = require('node:assert');\nassert.strictEqual(add(2, 3), 5);\n"
                   "console.assert(add(-1, 1) === 0);\n",
                   "function add(a, b) { return a + b; }\n", "const add = (a, b) => a + b + (a < 0 ? 1 : 0);\n",
                   "function add(a, b) { process.exit(0); }\n"),
    "typescript": ("import assert from 'assert';\nassert.strictEqual(add(2, 3), 5);\nassert.strictEqual(add(-1, 1), 0);\n",
                   "function add(a: number, b: number): number { return a + b; }\n",
                   "function add(a: number, b: number): number { return a * b; }\n",
                   "function add(a: number, b: number): number { process.exit(0); }\n"),
    "go": ('func main() {\n\tif add(2, 3) != 5 {\n\t\tpanic("add(2, 3)")\n\t}\n\tif add(-1, 1) != 0 {\n'
           '\t\tpanic("add(-1, 1)")\n\t}\n}\n',
           'package main\n\nimport "fmt"\n\nfunc add(a, b int) int { return a + b }\n\nfunc main() { fmt.Println(add(1, 1)) }\n',
           "func add(a, b int) int { return a - b }\n",
           'import "os"\n\nfunc add(a, b int) int { os.Exit(0); return 0 }\n'),
    "rust": ("fn main() {\n    let candidate = add;\n    assert_eq!(candidate(2, 3), 5);\n    assert!(candidate(-1, 1) == 0);\n}\n",
             "fn main() {}\nfn add(a: i64, b: i64) -> i64 { a + b }\n", "fn add(a: i64, b: i64) -> i64 { a - b }\n",
             "fn add(_a: i64, _b: i64) -> i64 { std::process::exit(0) }\n"),
    "php": ("<?php\nassert(add(2, 3) === 5);\nif (add(-1, 1) !== 0) { throw new Exception('Test failed!'); }\n",
            "<?php\nfunction add($a, $b) { return $a + $b; }\n", "function add($a, $b) { return $a - $b; }\n",
            "function add($a, $b) { exit(0); }\n"),
    "ruby": ("require 'test/unit'\nclass TestAdd < Test::Unit::TestCase\n  def test_add\n    assert_equal(5, add(2, 3))\n"
             "    assert_equal(0, add(-1, 1))\n  end\nend\n",
             "def add(a, b)\n  a + b\nend\n", "def add(a, b)\n  a * b\nend\n", "def add(a, b)\n  exit!(0)\nend\n"),
    "perl": ("die 'Test failed!' unless add(2, 3) == 5;\ndie 'Test failed!' unless add(-1, 1) == 0;\n",
             "sub add { my ($a, $b) = @_; return $a + $b; }\n", "sub add { my ($a, $b) = @_; return $a - $b; }\n",
             "sub add { exit(0); }\n"),
    "lua": ("assert(add(2, 3) == 5)\nassert(add(-1, 1) == 0)\n", "function add(a, b) return a + b end\n",
            "function add(a, b) return a - b end\n", "function add(a, b) os.exit(0) end\n"),
    "r": ("stopifnot(add(2, 3) == 5)\nstopifnot(add(-1, 1) == 0)\n", "add <- function(a, b) a + b\n",
          "add <- function(a, b) a * b\n", "add <- function(a, b) quit(save = 'no', status = 0)\n"),
    "scala": ("object Main {\n  def main(args: Array[String]): Unit = {\n    assert(Sol.add(2, 3) == 5)\n"
              "    assert(Sol.add(-1, 1) == 0)\n  }\n}\n",
              "object Sol { def add(a: Int, b: Int): Int = a + b }\n", "object Sol { def add(a: Int, b: Int): Int = a - b }\n",
              "object Sol { def add(a: Int, b: Int): Int = { sys.exit(0); 0 } }\n"),
    "csharp": ("class Tests {\n  static void Main(string[] args) {\n    Debug.Assert(Sol.Add(2, 3) == 5);\n"
               "    Debug.Assert(Sol.Add(-1, 1) == 0);\n  }\n}\n",
               "using System.Diagnostics;\nstatic class Sol { public static int Add(int a, int b) { return a + b; } }\n",
               "using System.Diagnostics;\nstatic class Sol { public static int Add(int a, int b) { return a * b; } }\n",
               "using System.Diagnostics;\nstatic class Sol { public static int Add(int a, int b) { Environment.Exit(0); return 0; } }\n"),
    "d": ("unittest {\n  assert(add(2, 3) == 5);\n}\nvoid main() {\n  assert(add(-1, 1) == 0);\n}\n",
          "int add(int a, int b) { return a + b; }\n", "int add(int a, int b) { return a - b; }\n",
          "import core.stdc.stdlib : exit;\nint add(int a, int b) { exit(0); }\n"),
}  # fmt: skip
OPTIONS = {"mode": "assert", "case_timeout_s": "20", "compile_timeout_s": "90"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc, close = make_service(tmp_path_factory)
    yield svc
    close()


def _request(lang: str, candidate: str, tests: str) -> Request:
    return Request("code", f"```{lang}\n{candidate}```\n", tests, options={**OPTIONS, "language": lang}, timeout_s=120)


@pytest.fixture(scope="module")
def verdicts(service):
    """Every language's correct, wrong and early-exit programs, graded as one batch."""
    items = [(lang, _request(lang, p, tests)) for lang, (tests, *programs) in CASES.items() for p in programs]
    out: dict[str, list] = {}
    for (lang, _), v in zip(items, service.verify_batch([r for _, r in items]), strict=True):
        out.setdefault(lang, []).append(v)
    return out


def test_every_assert_language_has_cases():
    assert sorted(CASES) == sorted(LANGUAGES)


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_correct_program_passes(verdicts, lang):
    v = verdicts[lang][0]
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    assert [c.status for c in v.cases] == [CaseStatus.PASSED] and not v.signals


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_wrong_program_fails(verdicts, lang):
    v = verdicts[lang][1]
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0), v.detail
    assert v.detail.startswith("a test failed") and "code.early_exit" not in v.signals


@pytest.mark.parametrize("lang", sorted(CASES))
def test_exiting_0_before_the_tests_finish_is_not_paid(verdicts, lang):
    """The program's exit status is 0 (a naive rule pays it), but the tests never reached their end."""
    v = verdicts[lang][2]
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0), v.detail
    assert "before the tests finished" in v.detail and "code.early_exit" in v.signals
