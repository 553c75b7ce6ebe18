"""D: gdc 12 (as SandboxFusion's dmd: no ``-O``); assert mode compiles with ``-funittest``, so ``unittest``
blocks run, then ``main``."""

from dataclasses import replace

from languages.assemble import C_MAIN, rename
from languages.record import Language, Parts, Record


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvr_tests_{p.tag}"
    program, _ = rename(p.program, C_MAIN, f"rlvr_unused_main_{p.tag}")
    tests, m = rename(p.tests, C_MAIN, t)
    args = "rlvrArgs" if m and m.group(2).strip() else ""
    call = "" if m is None else f"if ({t}({args}) != 0) return 1;" if m.group(1) == "int" else f"{t}({args});"
    ours = (
        '\nextern(C) __gshared string[] rt_options = ["testmode=run-main"];\n'  # unittest blocks, then main
        f"int main(string[] rlvrArgs) {{\n  {call}\n  import std.stdio : stdout;\n"
        f'  stdout.write("\\n" ~ "{p.a}" ~ "{p.b}" ~ "\\n");\n  stdout.flush();\n  return 0;\n}}\n'
    )
    return f"{program}\n{tests}\n{ours}", {}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    return replace(base, compile=["gdc", "-funittest", *base.compile[1:]])


RECORD = Record(
    name="d",
    rank=16,
    tags=("d",),
    source="main.d",
    compile=["gdc", "-o", "main", "main.d"],
    run=["./main"],
    aliases=("dlang",),
    packages=("gdc",),
    asserts=_assemble,
    adjust=_adjust,
    toolchain_doc="gdc 12",
)
