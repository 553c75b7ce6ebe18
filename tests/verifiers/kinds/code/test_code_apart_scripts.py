"""The scripting languages' assert-mode tests run apart from the candidate (issue 49; verifiers/kinds/code/
apart_scripts.py), through a real VerifierService and the real toolchain image, as a trainer sends them (no
``allow_shared_program``): per language, MultiPL-E's test shape (our transcription of its layout: luaunit and
``os.exit(lu.LuaUnit.run())`` in Lua, test/unit in Ruby, ``eq_deeply`` and ``exit 1`` in Perl, ``identical`` and
``quit('no', 1)`` in R, rackunit in Racket, a ``candidate`` wrapper and ``throw`` in PHP) passes a correct candidate
and fails a wrong one, with values of the language's own kinds crossing (floats that stay floats, NaN, nested
containers, hashes); the tests' own error before any call is BAD_REFERENCE; and what the candidate's process can
do to the tests' process (reach its /proc files to read the sentinel or write its stdout, kill it, define a
look-alike of what the tests call, exit hooks, a comment swallowing what follows) is never paid."""

from __future__ import annotations

import json

import pytest

from verifiers.kinds.code.apart_scripts import SCRIPTS
from verifiers.shapes.request import Request

pytestmark = pytest.mark.docker

# R's and Racket's two interpreters start in the case's time (Racket also expands the candidate's module there, where
# the shared program compiled it ahead): 3x the shared program's wall (bench/results/assert_langs.txt), 20 s and
# more on this shared 2-core machine under load; a hang guard, not a timing
OPTIONS = {"mode": "assert", "case_timeout_s": "60"}

# language -> (MultiPL-E-shaped tests, a correct candidate, a wrong one)
SHAPES = {
    "lua": (
        "lu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = sum_list\n"
        "    lu.assertEquals(candidate({1, 2}), {3, {n = 2}, 1.5, 'x\\0y'})\n"
        "    lu.assertEquals(candidate({}), {0, {n = 0}, 1.5, 'x\\0y'})\n"
        "    lu.assertTrue(math.type(candidate({1})[3]) == 'float')\nend\n\nos.exit(lu.LuaUnit.run())\n",
        "local function sum_list(xs)\n  local s = 0\n  for _, x in ipairs(xs) do s = s + x end\n"
        "  return {s, {n = #xs}, 1.5, 'x\\0y'}\nend\n",
        "local function sum_list(xs)\n  return {#xs, {n = #xs}, 1.5, 'x\\0y'}\nend\n",
    ),
    "ruby": (
        "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_sum_list\n"
        "    candidate = method(:sum_list)\n    assert_equal([3, {'n' => 2}, :ok, 1.5], candidate.call([1, 2]))\n"
        "    assert_equal(true, candidate.call([]).first.nan?)\n  end\nend\n",
        "def sum_list(xs)\n  [xs.empty? ? Float::NAN : xs.sum, {'n' => xs.size}, :ok, 1.5]\nend\n",
        "def sum_list(xs)\n  [xs.empty? ? Float::NAN : xs.max, {'n' => xs.size}, :ok, 1.5]\nend\n",
    ),
    "perl": (
        "use Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&sum_list;\n"
        '        if(eq_deeply($candidate->([1, 2]),[3, {"n" => 2}, 0.5])) {\n        print "ok!" }else{\n'
        "        exit 1;\n        }\n        my @p = pairs(4);\n"
        '        if(eq_deeply(\\@p, [4, 8]) && scalar(pairs(4)) == 2) {\n        print "ok!" }else{\n'
        "        exit 1;\n        }\n}\n\ntesthumaneval();\n",
        "sub sum_list { my ($xs) = @_; my $s = 0; $s += $_ for @$xs; return [$s, {n => scalar @$xs}, 0.5]; }\n"
        "sub pairs { my @r = ($_[0], 2 * $_[0]); return @r; }\n",
        "sub sum_list { my ($xs) = @_; return [$xs->[0], {n => scalar @$xs}, 0.5]; }\n"
        "sub pairs { my @r = ($_[0], 2 * $_[0]); return @r; }\n",
    ),
    "php": (
        "<?php\nfunction candidate(...$args) {\n    return sum_list(...$args);\n}\n\nfunction test(): void {\n"
        '    if (candidate(array(1, 2)) !== array(3, array("n" => 2), 1.5)) { throw new Exception("Test failed!"); }\n'
        '    if (!is_nan(candidate(array())[0])) { throw new Exception("Test failed!"); }\n}\n\ntest();\n',
        "<?php\nfunction sum_list($xs) { return [count($xs) ? array_sum($xs) : NAN, ['n' => count($xs)], 1.5]; }\n",
        "function sum_list($xs) { return [count($xs) ? max($xs) : NAN, ['n' => count($xs)], 1.5]; }\n",
    ),
    "r": (
        "test_humaneval <- function() {\ncandidate <- sum_list\n"
        "    if(!identical(candidate(c(1, 2)), list(3, c(n = 2L), 'x'))){quit('no', 1)}\n"
        "    if(!identical(candidate(c(5)), list(5, c(n = 1L), 'x'))){quit('no', 1)}\n}\ntest_humaneval()\n",
        "sum_list <- function(xs) {\n  list(sum(xs), c(n = length(xs)), 'x')\n}\n",
        "sum_list <- function(xs) {\n  list(max(xs) + 0, c(n = length(xs)), 'x')\n}\n",
    ),
    "racket": (
        "#lang racket\n\n(require rackunit)\n\n(define (test-humaneval) \n\n  (let (( candidate sum_list))\n"
        "    (check-equal? (candidate (list 1 2)) (list 3 (hash \"n\" 2) 1/2 #\\a 'sym 2.0))\n"
        "    (check-equal? (candidate (list)) (list 0 (hash \"n\" 0) 1/2 #\\a 'sym 2.0))\n))\n\n(test-humaneval)\n",
        "#lang racket\n(define (sum_list xs) (list (apply + xs) (hash \"n\" (length xs)) 1/2 #\\a 'sym 2.0))\n",
        "#lang racket\n(define (sum_list xs) (list (apply * xs) (hash \"n\" (length xs)) 1/2 #\\a 'sym 2.0))\n",
    ),
}  # fmt: skip

# language -> the tests' own error before any call into the candidate (BAD_REFERENCE, never the candidate's)
OWN_ERROR = {
    "lua": "local m = require('no_such_module_rlvr')\nassert(sum_list({1})[1] == 1)\n",
    "ruby": "require 'no_such_library_rlvr'\nraise 'Test failed' unless sum_list([1])[0] == 1\n",
    "perl": "use No::Such::Module::Rlvr;\ndie 'Test failed' unless sum_list([1])->[0] == 1;\n",
    "php": "<?php\nrequire 'no_such_file_rlvr.php';\nif (sum_list([1])[0] !== 1) { throw new Exception('Test failed!'); }\n",
    "r": "library(nosuchpkgrlvr)\nstopifnot(sum_list(c(1))[[1]] == 1)\n",
    "racket": "#lang racket\n(require no-such-collection-rlvr/x)\n(check-equal? (first (sum_list (list 1))) 1)\n",
}

# The candidate's process against the tests' process: its parent (the sentinel in its memory, its stdout on fd 1)
# and a kill; each a wrong candidate (or none at all) that a shared program, or a dumpable tests' process, pays.
_FORGE = "\nRLVR-TESTS-RAN-TO-THE-END-00000000000000000000000000000000\n"
REACH = {
    "ruby": "def add(a, b)\n  pid = Process.ppid\n  mem = File.open(\"/proc/#{pid}/mem\", 'rb') rescue nil\n"
            "  s = (mem.read(1 << 20) rescue '') if mem\n"
            f"  File.open(\"/proc/#{{pid}}/fd/1\", 'w') {{ |f| f.write({_FORGE!r}) }} rescue nil\n"
            "  Process.kill(9, pid) rescue nil\n  a * b\nend\n",
    "php": "function add($a, $b) {\n  $pid = posix_getppid();\n  @file_get_contents(\"/proc/$pid/environ\");\n"
           f"  @file_put_contents(\"/proc/$pid/fd/1\", {_FORGE!r});\n  posix_kill($pid, 9);\n  return $a * $b;\n}}\n",
    "perl": "sub add { my $pid = getppid(); if (open(my $f, '>', \"/proc/$pid/fd/1\")) { print $f "
            f"{json.dumps(_FORGE)}; }} kill 9, $pid; return $_[0] * $_[1]; }}\n",
    "lua": "function add(a, b)\n  local f = io.open('/proc/self/stat')\n  local ppid = f:read('a'):match('^%d+ %b() %a (%d+)')\n"
           f"  local o = io.open('/proc/' .. ppid .. '/fd/1', 'w')\n  if o then o:write({_FORGE!r}) o:close() end\n"
           "  os.execute('kill -9 ' .. ppid)\n  return a * b\nend\n",
    "r": "add <- function(a, b) {\n  pid <- strsplit(readLines('/proc/self/stat'), ' ')[[1]][4]\n"
         f"  try(cat({_FORGE!r}, file = paste0('/proc/', pid, '/fd/1')), silent = TRUE)\n"
         "  try(system(paste('kill -9', pid)), silent = TRUE)\n  a * b\n}\n",
    "racket": "#lang racket\n(define (add a b)\n  (define ppid (list-ref (string-split (file->string \"/proc/self/stat\")) 3))\n"
              f"  (with-handlers ([(lambda (e) #t) void]) (call-with-output-file (string-append \"/proc/\" ppid \"/fd/1\") "
              f"(lambda (o) (write-string {json.dumps(_FORGE)} o)) #:exists 'append))\n"
              "  (system (string-append \"kill -9 \" ppid))\n  (* a b))\n",
}  # fmt: skip
ADD_TESTS = {
    "ruby": "raise 'Test failed' unless add(2, 3) == 5\n",
    "php": "<?php\nif (add(2, 3) !== 5) { throw new Exception('Test failed!'); }\n",
    "perl": "die 'Test failed!' unless add(2, 3) == 5;\n",
    "lua": "assert(add(2, 3) == 5)\n",
    "r": "stopifnot(add(2, 3) == 5)\n",
    "racket": "#lang racket\n(require rackunit)\n(check-equal? (add 2 3) 5)\n",
}
# The candidate's process reads what the tests' process holds: the proof that the tests' interpreter is
# non-dumpable (an unreadable copy, or prctl for Racket). Passes (paid) only if every probe is refused.
PROBE = {
    "ruby": "def add(a, b)\n  pid = Process.ppid\n  %w[mem environ fd/1 maps].each { |p| File.open(\"/proc/#{pid}/#{p}\", 'rb') "
            "{ |f| f.read(1) } rescue next; return 0 }\n  a + b\nend\n",
    "racket": "#lang racket\n(define (add a b)\n  (define ppid (list-ref (string-split (file->string \"/proc/self/stat\")) 3))\n"
              "  (if (for/or ([p '(\"mem\" \"environ\" \"maps\")]) (with-handlers ([(lambda (e) #t) (lambda (e) #f)]) "
              "(call-with-input-file (string-append \"/proc/\" ppid \"/\" p) read-char) #t)) 0 (+ a b)))\n",
}  # fmt: skip


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


def _request(lang: str, candidate: str, tests: str) -> Request:
    return Request("code", f"```{lang}\n{candidate}```\n", tests, options={**OPTIONS, "language": lang}, timeout_s=120)


@pytest.fixture(scope="module")
def verdicts(service):
    items = []
    for lang, (tests, good, wrong) in SHAPES.items():
        items += [(("good", lang), _request(lang, good, tests)), (("wrong", lang), _request(lang, wrong, tests))]
        items.append((("own", lang), _request(lang, good, OWN_ERROR[lang])))
        items.append((("reach", lang), _request(lang, REACH[lang], ADD_TESTS[lang])))
    items += [(("probe", lang), _request(lang, p, ADD_TESTS[lang])) for lang, p in PROBE.items()]
    return dict(zip([k for k, _ in items], service.verify_batch([r for _, r in items]), strict=True))


def test_every_scripting_language_is_here():
    assert sorted(SHAPES) == sorted(OWN_ERROR) == sorted(REACH) == sorted(SCRIPTS)


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(SHAPES))
def test_multipl_e_shape_passes_a_correct_candidate(verdicts, lang):
    v = verdicts[("good", lang)]
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    assert v.components["calls"] >= 2 and "code.shared_program" not in v.signals, v.components


@pytest.mark.parametrize("lang", sorted(SHAPES))
def test_multipl_e_shape_fails_a_wrong_candidate(verdicts, lang):
    v = verdicts[("wrong", lang)]
    assert (v.outcome, v.reward) == ("INCORRECT", 0.0), v.detail


@pytest.mark.parametrize("lang", sorted(OWN_ERROR))
def test_the_tests_own_error_is_a_bad_reference(verdicts, lang):
    v = verdicts[("own", lang)]
    assert (v.outcome, v.reward) == ("BAD_REFERENCE", 0.0), v.detail


@pytest.mark.parametrize("lang", sorted(REACH))
def test_the_candidate_cannot_reach_the_tests_process(verdicts, lang):
    """Its parent's stdout (a forged sentinel), its memory and environment, a kill: never paid."""
    v = verdicts[("reach", lang)]
    assert v.reward == 0.0, v.detail


@pytest.mark.parametrize("lang", sorted(PROBE))
def test_the_tests_process_is_not_dumpable(verdicts, lang):
    """A correct add that answers 0 if it could open any of the tests' process's /proc files: paid only if none."""
    v = verdicts[("probe", lang)]
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
