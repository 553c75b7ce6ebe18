"""Python: runs in the Python image's warm workers, its tests apart (in_sandbox/code/harness.py)."""

from languages.record import Record

RECORD = Record(
    name="python",
    rank=0,
    tags=("python", "py", "python3", "py3"),
    aliases=("py", "python3"),
    sandboxfusion=("python",),
    toolchain_doc="Python 3.11 (the Python pool)",
)
