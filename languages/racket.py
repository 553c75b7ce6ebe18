"""Racket 8.7: ``raco make`` compiles the module once. Assert mode runs the tests apart
(verifiers/kinds/code/apart_scripts.py)."""

from languages.record import Record

RECORD = Record(
    name="racket",
    rank=24,
    tags=("racket", "rkt", "scheme"),
    source="main.rkt",
    compile=["raco", "make", "main.rkt"],
    run=["racket", "main.rkt"],
    aliases=("rkt",),
    sandboxfusion=("racket",),
    packages=("racket",),
    toolchain_doc="Racket 8.7 (`raco make`, `racket`)",
    served_doc="yes (stdio or `/run_code`)",
)
