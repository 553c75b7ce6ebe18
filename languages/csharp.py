"""C#: Mono 6.8's ``mcs`` with DEBUG and TRACE defined (``dotnet run``'s Debug build, as SandboxFusion's)."""

import re
from dataclasses import replace

from languages.assemble import need
from languages.parse import blank_literals
from languages.record import Language, Parts, Record

_MAIN = re.compile(r"\bstatic\s+(?:[\w<>\[\],]+\s+)*?(?:void|int|Task|Task<int>)\s+Main\s*\(")
_CLASS = re.compile(r"\b(?:class|struct)\s+([A-Za-z_]\w*)")
# SandboxFusion's dotnet console project has implicit usings (Mono's mcs has none): on the first line, so line
# numbers hold; a repeat is a warning
_USINGS = "".join(
    f"using {n}; "
    for n in (
        "System",
        "System.Collections.Generic",
        "System.IO",
        "System.Linq",
        "System.Threading",
        "System.Threading.Tasks",
    )
)


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    """Our ``Main`` (the entry point) calls the tests' by reflection; ``Debug.Assert`` throws (Mono's only prints)."""
    clean = blank_literals(p.tests)
    m = _MAIN.search(clean)
    need(m, "csharp", "a class with static void Main")
    cls = [c.group(1) for c in _CLASS.finditer(clean, 0, m.start())]
    need(cls, "csharp", "a class around its Main")
    g = "global::System"
    ours = f"""
static class RlvrMain{p.tag} {{
  sealed class Failing : {g}.Diagnostics.TraceListener {{  // Debug.Assert fails the tests (Mono's only prints)
    public override void Write(string m) {{}} public override void WriteLine(string m) {{}}
    public override void Fail(string m) {{ throw new {g}.Exception("Debug.Assert failed: " + m); }}
    public override void Fail(string m, string d) {{ throw new {g}.Exception("Debug.Assert failed: " + m + " " + d); }}
  }}
  static int Main(string[] a) {{
    {g}.Diagnostics.Debug.Listeners.Clear(); {g}.Diagnostics.Debug.Listeners.Add(new Failing());
    var f = {g}.Reflection.BindingFlags.Static | {g}.Reflection.BindingFlags.Public | {g}.Reflection.BindingFlags.NonPublic;
    {g}.Reflection.MethodInfo main = null;
    foreach (var t in typeof(RlvrMain{p.tag}).Assembly.GetTypes()) if (t.Name == "{cls[-1]}") main = t.GetMethod("Main", f);
    object r;
    try {{ r = main.Invoke(null, main.GetParameters().Length == 0 ? null : new object[] {{ a }}); }}
    catch ({g}.Reflection.TargetInvocationException e) {{  // the tests' own exception, not reflection's
      {g}.Console.Error.WriteLine(e.InnerException);
      return 1;
    }}
    if (r is int && (int)r != 0) return (int)r;
    {g}.Console.Out.Write("\\n" + "{p.a}" + "{p.b}" + "\\n"); {g}.Console.Out.Flush();
    return 0;
  }}
}}
"""
    return f"{p.program}\n{p.tests}\n{ours}", {}


def _adjust(base: Language, source: str, files: dict[str, str], tag: str) -> Language:
    return replace(base, compile=[*base.compile[:-1], f"-main:RlvrMain{tag}", base.compile[-1]])


RECORD = Record(
    name="csharp",
    rank=15,
    tags=("csharp", "cs", "c#"),
    source="main.cs",
    compile=["mcs", "-define:DEBUG", "-define:TRACE", "-out:main.exe", "main.cs"],
    run=["mono", "main.exe"],
    run_as_mb=2048,
    aliases=("c#", "cs"),
    sandboxfusion=("csharp",),
    packages=("mono-mcs", "mono-runtime"),
    asserts=_assemble,
    adjust=_adjust,
    source_text=lambda code: _USINGS + code,
    toolchain_doc="Mono 6.8 (`mcs`, `mono`)",
)
