"""Ruby 3.1 (+ test-unit). Assert mode runs the tests apart (verifiers/kinds/code/apart_scripts.py)."""

from languages.record import Record

RECORD = Record(
    name="ruby",
    rank=10,
    tags=("ruby", "rb"),
    source="main.rb",
    run=["ruby", "main.rb"],
    aliases=("rb",),
    sandboxfusion=("ruby",),
    packages=("ruby", "ruby-test-unit"),
    toolchain_doc="Ruby 3.1 + test-unit 3.5",
)
