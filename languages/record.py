"""The shape of a language's record (``RECORD`` in languages/<name>.py) and of what its parts produce."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Language:
    """How one submission runs in the toolchain sandbox (in_sandbox/code/driver.py reads these)."""

    name: str
    tags: tuple[str, ...]  # fence tags that select this language's block
    source: str  # file name of the source in the job's scratch directory
    compile: list[str] | None  # argv, or None (interpreted)
    run: list[str]
    run_as_mb: int = 1024
    env: dict[str, str] = field(default_factory=dict)


class BadTests(ValueError):
    """Assert mode: the tests cannot be assembled (no entry point where the language needs one)."""


@dataclass(frozen=True)
class Parts:
    """An assembler's input: the program (prelude + candidate), the tests, the sentinel's halves, our names' tag."""

    program: str
    tests: str
    a: str
    b: str
    tag: str


Assemble = Callable[[Parts], tuple[str, dict[str, str]]]  # -> (main source, other files: name -> text)
Adjust = Callable[[Language, str, dict[str, str], str], Language]  # (base, source, files, tag) -> the run's


@dataclass(frozen=True)
class Record:
    """One language: its toolchain, names, image packages, assert-mode template and docs row."""

    name: str  # the ``language`` option's name
    rank: int  # its place in ``LANGUAGES`` (the order users see)
    tags: tuple[str, ...]  # fence tags that select its code block
    source: str = ""  # file name in the job's scratch directory; "" for Python (the Python image's workers)
    compile: list[str] | None = None
    run: list[str] = field(default_factory=list)
    run_as_mb: int = 1024  # the run's address space (compile: COMPILE_AS_MB)
    env: dict[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()  # other names the ``language`` option takes
    sandboxfusion: tuple[str, ...] = ()  # the names ``/run_code`` takes for it
    shows_compile: bool = False  # ``/run_code`` reports its compile step (as SandboxFusion's runner)
    packages: tuple[str, ...] = ()  # Debian packages the toolchain image installs for it
    asserts: Assemble | None = None  # assert mode's template (None: no assert mode)
    adjust: Adjust | None = None  # how the assembled test program runs, where not as a submission does
    for_source: Callable[[Language, str], Language] | None = None  # file and class names read from the code
    source_text: Callable[[str], str] | None = None  # what is written as ``source`` for the code
    toolchain_doc: str = ""  # the docs table's toolchain column
    served_doc: str = "yes"  # the docs table's served column

    def language(self) -> Language:
        return Language(self.name, self.tags, self.source, self.compile, list(self.run), self.run_as_mb, self.env)
