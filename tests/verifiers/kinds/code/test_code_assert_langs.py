"""Assert mode in the toolchain languages (issue 40), through a real VerifierService and the real toolchain
image (verifiers/kinds/code/asserts.py): per language with asserts, a correct ``add`` passes the tests, a wrong one
fails them; a candidate that ends its process with status 0 before the tests finished (``exit(0)``,
``System.exit(0)``, ``process.exit(0)``, ...) is not paid, where a naive exit-code rule would pay it. All of
them go to the service as one batch. The residual gaps (a program sharing the tests' process can read the
nonce from its own source or binary, or rewrite what the tests call) are strict xfails."""

from __future__ import annotations

import re

import pytest

from verifiers.kinds.code.asserts import LANGUAGES, SENTINEL, SHARED_PROGRAM
from verifiers.kinds.code.options import CodeOptions
from verifiers.shapes.base import BadRequest
from verifiers.shapes.outcome import CaseStatus
from verifiers.shapes.request import Request

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
    "kotlin": ("import kotlin.math.abs\n\nfun main() {\n    assert(add(2, 3) == 5)\n"
               "    if (abs(add(-1, 1)) != 0) throw AssertionError(\"add(-1, 1)\")\n}\n",
               "fun add(a: Int, b: Int): Int = a + b\n\nfun main() { println(add(1, 1)) }\n",
               "fun add(a: Int, b: Int): Int = a - b\n",
               "import kotlin.system.exitProcess\n\nfun add(a: Int, b: Int): Int { exitProcess(0) }\n"),
    "racket": ("#lang racket\n(require rackunit)\n(check-equal? (add 2 3) 5)\n"
               "(unless (= (add -1 1) 0) (error \"Test failed: (add -1 1)\"))\n",
               "#lang racket\n(define (add a b) (+ a b))\n", "(define (add a b) (* a b))\n",
               "#lang racket\n(define (add a b) (exit 0))\n"),
}  # fmt: skip
# the assertions CASES' tests make that the tests' process counts, where not 2 (an ``if ... throw``, a ``die
# unless`` or ``(unless ... (error ...))`` is a test but no assertion; PHP's assert() is a construct it cannot count)
ASSERTS_IN_CASES = {"php": 0, "perl": 0, "racket": 1, "go": 0}  # Go's asserts are ifs, uncounted
# every language here still shares the candidate's program (asserts.SHARED_PROGRAM): opted in (issue 49)
OPTIONS = {"mode": "assert", "case_timeout_s": "20", "compile_timeout_s": "90", "allow_shared_program": "true"}
SHARED = "code.shared_program"


def _shared(lang: str) -> list[str]:
    """The signal a verdict of ``lang`` carries for running the tests in the candidate's program (or none)."""
    return [SHARED] if lang in SHARED_PROGRAM else []


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


def _request(lang: str, candidate: str, tests: str, **options: str) -> Request:
    opts = {**OPTIONS, "language": lang, **options}
    return Request("code", f"```{lang}\n{candidate}```\n", tests, options=opts, timeout_s=120)


# the other ways a test program ends: (language, candidate, options, outcome, the case's status, a signal or "")
ENDS = [
    ("c", "int add(int a, int b) { return a + ; }\n", {}, "COMPILE_ERROR", None, ""),
    (
        "javascript",
        "function add(a, b) { for (;;) {} }\n",
        {"case_timeout_s": "2"},
        "TIMEOUT",
        CaseStatus.TIME_LIMIT,
        "code.time_limit",
    ),
    (
        "java",
        "class Solution { int add(int a, int b) { String s = null; return s.length(); } }\n",
        {},
        "RUNTIME_ERROR",
        CaseStatus.RUNTIME_ERROR,
        "",
    ),
]


# More ways to end with status 0 before the tests ran to their end: (language, candidate, what the tests do
# to it); every one exits 0, so a rule that reads the exit status pays it
ATTACKS = [
    ("c", "#include <stdlib.h>\nint add(int a, int b) { return a + b; }\n"
          "__attribute__((constructor)) static void first(void) { exit(0); }\n", "a constructor exits before main"),
    ("c", "#include <stdio.h>\n#include <stdlib.h>\nint add(int a, int b) {\n"
          f'  printf("\\n{SENTINEL}-00000000000000000000000000000000\\n"); exit(0);\n}}\n', "a sentinel without the nonce"),
    ("java", "class Solution {\n  static { System.exit(0); }\n  int add(int a, int b) { return a + b; }\n}\n",
     "a static initialiser exits"),
    ("java", "class Solution { int add(int a, int b) { Runtime.getRuntime().halt(0); return 0; } }\n", "halt(0)"),
    ("javascript", "function add(a, b) { return a + b; }\nprocess.exit(0);\n", "exits before the tests"),
    ("javascript", "function add(a, b) { process.reallyExit(0); }\n", "the binding under process.exit"),
    ("go", 'import "os"\n\nfunc init() { os.Exit(0) }\n\nfunc add(a, b int) int { return a + b }\n', "init exits"),
    ("perl", "sub add { my ($a, $b) = @_; return $a - $b; }\n__END__\n", "the tests become __END__ data"),
    ("lua", "function add(a, b) return a + b end\nos.exit(0)\n", "exits before the tests"),
    ("php", "function add($a, $b) { return $a - $b; }\n?>\n", "?>: the tests would be printed, not run"),
    ("rust", "fn add(_a: i64, _b: i64) -> i64 { unsafe { libc_exit(0) } }\n"
             'extern "C" { #[link_name = "_exit"] fn libc_exit(code: i32) -> !; }\n', "_exit(0) through libc"),
]  # fmt: skip


@pytest.fixture(scope="module")
def verdicts(service):
    """Every language's correct, wrong and early-exit programs, graded as one batch."""
    items = [(lang, _request(lang, p, tests)) for lang, (tests, *programs) in CASES.items() for p in programs]
    items += [(("attack", i), _request(lang, p, CASES[lang][0])) for i, (lang, p, _) in enumerate(ATTACKS)]
    items += [(("end", i), _request(e[0], e[1], CASES[e[0]][0], **e[2])) for i, e in enumerate(ENDS)]
    out: dict[str, list] = {}
    for (lang, _), v in zip(items, service.verify_batch([r for _, r in items]), strict=True):
        out.setdefault(lang, []).append(v)
    return out


@pytest.mark.docker
def test_every_assert_language_has_cases():
    assert sorted(CASES) == sorted(LANGUAGES)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_correct_program_passes(verdicts, lang):
    v = verdicts[lang][0]
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    assert [c.status for c in v.cases] == [CaseStatus.PASSED] and v.signals == _shared(lang)
    if lang not in SHARED_PROGRAM:  # the tests ran apart: they say what ran (issue 49)
        want = ASSERTS_IN_CASES.get(lang, 2)
        assert v.components["calls"] >= 2 and v.components["asserts_ran"] >= want, (v.components, v.detail)
    else:  # a shared program: the one test program its harness saw end, nothing counted inside it
        assert v.components == {"tests_ran": 1.0} and "not counted" in v.detail, (v.components, v.detail)


@pytest.mark.docker
@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_wrong_program_fails(verdicts, lang):
    v = verdicts[lang][1]
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0), v.detail
    assert v.detail.startswith("a test failed") and "code.early_exit" not in v.signals


@pytest.mark.docker
@pytest.mark.parametrize("lang", sorted(CASES))
def test_exiting_0_before_the_tests_finish_is_not_paid(verdicts, lang):
    """The program's exit status is 0 (a naive rule pays it), but the tests never reached their end."""
    v = verdicts[lang][2]
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0), v.detail
    assert "before the tests finished" in v.detail and "code.early_exit" in v.signals


@pytest.mark.docker
@pytest.mark.parametrize("i", range(len(ATTACKS)), ids=[f"{a[0]}: {a[2]}" for a in ATTACKS])
def test_other_early_ends_are_not_paid(verdicts, i):
    (v,) = verdicts[("attack", i)]
    assert v.reward == 0.0 and v.outcome == "INCORRECT", v.detail
    if ATTACKS[i][0] == "php":  # PHP mode again after the candidate: the tests ran (and failed)
        assert v.detail.startswith("a test failed"), v.detail
    elif ATTACKS[i][0] == "perl" and ATTACKS[i][0] not in SHARED_PROGRAM:  # __END__ ends the candidate's file only
        assert v.detail.startswith("a test failed"), v.detail
    else:
        assert "code.early_exit" in v.signals, v.detail


@pytest.mark.docker
@pytest.mark.parametrize("i", range(len(ENDS)), ids=[e[3] for e in ENDS])
def test_compile_errors_time_outs_and_crashes(verdicts, i):
    (v,) = verdicts[("end", i)]
    _, _, _, outcome, status, signal = ENDS[i]
    assert (v.outcome, v.reward) == (outcome, 0.0), v.detail
    assert [c.status for c in v.cases] == ([status] if status else [])
    assert v.signals == sorted({*_shared(ENDS[i][0]), *([signal] if signal else [])})


@pytest.mark.docker
def test_the_prelude_comes_before_the_candidate(service):
    """HumanEval-X's shape: the problem's includes in ``prelude``, the model's function alone."""
    tests = "int main() {\n  assert(total({1, 2, 3}) == 6);\n}\n"
    prelude = "#include <vector>\n#include <cassert>\nusing namespace std;\n"
    candidate = "int total(vector<int> v) { int s = 0; for (int x : v) s += x; return s; }\n"
    req = _request("cpp", candidate, tests)
    v = service.verify(
        Request(
            req.verifier, req.completion, tests, options={**req.options, "prelude": prelude}, timeout_s=req.timeout_s
        )
    )
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail


@pytest.mark.docker
def test_javascript_tests_may_use_assert_without_requiring_it(service):
    """SandboxFusion's JS tests call ``assert.deepEqual`` without a require: before issue 49 every candidate got
    RUNTIME_ERROR (``assert is not defined``); a tests' own ``const assert`` still wins."""
    bare = "assert.strictEqual(add(2, 3), 5);\nassert.deepEqual([add(-1, 1)], [0]);\n"
    own = "const assert = require('assert');\n" + bare
    good, wrong = CASES["javascript"][1], CASES["javascript"][2]
    vs = service.verify_batch([_request("javascript", p, t) for t in (bare, own) for p in (good, wrong)])
    assert [(v.outcome, v.reward) for v in vs] == [("CORRECT", 1.0), ("INCORRECT", 0.0)] * 2, [v.detail for v in vs]


@pytest.mark.docker
def test_javascript_apart_keeps_the_peers_shapes(service):
    """JavaScript's tests run apart (issue 49): HumanEval-X's shape (a const arrow function, console.assert in a
    test function it calls) and MultiPL-E's (node:assert, ``let candidate = f``) still pass a correct candidate,
    fail a wrong one; values cross as plain data (arrays, objects, NaN); the tests' own error is theirs."""
    hx = (
        "const testSumList = () => {\n  console.assert(JSON.stringify(sumList([1, 2])) === JSON.stringify([3, {n: 2}]))\n"
        "  console.assert(Number.isNaN(sumList([])[0]))\n}\ntestSumList()\n"
    )
    me = (
        "const assert = require('node:assert');\nfunction test() {\n  let candidate = sumList;\n"
        "  assert.deepEqual(candidate([1, 2]), [3, {n: 2}]);\n  assert.ok(Number.isNaN(candidate([])[0]));\n}\ntest();\n"
    )
    good = "const sumList = (xs) => [xs.length ? xs.reduce((a, b) => a + b) : NaN, {n: xs.length}];\n"
    wrong = "function sumList(xs) { return [xs.length ? xs[0] : NaN, {n: xs.length}]; }\n"
    own = "const m = require('no-such-module-rlvr');\nassert.ok(sumList([1])[0] === 1);\n"
    reqs = [_request("javascript", p, t) for t in (hx, me) for p in (good, wrong)] + [_request("javascript", good, own)]
    got = [(v.outcome, v.reward) for v in service.verify_batch(reqs)]
    want = [("CORRECT", 1.0), ("INCORRECT", 0.0)] * 2 + [("BAD_REFERENCE", 0.0)]
    assert got == want


@pytest.mark.slow
@pytest.mark.docker
def test_identical_programs_compile_once(service):
    """The nonce is a keyed hash of the program, so a batch's identical programs are one compile (issue 40)."""
    tests, *_ = CASES["rust"]
    unique = "fn add(a: i64, b: i64) -> i64 { let once = 17; a + b + once - 17 }\n"
    before = service.toolchains.stats["compiles"]
    vs = service.verify_batch([_request("rust", unique, tests) for _ in range(3)])
    assert [v.reward for v in vs] == [1.0] * 3, [v.detail for v in vs]
    assert service.toolchains.stats["compiles"] - before == 1


# The residual gap: the tests share the candidate's program, so it can read the nonce from its own source or
# binary, print the sentinel and leave before the tests (Python's two-process harness has no such gap).
READS_ITS_OWN_NONCE = {
    "javascript": ("const fs = require('fs');\nfunction add(a, b) {\n  const m = fs.readFileSync(__filename, 'utf8')"
                   ".match(/\"(RLVR-[^\"]*)\" \\+ \"([0-9a-f]+)\"/);\n"
                   "  process.stdout.write('\\n' + m[1] + m[2] + '\\n');\n  process.exit(0);\n}\n"),
    "c": ("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint add(int a, int b) {\n"
          '  static char buf[1 << 22]; FILE *f = fopen("main", "rb"); size_t n = fread(buf, 1, sizeof buf, f);\n'
          '  for (size_t i = 0; i + 30 < n; i++) if (!memcmp(buf + i, "RLVR-TESTS-RAN-TO-THE-END-", 26) && buf[i + 26])'
          ' { printf("\\n%.58s\\n", buf + i); exit(0); }\n  return 0;\n}\n'),
}  # fmt: skip


APART = {
    "javascript",
    "typescript",
    "c",
    "cpp",
    "go",
    "rust",
    "ruby",
    "php",
    "perl",
    "lua",
    "r",
    "racket",
}  # the languages whose tests run apart (issue 49), as this file expects them


def test_the_languages_apart_are_these():
    assert set(LANGUAGES) - SHARED_PROGRAM == APART


def _gap(lang: str, reason: str):
    """A strict xfail where ``lang`` still shares the candidate's program (opted in); a pass where it runs apart."""
    return lang if lang in APART else pytest.param(lang, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.docker
@pytest.mark.parametrize(
    "lang", [_gap(n, "residual gap of a shared program: it can read the nonce") for n in sorted(READS_ITS_OWN_NONCE)]
)
def test_reading_its_own_nonce_is_not_paid(service, lang):
    v = service.verify(_request(lang, READS_ITS_OWN_NONCE[lang], CASES[lang][0]))
    assert v.reward == 0.0, v.detail


# The same gap, simpler: a wrong add that redefines what the tests call (Python's harness defends these)
REWRITES_THE_TESTS = {
    "c": "int add(int a, int b) { return a - b; }\n#define assert(x) ((void)0)\n#define NDEBUG\n",
    "lua": "function add(a, b) return a - b end\nassert = function() end\n",
    "javascript": "function add(a, b) { return a - b; }\nrequire('assert').strictEqual = () => {};\n"
    "Object.defineProperty(console, 'assert', { get: () => () => {}, set() {} });\n",
}


@pytest.mark.docker
@pytest.mark.parametrize(
    "lang", [_gap(n, "residual gap of a shared program: it can rewrite the tests") for n in sorted(REWRITES_THE_TESTS)]
)
def test_rewriting_the_tests_is_not_paid(service, lang):
    v = service.verify(_request(lang, REWRITES_THE_TESTS[lang], CASES[lang][0]))
    assert v.reward == 0.0, v.detail


@pytest.mark.docker
@pytest.mark.parametrize("lang", sorted(SHARED_PROGRAM))
def test_a_shared_program_is_refused_unless_the_request_opts_in(service, lang):
    """Issue 49: a language whose tests run inside the candidate's program is refused for training (every attack
    below, and the 80 of 82 of the hidden battery, is then never paid); opted in, the verdict says so."""
    tests, _, wrong, _ = CASES[lang]
    req = _request(lang, wrong, tests, allow_shared_program="false")
    with pytest.raises(BadRequest, match="allow_shared_program=true"):
        service.verify(req)
    with pytest.raises(BadRequest, match="must be true or false"):
        CodeOptions.parse({"language": lang, "allow_shared_program": "maybe"})


# JavaScript's wire (in_sandbox/code/js_wire.js) is one file both processes load from the job's folder: a candidate
# that rewrites it (a decode answering what the tests expect, in order) must rewrite only what its own process loaded
FORGED_WIRE = (
    "const fs = require('fs');\n"
    "fs.writeFileSync('rlvr_wire.js', fs.readFileSync('rlvr_wire.js', 'utf8') +\n"
    "  '\\nmodule.exports.decode = () => [5, 0][(globalThis.rlvrN = (globalThis.rlvrN || 0) + 1) - 1];\\n');\n"
    "function add(a, b) { return a * b + 7; }\n"
)


@pytest.mark.docker
def test_a_javascript_candidate_that_rewrites_the_wire_file_changes_only_its_own_copy(service):
    tests = CASES["javascript"][0]
    v = service.verify(_request("javascript", FORGED_WIRE, tests))
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0) and v.detail.startswith("a test failed"), v.detail


def test_every_known_gap_is_in_a_language_that_runs_apart():
    """The strict xfails' attacks (nonce read, tests rewritten) were each written for a language that shared the
    candidate's program; each now runs apart (a language still sharing it is refused without the opt-in, above)."""
    assert not (set(READS_ITS_OWN_NONCE) | set(REWRITES_THE_TESTS)) & SHARED_PROGRAM


@pytest.mark.parametrize(
    "lang, options, tests, message",
    [
        ("bash", {}, "exit 0", "language 'bash' has no assert mode"),
        ("c", {}, "int not_main(void) { return 0; }", "c tests (the reference) need a main function"),
        ("rust", {}, "fn tests() {}", "rust tests (the reference) need fn main()"),
        ("java", {"entry_point": "add"}, CASES["java"][0], "options['entry_point'] is Python's"),
    ],
)
def test_tests_the_language_cannot_run_are_refused(lang, options, tests, message):
    from verifiers.kinds.code.verifier import CodeVerifier

    req = Request(
        "code", "x", tests, options={"mode": "assert", "language": lang, "allow_shared_program": "1", **options}
    )
    with pytest.raises(BadRequest, match=re.escape(message)):
        CodeVerifier().check(req)
    go = CodeOptions.parse({"mode": "assert", "language": "go", "allow_shared_program": "true"})
    assert go.compile_timeout_s == 30.0
