"""The languages the ``code`` verifier runs, and how each is compiled and run in the toolchain sandbox.

Python runs in the Python image's warm workers (see verifiers/kinds/code/verifier.py). Every other language runs in
the toolchain image (sandbox/image/langs.py) as **one sandbox job per submission**: the job is
``driver.py``, which writes the source into the job's scratch directory, compiles it under the
compile budget, then runs the binary once per test case under the per-case budget (table below) and
reports each case's output to the host, where it is judged (verifiers/kinds/code/judges.py). The expected
outputs never enter the sandbox.

Budgets (per submission):

=========== ========================================= ============ ===============================
language    compile (Debian bookworm)                 run          address space: compile / run
=========== ========================================= ============ ===============================
c           gcc 12 ``-O2 -std=gnu17 -lm``             ``./main``   4096 / 1024 MiB
cpp         g++ 12 ``-O2 -std=c++17``                 ``./main``   4096 / 1024 MiB
java        javac 17 (run with ``-ea``: asserts on)   ``java X``   4096 / 2048 MiB (heap 512 MiB)
javascript  — (syntax errors are runtime errors)      node 18      — / 2048 MiB
go          go 1.19 ``go build -ldflags=-s -w``       ``./main``   4096 / 1024 MiB
rust        rustc 1.63 ``-O --edition 2021``          ``./main``   4096 / 1024 MiB
            ``-C strip=debuginfo``
typescript  TypeScript 4.8 ``transpileModule``        node 18      4096 / 2048 MiB
bash        —                                         bash 5.2     — / 1024 MiB
=========== ========================================= ============ ===============================

TypeScript is transpiled (types stripped, no type check), as SandboxFusion's ``tsx`` runs it: a syntax
error is a compile error, a type error is not.

The JVM and V8 reserve far more address space than they touch, hence their larger run limits; the
memory they can really use is bounded by the sandbox's cgroup (``memory_mb`` of the pool) in every
case. Compile: ``compile_timeout_s`` (default 30 s; the request option of the same name, read by
verifiers/kinds/code/options.py), 256 processes/threads. Run: the per-case timeout (``case_timeout_s``), 64
processes, 16 MiB files, no network, the unprivileged user: the same limits as a Python job.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sandbox.image import extras
from verifiers.kinds.code.java_source import java_entry, scala_main
from verifiers.kinds.code.jest_config import JEST_ENV, JEST_RUN
from verifiers.kinds.code.kotlin_source import kotlin_main

LANGUAGES = ("python", "c", "cpp", "java", "javascript", "go", "rust", "typescript", "bash", "php", "ruby", "perl",
             "lua", "r", "scala", "csharp", "d", "d_ut", "verilog", "go_test", "junit", "pytest", "kotlin",
             "kotlin_script", "racket", "jest")  # fmt: skip
# SandboxFusion languages this server does not run, and why (a request naming one is refused with this)
NOT_SERVED = {
    "julia": "Debian bookworm has no Julia package",
    "swift": "Debian bookworm has no Swift compiler package (its 'swift' is OpenStack's object store)",
    "lean": "Debian bookworm has no Lean package (its 'elan' installer downloads Lean from the network)",
    "cuda": "the sandbox has no GPU",
    "python_gpu": "the sandbox has no GPU",
}
ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
    "c++17": "cpp",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",  # SandboxFusion's name
    "golang": "go",
    "rs": "rust",
    "ts": "typescript",
    "sh": "bash",
    "shell": "bash",
    "rb": "ruby",
    "pl": "perl",
    "c#": "csharp",
    "cs": "csharp",
    "dlang": "d",
    "sv": "verilog",
    "kt": "kotlin",
    "kts": "kotlin_script",
    "rkt": "racket",
    "systemverilog": "verilog",
}
COMPILE_TIMEOUT_S = 30.0
COMPILE_AS_MB = 4096
COMPILE_NPROC = 256
RUN_NPROC = 64
_JVM = ["-XX:+UseSerialGC", "-XX:-UseCompressedClassPointers", "-XX:ReservedCodeCacheSize=64m"]
_JUNIT = "/usr/share/java/junit-platform-console-standalone.jar"
_TUPLES = "/usr/share/java/javatuples.jar"  # libjavatuples-java: org.javatuples for Java, JUnit and Kotlin
_KOTLINC = ["-J-Xmx512m", "-J-XX:TieredStopAtLevel=1", *(f"-J{f}" for f in _JVM)]
_KOTLIN_CP = ":".join([*extras.KOTLIN_RUNTIME, _TUPLES])  # sandbox/image/extras.py puts them in the image
_KTS = extras.KOTLIN_SCRIPT_DIR
GO_WARM_CACHE = "/usr/lib/rlvr/gocache"  # built with the image (sandbox/image/langs.py)
_GO_ENV = {"GO111MODULE": "off", "CGO_ENABLED": "0", "GOCACHE": "/tmp/job/.gocache",
           "GOPATH": "/tmp/job/go:/usr/share/gocode"}  # fmt: skip
# main.ts -> main.js with the image's TypeScript module (node-typescript): types stripped, syntax errors
# reported as the compiler's (file(line,col): error TSnnnn: ...), exit 1.
_TS_STRIP = """
const ts = require("typescript"), fs = require("fs");
const out = ts.transpileModule(fs.readFileSync("main.ts", "utf8"), {fileName: "main.ts", reportDiagnostics: true,
  compilerOptions: {module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true}});
const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
for (const d of errors) {
  const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
  const where = at ? `(${at.line + 1},${at.character + 1})` : "";
  console.error(`main.ts${where}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\\n")}`);
}
if (errors.length) process.exit(1);
fs.writeFileSync("main.js", out.outputText);
"""


@dataclass(frozen=True)
class Language:
    name: str
    tags: tuple[str, ...]  # fence tags that select this language's block
    source: str  # file name of the source in the job's scratch directory
    compile: list[str] | None  # argv, or None (interpreted)
    run: list[str]
    run_as_mb: int = 1024
    env: dict[str, str] = field(default_factory=dict)


_TABLE = {
    "c": Language(
        "c", ("c",), "main.c", ["gcc", "-O2", "-std=gnu17", "-pipe", "-o", "main", "main.c", "-lm"], ["./main"]
    ),
    "cpp": Language(
        "cpp",
        ("cpp", "c++", "cxx", "cc"),
        "main.cpp",
        ["g++", "-O2", "-std=c++17", "-pipe", "-o", "main", "main.cpp"],
        ["./main"],
    ),
    "java": Language(
        "java",
        ("java",),
        "Main.java",
        [
            "javac",
            "-encoding",
            "UTF-8",
            "-J-Xmx512m",
            "-J-XX:TieredStopAtLevel=1",
            *(f"-J{f}" for f in _JVM),
            "-cp",
            f".:{_TUPLES}",
            "Main.java",
        ],
        ["java", "-ea", "-Xmx512m", "-XX:MaxMetaspaceSize=256m", *_JVM, "-cp", f".:{_TUPLES}", "Main"],
        run_as_mb=2048,
    ),
    "javascript": Language(
        "javascript", ("javascript", "js", "node"), "main.js", None, ["node", "main.js"], run_as_mb=2048
    ),
    "go": Language(
        "go",
        ("go", "golang"),
        "main.go",
        ["go", "build", "-ldflags=-s -w", "-o", "main", "main.go"],  # no symbol table, no DWARF: tracebacks keep names
        ["./main"],
        env=_GO_ENV,
    ),
    "rust": Language(
        "rust",
        ("rust", "rs"),
        "main.rs",
        ["rustc", "-O", "--edition", "2021", "-C", "strip=debuginfo", "-o", "main", "main.rs"],
        ["./main"],
    ),
    "typescript": Language(
        "typescript", ("typescript", "ts"), "main.ts", ["node", "-e", _TS_STRIP], ["node", "main.js"], run_as_mb=2048
    ),
    "bash": Language("bash", ("bash", "sh", "shell"), "main.sh", None, ["bash", "main.sh"]),
    # SandboxFusion's other languages, as its runners run them (sandbox/image/langs.py installs them)
    "php": Language("php", ("php",), "main.php", None, ["php", "-f", "main.php"]),
    "ruby": Language("ruby", ("ruby", "rb"), "main.rb", None, ["ruby", "main.rb"]),
    "perl": Language("perl", ("perl", "pl"), "main.pl", None, ["perl", "main.pl"]),
    "lua": Language("lua", ("lua",), "main.lua", None, ["lua5.4", "main.lua"]),
    "r": Language("r", ("r", "R"), "main.R", None, ["Rscript", "main.R"], run_as_mb=2048),
    "scala": Language(
        "scala",
        ("scala",),
        "main.scala",
        ["scalac", "-J-Xmx512m", "-J-XX:TieredStopAtLevel=1", *(f"-J{f}" for f in _JVM), "main.scala"],
        ["scala", "-J-ea", "-J-Xmx512m", *(f"-J{f}" for f in _JVM), "-cp", ".", "Main"],
        run_as_mb=2048,
    ),
    "csharp": Language(
        "csharp",
        ("csharp", "cs", "c#"),
        "main.cs",
        # dotnet run's Debug build; rlvr_assert.cs: Debug.Assert fails as on .NET (csharp_assert.py)
        ["mcs", "-define:DEBUG", "-define:TRACE", "-out:main.exe", "rlvr_assert.cs", "main.cs"],
        ["mono", "main.exe"],
        run_as_mb=2048,
    ),
    "d": Language("d", ("d",), "main.d", ["gdc", "-o", "main", "main.d"], ["./main"]),  # as SandboxFusion's dmd: no -O
    "d_ut": Language("d_ut", ("d_ut", "d"), "main.d", ["gdc", "-funittest", "-o", "main", "main.d"], ["./main"]),
    "verilog": Language(
        "verilog",
        ("verilog", "systemverilog", "sv", "v"),
        "main.sv",
        ["iverilog", "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb", "-o", "main.vvp", "main.sv"],
        ["vvp", "-n", "main.vvp"],
    ),
    # go test compiles the program and its imports in the run (as SandboxFusion's runner): testify comes
    # precompiled in the image's build cache (sandbox/image/langs.py), copied into the job's own first
    "go_test": Language(
        "go_test",
        ("go_test", "go"),
        "main_test.go",
        None,
        ["sh", "-c", f"cp -r {GO_WARM_CACHE} /tmp/job/.gocache 2>/dev/null; exec go test main_test.go"],
        4096,
        _GO_ENV,
    ),
    "junit": Language(
        "junit",
        ("junit", "java"),
        "Main.java",
        [
            "javac",
            "-encoding",
            "UTF-8",
            "-J-Xmx512m",
            *(f"-J{f}" for f in _JVM),
            "-cp",
            f".:{_JUNIT}:{_TUPLES}",
            "Main.java",
        ],
        [
            "java",
            "-ea",
            "-Xmx512m",
            *_JVM,
            "-jar",
            _JUNIT,
            "--disable-banner",
            "--class-path",
            f".:{_TUPLES}",
            "--scan-class-path",
        ],
        run_as_mb=2048,
    ),  # fmt: skip
    # kotlinc is a JVM too (4 s for a small program here): its output is a small jar, run on the image's
    # Kotlin runtime; a script compiles to the class Main, which sandbox/image/KotlinScript.java runs (per case
    # only the JVM starts, not the compiler); racket: ``raco make`` compiles the module once
    "kotlin": Language(
        "kotlin",
        ("kotlin", "kt"),
        "main.kt",
        ["kotlinc", *_KOTLINC, "-cp", _TUPLES, "main.kt", "-d", "main.jar"],
        ["java", "-ea", "-Xmx512m", "-XX:MaxMetaspaceSize=256m", *_JVM, "-cp", f"main.jar:{_KOTLIN_CP}", "MainKt"],
        run_as_mb=2048,
    ),
    "kotlin_script": Language(
        "kotlin_script",
        ("kotlin_script", "kts", "kotlin"),
        "main.kts",
        ["kotlinc", *_KOTLINC, "-cp", _TUPLES, "main.kts", "-d", "."],
        [
            "java",
            "-ea",
            "-Xmx512m",
            "-XX:MaxMetaspaceSize=256m",
            *_JVM,
            "-cp",
            f".:{_KTS}:{_KOTLIN_CP}",
            "KotlinScript",
            "Main",
        ],
        run_as_mb=2048,
    ),
    "racket": Language(
        "racket", ("racket", "rkt", "scheme"), "main.rkt", ["raco", "make", "main.rkt"], ["racket", "main.rkt"]
    ),
    # jest: the program is a test file (TypeScript or JavaScript, ES modules), as SandboxFusion's runner
    # writes it; jest_config.py: offline, one worker, cache under the job's scratch, CI mode; passes on exit 0
    "jest": Language(
        "jest", ("jest", "typescript", "ts", "javascript", "js"), "main.test.ts", None, JEST_RUN, 4096, JEST_ENV
    ),  # fmt: skip
    "pytest": Language(
        "pytest",
        ("pytest", "python", "py"),
        "test_main.py",
        None,
        ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_main.py"],
    ),  # fmt: skip
}


def language(name: str) -> Language:
    return _TABLE[name]


def for_source(lang: Language, code: str) -> Language:
    """Java and JUnit: the file is named after the source's public top-level class and (Java) the class run
    is the one declaring ``main`` (verifiers/kinds/code/java_source.py; ``Main`` if neither); a ``package``
    declaration is compiled with ``-d .`` and run by its qualified name. Scala: the object run is the one
    with a ``main`` (or ``extends App``). Kotlin: the class holding ``main`` (verifiers/kinds/code/kotlin_source.py)."""
    if lang.name == "kotlin":
        cls = kotlin_main(code)
        return lang if cls == "MainKt" else replace(lang, run=[cls if a == "MainKt" else a for a in lang.run])
    if lang.name == "scala":
        obj = scala_main(code)
        return lang if obj == "Main" else replace(lang, run=[obj if a == "Main" else a for a in lang.run])
    if lang.name not in ("java", "junit"):
        return lang
    entry = java_entry(code)
    if entry == ("Main", "Main", ""):
        return lang
    run_name = f"{entry.package}.{entry.main_class}" if entry.package else entry.main_class
    source = f"{entry.file_class}.java"
    compile_argv = [source if a == "Main.java" else a for a in lang.compile or []]
    if entry.package:
        compile_argv[1:1] = ["-d", "."]
    run_argv = lang.run if lang.name == "junit" else [run_name if a == "Main" else a for a in lang.run]
    return replace(lang, source=source, compile=compile_argv, run=run_argv)


def source_text(lang: Language, code: str) -> str:
    """What is written as ``lang.source``: the code, and for PHP an opening ``<?php`` tag where it has none
    (as SandboxFusion does; PHP would otherwise echo the program as text); for C# the implicit usings of
    the ``dotnet new console`` project SandboxFusion runs in (Mono's ``mcs`` has none), on the first line
    so line numbers hold."""
    if lang.name == "php" and "<?php" not in code and "<?=" not in code:
        return "<?php\n" + code
    if lang.name == "csharp":  # SandboxFusion's dotnet console project has implicit usings; a repeat is a warning
        return _CS_USINGS + code
    return code


_CS_USINGS = "".join(f"using {n}; " for n in ("System", "System.Collections.Generic", "System.IO", "System.Linq",
                                                "System.Threading", "System.Threading.Tasks"))  # fmt: skip


def not_served(name: str) -> str | None:
    """Why this server does not run SandboxFusion's language ``name`` (None: it does, or it is unknown)."""
    return NOT_SERVED.get(name.strip().lower())


def tags(name: str) -> tuple[str, ...]:
    """Fence tags that select ``name``'s code block."""
    if name == "python":
        return ("python", "py", "python3", "py3")
    return _TABLE[name].tags
