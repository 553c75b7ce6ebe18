"""The languages the ``code`` verifier runs, and how each is compiled and run in the toolchain sandbox.

Python runs in the Python image's warm workers (see verifiers/code/verifier.py). Every other language runs in
the toolchain image (sandbox/image_langs.py) as **one sandbox job per submission**: the job is
``driver.py``, which writes the source into the job's scratch directory, compiles it under the
compile budget, then runs the binary once per test case under the per-case budget (table below) and
reports each case's output to the host, where it is judged (verifiers/code/judges.py). The expected
outputs never enter the sandbox.

Budgets (per submission):

=========== ========================================= ============ ===============================
language    compile (Debian bookworm)                 run          address space: compile / run
=========== ========================================= ============ ===============================
c           gcc 12 ``-O2 -std=gnu17 -lm``             ``./main``   4096 / 1024 MiB
cpp         g++ 12 ``-O2 -std=c++17``                 ``./main``   4096 / 1024 MiB
java        javac 17 (run with ``-ea``: asserts on)   ``java X``   4096 / 2048 MiB (heap 512 MiB)
javascript  — (syntax errors are runtime errors)      node 18      — / 2048 MiB
go          go 1.19 ``go build`` (GOPATH mode)         ``./main``   4096 / 1024 MiB
rust        rustc 1.63 ``-O --edition 2021``          ``./main``   4096 / 1024 MiB
typescript  TypeScript 4.8 ``transpileModule``        node 18      4096 / 2048 MiB
bash        —                                         bash 5.2     — / 1024 MiB
=========== ========================================= ============ ===============================

TypeScript is transpiled (types stripped, no type check), as SandboxFusion's ``tsx`` runs it: a syntax
error is a compile error, a type error is not.

The JVM and V8 reserve far more address space than they touch, hence their larger run limits; the
memory they can really use is bounded by the sandbox's cgroup (``memory_mb`` of the pool) in every
case. Compile: ``compile_timeout_s`` (default 30 s; the request option of the same name, read by
verifiers/code/options.py), 256 processes/threads. Run: the per-case timeout (``case_timeout_s``), 64
processes, 16 MiB files, no network, the unprivileged user: the same limits as a Python job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifiers.code.java_source import java_entry

LANGUAGES = ("python", "c", "cpp", "java", "javascript", "go", "rust", "typescript", "bash")
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
}
COMPILE_TIMEOUT_S = 30.0
COMPILE_AS_MB = 4096
COMPILE_NPROC = 256
RUN_NPROC = 64
_JVM = ["-XX:+UseSerialGC", "-XX:-UseCompressedClassPointers", "-XX:ReservedCodeCacheSize=64m"]
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
            "Main.java",
        ],
        ["java", "-ea", "-Xmx512m", "-XX:MaxMetaspaceSize=256m", *_JVM, "-cp", ".", "Main"],
        run_as_mb=2048,
    ),
    "javascript": Language(
        "javascript", ("javascript", "js", "node"), "main.js", None, ["node", "main.js"], run_as_mb=2048
    ),
    "go": Language(
        "go",
        ("go", "golang"),
        "main.go",
        ["go", "build", "-o", "main", "main.go"],
        ["./main"],
        env={"GO111MODULE": "off", "CGO_ENABLED": "0", "GOCACHE": "/tmp/job/.gocache", "GOPATH": "/tmp/job/go"},
    ),
    "rust": Language(
        "rust", ("rust", "rs"), "main.rs", ["rustc", "-O", "--edition", "2021", "-o", "main", "main.rs"], ["./main"]
    ),
    "typescript": Language(
        "typescript", ("typescript", "ts"), "main.ts", ["node", "-e", _TS_STRIP], ["node", "main.js"], run_as_mb=2048
    ),
    "bash": Language("bash", ("bash", "sh", "shell"), "main.sh", None, ["bash", "main.sh"]),
}


def language(name: str) -> Language:
    return _TABLE[name]


def for_source(lang: Language, code: str) -> Language:
    """Java: the file is named after the source's public top-level class and the class run is the one
    declaring ``main`` (verifiers/code/java_source.py; ``Main`` if neither); a ``package`` declaration is
    compiled with ``-d .`` and run by its qualified name."""
    if lang.name != "java":
        return lang
    entry = java_entry(code)
    if entry == ("Main", "Main", ""):
        return lang
    run_name = f"{entry.package}.{entry.main_class}" if entry.package else entry.main_class
    source = f"{entry.file_class}.java"
    compile_argv = [source if a == "Main.java" else a for a in lang.compile or []]
    if entry.package:
        compile_argv[1:1] = ["-d", "."]
    run_argv = [run_name if a == "Main" else a for a in lang.run]
    return Language(lang.name, lang.tags, source, compile_argv, run_argv, lang.run_as_mb, lang.env)


def tags(name: str) -> tuple[str, ...]:
    """Fence tags that select ``name``'s code block."""
    if name == "python":
        return ("python", "py", "python3", "py3")
    return _TABLE[name].tags
