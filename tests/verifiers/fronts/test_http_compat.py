"""OpenRLHF's /get_reward and SandboxFusion's /run_code over real HTTP to a real server process, in the
exact shapes those tools send: OpenRLHF's remote-RM client posts {"query", "prompts", "labels"} with
query = prompt + response (decoded with special tokens) and reads rewards/scores/extra_logs; verl's
sandbox_fusion utils post {"compile_timeout", "run_timeout", "code", "stdin", "memory_limit_MB",
"language", "files": {}, "fetch_files": []} and classify by status / run_result.status / return_code.
Hostile programs (fork bomb, endless loop, memory hog) and malformed bodies included; after each
refusal the service keeps serving."""

from __future__ import annotations

import base64
import json

import pytest

pytestmark = pytest.mark.docker

EOS = "<|im_end|>"
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
LOOP = "while True:\n    pass\n"


@pytest.fixture(scope="module")
def http(served_http):
    return served_http[1]  # the session's server (tests/conftest.py): --reward-verifier math, HTTP on


def openrlhf_payload(prompts: list[str], responses: list[str], labels: list[str]) -> dict:
    """What OpenRLHF's SingleTurnAgentExecutor posts: the decoded prompt + response as the query."""
    return {"query": [p + r for p, r in zip(prompts, responses, strict=True)], "prompts": prompts, "labels": labels}


def verl_payload(
    code: str, stdin: str = "", run_timeout: float = 10, memory_limit_mb: int = 1024, language: str = "python"
) -> dict:
    """What verl's sandbox_fusion.utils.call_sandbox_api posts."""
    return {"compile_timeout": 10, "run_timeout": run_timeout, "code": code, "stdin": stdin,
            "memory_limit_MB": memory_limit_mb, "language": language, "files": {}, "fetch_files": []}  # fmt: skip


def still_serving(http) -> None:
    r = http.post("/get_reward", json=openrlhf_payload(["Q: 1+1?"], [" \\boxed{2}"], ["2"]))
    assert r.status_code == 200 and r.json()["rewards"] == [1.0]
    r = http.post("/run_code", json=verl_payload("print(6 * 7)"))
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "42\n"


# -- OpenRLHF ---------------------------------------------------------------------------------------------
def test_get_reward_default_verifier_and_prompt_stripping(http):
    # the prompt carries a worked example with \boxed{3}: graded on the whole query, a response with no
    # answer would score 1 against label 3; the prompt must be stripped first
    prompt = "<|im_start|>user\nExample: 1+2 = \\boxed{3}. Now: 2+1?<|im_end|>\n<|im_start|>assistant\n"
    responses = ["<think>2+1</think> \\boxed{3}" + EOS, "I am not sure." + EOS, "\\boxed{4}" + EOS]
    r = http.post("/get_reward", json=openrlhf_payload([prompt] * 3, responses, ["3", "3", "3"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"rewards", "scores", "extra_logs"}
    assert body["rewards"] == [1.0, 0.0, 0.0] and body["scores"] == body["rewards"]
    logs = body["extra_logs"]
    assert logs["correct"] == [1.0, 0.0, 0.0] and logs["no_answer"] == [0.0, 1.0, 0.0]
    assert all(isinstance(v, list) and len(v) == 3 for v in logs.values())  # OpenRLHF logs each per sample
    assert "unspecified" not in logs and {"compile_error", "bad_reference", "signalled"} <= set(logs)


def test_get_reward_single_query_as_openrlhf_sends_it(http):
    r = http.post(
        "/get_reward?verifier=think_format", json=openrlhf_payload(["Solve: "], ["<think>ok</think>5"], ["5"])
    )
    assert r.status_code == 200 and r.json()["rewards"] == [1.0]


@pytest.mark.parametrize("program", [FORK_BOMB, LOOP, "import os\nos._exit(0)\n"], ids=["fork-bomb", "loop", "exit0"])
def test_get_reward_hostile_code_scores_zero(http, program):
    tests = "assert add(2, 3) == 5\n"
    response = f"<think>hack</think>\n```python\ndef add(a, b):\n    return a + b\n{program}```" + EOS
    r = http.post("/get_reward?verifier=code", json=openrlhf_payload(["Write add."], [response], [tests]))
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [0.0]
    assert r.json()["extra_logs"]["correct"] == [0.0]
    still_serving(http)


def test_get_reward_code_passes_for_honest_code(http):
    response = "```python\ndef add(a, b):\n    return a + b\n```" + EOS
    r = http.post(
        "/get_reward?verifier=code", json=openrlhf_payload(["Write add."], [response], ["assert add(2, 3) == 5\n"])
    )
    assert r.json()["rewards"] == [1.0]


@pytest.mark.parametrize(
    "url,body,status",
    [
        ("/get_reward", b"{not json", 400),
        ("/get_reward", json.dumps({"prompts": ["a"], "labels": ["1"]}).encode(), 400),  # no query
        ("/get_reward", json.dumps({"query": "not a list"}).encode(), 400),
        ("/get_reward", json.dumps({"query": ["a", "b"], "labels": ["1"]}).encode(), 400),  # misaligned
        ("/get_reward?verifier=no_such_verifier", json.dumps({"query": ["a"]}).encode(), 404),
        ("/get_reward?verifier=Bad%20Name", json.dumps({"query": ["a"]}).encode(), 400),
    ],
    ids=["broken-json", "no-query", "query-not-list", "misaligned", "unknown-verifier", "bad-name"],
)
def test_get_reward_malformed_is_4xx_and_the_service_keeps_serving(http, url, body, status):
    r = http.post(url, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert set(r.json()) == {"error"} and r.json()["error"]["message"]  # the documented shape, saying what was wrong
    still_serving(http)


# -- SandboxFusion ----------------------------------------------------------------------------------------
def test_run_code_success_in_sandboxfusion_shape(http):
    r = http.post(
        "/run_code", json=verl_payload("import sys\nprint(sum(map(int, sys.stdin.read().split())))", stdin="1 2 3\n")
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"status", "message", "compile_result", "run_result", "files"}
    assert body["status"] == "Success" and body["message"] == "" and body["compile_result"] is None
    run = body["run_result"]
    assert run["status"] == "Finished" and run["return_code"] == 0 and run["stdout"] == "6\n"
    assert isinstance(run["execution_time"], float) and run["stderr"] == ""


def test_run_code_runtime_error_is_failed_with_the_return_code(http):
    body = http.post(
        "/run_code", json=verl_payload("import sys\nprint('x', file=sys.stderr)\nraise SystemExit(3)")
    ).json()
    assert body["status"] == "Failed"
    assert body["run_result"]["status"] == "Finished" and body["run_result"]["return_code"] == 3
    assert body["run_result"]["stderr"] == "x\n"


@pytest.mark.parametrize("program", [LOOP, FORK_BOMB], ids=["loop", "fork-bomb"])
def test_run_code_hostile_program_fails_within_the_time_limit(http, program):
    body = http.post("/run_code", json=verl_payload(program, run_timeout=2)).json()
    assert body["status"] == "Failed", body
    run = body["run_result"]
    # verl: TimeLimitExceeded → timeout; Finished with a non-zero code → runtime error. Never Success.
    assert run["status"] == "TimeLimitExceeded" or (run["status"] == "Finished" and run["return_code"] != 0), run
    still_serving(http)


def test_run_code_memory_limit_applies(http):
    hog = "x = bytearray(400 * 1024 * 1024)\nprint('allocated')\n"
    assert http.post("/run_code", json=verl_payload(hog, memory_limit_mb=1024)).json()["status"] == "Success"
    body = http.post("/run_code", json=verl_payload(hog, memory_limit_mb=128)).json()
    assert body["status"] == "Failed" and "MemoryError" in body["run_result"]["stderr"]


def test_run_code_files_are_written_before_the_run(http):
    payload = verl_payload("print(open('data/in.txt').read().upper())")
    payload["files"] = {"data/in.txt": base64.b64encode(b"hello").decode(), "skipped.txt": None}
    body = http.post("/run_code", json=payload).json()
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "HELLO\n"


def test_run_code_unsupported_language_is_sandbox_error_shape(http):
    body = http.post("/run_code", json=verl_payload("println(1)", language="julia")).json()  # no offline package
    assert body["status"] == "SandboxError" and "julia" in body["message"] and "no Julia package" in body["message"]
    assert body["run_result"] is None
    body = http.post("/run_code", json=verl_payload("DISPLAY 1", language="cobol")).json()  # not in the table
    assert body["status"] == "SandboxError" and "cobol" in body["message"] and "python" in body["message"]
    assert body["run_result"] is None


@pytest.mark.parametrize(
    "change,status",
    [
        ({"code": None}, 400),
        ({"language": None}, 400),
        ({"run_timeout": "soon"}, 400),
        ({"run_timeout": 0}, 400),
        ({"run_timeout": 10_000}, 400),
        ({"files": {"../escape.txt": "aGk="}}, 400),
        ({"files": {"a.txt": "%%%"}}, 400),
    ],
    ids=["no-code", "no-language", "timeout-not-number", "timeout-zero", "timeout-huge", "path-escape", "not-base64"],
)
def test_run_code_malformed_is_4xx_and_the_service_keeps_serving(http, change, status):
    payload = {**verl_payload("print(1)"), **change}
    payload = {k: v for k, v in payload.items() if v is not None}
    r = http.post("/run_code", json=payload)
    assert r.status_code == status, r.text
    error = r.json()["error"]  # the documented shape, not FastAPI's detail
    assert set(r.json()) == {"error"} and error["status"] == "INVALID_ARGUMENT" and error["message"], r.text
    still_serving(http)


def test_run_code_broken_json_is_400_in_the_error_shape(http):
    r = http.post(
        "/run_code", content=b'{"code": "print(1)", "language": ', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"], r.text
    still_serving(http)


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", None])
def test_every_post_route_reads_json_whatever_the_content_type(http, content_type):
    """curl -d sends application/x-www-form-urlencoded; the body is JSON all the same (issue 42)."""
    headers = {"content-type": content_type} if content_type else {}
    r = http.post("/run_code", content=json.dumps(verl_payload("print(6)")).encode(), headers=headers)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "6\n", r.text
    r = http.post(
        "/get_reward?verifier=math", content=json.dumps({"query": ["\\boxed{2}"], "labels": ["2"]}), headers=headers
    )
    assert r.status_code == 200 and r.json()["rewards"] == [1.0], r.text
    r = http.post(
        "/v1/verify",
        content=json.dumps({"verifier": "math", "completion": "\\boxed{2}", "reference": "2"}),
        headers=headers,
    )
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    r = http.post("/run_code", content=json.dumps({"language": "python"}).encode(), headers=headers)
    assert r.status_code == 400 and "code" in r.json()["error"]["message"], r.text
