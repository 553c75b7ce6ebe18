"""Kotlin 1.3.31: ``kotlinc`` to a small jar run on the image's Kotlin runtime by ``java -ea``; the class run is
the one holding ``main``. Assert mode: the tests' ``fun main`` renamed and called from ours, their imports at the
top of the file, a candidate's ``main`` renamed away (never called)."""

import re
from dataclasses import replace

from languages.common import JVM, KOTLIN_CP, KOTLINC, TUPLES
from languages.parse import blank_literals, kotlin_main
from languages.record import BadTests, Language, Parts, Record

_MAIN = re.compile(r"\bfun\s+main\s*\(([^()]*)\)")
_IMPORT = re.compile(r"(?m)^[ \t]*import[ \t]+[\w.]+(?:\.\*)?(?:[ \t]+as[ \t]+\w+)?[ \t]*;?[ \t]*$")
_HEADER = re.compile(r"(?m)\A(?:\s*(?://[^\n]*|@file:[^\n]*|package[ \t]+[\w.]+[ \t]*;?|import[ \t][^\n]*)\n)*")


def _for_source(lang: Language, code: str) -> Language:
    cls = kotlin_main(code)
    return lang if cls == "MainKt" else replace(lang, run=[cls if a == "MainKt" else a for a in lang.run])


def _rename_main(code: str, new: str) -> tuple[str, re.Match | None]:
    """``code`` with the name of its first ``fun main(...)`` (literals and comments blanked) changed to ``new``."""
    m = _MAIN.search(blank_literals(code))
    if m is None:
        return code, None
    at = m.start() + m.group(0).index("main")
    return code[:at] + new + code[at + 4 :], m


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvrTests{p.tag}"
    program, _ = _rename_main(p.program, f"rlvrUnusedMain{p.tag}")
    tests, m = _rename_main(p.tests, t)
    if m is None:
        raise BadTests("code: kotlin tests (the reference) need fun main() { assert(...) }")
    imports = "".join(i.group(0).strip() + "\n" for i in _IMPORT.finditer(blank_literals(tests)))
    tests = _IMPORT.sub("", tests)
    head = _HEADER.match(program).end()  # after the candidate's package line and imports
    call = f"{t}(args)" if m.group(1).strip() else f"{t}()"
    ours = (
        f"\nfun main(args: Array<String>) {{\n"
        f"  try {{ {call} }} catch (e: AssertionError) {{ System.err.println(e); kotlin.system.exitProcess(1) }}\n"
        f'  print("\\n" + "{p.a}" + "{p.b}" + "\\n")\n  System.out.flush()\n}}\n'
    )
    return f"{program[:head]}{imports}{program[head:]}\n{tests}\n{ours}", {}


RECORD = Record(
    name="kotlin",
    rank=22,
    tags=("kotlin", "kt"),
    source="main.kt",
    compile=["kotlinc", *KOTLINC, "-cp", TUPLES, "main.kt", "-d", "main.jar"],
    run=["java", "-ea", "-Xmx512m", "-XX:MaxMetaspaceSize=256m", *JVM, "-cp", f"main.jar:{KOTLIN_CP}", "MainKt"],
    run_as_mb=2048,
    aliases=("kt",),
    sandboxfusion=("kotlin",),
    shows_compile=True,
    asserts=_assemble,
    for_source=_for_source,
    toolchain_doc="Kotlin 1.3.31 (`kotlinc`, run by `java -ea` on OpenJDK 17)",
    served_doc="yes (stdio or `/run_code`; `kotlin` is our name, SandboxFusion's table has `kotlin_script`)",
)
