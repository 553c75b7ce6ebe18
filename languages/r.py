"""R 4.2 (``Rscript``)."""

from languages.assemble import script
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
    asserts=script('cat("\\n", "{a}", "{b}", "\\n", sep = "")'),
    toolchain_doc="R 4.2 (`Rscript`)",
)
