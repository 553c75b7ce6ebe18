"""Scala 2.11: the object run is the one with a ``main`` (or ``extends App``); in assert mode ours calls it."""

import re
from dataclasses import replace

from languages.assemble import need
from languages.common import JVM
from languages.parse import blank_literals, scala_main
from languages.record import Language, Parts, Record


def _for_source(lang: Language, code: str) -> Language:
    obj = scala_main(code)
    return lang if obj == "Main" else replace(lang, run=[obj if a == "Main" else a for a in lang.run])


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    obj = scala_main(p.tests)
    need(re.search(r"\bobject\b", blank_literals(p.tests)), "scala", "an object with main (or extends App)")
    ours = (
        f"\nobject RlvrMain{p.tag} {{\n  def main(a: Array[String]): Unit = {{\n"
        f"    try {obj}.main(a) catch {{ case e: AssertionError => System.err.println(e); sys.exit(1) }}\n"
        f'    System.out.print("\\n" + "{p.a}" + "{p.b}" + "\\n")\n    System.out.flush()\n  }}\n}}\n'
    )
    return f"{p.program}\n{p.tests}\n{ours}", {}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    return replace(base, run=[*base.run[:-1], f"RlvrMain{tag}"])


RECORD = Record(
    name="scala",
    rank=14,
    tags=("scala",),
    source="main.scala",
    compile=["scalac", "-J-Xmx512m", "-J-XX:TieredStopAtLevel=1", *(f"-J{f}" for f in JVM), "main.scala"],
    run=["scala", "-J-ea", "-J-Xmx512m", *(f"-J{f}" for f in JVM), "-cp", ".", "Main"],
    run_as_mb=2048,
    sandboxfusion=("scala",),
    shows_compile=True,
    packages=("scala",),
    asserts=_assemble,
    adjust=_adjust,
    for_source=_for_source,
    toolchain_doc="Scala 2.11",
)
