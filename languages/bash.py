"""bash: the base root filesystem's; no assert mode (no assertion facility)."""

from languages.record import Record

RECORD = Record(
    name="bash",
    rank=8,
    tags=("bash", "sh", "shell"),
    source="main.sh",
    run=["bash", "main.sh"],
    aliases=("sh", "shell"),
    sandboxfusion=("bash",),
    toolchain_doc="bash 5.2",
)
