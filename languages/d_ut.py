"""d_ut: a D program whose ``unittest`` blocks run (gdc ``-funittest``); passes on its exit status."""

from languages.record import Record

RECORD = Record(
    name="d_ut",
    rank=17,
    tags=("d_ut", "d"),
    source="main.d",
    compile=["gdc", "-funittest", "-o", "main", "main.d"],
    run=["./main"],
    sandboxfusion=("D_ut",),
    shows_compile=True,
    toolchain_doc="gdc 12 `-funittest`",
    served_doc="yes (stdio or `/run_code`: the suite's exit status)",
)
