"""Assert mode apart for the compiled languages (issue 49; verifiers/kinds/code/apart_compiled.py), through a real
VerifierService and the real toolchain image: the peers' shapes pass a correct candidate and fail a wrong one, values
of the declared types cross (vectors, strings, maps, optionals, tuples, NaN), and each attack that needs the
candidate to reach the tests' unit, their process, their source or their stdout is not paid. Each attack is written
so that it *would* be paid if the boundary it tests were missing (a correct answer only where the tests can be
read, a forged verdict only where the tests' stdout can be reached)."""

from __future__ import annotations

import pytest

from tests.verifiers.kinds.code.test_code_assert_langs import OPTIONS
from verifiers.kinds.code.apart_sig import CannotCross, entries
from verifiers.shapes.request import Request

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


def _req(lang: str, candidate: str, tests: str, **options: str) -> Request:
    opts = {**OPTIONS, "language": lang, "allow_shared_program": "", **options}
    return Request("code", f"```{lang}\n{candidate}```\n", tests, options=opts, timeout_s=120)


# HumanEval-X's C++ shape: the prompt (includes, using namespace std, the signature) continued by the model, tests
# with an ``issame`` helper of their own and ``auto candidate = f``
HX_TESTS = """#undef NDEBUG
#include<assert.h>
bool issame(vector<float> a, vector<float> b){
    if (a.size() != b.size()) return false;
    for (int i = 0; i < a.size(); i++) if (abs(a[i] - b[i]) > 1e-4) return false;
    return true;
}
int main(){
    auto candidate = rescale;
    assert (issame(candidate({2.0, 49.9}), {0.0, 1.0}));
    assert (issame(candidate({100.0, 49.9}), {1.0, 0.0}));
    assert (isnan(candidate({}).size() ? 0.0 : NAN));
}
"""
HX_GOOD = """#include<stdio.h>
#include<math.h>
#include<vector>
using namespace std;
vector<float> rescale(vector<float> numbers){
    if (numbers.empty()) return {};
    float lo = numbers[0], hi = numbers[0];
    for (float x : numbers) { lo = min(lo, x); hi = max(hi, x); }
    for (float &x : numbers) x = (x - lo) / (hi - lo);
    return numbers;
}
"""
HX_WRONG = HX_GOOD.replace("(x - lo) / (hi - lo)", "(x - lo) / hi")
# MultiPL-E's C++ shape: std:: types spelled out, optional, tuple, map, strings
ME_TESTS = """#include<assert.h>
#include<bits/stdc++.h>
int main() {
    auto candidate = summary;
    assert(candidate((std::vector<std::string>({"a", "bb", "bb"})), 2) == std::make_tuple(std::optional<std::string>("bb"), std::map<std::string,long>({{"a", 1}, {"bb", 2}}), true));
    assert(candidate((std::vector<std::string>()), 0) == std::make_tuple(std::optional<std::string>(), std::map<std::string,long>(), false));
}
"""
ME_GOOD = """#include<assert.h>
#include<bits/stdc++.h>
std::tuple<std::optional<std::string>, std::map<std::string,long>, bool> summary(std::vector<std::string> words, long k) {
    std::map<std::string, long> n;
    std::optional<std::string> best;
    for (auto &w : words) if (++n[w] >= k && !best) best = w;
    return {best, n, !words.empty()};
}
"""
ME_WRONG = ME_GOOD.replace("++n[w] >= k", "++n[w] > k")
C_TESTS = """#include <assert.h>
#include <string.h>
int main(void) {
    assert(strcmp(shout("abc", 2), "ABCABC") == 0);
    assert(mean(3, 4) == 3.5);
    assert(!is_empty("x"));
}
"""
C_GOOD = """#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <stdbool.h>
char *shout(const char *s, int times) {
    size_t n = strlen(s);
    char *out = malloc(n * times + 1);
    for (int t = 0; t < times; t++) for (size_t i = 0; i < n; i++) out[t * n + i] = toupper(s[i]);
    out[n * times] = 0;
    return out;
}
double mean(long a, long b) { return (a + b) / 2.0; }
bool is_empty(const char *s) { return *s == 0; }
"""
C_WRONG = C_GOOD.replace("/ 2.0", "/ 2")

SHAPES = [("cpp", HX_TESTS, HX_GOOD, HX_WRONG), ("cpp", ME_TESTS, ME_GOOD, ME_WRONG), ("c", C_TESTS, C_GOOD, C_WRONG)]


@pytest.mark.slow
def test_the_peers_shapes_pass_right_and_fail_wrong(service):
    reqs = [_req(lang, p, t) for lang, t, good, wrong in SHAPES for p in (good, wrong)]
    got = service.verify_batch(reqs)
    assert [(v.outcome, v.reward) for v in got] == [("CORRECT", 1.0), ("INCORRECT", 0.0)] * len(SHAPES), [
        v.detail for v in got
    ]
    for v in got[::2]:
        assert v.signals == [] and v.components["calls"] >= 2 and v.components["asserts_ran"] >= 2, v.components


# -- attacks that are paid wherever the boundary they test is missing ---------------------------------------
_STEAL = r"""#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int add(int a, int b) { return a - b; }
__attribute__((constructor)) static void steal(void) {
  char p[64], line[512];
  static char buf[1 << 20];
  snprintf(p, sizeof p, "/proc/%d/maps", (int)getppid());
  FILE *m = fopen(p, "r");
  snprintf(p, sizeof p, "/proc/%d/mem", (int)getppid());
  int mem = open(p, O_RDONLY);
  snprintf(p, sizeof p, "/proc/%d/fd/1", (int)getppid());
  int out = open(p, O_WRONLY);
  if (out < 0) out = 1;
  while (m && mem >= 0 && fgets(line, sizeof line, m)) {
    unsigned long a, b;
    if (sscanf(line, "%lx-%lx", &a, &b) != 2 || !strstr(line, "rw")) continue;
    for (unsigned long at = a; at < b; at += sizeof buf) {
      ssize_t n = pread(mem, buf, sizeof buf, at);
      char *hit = n > 0 ? memmem(buf, n, "RLVR-TESTS-RAN-TO-THE-END-", 26) : 0;
      if (hit && hit + 58 <= buf + n) {
        dprintf(out, "\n%.58s\n%.58s:ran:{\"tests\":1,\"asserts\":9,\"calls\":9}\n", hit, hit);
        _exit(0);
      }
    }
  }
}
"""
_READS_TESTS = {  # a right answer only where the tests' source, binary or sentinel can be read
    "compile time": '#if __has_include("rlvr_hold/main.c") || __has_include("main.c") || '
    '__has_include("rlvr_hold/rlvr_nonce")\nint add(int a, int b) { return a + b; }\n#else\n'
    "int add(int a, int b) { return a - b; }\n#endif\n",
    "run time": '#include <stdio.h>\nint add(int a, int b) {\n  FILE *f = fopen("main.c", "r");\n'
    '  if (!f) f = fopen("main", "r");\n  if (!f) f = fopen("rlvr_nonce", "r");\n  return f ? a + b : a - b;\n}\n',
}
# C++: the always-equal value, a global constructor rewriting what it can reach, a macro aimed at the tests
_CPP_ATTACKS = {
    "always equal": "struct AE { template <class T> bool operator==(T) const { return true; } };\n"
    "AE add(long a, long b) { return AE(); }\n",
    "always equal through a conversion": "struct AE { operator long() const { return 5; } };\n"
    "AE add(long a, long b) { return AE(); }\n",
    "a global constructor": '#include <cstdlib>\n#include <cstdio>\nstruct G { G() { std::printf("\\nRLVR-TESTS-RAN-TO-THE-END\\n"); '
    "std::fflush(stdout); } } g;\nlong add(long a, long b) { return a * b; }\n",
    "a macro for the tests": "#define assert(x) ((void)0)\n#define NDEBUG 1\nlong add(long a, long b) { return a * b; }\n",
}
_C_TESTS_ADD = "#include <assert.h>\nint main(void) {\n  assert(add(2, 3) == 5);\n  assert(add(-1, 1) == 0);\n}\n"
_CPP_TESTS_ADD = (
    "#undef NDEBUG\n#include <cassert>\nint main() {\n  auto candidate = add;\n  assert(candidate(2, 3) == 5);\n}\n"
)


@pytest.mark.slow
def test_attacks_on_the_boundary_are_not_paid(service):
    items = [("c", "the tests' memory and stdout through /proc", _STEAL, _C_TESTS_ADD)]
    items += [("c", why, prog, _C_TESTS_ADD) for why, prog in _READS_TESTS.items()]
    items += [("cpp", why, prog, _CPP_TESTS_ADD) for why, prog in _CPP_ATTACKS.items()]
    # a function named as one the tests call from the library: its stub would replace the library's
    items += [("c", "replaces strcmp", C_WRONG + "int strcmp(const char *a, const char *b) { return 0; }\n", C_TESTS)]
    items += [
        (
            "cpp",
            "replaces abs",
            "long add(long a, long b) { return a - b; }\nint abs(int x) { return 0; }\n",
            "#include <cassert>\n#include <cstdlib>\nint main() { assert(abs(add(2, 3) - 5) == 0); }\n",
        )
    ]
    items += [  # through using namespace std: the candidate's max would beat std::max's template
        (
            "cpp",
            "replaces std::max",
            "#include <algorithm>\nusing namespace std;\nlong add(long a, long b) { return a - b; }\n"
            "long max(long a, long b) { return 5; }\n",
            "#include <cassert>\n#include <algorithm>\nusing namespace std;\nint main() { assert(max(add(2, 3), 0L) == 5); }\n",
        )
    ]
    got = service.verify_batch([_req(lang, p, tests) for lang, _, p, tests in items])
    paid = [
        f"{lang} {why}: {v.outcome} {v.detail[:200]}"
        for (lang, why, *_), v in zip(items, got, strict=True)
        if v.reward > 0
    ]
    assert not paid, "\n".join(paid)
    # the controls: the same shapes with a right answer are paid (the tests can fail the attack for its reason)
    good = service.verify(_req("c", "int add(int a, int b) { return a + b; }\n", _C_TESTS_ADD))
    assert good.reward == 1.0, good.detail


def test_a_type_that_cannot_cross_is_refused_naming_it(service):
    v = service.verify(_req("cpp", _CPP_ATTACKS["always equal"], _CPP_TESTS_ADD))
    assert (v.outcome, v.reward) == ("COMPILE_ERROR", 0.0) and "the type 'AE'" in v.detail, v.detail
    with pytest.raises(CannotCross, match="pointer to 'int'"):
        entries("int sum(int *xs, int n) { return 0; }\n", "int main() { sum(0, 0); }", "c")


def test_a_crash_an_exception_and_a_missing_function(service):
    crash = "int add(int a, int b) { return *(volatile int *)0; }\n"
    throws = '#include <stdexcept>\nlong add(long a, long b) { throw std::invalid_argument("no"); }\n'
    missing = "int plus(int a, int b) { return a + b; }\n"
    got = service.verify_batch(
        [_req("c", crash, _C_TESTS_ADD), _req("cpp", throws, _CPP_TESTS_ADD), _req("c", missing, _C_TESTS_ADD)]
    )
    assert [v.outcome for v in got] == ["RUNTIME_ERROR", "RUNTIME_ERROR", "COMPILE_ERROR"], [v.detail for v in got]
    assert "signal 11" in got[0].detail and "no" in got[1].detail


def test_tests_that_call_nothing_are_a_bad_reference(service):
    v = service.verify(_req("c", "int add(int a, int b) { return a + b; }\n", "int main(void) { return 0; }\n"))
    assert v.outcome == "BAD_REFERENCE" and v.reward == 0.0, v.detail


# -- Go: its own package main on each side -------------------------------------------------------------------
GO_TESTS = """package main

import "fmt"

func main() {
	got, ok := stats([]int{3, 1, 2}, map[string]float64{"a": 0.5})
	if fmt.Sprint(got) != "[1 2 3]" || !ok {
		panic("stats 1")
	}
	if got2, ok2 := stats(nil, nil); got2 != nil || ok2 {
		panic("stats 2")
	}
	if w := words("a bb"); len(w) != 2 || w[1] != "bb" {
		panic("words")
	}
}
"""
GO_GOOD = """package main

import (
	"sort"
	"strings"
)

func stats(xs []int, m map[string]float64) ([]int, bool) {
	if xs == nil {
		return nil, false
	}
	out := append([]int{}, xs...)
	sort.Ints(out)
	return out, len(m) > 0 && m["a"] == 0.5
}

func words(s string) []string { return strings.Fields(s) }

func main() {}
"""
GO_WRONG = GO_GOOD.replace("sort.Ints(out)", "sort.Sort(sort.Reverse(sort.IntSlice(out)))")
_GO_ADD = 'func main() {\n\tif add(2, 3) != 5 {\n\t\tpanic("add(2, 3)")\n\t}\n}\n'
_GO_ATTACKS = {  # each paid where the boundary it tests is missing
    "embeds the tests": 'import _ "embed"\n\n//go:embed main.go\nvar t string\n\n'
    "func add(a, b int) int {\n\tif len(t) > 0 {\n\t\treturn a + b\n\t}\n\treturn a - b\n}\n",
    "reads the tests": 'import "os"\n\nfunc add(a, b int) int {\n\tfor _, f := range []string{"main.go", "main", '
    '"rlvr_nonce"} {\n\t\tif _, err := os.ReadFile(f); err == nil {\n\t\t\treturn a + b\n\t\t}\n\t}\n\treturn a - b\n}\n',
    "shadows panic": "func add(a, b int) int { return a - b }\n\nfunc panic(s string) {}\n",
    "an always-equal type": "type AE int\n\nfunc add(a, b int) AE { return 5 }\n",
    "init prints a sentinel": 'import "fmt"\n\nfunc init() { fmt.Println("\\nRLVR-TESTS-RAN-TO-THE-END") }\n\n'
    "func add(a, b int) int { return a * b }\n",
}


@pytest.mark.slow
def test_go_apart(service):
    reqs = [_req("go", p, GO_TESTS) for p in (GO_GOOD, GO_WRONG)]
    reqs += [_req("go", p, _GO_ADD) for p in _GO_ATTACKS.values()]
    reqs.append(_req("go", "func add(a, b int) int { return a + b }\n", _GO_ADD))
    got = service.verify_batch(reqs)
    assert [(v.outcome, v.reward) for v in got[:2]] == [("CORRECT", 1.0), ("INCORRECT", 0.0)], [v.detail for v in got]
    assert got[0].components["calls"] == 3, got[0].components
    paid = [
        f"{why}: {v.outcome} {v.detail[:200]}" for why, v in zip(_GO_ATTACKS, got[2:-1], strict=True) if v.reward > 0
    ]
    assert not paid, "\n".join(paid)
    assert got[-1].reward == 1.0, got[-1].detail  # the control


def test_a_shared_program_pass_counts_its_one_test_program(service):
    """Opted in (allow_shared_program), a language whose tests share the candidate's program: the pass carries what
    the harness's code after the tests can vouch for (one test program ran to its end), nothing counted inside it."""
    from tests.verifiers.kinds.code.test_code_assert_langs import CASES

    tests, good, *_ = CASES["csharp"]
    v = service.verify(_req("csharp", good, tests, allow_shared_program="true"))
    assert (v.outcome, v.reward, v.components) == ("CORRECT", 1.0, {"tests_ran": 1.0}), v.detail
    assert "not counted" in v.detail and v.signals == ["code.shared_program"]


# -- Rust: its own crate on each side ------------------------------------------------------------------------
RUST_TESTS = """use std::collections::HashMap;

fn main() {
    let candidate = tally;
    let mut want = HashMap::new();
    want.insert(String::from("bb"), 2);
    want.insert(String::from("a"), 1);
    assert_eq!(candidate(&vec![String::from("a"), String::from("bb"), String::from("bb")], "bb"), (want, Some(1)));
    assert_eq!(candidate(&[], "x"), (HashMap::new(), None));
    assert!(mean(&[1.0, 2.0]) == 1.5);
}
"""
RUST_GOOD = """use std::collections::HashMap;

fn main() {}

fn tally(words: &[String], w: &str) -> (HashMap<String, i64>, Option<usize>) {
    let mut m = HashMap::new();
    for x in words {
        *m.entry(x.clone()).or_insert(0) += 1;
    }
    (m, words.iter().position(|x| x == w))
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}
"""
RUST_WRONG = RUST_GOOD.replace("position(|x| x == w)", "rposition(|x| x == w)")
_RUST_ADD = "fn main() {\n    assert_eq!(add(2, 3), 5);\n}\n"
_RUST_ATTACKS = {  # each paid where the boundary it tests is missing
    "includes the tests": 'const T: &str = include_str!("main.rs");\n\n'
    "fn add(a: i64, b: i64) -> i64 { if T.is_empty() { a - b } else { a + b } }\n",
    "reads the tests": 'fn add(a: i64, b: i64) -> i64 {\n    for f in ["main.rs", "main", "rlvr_nonce"] {\n'
    "        if std::fs::read(f).is_ok() { return a + b; }\n    }\n    a - b\n}\n",
    "always equal": "struct AE;\nimpl PartialEq<i64> for AE { fn eq(&self, _: &i64) -> bool { true } }\n"
    'impl std::fmt::Debug for AE { fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { write!(f, "5") } }\n'
    "fn add(_a: i64, _b: i64) -> AE { AE }\n",
    "before main": '#[used]\n#[link_section = ".init_array"]\nstatic GO: extern "C" fn() = go;\n'
    'extern "C" fn go() { println!("\\nRLVR-TESTS-RAN-TO-THE-END"); std::process::exit(0) }\n'
    "fn add(a: i64, b: i64) -> i64 { a * b }\n",
}


@pytest.mark.slow
def test_rust_apart(service):
    reqs = [_req("rust", p, RUST_TESTS) for p in (RUST_GOOD, RUST_WRONG)]
    reqs += [_req("rust", p, _RUST_ADD) for p in _RUST_ATTACKS.values()]
    reqs.append(_req("rust", "fn add(a: i64, b: i64) -> i64 { a + b }\n", _RUST_ADD))
    got = service.verify_batch(reqs)
    assert [(v.outcome, v.reward) for v in got[:2]] == [("CORRECT", 1.0), ("INCORRECT", 0.0)], [v.detail for v in got]
    assert (got[0].components["calls"], got[0].components["asserts_ran"]) == (3.0, 3.0), got[0].components
    paid = [f"{why}: {v.outcome} {v.detail[:200]}" for why, v in zip(_RUST_ATTACKS, got[2:-1], strict=True) if v.reward]
    assert not paid, "\n".join(paid)
    assert got[-1].reward == 1.0, got[-1].detail  # the control
