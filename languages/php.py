"""PHP 8.2: an opening ``<?php`` tag added where the code has none (as SandboxFusion does; PHP would otherwise
echo the program as text); assert mode runs with assertions on (Debian's php.ini compiles them out)."""

import re
from dataclasses import replace

from languages.record import Language, Parts, Record

_AGAIN = "\n?>\n<?php\n"  # back in PHP mode whatever the code before left open (a ?> is printed, not run)


def _source_text(code: str) -> str:
    return code if "<?php" in code or "<?=" in code else "<?php\n" + code


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    program = p.program if p.program.lstrip().startswith("<?") else "<?php\n" + p.program
    tests = re.sub(r"^\s*<\?php\b", "", p.tests)
    say = f'echo "\\n" . "{p.a}" . "{p.b}" . "\\n";\n'
    return f"{program}{_AGAIN}{tests}{_AGAIN}{say}", {}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    return replace(base, run=["php", "-d", "zend.assertions=1", "-d", "assert.exception=1", *base.run[1:]])


RECORD = Record(
    name="php",
    rank=9,
    tags=("php",),
    source="main.php",
    run=["php", "-f", "main.php"],
    sandboxfusion=("php",),
    packages=("php-cli",),
    asserts=_assemble,
    adjust=_adjust,
    source_text=_source_text,
    toolchain_doc="PHP 8.2",
)
