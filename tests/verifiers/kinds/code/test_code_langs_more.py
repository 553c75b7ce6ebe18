"""The code verifier's stdio mode in issue 40's languages (SandboxFusion's other languages that Debian
packages, Kotlin and Racket included): one correct and one wrong a+b program each, through a real VerifierService and the real
toolchain image; a language SandboxFusion names that this server does not run is refused naming it
and why; SandboxFusion's test-framework languages (``pytest``, ``junit``, ``go_test``, ``D_ut``, ``jest``) pass a
passing suite and fail a failing one."""

from __future__ import annotations

import json

import pytest

from tests.langs_helpers import grade
from verifiers.kinds.code.languages import NOT_SERVED
from verifiers.kinds.code.options import CodeOptions
from verifiers.shapes.base import BadRequest

pytestmark = pytest.mark.docker

# language -> (a correct a+b program, a wrong one)
PROGRAMS = {
    "php": ("$v = preg_split('/\\s+/', trim(stream_get_contents(STDIN)));\necho intval($v[0]) + intval($v[1]), \"\\n\";\n",
            "$v = preg_split('/\\s+/', trim(stream_get_contents(STDIN)));\necho intval($v[0]) - intval($v[1]), \"\\n\";\n"),
    "ruby": ("a, b = STDIN.read.split.map(&:to_i)\nputs a + b\n", "a, b = STDIN.read.split.map(&:to_i)\nputs a * b\n"),
    "perl": ("my @v = split ' ', do { local $/; <STDIN> };\nprint $v[0] + $v[1], \"\\n\";\n",
             "my @v = split ' ', do { local $/; <STDIN> };\nprint $v[0] . $v[1], \"\\n\";\n"),
    "lua": ('local a, b = io.read("n", "n")\nprint(a + b)\n', 'local a, b = io.read("n", "n")\nprint(a - b)\n'),
    "r": ('v <- scan(file("stdin"), quiet = TRUE)\ncat(v[1] + v[2], "\\n")\n',
          'v <- scan(file("stdin"), quiet = TRUE)\ncat(v[1] * v[2], "\\n")\n'),
    "scala": ("object Sum { def main(a: Array[String]): Unit = { val v = scala.io.Source.stdin.mkString.trim"
              '.split("\\\\s+").map(_.toLong); println(v(0) + v(1)) } }\n',
              "object Sum extends App { val v = scala.io.Source.stdin.mkString.trim"
              '.split("\\\\s+").map(_.toLong); println(v(0) - v(1)) }\n'),
    "csharp": ("using System;\nclass P { static void Main() { var v = Console.In.ReadToEnd().Split((char[])null, "
               "StringSplitOptions.RemoveEmptyEntries); Console.WriteLine(long.Parse(v[0]) + long.Parse(v[1])); } }\n",
               "using System;\nclass P { static void Main() { var v = Console.In.ReadToEnd().Split((char[])null, "
               "StringSplitOptions.RemoveEmptyEntries); Console.WriteLine(v[0] + v[1]); } }\n"),
    "d": ('import std.stdio;\nvoid main() { long a, b; readf(" %d %d", &a, &b); writeln(a + b); }\n',
          'import std.stdio;\nvoid main() { long a, b; readf(" %d %d", &a, &b); writeln(a * b); }\n'),
    "verilog": ("module tb; integer a, b, r; initial begin r = $fscanf(32'h8000_0000, \"%d %d\", a, b);"
                ' $display("%0d", a + b); $finish; end endmodule\n',
                "module tb; integer a, b, r; initial begin r = $fscanf(32'h8000_0000, \"%d %d\", a, b);"
                ' $display("%0d", a - b); $finish; end endmodule\n'),
    "kotlin": ("fun main() { val (a, b) = readLine()!!.trim().split(Regex(\"\\\\s+\")).map { it.toLong() }\n"
               "    println(a + b) }\n",
               "fun main() { val (a, b) = readLine()!!.trim().split(Regex(\"\\\\s+\")).map { it.toLong() }\n"
               "    println(a * b) }\n"),
    "kotlin_script": ('val v = generateSequence(::readLine).joinToString(" ").trim().split(Regex("\\\\s+"))\n'
                      "println(v[0].toLong() + v[1].toLong())\n",
                      'val v = generateSequence(::readLine).joinToString(" ").trim().split(Regex("\\\\s+"))\n'
                      "println(v[0] + v[1])\n"),
    "racket": ("#lang racket\n(displayln (+ (read) (read)))\n", "#lang racket\n(displayln (- (read) (read)))\n"),
}  # fmt: skip
# a suite passes or fails by its exit status: a checker that accepts whatever it printed
ANY_OUTPUT = json.dumps({"cases": [{"input": "", "output": ""}], "checker": "import sys\nsys.exit(0)\n"})
# test-framework languages: (a passing suite, a failing one); graded on the exit status, no output expected
SUITES = {
    "pytest": ("def add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(1, 2) == 3\n",
               "def add(a, b):\n    return a - b\n\ndef test_add():\n    assert add(1, 2) == 3\n"),
    "go_test": ('package main\nimport "testing"\nfunc Add(a, b int) int { return a + b }\n'
                'func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal("wrong") } }\n',
                'package main\nimport "testing"\nfunc Add(a, b int) int { return a - b }\n'
                'func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal("wrong") } }\n'),
    "d_ut": ("int add(int a, int b) { return a + b; }\nunittest { assert(add(1, 2) == 3); }\nvoid main() {}\n",
             "int add(int a, int b) { return a - b; }\nunittest { assert(add(1, 2) == 3); }\nvoid main() {}\n"),
    "junit": ("import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n"
              "public class AddTest { static int add(int a, int b) { return a + b; }\n"
              "  @Test void adds() { assertEquals(3, add(1, 2)); } }\n",
              "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n"
              "public class AddTest { static int add(int a, int b) { return a - b; }\n"
              "  @Test void adds() { assertEquals(3, add(1, 2)); } }\n"),
    "jest": ("import { describe, expect, test } from '@jest/globals';\n"
             "const add = (a: number, b: number): number => a + b;\n"
             "describe('add', () => { test('adds', () => { expect(add(1, 2)).toBe(3); }); });\n",
             "import { describe, expect, test } from '@jest/globals';\n"
             "const add = (a: number, b: number): number => a - b;\n"
             "describe('add', () => { test('adds', () => { expect(add(1, 2)).toBe(3); }); });\n"),
}  # fmt: skip


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(PROGRAMS))
def test_a_correct_program_passes(service, lang):
    v = grade(service, lang, PROGRAMS[lang][0], case_timeout_s="20", compile_timeout_s="90", timeout_s=120)
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail


@pytest.mark.slow
@pytest.mark.parametrize("lang", sorted(PROGRAMS))
def test_a_wrong_program_fails(service, lang):
    v = grade(service, lang, PROGRAMS[lang][1], case_timeout_s="20", compile_timeout_s="90", timeout_s=120)
    assert v.outcome == "INCORRECT" and v.reward == 0.0, v.detail


@pytest.mark.parametrize("lang", sorted(SUITES))
def test_a_test_framework_language_grades_its_suite(service, lang):
    slow = {"case_timeout_s": "60", "compile_timeout_s": "90", "timeout_s": 120}  # a loaded CI machine's compilers
    ok = grade(service, lang, SUITES[lang][0], ANY_OUTPUT, judge="checker", **slow)
    assert (ok.outcome, ok.reward) == ("CORRECT", 1.0), ok.detail
    bad = grade(service, lang, SUITES[lang][1], ANY_OUTPUT, judge="checker", **slow)
    assert bad.outcome == "RUNTIME_ERROR" and bad.reward == 0.0, bad.detail  # the failing suite's exit status


@pytest.mark.parametrize("name", sorted(NOT_SERVED))
def test_a_language_this_server_does_not_run_is_refused_naming_it(name):
    with pytest.raises(BadRequest) as e:
        CodeOptions.parse({"mode": "stdio", "language": name})
    assert name in str(e.value) and NOT_SERVED[name] in str(e.value)


def test_a_java_program_imports_javatuples(service):
    """libjavatuples-java is on the Java and Kotlin class paths (SandboxFusion's Java runner bundles the jar)."""
    java = (
        "import org.javatuples.Pair;\nimport java.util.Scanner;\npublic class Main { public static void main(String[] a)"
        " { Scanner s = new Scanner(System.in); Pair<Long, Long> p = Pair.with(s.nextLong(), s.nextLong());"
        " System.out.println(p.getValue0() + p.getValue1()); } }\n"
    )
    kotlin = ("import org.javatuples.Pair\nfun main() { val v = readLine()!!.trim().split(\" \").map { it.toLong() }\n"
              "    val p = Pair.with(v[0], v[1]); println(p.getValue0() + p.getValue1()) }\n")  # fmt: skip
    for lang, code in (("java", java), ("kotlin", kotlin)):
        v = grade(service, lang, code, case_timeout_s="20", compile_timeout_s="90", timeout_s=120)
        assert (v.outcome, v.reward) == ("CORRECT", 1.0), (lang, v.detail)
