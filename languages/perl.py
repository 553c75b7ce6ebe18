"""Perl 5.36 (+ Test::Deep, Data::Compare). Assert mode runs the tests apart
(verifiers/kinds/code/apart_scripts.py)."""

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
    toolchain_doc="Perl 5.36 + Test::Deep, Data::Compare",
)
