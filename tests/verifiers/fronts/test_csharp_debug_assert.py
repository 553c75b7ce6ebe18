"""C#'s ``Debug.Assert`` fails the run as SandboxFusion's C# runner cases expect (issue 49): Mono's own listener only
prints a failed assertion and lets the program go on, where .NET's ends it (``Process terminated. Assertion
failed.``, status 134). The C# runner cases of tests/data/sandboxfusion_runner_cases.json, through a real
``POST /run_code``, and a failing ``Debug.Assert`` in stdio mode."""

from __future__ import annotations

import httpx
import pytest

from tests.http_helpers import http_base
from tests.langs_helpers import ensure_langs_image
from tests.verifiers.fronts.test_sandboxfusion_runners import CASES, _payload, classify

pytestmark = pytest.mark.docker


@pytest.mark.slow
def test_the_csharp_runner_cases_agree(verifier_server):
    ensure_langs_image()
    cases = [c for c in CASES if c["language"] == "csharp"]
    assert any(c["id"] == "csharp::test_csharp_assertion_error" and not c.get("by_design") for c in cases)
    with httpx.Client(base_url=http_base(verifier_server), timeout=300) as client:  # the session's server
        got = [(c, client.post("/run_code", json=_payload(c)).json()) for c in cases]
    verdicts = {c["id"]: classify(c, body) for c, body in got}
    assert verdicts["csharp::test_csharp_assertion_error"] == ("agree", ""), verdicts
    assert all(v[0] in ("agree", "compile budget") for v in verdicts.values()), verdicts  # as the whole table's test


@pytest.mark.slow
def test_a_failing_debug_assert_fails_a_stdio_run(langs_service):
    from tests.langs_helpers import grade

    prog = ("using System;\nusing System.Diagnostics;\nclass P { static void Main() {\n"
            "  var s = Console.ReadLine().Split(' ');\n  Debug.Assert(s.Length == 3, \"three numbers\");\n"
            "  Console.WriteLine(int.Parse(s[0]) + int.Parse(s[1]));\n} }\n")  # fmt: skip
    v = grade(langs_service, "csharp", prog, fresh=True)
    assert v.outcome == "RUNTIME_ERROR" and "Assertion failed" in v.detail, v.detail
