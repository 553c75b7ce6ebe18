"""Ruby 3.1 (+ test-unit): test/unit suites run in place, before our line, instead of at exit."""

from languages.assemble import script
from languages.record import Record

_SAY = """
if defined?(Test::Unit::AutoRunner) && Test::Unit::AutoRunner.need_auto_run?  # test/unit: run now, not at exit
  Test::Unit::AutoRunner.need_auto_run = false
  abort("Test failed: test/unit reported a failure or an error") unless Test::Unit::AutoRunner.run
end
$stdout.write("\\n" + "{a}" + "{b}" + "\\n")
$stdout.flush
"""

RECORD = Record(
    name="ruby",
    rank=10,
    tags=("ruby", "rb"),
    source="main.rb",
    run=["ruby", "main.rb"],
    aliases=("rb",),
    sandboxfusion=("ruby",),
    packages=("ruby", "ruby-test-unit"),
    asserts=script(_SAY),
    toolchain_doc="Ruby 3.1 + test-unit 3.5",
)
