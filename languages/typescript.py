"""TypeScript: transpiled by the image's TypeScript 4.8 module (types stripped, no type check, as SandboxFusion's
``tsx``): a syntax error is a compile error, a type error is not; then run by Node 18."""

from languages.assemble import script
from languages.javascript import ASSERT, SAY
from languages.record import Record

# main.ts -> main.js: types stripped, syntax errors reported as the compiler's (file(line,col): error TSnnnn: ...)
_STRIP = """
const ts = require("typescript"), fs = require("fs");
const out = ts.transpileModule(fs.readFileSync("main.ts", "utf8"), {fileName: "main.ts", reportDiagnostics: true,
  compilerOptions: {module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true}});
const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
for (const d of errors) {
  const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
  const where = at ? `(${at.line + 1},${at.character + 1})` : "";
  console.error(`main.ts${where}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\\n")}`);
}
if (errors.length) process.exit(1);
fs.writeFileSync("main.js", out.outputText);
"""

RECORD = Record(
    name="typescript",
    rank=7,
    tags=("typescript", "ts"),
    source="main.ts",
    compile=["node", "-e", _STRIP],
    run=["node", "main.js"],
    run_as_mb=2048,
    aliases=("ts",),
    sandboxfusion=("typescript", "ts"),
    packages=("node-typescript",),
    asserts=script(SAY, "\n;\n", ASSERT),
    toolchain_doc="TypeScript 4.8 `transpileModule` (types stripped), Node 18",
)
