"""C: gcc 12, the tests a ``main`` with ``assert`` that ours calls."""

from languages.assemble import c_like
from languages.record import Record

RECORD = Record(
    name="c",
    rank=1,
    tags=("c",),
    source="main.c",
    compile=["gcc", "-O2", "-std=gnu17", "-pipe", "-o", "main", "main.c", "-lm"],
    run=["./main"],
    sandboxfusion=("c",),
    shows_compile=True,
    packages=("gcc", "libc6-dev"),
    asserts=c_like("#include <stdio.h>", "c"),
    toolchain_doc="gcc 12 `-O2 -std=gnu17 -lm`",
)
