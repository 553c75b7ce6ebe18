"""Perl 5.36 (+ Test::Deep, Data::Compare)."""

from languages.assemble import script
from languages.record import Record

RECORD = Record(
    name="perl",
    rank=11,
    tags=("perl", "pl"),
    source="main.pl",
    run=["perl", "main.pl"],
    aliases=("pl",),
    sandboxfusion=("perl",),
    packages=("perl", "libtest-deep-perl", "libdata-compare-perl"),
    asserts=script('$| = 1;\nprint "\\n" . "{a}" . "{b}" . "\\n";', "\n;\n", "\n;\n"),
    toolchain_doc="Perl 5.36 + Test::Deep, Data::Compare",
)
