"""Assert mode for the toolchain languages: the request's tests are code in the candidate's language
(C/C++ ``assert`` in a ``main``, Java ``assert`` under ``-ea`` in a class with ``main``, node:assert or
``console.assert``, a Go ``main`` that panics, Rust ``assert!`` in ``fn main``, PHP/Ruby/Perl/Lua/R
scripts, a Scala object, a C# ``Main`` with ``Debug.Assert``, D ``assert`` in ``main`` or ``unittest``
blocks, a Kotlin ``fun main`` with ``assert``, Racket's rackunit checks: verifiers/kinds/code/asserts_more.py),
assembled with the candidate's program into one program, compiled and run once in the toolchain
pool as stdio mode's programs are (verifiers/kinds/code/stdio.py ``run_compiled``: same limits, compile cache,
fairness gate), the whole test program one case.

How a language's program is assembled (``LANGUAGES``; one function each): the prelude and the candidate
first, then the tests, then our own code, which prints a sentinel line after the tests returned. Where
the tests have an entry point (C, C++, Go, Rust, D) it is renamed and called from our ``main``, and a
``main`` the candidate wrote is renamed out of the way (never called); Java, Scala and C# keep the tests'
class and call its ``main`` from a class of ours that the run starts.

Passing means the program ran to the end: exit 0 **and** the sentinel on its stdout. The sentinel carries
a nonce the candidate is not told, written in the source as two halves joined at run time (a program that
prints its own source text, as PHP after ``?>``, does not print it); our names carry another secret tag,
so a C macro cannot aim at them. So ``exit(0)``, ``System.exit(0)``, ``process.exit(0)``, ``os.Exit(0)``
or a signal before the tests finished is not paid (INCORRECT, signal ``code.early_exit``). The nonce is
an HMAC of the program (language, candidate, tests) under a key drawn once per process: unknown to the
candidate, and the same for identical programs, so a batch's identical programs share one compile
(``toolchains.Toolchains.run``, behind the service's door) as stdio's do.

JavaScript, TypeScript, Ruby, PHP, Perl, Lua, R and Racket no longer go this way: their tests run apart
(verifiers/kinds/code/asserts_apart.py ``SEPARATE``; the scripting languages: apart_scripts.py). For the others, not defended, by construction, hence refused unless the request sets
``allow_shared_program`` (``SHARED_PROGRAM``, options.py; docs/verifiers.md, "Assert mode in other languages"): the tests share the
candidate's process and source, so a candidate can read its own source or binary to find the nonce,
redefine what the tests call (a C macro, a patched ``assert`` module, ``console.assert``), or answer
asynchronous tests after the sentinel. That is why Python keeps its two-process harness (in_sandbox/code/harness.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from verifiers.kinds.code import languages
from verifiers.kinds.code.asserts_apart import SEPARATE, apart_lines, counted
from verifiers.kinds.code.asserts_more import BadTests, kotlin, racket
from verifiers.kinds.code.java_source import blank_literals, java_entry, scala_main
from verifiers.shapes.base import BadRequest, CaseVerdict, Verdict
from verifiers.shapes.outcome import CaseStatus, Outcome

SENTINEL = "RLVR-TESTS-RAN-TO-THE-END"
_KEY = secrets.token_bytes(32)  # the nonce's key: drawn once per process, never leaves it
# a failed test's stderr (else a crash: RUNTIME_ERROR): asserts, MultiPL-E's "Test failed", R's stopifnot,
# D's unittest summary, a Go panic that is not the runtime's
_FAILED = re.compile(r"(?i)assert|test failed|is not TRUE|are not all TRUE|FAILED unittests|(?-i:\bpanic: (?!runtime))")


@dataclass(frozen=True)
class Program:
    """One assembled test program: its language (argv, file name), its main source, its other files."""

    lang: languages.Language
    source: str
    sentinel: str
    blobs: dict[str, str] = field(default_factory=dict)  # relative path -> base64
    apart: bool = False  # the tests run in a process of their own (SEPARATE): the sentinel line says what ran


@dataclass(frozen=True)
class Parts:
    """An assembler's input: the program (prelude + candidate), the tests, the sentinel's halves, our names' tag."""

    program: str
    tests: str
    a: str
    b: str
    tag: str


# -- finding and renaming entry points ------------------------------------------------------------------
_C_MAIN = re.compile(r"\b(int|void)\s+main\s*\(([^()]*)\)\s*\{")
_RUST_MAIN = re.compile(r"\bfn\s+main\s*\(\s*\)\s*\{")
_GO_MAIN = re.compile(r"(?m)^func\s+main\s*\(\s*\)\s*\{")
_GO_PACKAGE = re.compile(r"(?m)^\s*package\s+\w+")
_JAVA_IMPORT = re.compile(r"(?m)^\s*import\s+(?:static\s+)?[\w.]+(?:\.\*)?\s*;[ \t]*$")
_JAVA_MAIN = re.compile(r"\bstatic\s+(?:[\w$<>\[\]]+\s+)*?void\s+main\s*\(")
_JAVA_PACKAGE = re.compile(r"(?m)^\s*package\s+[\w.]+\s*;")
_CS_MAIN = re.compile(r"\bstatic\s+(?:[\w<>\[\],]+\s+)*?(?:void|int|Task|Task<int>)\s+Main\s*\(")
_CS_CLASS = re.compile(r"\b(?:class|struct)\s+([A-Za-z_]\w*)")


def _closing(clean: str, at: int) -> int:
    """Index of the brace closing the one at ``at`` (in literal-blanked text), or -1."""
    depth = 0
    for j in range(at, len(clean)):
        depth += {"{": 1, "}": -1}.get(clean[j], 0)
        if depth == 0:
            return j
    return -1


def _rename(code: str, pattern: re.Pattern, new: str, ret: str = "") -> tuple[str, re.Match | None]:
    """``code`` with the first function ``pattern`` finds (literals and comments blanked) renamed to ``new``
    (its word ``main``), ``ret`` put before its closing brace; (code, the match or None)."""
    clean = blank_literals(code)
    m = pattern.search(clean)
    if m is None:
        return code, None
    at = clean.index("main", m.start())
    close = _closing(clean, m.end() - 1)
    if close < 0:
        return code, None
    body = code[at + 4 : close]
    return code[:at] + new + body + ret + code[close:], m


def _need(found: object, lang: str, what: str) -> None:
    if not found:
        raise BadTests(f"code: {lang} tests (the reference) need {what}")


# -- one assembler per language ----------------------------------------------------------------------------
def _c_like(header: str, lang: str) -> Callable[[Parts], tuple[str, dict[str, str]]]:
    def assemble(p: Parts) -> tuple[str, dict[str, str]]:
        t = f"rlvr_tests_{p.tag}"
        program, _ = _rename(p.program, _C_MAIN, f"rlvr_unused_main_{p.tag}")
        tests, m = _rename(p.tests, _C_MAIN, t, "\nreturn 0;\n")  # a main may fall off its end: 0, as main's
        _need(m, lang, "a main function (int main() { assert(...); })")
        args = "argc, argv" if m.group(2).strip() not in ("", "void") else ""
        ours = (f"\n{header}\nint main(int argc, char **argv) {{\n  int rc = {t}({args});\n  (void)argc; (void)argv;\n"
                f'  if (rc != 0) return rc;\n  fputs("\\n" "{p.a}" "{p.b}" "\\n", stdout);\n  fflush(stdout);\n'
                "  return 0;\n}\n")  # fmt: skip
        return f"{program}\n{tests}\n{ours}", {}

    return assemble


def _java(p: Parts) -> tuple[str, dict[str, str]]:
    _need(_JAVA_MAIN.search(blank_literals(p.tests)), "java", "a class with public static void main")
    cls = java_entry(p.tests).main_class
    imports = "".join(m.group(0).strip() + "\n" for m in _JAVA_IMPORT.finditer(blank_literals(p.tests)))
    tests = _JAVA_IMPORT.sub("", p.tests)
    pkg = _JAVA_PACKAGE.search(blank_literals(p.program))
    at = pkg.end() if pkg else 0
    program = p.program[:at] + "\n" + imports + p.program[at:]
    ours = (f"\nfinal class RlvrMain{p.tag} {{\n  public static void main(String[] a) throws Throwable {{\n"
            f"    try {{ {cls}.main(a); }}\n    catch (AssertionError e) {{ System.err.println(e); System.exit(1); }}\n"
            f'    System.out.print("\\n" + "{p.a}" + "{p.b}" + "\\n");\n    System.out.flush();\n'
            "  }\n}\n")  # fmt: skip
    return f"{program}\n{tests}\n{ours}", {}


def _scala(p: Parts) -> tuple[str, dict[str, str]]:
    obj = scala_main(p.tests)
    _need(re.search(r"\bobject\b", blank_literals(p.tests)), "scala", "an object with main (or extends App)")
    ours = (f"\nobject RlvrMain{p.tag} {{\n  def main(a: Array[String]): Unit = {{\n"
            f"    try {obj}.main(a) catch {{ case e: AssertionError => System.err.println(e); sys.exit(1) }}\n"
            f'    System.out.print("\\n" + "{p.a}" + "{p.b}" + "\\n")\n    System.out.flush()\n  }}\n}}\n')  # fmt: skip
    return f"{p.program}\n{p.tests}\n{ours}", {}


def _csharp(p: Parts) -> tuple[str, dict[str, str]]:
    clean = blank_literals(p.tests)
    m = _CS_MAIN.search(clean)
    _need(m, "csharp", "a class with static void Main")
    cls = [c.group(1) for c in _CS_CLASS.finditer(clean, 0, m.start())]
    _need(cls, "csharp", "a class around its Main")
    g = "global::System"
    ours = f"""
static class RlvrMain{p.tag} {{
  sealed class Failing : {g}.Diagnostics.TraceListener {{  // Debug.Assert fails the tests (Mono's only prints)
    public override void Write(string m) {{}} public override void WriteLine(string m) {{}}
    public override void Fail(string m) {{ throw new {g}.Exception("Debug.Assert failed: " + m); }}
    public override void Fail(string m, string d) {{ throw new {g}.Exception("Debug.Assert failed: " + m + " " + d); }}
  }}
  static int Main(string[] a) {{
    {g}.Diagnostics.Debug.Listeners.Clear(); {g}.Diagnostics.Debug.Listeners.Add(new Failing());
    var f = {g}.Reflection.BindingFlags.Static | {g}.Reflection.BindingFlags.Public | {g}.Reflection.BindingFlags.NonPublic;
    {g}.Reflection.MethodInfo main = null;
    foreach (var t in typeof(RlvrMain{p.tag}).Assembly.GetTypes()) if (t.Name == "{cls[-1]}") main = t.GetMethod("Main", f);
    object r;
    try {{ r = main.Invoke(null, main.GetParameters().Length == 0 ? null : new object[] {{ a }}); }}
    catch ({g}.Reflection.TargetInvocationException e) {{  // the tests' own exception, not reflection's
      {g}.Console.Error.WriteLine(e.InnerException);
      return 1;
    }}
    if (r is int && (int)r != 0) return (int)r;
    {g}.Console.Out.Write("\\n" + "{p.a}" + "{p.b}" + "\\n"); {g}.Console.Out.Flush();
    return 0;
  }}
}}
"""
    return f"{p.program}\n{p.tests}\n{ours}", {}


def _d(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvr_tests_{p.tag}"
    program, _ = _rename(p.program, _C_MAIN, f"rlvr_unused_main_{p.tag}")
    tests, m = _rename(p.tests, _C_MAIN, t)
    args = "rlvrArgs" if m and m.group(2).strip() else ""
    call = "" if m is None else f"if ({t}({args}) != 0) return 1;" if m.group(1) == "int" else f"{t}({args});"
    ours = ('\nextern(C) __gshared string[] rt_options = ["testmode=run-main"];\n'  # unittest blocks, then main
            f"int main(string[] rlvrArgs) {{\n  {call}\n  import std.stdio : stdout;\n"
            f'  stdout.write("\\n" ~ "{p.a}" ~ "{p.b}" ~ "\\n");\n  stdout.flush();\n  return 0;\n}}\n')  # fmt: skip
    return f"{program}\n{tests}\n{ours}", {}


def _rust(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvr_tests_{p.tag}"
    program, _ = _rename(p.program, _RUST_MAIN, f"rlvr_unused_main_{p.tag}")
    tests, m = _rename(p.tests, _RUST_MAIN, t)
    _need(m, "rust", "fn main() { assert!(...); }")
    out = "::std::io::Write::{}(&mut ::std::io::stdout()"
    ours = (f"\nfn main() {{\n  {t}();\n  {out.format('write_all')}, "
            f'["\\n", "{p.a}", "{p.b}", "\\n"].concat().as_bytes()).unwrap();\n  {out.format("flush")}).unwrap();\n}}\n')  # fmt: skip
    return f"{program}\n{tests}\n{ours}", {}


def _go(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvrTests{p.tag}"

    def package(code: str) -> str:
        return code if _GO_PACKAGE.search(blank_literals(code)) else "package main\n" + code

    program, _ = _rename(package(p.program), _GO_MAIN, f"rlvrUnusedMain{p.tag}")
    tests, m = _rename(package(p.tests), _GO_MAIN, t)
    _need(m, "go", "func main() { ... panic(...) ... }")
    ours = (f'package main\n\nimport rlvrOs{p.tag} "os"\n\nfunc main() {{\n  {t}()\n'
            f'  rlvrOs{p.tag}.Stdout.WriteString("\\n" + "{p.a}" + "{p.b}" + "\\n")\n}}\n')  # fmt: skip
    return program, {"tests.go": tests, "rlvr_main.go": ours}


def _script(say: str, before: str = "\n", between: str = "\n") -> Callable[[Parts], tuple[str, dict[str, str]]]:
    """Candidate, ``between``, the tests, ``before``, then the statement ``say`` (``{a}``, ``{b}``: the halves)."""

    def assemble(p: Parts) -> tuple[str, dict[str, str]]:
        return f"{p.program}{between}{p.tests}{before}{say.format(a=p.a, b=p.b)}\n", {}

    return assemble


_JS_ASSERT = ('\n;\nconsole.assert = function (c, ...m) { if (!c) throw new Error("Assertion failed" + '
              '(m.length ? ": " + m.join(" ") : "")); };  // fail, not only print (Node\'s)\n')  # fmt: skip
# Tests that use node:assert without requiring it (``assert` is not defined`` was charged to the candidate):
# the module, on the global object only where nothing named assert exists (the tests' own const wins)
_JS_GLOBAL_ASSERT = '\nif (!("assert" in globalThis)) globalThis.assert = require("node:assert");\n'
_JS_SAY = 'process.stdout.write("\\n" + "{a}" + "{b}" + "\\n");'
_PHP_AGAIN = "\n?>\n<?php\n"  # back in PHP mode whatever the code before left open (a ?> is printed, not run)


def _php(p: Parts) -> tuple[str, dict[str, str]]:
    program = p.program if p.program.lstrip().startswith("<?") else "<?php\n" + p.program
    tests = re.sub(r"^\s*<\?php\b", "", p.tests)
    say = f'echo "\\n" . "{p.a}" . "{p.b}" . "\\n";\n'
    return f"{program}{_PHP_AGAIN}{tests}{_PHP_AGAIN}{say}", {}


_RUBY_SAY = """
if defined?(Test::Unit::AutoRunner) && Test::Unit::AutoRunner.need_auto_run?  # test/unit: run now, not at exit
  Test::Unit::AutoRunner.need_auto_run = false
  abort("Test failed: test/unit reported a failure or an error") unless Test::Unit::AutoRunner.run
end
$stdout.write("\\n" + "{a}" + "{b}" + "\\n")
$stdout.flush
"""

# language -> how its program is assembled (its candidate, tests and our code into files)
LANGUAGES: dict[str, Callable[[Parts], tuple[str, dict[str, str]]]] = {
    "c": _c_like("#include <stdio.h>", "c"),
    "cpp": _c_like("#include <cstdio>", "cpp"),
    "java": _java,
    "javascript": _script(_JS_SAY, "\n;\n", _JS_ASSERT + _JS_GLOBAL_ASSERT),
    "typescript": _script(_JS_SAY, "\n;\n", _JS_ASSERT),
    "go": _go,
    "rust": _rust,
    "php": _php,
    "ruby": _script(_RUBY_SAY),
    "perl": _script('$| = 1;\nprint "\\n" . "{a}" . "{b}" . "\\n";', "\n;\n", "\n;\n"),
    "lua": _script('io.write("\\n" .. "{a}" .. "{b}" .. "\\n")'),
    "r": _script('cat("\\n", "{a}", "{b}", "\\n", sep = "")'),
    "scala": _scala,
    "csharp": _csharp,
    "d": _d,
    "kotlin": kotlin,  # verifiers/kinds/code/asserts_more.py
    "racket": racket,
}


# Languages whose assert mode still puts the tests in the candidate's program (no separate process or unit, a
# verdict the candidate can reach): refused unless the request sets allow_shared_program (options.py), and the
# verdict then carries code.shared_program. A language leaves this set when its tests run apart.
SHARED_PROGRAM: frozenset[str] = frozenset(LANGUAGES) - frozenset(SEPARATE)


def assemble(lang: str, program: str, tests: str) -> Program:
    """The test program of ``lang`` for ``program`` (prelude + candidate) and ``tests``; ``BadTests``
    where the tests lack the entry point the language needs."""
    digest = hmac.new(_KEY, "\0".join((lang, program, tests)).encode(), hashlib.sha256).hexdigest()
    sentinel, tag = f"{SENTINEL}-{digest[:32]}", digest[32:40]
    half = len(sentinel) // 2
    parts = Parts(program, tests, sentinel[:half], sentinel[half:], tag)
    base = languages.language(lang)
    if lang in SEPARATE:
        apart = SEPARATE[lang]
        source, files = apart.assemble(parts)
        blobs = {name: base64.b64encode(text.encode()).decode() for name, text in files.items()}
        base = replace(base, source=apart.source, run=apart.run, compile=apart.compile)
        return Program(base, source, sentinel, blobs, apart=True)
    source, files = LANGUAGES[lang](parts)
    if lang == "java":
        base = languages.for_source(base, source)
        pkg = java_entry(source).package
        base = replace(base, run=[*base.run[:-1], f"{pkg}.RlvrMain{tag}" if pkg else f"RlvrMain{tag}"])
    elif lang == "scala":
        base = replace(base, run=[*base.run[:-1], f"RlvrMain{tag}"])
    elif lang == "csharp":
        base = replace(base, compile=[*base.compile[:-1], f"-main:RlvrMain{tag}", base.compile[-1]])
    elif lang == "go":
        base = replace(base, compile=[*base.compile, *files])
    elif lang == "d":
        base = replace(base, compile=["gdc", "-funittest", *base.compile[1:]])
    elif lang == "php":  # Debian's php.ini compiles assert() out (zend.assertions=-1)
        base = replace(base, run=["php", "-d", "zend.assertions=1", "-d", "assert.exception=1", *base.run[1:]])
    blobs = {name: base64.b64encode(text.encode()).decode() for name, text in files.items()}
    return Program(base, source, sentinel, blobs)


def check(lang: str, tests: str) -> None:
    """``BadRequest`` where ``lang``'s tests cannot be assembled (they lack the entry point it needs)."""
    try:
        assemble(lang, "", tests)
    except BadTests as e:
        raise BadRequest(str(e)) from None


# how the run ended -> (outcome, the case's status, signals, detail: "{}" is the run's message)
_ENDS = {
    "pass": (Outcome.CORRECT, CaseStatus.PASSED, (), "the tests ran to the end"),
    "early": (Outcome.INCORRECT, CaseStatus.WRONG_ANSWER, ("code.early_exit",),
              "the program exited 0 before the tests finished (no sentinel line after the last test)"),
    "failed": (Outcome.INCORRECT, CaseStatus.WRONG_ANSWER, (), "a test failed: {}"),
    "runtime": (Outcome.RUNTIME_ERROR, CaseStatus.RUNTIME_ERROR, (), "{}"),
    "timeout": (Outcome.TIMEOUT, CaseStatus.TIME_LIMIT, ("code.time_limit",), "{}"),
    "output": (Outcome.RUNTIME_ERROR, CaseStatus.OUTPUT_LIMIT, ("code.output_cap",), "{}"),
}  # fmt: skip


def verdict(prog: Program, compile_error: str | None, runs: list) -> Verdict:
    """The verdict of one test program's run: ``stdio.run_compiled``'s answer (``runs``: its one ``CaseRun``)."""
    if compile_error is not None:
        return Verdict.of(Outcome.COMPILE_ERROR, compile_error)
    run = runs[0]
    if run.status == "sandbox":
        return Verdict.of(Outcome.SANDBOX_ERROR, run.message)
    if prog.apart:
        said = apart_lines(prog.sentinel, run.stdout)
        if "bad_reference" in said:
            return Verdict.of(Outcome.BAD_REFERENCE, f"the tests failed before any call into the candidate: "
                              f"{said['bad_reference'][-600:]}")  # fmt: skip
    if run.status == "ok":
        end = "pass" if prog.sentinel in (line.strip() for line in run.stdout.splitlines()) else "early"
    else:
        end = run.status if run.status in ("timeout", "output") else "runtime"
        end = "failed" if end == "runtime" and _FAILED.search(run.message) else end
    outcome, status, signals, say = _ENDS[end]
    v = Verdict.of(outcome, say.format(run.message))
    v.cases = [CaseVerdict(status, "" if status is CaseStatus.PASSED else v.detail, run.elapsed_s)]
    if prog.apart and end == "pass":
        return counted(v, apart_lines(prog.sentinel, run.stdout).get("ran", ""))
    return v.signal(*signals)
