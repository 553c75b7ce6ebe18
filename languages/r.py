"""R 4.2 (``Rscript``). Assert mode runs the tests apart (verifiers/kinds/code/apart_scripts.py)."""

from languages.record import Record

RECORD = Record(
    name="r",
    rank=13,
    tags=("r", "R"),
    source="main.R",
    run=["Rscript", "main.R"],
    run_as_mb=2048,
    sandboxfusion=("R",),
    packages=("r-base-core",),
    toolchain_doc="R 4.2 (`Rscript`)",
)
