"""SandboxFusion's own runner tests, replayed against our ``POST /run_code`` (issue 40).

tests/data/sandboxfusion_runner_cases.json holds our transcription of the cases in SandboxFusion's
``sandbox/tests/runners/test_*.py``: each request (language, code, stdin, timeouts, files) and what its
asserts expect of the reply (status, the run's and the compile's status, text in stdout/stderr). Each
case is sent to a real server (real Docker, the real toolchain image) and classified:

* ``agree``: every expectation holds;
* ``refused by design``: a language this server does not run (``languages.NOT_SERVED``: answered
  SandboxError saying why), or a case whose ``by_design`` field says what we do instead;
* ``compile budget``: the case gives the compiler a budget of its own (``compile_timeout`` 1 s for Go and
  Rust, 20 s for Scala) and our compile did not finish in it: how fast a compiler runs on the machine
  at hand (a loaded 2-core one here), not the contract; listed, and the table counts them;
* ``differ``: anything else. The test fails on any ``differ``; the per-language table is printed.
"""

from __future__ import annotations

import base64
import json
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.http_helpers import http_base
from tests.langs_helpers import ensure_langs_image
from verifiers.kinds.code.languages import NOT_SERVED

pytestmark = pytest.mark.docker
DATA = Path(__file__).parents[2] / "data" / "sandboxfusion_runner_cases.json"
CASES = json.loads(DATA.read_text())["cases"]


def _payload(case: dict) -> dict:
    files = {
        p: (c if _is_b64(c) else base64.b64encode(c.encode()).decode()) for p, c in (case.get("files") or {}).items()
    }
    return {"code": case["code"], "language": case["language"], "stdin": case.get("stdin") or "",
            "run_timeout": case.get("run_timeout") or 10, "compile_timeout": case.get("compile_timeout") or 30,
            "files": files, "fetch_files": case.get("fetch_files") or []}  # fmt: skip


def _is_b64(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return False
    return True


def classify(case: dict, body: dict) -> tuple[str, str]:
    """(agree | refused by design | differ, why)."""
    if case["language"] in NOT_SERVED:
        ok = body["status"] == "SandboxError" and "not available" in body["message"]
        return ("refused by design", "") if ok else ("differ", f"expected a refusal, got {body['status']}")
    if case.get("by_design"):
        return "refused by design", case["by_design"]
    want, run, comp = case["expect"], body.get("run_result") or {}, body.get("compile_result") or {}
    out_of_time = "compilation did not finish" in str(comp.get("stderr") or run.get("stderr"))
    if out_of_time and case.get("compile_timeout") and body["status"] == "Failed":
        return "compile budget", f"compile_timeout {case['compile_timeout']} s"
    checks = [("status", body["status"], want.get("status")), ("run_status", run.get("status"), want.get("run_status")),
              ("compile_status", comp.get("status"), want.get("compile_status"))]  # fmt: skip
    for name, got, expected in checks:
        if expected is not None and got != expected:
            return "differ", f"{name}: {got} != {expected}; {_tail(body)}"
    for stream in ("stdout", "stderr"):
        for text in want.get(f"{stream}_contains", []):
            if text not in (run.get(stream) or ""):
                return "differ", f"{text!r} not in {stream}; {_tail(body)}"
    if "stdout_stripped" in want and (run.get("stdout") or "").strip() != want["stdout_stripped"]:
        return "differ", f"stdout {(run.get('stdout') or '').strip()[:80]!r} != {want['stdout_stripped']!r}"
    return "agree", ""


def _tail(body: dict) -> str:
    run, comp = body.get("run_result") or {}, body.get("compile_result") or {}
    return (
        f"message {body.get('message', '')[:120]!r} compile {str(comp.get('stderr'))[-200:]!r} "
        f"run {str(run.get('stdout'))[-120:]!r} / {str(run.get('stderr'))[-200:]!r}"
    )


@pytest.fixture(scope="module")
def http(verifier_server):
    ensure_langs_image()
    with httpx.Client(base_url=http_base(verifier_server), timeout=300) as client:  # the session's server
        yield client


@pytest.mark.slow
def test_sandboxfusions_runner_cases_agree_or_are_refused_by_design(http):
    def one(case: dict) -> tuple[dict, dict]:
        r = http.post("/run_code", json=_payload(case))
        assert r.headers["content-type"] == "application/json", (case["id"], r.status_code, r.text[:200])
        return case, r.json()

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(one, CASES))
    table: dict[str, Counter] = defaultdict(Counter)
    differ = []
    for case, body in results:
        verdict, why = classify(case, body)
        table[case["language"]][verdict] += 1
        if verdict == "differ":
            differ.append(f"{case['id']}: {why}")
    print(
        "\nSandboxFusion runner cases against /run_code (language: agree / refused by design / compile budget / differ)"
    )
    for lang in sorted(table):
        c = table[lang]
        print(
            f"  {lang:14s} {c['agree']:3d} / {c['refused by design']:3d} / {c['compile budget']:3d} / {c['differ']:3d}"
        )
    total = sum(table.values(), Counter())
    print(f"  {'all':14s} {total['agree']:3d} / {total['refused by design']:3d} / {total['compile budget']:3d} / "
          f"{total['differ']:3d}")  # fmt: skip
    assert not differ, "\n".join(differ)
