"""C#'s ``Debug.Assert`` ends the program when it fails, as on .NET (issue 49; SandboxFusion's C# runner cases expect
it): Mono's default listener only prints a failed assertion and lets the program go on.

Every C# job (stdio, ``/run_code``, assert mode) gets two more files (``files``): ``rlvr_assert.cs``, compiled
with the program (languages.py's C# command names it), a trace listener whose ``Fail`` writes .NET's words
(``Process terminated. Assertion failed.`` and the message) to stderr and exits with .NET's status 134; and
``main.exe.config``, the application configuration that makes it the only listener from the start (Mono reads
it beside ``main.exe``). Trace and debug writes go nowhere, as .NET's default listener sends them to a debugger.
Assert mode's harness adds its own listener that throws (verifiers/kinds/code/asserts.py), whichever comes first.
"""

from __future__ import annotations

import base64

LISTENER_FILE = "rlvr_assert.cs"
_LISTENER = """// Debug.Assert ends the program when it fails, as on .NET (verifiers/kinds/code/csharp_assert.py)
public sealed class RlvrFailingAssert : global::System.Diagnostics.TraceListener {
  public override void Write(string m) {}
  public override void WriteLine(string m) {}
  public override void Fail(string m) { Fail(m, null); }
  public override void Fail(string m, string d) {
    global::System.Console.Out.Flush();
    global::System.Console.Error.WriteLine("Process terminated. Assertion failed." + (m != null ? "\\n" + m : "") +
                                           (d != null ? "\\n" + d : ""));
    global::System.Console.Error.Flush();
    global::System.Environment.Exit(134);
  }
}
"""
_CONFIG = """<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <system.diagnostics>
    <assert assertuienabled="false"/>
    <trace autoflush="true">
      <listeners>
        <clear/>
        <add name="rlvr" type="RlvrFailingAssert, main"/>
      </listeners>
    </trace>
  </system.diagnostics>
</configuration>
"""


def files(language: str) -> dict[str, str]:
    """The files (relative path -> base64) a job of ``language`` gets besides its source: C#'s listener and config."""
    if language != "csharp":
        return {}
    return {
        name: base64.b64encode(text.encode()).decode()
        for name, text in ((LISTENER_FILE, _LISTENER), ("main.exe.config", _CONFIG))
    }
