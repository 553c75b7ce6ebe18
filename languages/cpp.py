"""C++17: g++ 12, the tests a ``main`` with ``assert`` that ours calls."""

from languages.assemble import c_like
from languages.record import Record

RECORD = Record(
    name="cpp",
    rank=2,
    tags=("cpp", "c++", "cxx", "cc"),
    source="main.cpp",
    compile=["g++", "-O2", "-std=c++17", "-pipe", "-o", "main", "main.cpp"],
    run=["./main"],
    aliases=("c++", "cxx", "c++17"),
    sandboxfusion=("cpp",),
    shows_compile=True,
    packages=("g++",),
    asserts=c_like("#include <cstdio>", "cpp"),
    toolchain_doc="g++ 12 `-O2 -std=c++17`",
)
