"""JavaScript: Node 18 (+ lodash). Assert mode runs its tests apart (verifiers/kinds/code/asserts_apart.py);
the template below is the shared program, served only with ``allow_shared_program``."""

from languages.assemble import script
from languages.record import Record

ASSERT = (
    '\n;\nconsole.assert = function (c, ...m) { if (!c) throw new Error("Assertion failed" + '
    '(m.length ? ": " + m.join(" ") : "")); };  // fail, not only print (Node\'s)\n'
)
# Tests that use node:assert without requiring it (``assert` is not defined`` was charged to the candidate):
# the module, on the global object only where nothing named assert exists (the tests' own const wins)
_GLOBAL_ASSERT = '\nif (!("assert" in globalThis)) globalThis.assert = require("node:assert");\n'
SAY = 'process.stdout.write("\\n" + "{a}" + "{b}" + "\\n");'

RECORD = Record(
    name="javascript",
    rank=4,
    tags=("javascript", "js", "node"),
    source="main.js",
    run=["node", "main.js"],
    run_as_mb=2048,
    aliases=("js", "node", "nodejs"),
    sandboxfusion=("nodejs", "javascript", "js"),
    packages=("nodejs", "node-lodash"),
    asserts=script(SAY, "\n;\n", ASSERT + _GLOBAL_ASSERT),
    toolchain_doc="Node 18 + lodash 4.17",
)
