"""Assert mode's languages whose tests run apart from the candidate: the tests in a process of their
own calling the candidate's across a boundary with plain data, the verdict on a stdout the candidate cannot reach
(verifiers/kinds/code/asserts.py assembles the rest; its ``SHARED_PROGRAM`` is every language not in ``SEPARATE``).

* **JavaScript** (in_sandbox/code/js_tests.js, js_candidate.js, and js_wire.js that both load): the candidate's
  code is ``solution.js``, run by a node of its own that the tests' node starts after reading and deleting the
  tests and the sentinel; the
  tests' node is a copy its user cannot read, which the kernel makes non-dumpable (its /proc files, memory and
  descriptors closed to the candidate's process). The sentinel line, then ``{sentinel}:ran:{json}`` (what
  ran) or ``{sentinel}:bad_reference:{why}`` (the tests failed before any call) on the tests' stdout.
* **TypeScript**: the candidate's ``solution.ts`` and the tests' ``rlvr_tests.ts`` transpiled apart (types
  stripped, as languages.py's TypeScript is: ``TS_COMPILE``), then JavaScript's two processes.
* **Ruby, PHP, Perl, Lua, R, Racket**: the same shape in each interpreter (verifiers/kinds/code/apart_scripts.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import in_sandbox.code
from verifiers.kinds.code.apart_compiled import COMPILED, compile_argv
from verifiers.kinds.code.apart_scripts import SCRIPTS, Apart
from verifiers.shapes.base import Verdict
from verifiers.shapes.outcome import Outcome

# Languages whose tests run in a process of their own, calling the candidate's across a boundary with plain data,
# the verdict on a stdout the candidate cannot reach (SEPARATE: language -> its files and run command).
_JS_DIR = Path(in_sandbox.code.__file__).parent
_JS_FILES = {
    "rlvr_tests_runner.js": "js_tests.js",
    "rlvr_candidate.js": "js_candidate.js",
    "rlvr_wire.js": "js_wire.js",
}
# the tests' node is a copy its user cannot read: the kernel makes such a process non-dumpable (its /proc files,
# memory and descriptors closed to the candidate's process, same uid), as the Python harness makes its own
JS_RUN = ["sh", "-c", "cp /usr/bin/node ./rlvr-node && chmod 100 ./rlvr-node && exec ./rlvr-node rlvr_tests_runner.js"]


def _javascript_apart(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
    files = {name: (_JS_DIR / src).read_text(encoding="utf-8") for name, src in _JS_FILES.items()}
    return p.program, {**files, "rlvr_tests.js": p.tests, "rlvr_nonce": p.a + p.b}


# TypeScript: both files transpiled (types stripped, as languages.py's TypeScript is) by the image's TypeScript
# module, the candidate's to solution.js, the tests' to rlvr_tests.js; a syntax error is the compiler's
_TS_BOTH = """
const ts = require("typescript"), fs = require("fs");
let bad = 0;
for (const [src, out] of [["solution.ts", "solution.js"], ["rlvr_tests.ts", "rlvr_tests.js"]]) {
  const r = ts.transpileModule(fs.readFileSync(src, "utf8"), {fileName: src, reportDiagnostics: true,
    compilerOptions: {module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true}});
  for (const d of (r.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error)) {
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
    console.error(`${src}${at ? `(${at.line + 1},${at.character + 1})` : ""}: error TS${d.code}: ` +
      ts.flattenDiagnosticMessageText(d.messageText, "\\n"));
    bad = 1;
  }
  fs.writeFileSync(out, r.outputText);
}
process.exit(bad);
"""
TS_COMPILE = ["node", "-e", _TS_BOTH]


def _typescript_apart(p) -> tuple[str, dict[str, str]]:  # p: asserts.Parts
    files = {name: (_JS_DIR / src).read_text(encoding="utf-8") for name, src in _JS_FILES.items()}
    return p.program, {**files, "rlvr_tests.ts": p.tests, "rlvr_nonce": p.a + p.b}


def _compiled(lang: str) -> Apart:
    """A compiled language apart: two executables (apart_compiled.compile_argv), the tests' one run."""
    source, argv = compile_argv(lang)
    return Apart(source, ["./main"], COMPILED[lang], argv)


# language -> how its tests run apart (its files, the candidate's source name, the run and compile argv); the
# scripting languages: verifiers/kinds/code/apart_scripts.py; the compiled: verifiers/kinds/code/apart_compiled.py
SEPARATE: dict[str, Apart] = {
    "javascript": Apart("solution.js", JS_RUN, _javascript_apart),
    "typescript": Apart("solution.ts", JS_RUN, _typescript_apart, TS_COMPILE),
    **SCRIPTS,
    **{lang: _compiled(lang) for lang in COMPILED},
}


def apart_lines(sentinel: str, stdout: str) -> dict[str, str]:
    """What a separated tests' process said after its sentinel (``{sentinel}:ran:{json}``, ``:bad_reference:``)."""
    out = {}
    for line in stdout.splitlines():
        head, _, rest = line.strip().partition(":")
        if head == sentinel and rest:
            key, _, value = rest.partition(":")
            out[key] = value
    return out


def counted(v: Verdict, ran_json: str) -> Verdict:
    """A pass with what ran (test scripts, assertions, calls into the candidate); none is BAD_REFERENCE."""
    try:
        got = json.loads(ran_json)
    except ValueError:
        got = {}
    ran = (
        {k: got.get(k) if type(got.get(k)) is int else 0 for k in ("tests", "asserts", "calls")}
        if type(got) is dict
        else {}
    )
    if not ran or not ran["calls"]:
        return Verdict.of(Outcome.BAD_REFERENCE, "the tests ran no call into the candidate")
    v.detail = f"the tests ran to the end (ran {ran['asserts']} asserts, {ran['calls']} calls into the candidate)"
    v.components = {
        "tests_ran": float(ran["tests"]),
        "asserts_ran": float(ran["asserts"]),
        "calls": float(ran["calls"]),
    }
    return v.signal("code.nonfinite_output") if got.get("nonfinite") else v


def shared_ran(v: Verdict) -> Verdict:
    """A pass of a shared program (opted in): what the harness's own code, after the tests, can say ran. It runs only
    when the tests' entry returned, so one test program ran to its end; what ran inside it (asserts, calls) would be
    counted in the candidate's own process, where the candidate could write the counters, so it is not counted."""
    v.detail = (
        "the tests ran to the end (1 test program; its asserts and calls are not counted: they run in the "
        "candidate's program)"
    )
    v.components = {"tests_ran": 1.0}
    return v
