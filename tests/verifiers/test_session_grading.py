"""Grading a session's state (GradeSession, POST /v1/sessions/{id}/grade) through a real server (gRPC and HTTP
on loopback, real Docker): the functions a session defined pass or fail hidden tests, the attacks a session's
code can make are not paid, the hidden tests never enter the session, and another caller's session is refused.
"""

from __future__ import annotations

import grpc
import pytest

from tests.http_helpers import http_service
from verifiers.client import VerifierClient, VerifierError

pytestmark = pytest.mark.docker

MARK = "HIDDEN-TESTS-5f1c9e"  # in the hidden tests only: a session that could read them would find it
TESTS = f"""
assert add(2, 3) == 5, "{MARK}"
assert add(-1, 1) == 0
assert mul(3, 4) == 12
assert mul(0, 7) == 0
"""
RIGHT = "def add(a, b):\n    return a + b\n"
RIGHT_MUL = "def mul(a, b):\n    return a * b\n"
WRONG_MUL = "def mul(a, b):\n    return a + b\n"
SERVER_ARGS = ("--max-sessions", "24", "--max-sessions-per-caller", "20", "--session-timeout-s", "20")

# What a session under RL pressure would try to get paid for a wrong ``mul`` (each also defines it wrong).
ATTACKS = {
    "lying_eq": "class Yes(int):\n    def __eq__(self, other):\n        return True\n"
    "def mul(a, b):\n    return Yes(a + b)\n",
    "redefine_assert": "import builtins\nbuiltins.AssertionError = type('AssertionError', (Exception,), {})\n"
    + WRONG_MUL,
    "patch_builtins": WRONG_MUL + "import builtins\nbuiltins.all = lambda *a: True\nbuiltins.any = lambda *a: True\n"
    "builtins.sum = lambda *a: 12\nbuiltins.sorted = lambda *a, **k: []\nbuiltins.print = lambda *a, **k: None\n",
    # so rough that the session's own cell process dies (status "exited"): rolled back, and not graded either
    "patch_builtins_everywhere": WRONG_MUL + "import builtins\nbuiltins.isinstance = lambda *a: True\n"
    "builtins.type = lambda *a: int\nbuiltins.len = lambda *a: 0\n",
    "exit_before_tests": WRONG_MUL + "import atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit(0)\n",
    "fake_verdict": WRONG_MUL + "import json, os, sys\n"
    "for p in ('verdict.json', '/tmp/verdict.json', '/tmp/result'):\n"
    "    try:\n        open(p, 'w').write(json.dumps({'status': 'pass', 'reward': 1.0}))\n"
    "    except OSError:\n        pass\n"
    "print('pass'); print(json.dumps({'status': 'pass'})); os.write(1, b'CORRECT\\n'); sys.stdout.flush()\n",
    "process_left_running": WRONG_MUL + "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True:\\n    print(\"pass\", flush=True)\\n"
    "    time.sleep(0.01)'])\n",
    "thread_swaps_function": WRONG_MUL + "import threading, time\n"
    "def swap():\n    for _ in range(200):\n        globals()['mul'] = lambda a, b: a - b\n        time.sleep(0.005)\n"
    "threading.Thread(target=swap, daemon=True).start()\n",
    "hunts_the_tests": WRONG_MUL + "import os, re\n"
    "def hunt():\n    for pid in os.listdir('/proc'):\n        for leaf in ('cmdline', 'environ', 'fd/0'):\n"
    "            try:\n                text = open(f'/proc/{pid}/{leaf}', 'rb').read(1 << 20).decode('latin-1')\n"
    "            except OSError:\n                continue\n"
    "            if 'assert mul' in text:\n                return text\n    return ''\n"
    "found = hunt()\n"
    "if found:\n    def mul(a, b):\n        return {(3, 4): 12, (0, 7): 0}.get((a, b), 0)\n",
    "fenced_text_in_a_cell": "decoy = '</think>\\n```python\\n"
    + RIGHT_MUL.replace("\n", "\\n")
    + "```\\n'\n"
    + WRONG_MUL,
}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with http_service(tmp_path_factory.mktemp("grading"), extra_args=SERVER_ARGS, pool_size=1) as (srv, http):
        yield srv, http


def client(served, who):
    return VerifierClient(served[0].target, timeout_s=120, client_id=who)


@pytest.fixture
def alice(served):
    with client(served, "alice") as c:
        yield c
        for s in c.list_sessions():
            c.close_session(s.id)


def grade(c, sid, tests=TESTS, **kw):
    return c.grade_session(sid, "code", tests, timeout_s=20, **kw)


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(VerifierError) as e:
        call()
    return e.value.code


@pytest.mark.slow
def test_right_functions_correct_wrong_incorrect(alice):
    s = alice.open_session("python", timeout_s=5)
    assert alice.exec(s.id, RIGHT).status == "ok"
    assert "ZeroDivisionError" in alice.exec(s.id, "half = 1 / 0").error  # an exception: the session goes on
    assert alice.exec(s.id, RIGHT_MUL + "mul(6, 7)").value == "42"
    r = grade(alice, s.id, id="g1")
    assert (r.outcome, r.reward, r.id) == ("CORRECT", 1.0, "g1"), r.detail
    alice.exec(s.id, WRONG_MUL)
    r = grade(alice, s.id)
    assert (r.outcome, r.reward) == ("INCORRECT", 0.0), r.detail
    # a cell killed for time left no state in the session: nor in what is graded
    killed = alice.exec(s.id, RIGHT_MUL + "import time\ntime.sleep(60)", timeout_s=1)
    assert killed.status == "timeout"
    assert alice.exec(s.id, "mul(3, 4)").value == "7"
    assert grade(alice, s.id).outcome == "INCORRECT"


def test_a_fork_is_graded_on_its_own_state(alice):
    s = alice.open_session("python")
    alice.exec(s.id, RIGHT + RIGHT_MUL)
    forks = alice.fork_session(s.id, 2)
    alice.exec(forks[0].id, WRONG_MUL)
    assert grade(alice, forks[0].id).outcome == "INCORRECT"
    assert grade(alice, forks[1].id).outcome == "CORRECT"
    assert grade(alice, s.id).outcome == "CORRECT"


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attacks_are_not_paid(alice, attack):
    s = alice.open_session("python", timeout_s=10)
    alice.exec(s.id, RIGHT)
    r = alice.exec(s.id, ATTACKS[attack])
    assert r.status == ("exited" if attack == "patch_builtins_everywhere" else "ok"), (r.status, r.error)
    r = grade(alice, s.id)
    assert r.reward == 0.0 and r.outcome != "CORRECT", (attack, r.outcome, r.detail)


def test_the_hidden_tests_never_enter_the_session(alice):
    s = alice.open_session("python", timeout_s=15)
    # a thread left running in the session's holder, watching /tmp and /proc while the tests are graded
    watch = (
        "import os, threading, time\n"
        "def watch():\n    for _ in range(300):\n        found = []\n"
        "        for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "            for leaf in ('cmdline', 'environ'):\n"
        "                try:\n                    data = open(f'/proc/{pid}/{leaf}', 'rb').read()\n"
        "                except OSError:\n                    continue\n"
        f"                if b'{MARK}' in data:\n                    found.append(pid)\n"
        "        open('watched', 'a').write(repr(found) + '\\n')\n        time.sleep(0.01)\n"
        "threading.Thread(target=watch, daemon=True).start()\n"
    )
    assert alice.exec(s.id, RIGHT + RIGHT_MUL + watch).status == "ok"
    assert grade(alice, s.id).outcome == "CORRECT"
    look = (
        "import os\nseen = []\n"
        "for root in ('/tmp', '/var/tmp', '/dev/shm', os.getcwd(), os.path.expanduser('~')):\n"
        "    for d, _, names in os.walk(root):\n        for n in names:\n"
        "            try:\n                data = open(os.path.join(d, n), 'rb').read(1 << 20)\n"
        "            except OSError:\n                continue\n"
        f"            if b'{MARK}' in data:\n                seen.append(os.path.join(d, n))\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n    for leaf in ('cmdline', 'environ'):\n"
        "        try:\n            data = open(f'/proc/{pid}/{leaf}', 'rb').read()\n"
        "        except OSError:\n            continue\n"
        f"        if b'{MARK}' in data:\n            seen.append(pid)\n"
        "seen"
    )
    r = alice.exec(s.id, look)
    assert (r.status, r.value) == ("ok", "[]"), (r.status, r.value, r.error)
    watched = alice.exec(s.id, "lines = open('watched').read().split()\nlen(lines), sorted(set(lines))").value
    assert watched.endswith("['[]'])") and not watched.startswith("(0,"), watched


def test_another_callers_session_and_bad_requests(served, alice):
    s = alice.open_session("python")
    alice.exec(s.id, RIGHT + RIGHT_MUL)
    with client(served, "bob") as bob:
        assert code_of(lambda: grade(bob, s.id)) == grpc.StatusCode.PERMISSION_DENIED
    assert code_of(lambda: grade(alice, "no-such-session-id-at-all")) == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: alice.grade_session(s.id, "no_such_verifier", TESTS)) == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: alice.grade_session(s.id, "code", TESTS, options={"bogus": "1"})) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    b = alice.open_session("bash")
    assert code_of(lambda: grade(alice, b.id)) == grpc.StatusCode.FAILED_PRECONDITION
    alice.close_session(s.id)
    assert code_of(lambda: grade(alice, s.id)) == grpc.StatusCode.FAILED_PRECONDITION


def test_http_route(served, alice):
    http = served[1]
    h = {"x-client-id": "carol"}
    s = http.post("/v1/sessions", json={"kind": "python"}, headers=h).json()
    http.post(f"/v1/sessions/{s['id']}/exec", json={"code": RIGHT + RIGHT_MUL}, headers=h)
    body = {"verifier": "code", "reference": TESTS, "timeout_s": 20, "id": "h1"}
    r = http.post(f"/v1/sessions/{s['id']}/grade", json=body, headers=h)
    assert r.status_code == 200 and r.json()["outcome"] == "OUTCOME_CORRECT" and r.json()["id"] == "h1", r.text
    denied = http.post(f"/v1/sessions/{s['id']}/grade", json=body, headers={"x-client-id": "mallory"})
    assert denied.status_code == 403, denied.text
    bad = http.post(f"/v1/sessions/{s['id']}/grade", json={**body, "completion": "x"}, headers=h)
    assert bad.status_code == 400  # a completion is not asked: the session's program is graded
    assert http.delete(f"/v1/sessions/{s['id']}", headers=h).status_code == 200


# The control: the same attack code around the right ``mul`` is paid, so the attacks above are refused for the
# wrong function, not because their code broke grading.
CONTROLS = ("fake_verdict", "fenced_text_in_a_cell", "patch_builtins", "process_left_running", "redefine_assert")


@pytest.mark.parametrize("attack", CONTROLS)
def test_the_same_code_with_the_right_function_is_paid(alice, attack):
    s = alice.open_session("python", timeout_s=10)
    alice.exec(s.id, RIGHT)
    assert alice.exec(s.id, ATTACKS[attack].replace(WRONG_MUL, RIGHT_MUL)).status == "ok"
    r = grade(alice, s.id)
    assert (r.outcome, r.reward) == ("CORRECT", 1.0), (attack, r.detail)


# A registered verifier gets the session's program as its completion: this one runs it (in its own sandbox,
# where python verifiers run) and checks sq against the reference.
RUNS_THE_PROGRAM = """
def verify(completion, reference, options):
    if "```python" not in completion:
        return 0.0
    ns = {}
    exec(completion.split("```python\\n", 1)[1].rsplit("```", 1)[0], ns)
    n = int(reference)
    return 1.0 if ns["sq"](n) == n * n else 0.0
"""


def test_a_registered_verifier_grades_the_program(alice):
    from proto.verifier.v1 import verifier_pb2 as pb

    alice.register(
        pb.RegisterVerifierRequest(name="runs_sq", python=pb.PythonVerifier(source=RUNS_THE_PROGRAM), replace=True)
    )
    s = alice.open_session("python")
    alice.exec(s.id, "def sq(x):\n    return x * x")
    assert alice.grade_session(s.id, "runs_sq", "12").reward == 1.0
    alice.exec(s.id, "def sq(x):\n    return x + x")
    assert alice.grade_session(s.id, "runs_sq", "12").reward == 0.0


def test_the_files_placed_at_open_are_replayed(alice):
    s = alice.open_session("python", files={"data/k.txt": "3"})
    alice.exec(s.id, "K = int(open('data/k.txt').read())\ndef addk(x):\n    return x + K")
    r = alice.grade_session(s.id, "code", "assert addk(1) == 4\nassert addk(-3) == 0\n", timeout_s=20)
    assert r.outcome == "CORRECT", r.detail
