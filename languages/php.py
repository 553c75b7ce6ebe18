"""PHP 8.2: an opening ``<?php`` tag added where the code has none (as SandboxFusion does; PHP would otherwise
echo the program as text). Assert mode runs the tests apart (verifiers/kinds/code/apart_scripts.py), with
assertions on (Debian's php.ini compiles them out)."""

from languages.record import Record


def source_text(code: str) -> str:
    """The code as PHP runs it: in PHP mode from its start."""
    return code if "<?php" in code or "<?=" in code else "<?php\n" + code


RECORD = Record(
    name="php",
    rank=9,
    tags=("php",),
    source="main.php",
    run=["php", "-f", "main.php"],
    sandboxfusion=("php",),
    packages=("php-cli",),
    source_text=source_text,
    toolchain_doc="PHP 8.2",
)
