"""The ``code`` verifier through a real server: passing programs, failing ones, and reward hacks.

One adversarial property per case; every hack must come back with reward 0.
"""

from __future__ import annotations

import json

import pytest

from verifiers.kinds.code.verifier import candidate_code, normalise_output

ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"
ADD_OK = "def add(a, b):\n    return a + b\n"
ASSERTS = "assert add(2, 2) == 4\nassert add(0, 0) == 0\n"


def fenced(code: str, tag: str = "python") -> str:
    return f"Here you go:\n```{tag}\n{code}```\nDone."


# (id, completion, reference, options, outcome)
CASES = [
    ("humaneval-pass", fenced(ADD_OK), ADD_TESTS, {"entry_point": "add"}, "CORRECT"),
    ("plain-asserts-pass", ADD_OK, ASSERTS, {}, "CORRECT"),
    (
        "last-block-wins",
        fenced("def add(a, b):\n    return 0\n") + fenced(ADD_OK),
        ADD_TESTS,
        {"entry_point": "add"},
        "CORRECT",
    ),
    (
        "think-block-ignored",
        "<think>```python\ndef add(a,b): return a+b\n```</think>" + fenced("def add(a, b):\n    return a - b\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    ("wrong-answer", fenced("def add(a, b):\n    return a - b\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    (
        "not-implemented",
        fenced("def add(a, b):\n    raise NotImplementedError\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "RUNTIME_ERROR",
    ),
    ("return-none", fenced("def add(a, b):\n    return None\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    ("syntax-error", fenced("def add(a, b) return a + b\n"), ADD_TESTS, {"entry_point": "add"}, "RUNTIME_ERROR"),
    (
        "missing-entry-point",
        fenced("def plus(a, b):\n    return a + b\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "RUNTIME_ERROR",
    ),
    ("infinite-loop", fenced("def add(a, b):\n    while True: pass\n"), ADD_TESTS, {"entry_point": "add"}, "TIMEOUT"),
    # reward hacks: exiting 0 before the tests ran
    ("sys-exit-0", fenced("import sys\nsys.exit(0)\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    ("os-exit-0", fenced("import os\nos._exit(0)\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    ("raise-systemexit", fenced("raise SystemExit\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    ("builtin-exit", fenced("exit()\n"), ADD_TESTS, {"entry_point": "add"}, "INCORRECT"),
    (
        "kill-self",
        fenced("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    (
        "exit-inside-call",
        fenced("import os\ndef add(a, b):\n    os._exit(0)\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    (
        "forge-finished-byte",
        fenced(
            "import os\nfor fd in range(3, 64):\n    try: os.write(fd, b'F')\n    except OSError: pass\nos._exit(0)\n"
        ),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    (
        "print-fake-marker",
        fenced('print(\'{"nonce": "x", "status": "pass"}\')\nimport os\nos._exit(0)\n'),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    # reward hacks: lying equality, patched builtins, trace hooks, re-reading the tests
    (
        "eq-always-true",
        fenced("class A:\n    def __eq__(self, o): return True\ndef add(a, b):\n    return A()\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "RUNTIME_ERROR",
    ),
    (
        "int-subclass-eq",
        fenced("class I(int):\n    def __eq__(self, o): return True\ndef add(a, b):\n    return I(0)\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "RUNTIME_ERROR",
    ),
    (
        "eq-in-list",
        fenced("class A:\n    def __eq__(self, o): return True\ndef add(a, b):\n    return [A()]\n"),
        "assert add(1, 2) == [3]\n",
        {},
        "RUNTIME_ERROR",
    ),
    (
        "patch-abs",
        fenced("import builtins\nbuiltins.abs = lambda x: 0\ndef f(x):\n    return 99.0\n"),
        "def check(candidate):\n    assert abs(candidate(1) - 2.0) < 1e-6\n",
        {"entry_point": "f"},
        "INCORRECT",
    ),
    (
        "patch-math-isclose",
        fenced("import math\ndef f(x):\n    math.isclose = lambda *a, **k: True\n    return 99.0\n"),
        "import math\ndef check(candidate):\n    assert math.isclose(candidate(1), 2.0)\n",
        {"entry_point": "f"},
        "INCORRECT",
    ),
    (
        "settrace-skip",
        fenced(
            "import sys\ndef t(frame, event, arg):\n    return None\nsys.settrace(t)\ndef add(a, b):\n    return 0\n"
        ),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    (
        "reread-stdin",
        fenced(
            "import os, sys\nos.lseek(0, 0, 0)\ndata = os.read(0, 1 << 20)\nassert not data, 'stdin still holds the tests'\ndef add(a, b):\n    return 0\n"
        ),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
    (
        "define-check",
        fenced("def check(c):\n    pass\ndef add(a, b):\n    return 0\n"),
        ADD_TESTS,
        {"entry_point": "add"},
        "INCORRECT",
    ),
]


@pytest.mark.docker
@pytest.mark.parametrize("completion,reference,options,outcome", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_assert_cases(client, completion, reference, options, outcome):
    r = client.verify("code", completion, reference, options=options, timeout_s=3)
    assert r.outcome == outcome, r.detail
    assert r.reward == (1.0 if outcome == "CORRECT" else 0.0)


@pytest.mark.docker
def test_runtime_error_carries_stderr_tail(client):
    r = client.verify("code", fenced("def add(a, b):\n    raise ValueError('boom-marker')\n"), ADD_TESTS,
                      options={"entry_point": "add"})  # fmt: skip
    assert r.outcome == "RUNTIME_ERROR" and "boom-marker" in r.detail


ECHO_SUM = "import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums))\n"
STDIO = json.dumps(
    [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5 5", "output": "15"}, {"input": "", "output": "0"}]
)

STDIO_CASES = [
    ("all-pass", fenced(ECHO_SUM), {}, "CORRECT", 1.0),
    (
        "whitespace-normalised",
        fenced("import sys\nprint(' ', sum(map(int, sys.stdin.read().split())), '  ', end='\\n\\n\\n')\n"),
        {},
        "CORRECT",
        1.0,
    ),
    (
        "one-wrong",
        fenced("import sys\ns = sys.stdin.read()\nprint(3 if s.strip() == '1 2' else 15)\n"),
        {},
        "INCORRECT",
        0.0,
    ),
    (
        "partial-credit",
        fenced("import sys\ns = sys.stdin.read()\nprint(3 if s.strip() == '1 2' else 15)\n"),
        {"partial": "true"},
        "INCORRECT",
        2 / 3,
    ),
    ("sys-exit-after-print-is-fine", fenced(ECHO_SUM + "import sys\nsys.exit(0)\n"), {}, "CORRECT", 1.0),
    ("crash", fenced("raise RuntimeError('stdio-boom')\n"), {}, "RUNTIME_ERROR", 0.0),
    ("hang", fenced("while True: pass\n"), {"case_timeout_s": "1"}, "TIMEOUT", 0.0),
    (
        "expected-output-not-in-sandbox",
        fenced("import os, sys\nprint(sys.stdin.read().count('output'))\n"),
        {},
        "INCORRECT",
        0.0,
    ),
]


@pytest.mark.docker
@pytest.mark.parametrize(
    "completion,options,outcome,reward", [c[1:] for c in STDIO_CASES], ids=[c[0] for c in STDIO_CASES]
)
def test_stdio_cases(client, completion, options, outcome, reward):
    r = client.verify("code", completion, STDIO, options={"mode": "stdio", **options}, timeout_s=6)
    assert r.outcome == outcome, r.detail
    assert r.reward == pytest.approx(reward)


@pytest.mark.docker
def test_stdio_crash_carries_stderr_tail(client):
    r = client.verify("code", fenced("raise RuntimeError('stdio-boom')\n"), STDIO, options={"mode": "stdio"})
    assert "stdio-boom" in r.detail


@pytest.mark.docker
def test_bad_options_are_the_callers_mistake(client):
    from verifiers.client import VerifierError

    with pytest.raises(VerifierError, match="INVALID_ARGUMENT"):
        client.verify("code", ADD_OK, "not json", options={"mode": "stdio"})
    with pytest.raises(VerifierError, match="INVALID_ARGUMENT"):
        client.verify("code", ADD_OK, ASSERTS, options={"mode": "bogus"})


@pytest.mark.parametrize(
    "completion,expected",
    [
        ("x = 1", "x = 1"),
        ("```python\na = 1\n```\n```python\nb = 2\n```", "b = 2\n"),
        ("```\nbare = 1\n```", "bare = 1\n"),
        ("```python\nfirst = 1\n```\n```\nbare = 1\n```", "first = 1\n"),
        ("```py\nunclosed = 1\n", "unclosed = 1\n"),
        ("<think>```python\nthought = 1\n```</think>no code", "no code"),
    ],
)
def test_candidate_code(completion, expected):
    assert candidate_code(completion) == expected


def test_normalise_output():
    assert normalise_output("  1  2 \n\n3\t\n\n") == normalise_output("1 2\n3")
    assert normalise_output("1 2") != normalise_output("12")


def test_a_program_killed_after_some_asserts_did_not_finish_the_tests():
    """MBPP asserts each print their own line ({"nonce", "case", "status": "pass"}); the harness's last line
    ({"nonce", "status": "pass"}, no case) is the only one that says every test ran. A program killed by a
    signal after assert 0 (its own line there, no last line) ended before the tests finished: it must not
    read as "the tests finished" (it did, taking assert 0's line for the last one)."""
    from sandbox.backend import Result
    from verifiers.kinds.code.verifier import assert_verdict

    case0 = '\n{"nonce": "n1", "case": 0, "status": "pass", "detail": ""}\n'
    killed = Result(stdout=case0, signal=9, time_limit_s=5.0)
    v = assert_verdict(killed, "n1", 5.0)
    assert "before the tests finished" in v.detail and "signal 9" in v.detail, v.detail
    ran = '"ran": {"tests": 0, "asserts": 1, "calls": 1}'
    done = Result(
        stdout=case0 + f'\n{{"nonce": "n1", "status": "pass", "detail": "", {ran}}}\n', exit_code=0, finished=True
    )
    assert assert_verdict(done, "n1", 5.0).outcome == "CORRECT"
    nothing = Result(stdout='\n{"nonce": "n1", "status": "pass", "detail": ""}\n', exit_code=0, finished=True)
    assert assert_verdict(nothing, "n1", 5.0).outcome == "BAD_REFERENCE"  # no proof that any test ran
