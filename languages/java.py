"""Java: OpenJDK 17, run with ``-ea``; the file and the class run are read from the source."""

import re
from dataclasses import replace

from languages.assemble import need
from languages.common import JVM, TUPLES
from languages.parse import blank_literals, java_entry
from languages.record import Language, Parts, Record

_IMPORT = re.compile(r"(?m)^\s*import\s+(?:static\s+)?[\w.]+(?:\.\*)?\s*;[ \t]*$")
_MAIN = re.compile(r"\bstatic\s+(?:[\w$<>\[\]]+\s+)*?void\s+main\s*\(")
_PACKAGE = re.compile(r"(?m)^\s*package\s+[\w.]+\s*;")


def for_source(lang: Language, code: str) -> Language:
    """The file is named after the public top-level class and (Java) the class run is the one declaring
    ``main`` (``Main`` if neither); a ``package`` is compiled with ``-d .`` and run by its qualified name."""
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


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    """One file: the tests' imports at the top, a class of ours calling the tests' ``main``."""
    need(_MAIN.search(blank_literals(p.tests)), "java", "a class with public static void main")
    cls = java_entry(p.tests).main_class
    imports = "".join(m.group(0).strip() + "\n" for m in _IMPORT.finditer(blank_literals(p.tests)))
    tests = _IMPORT.sub("", p.tests)
    pkg = _PACKAGE.search(blank_literals(p.program))
    at = pkg.end() if pkg else 0
    program = p.program[:at] + "\n" + imports + p.program[at:]
    ours = (
        f"\nfinal class RlvrMain{p.tag} {{\n  public static void main(String[] a) throws Throwable {{\n"
        f"    try {{ {cls}.main(a); }}\n    catch (AssertionError e) {{ System.err.println(e); System.exit(1); }}\n"
        f'    System.out.print("\\n" + "{p.a}" + "{p.b}" + "\\n");\n    System.out.flush();\n'
        "  }\n}\n"
    )
    return f"{program}\n{tests}\n{ours}", {}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    base = for_source(base, source)
    pkg = java_entry(source).package
    return replace(base, run=[*base.run[:-1], f"{pkg}.RlvrMain{tag}" if pkg else f"RlvrMain{tag}"])


RECORD = Record(
    name="java",
    rank=3,
    tags=("java",),
    source="Main.java",
    compile=[
        "javac",
        "-encoding",
        "UTF-8",
        "-J-Xmx512m",
        "-J-XX:TieredStopAtLevel=1",
        *(f"-J{f}" for f in JVM),
        "-cp",
        f".:{TUPLES}",
        "Main.java",
    ],
    run=["java", "-ea", "-Xmx512m", "-XX:MaxMetaspaceSize=256m", *JVM, "-cp", f".:{TUPLES}", "Main"],
    run_as_mb=2048,
    sandboxfusion=("java",),
    shows_compile=True,
    packages=("default-jdk-headless", "libjavatuples-java"),
    asserts=_assemble,
    adjust=_adjust,
    for_source=for_source,
    toolchain_doc="OpenJDK 17 (`javac`, `java -ea`, heap 512 MiB) + javatuples",
)
