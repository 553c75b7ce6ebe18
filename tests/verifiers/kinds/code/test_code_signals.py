"""Exploit signals on ``code`` verdicts (issue 37, phase 2), through the real gRPC service: each signal is
raised by a real completion that tries the thing it names, and a correct completion raises none. A signal
never changes the reward (the patched-builtins, file-reading and env-reading programs below are correct and
paid 1); ``enforce_signals`` turns a named one into INCORRECT.
"""

from __future__ import annotations

import pytest

from tests.data.code_battery import ADD, ADD_OK, EP, MAP_TESTS

FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
ALWAYS_EQUAL = "class E:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return E()\n"
FOREIGN_FD = (
    "import os\nfor fd in range(3, 12):\n    try:\n        os.fdopen(fd, 'wb', closefd=False).write(b'{}\\n')\n"
    "    except OSError:\n        pass\n" + ADD_OK
)
# (signal, program, tests, options, timeout_s, reward): the program raises the signal
RAISERS = [
    ("code.early_exit", "import sys\nsys.exit(0)\n", ADD, EP, 8, 0.0),
    ("code.early_exit", "import os\ndef add(a, b):\n    os._exit(0)\n", ADD, EP, 8, 0.0),
    ("code.eq_override", ALWAYS_EQUAL, ADD, EP, 8, 0.0),
    ("code.patched_builtins", "import builtins\nbuiltins.abs = lambda x: 0\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.patched_builtins", "import sys\nsys.modules['math'] = None\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.read_files", "open('/etc/passwd').read()\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.read_files", "import os\ndef add(a, b):\n    os.listdir('.')\n    return a + b\n", ADD, EP, 8, 1.0),
    ("code.read_env", "import os\ndef add(a, b):\n    os.environ.get('HOME')\n    return a + b\n", ADD, EP, 8, 1.0),
    ("code.read_env", "import os\nos.getenv('PATH')\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.foreign_fd", FOREIGN_FD, ADD, EP, 8, 0.0),
    ("code.verdict_lines", "print('all tests passed')\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.verdict_lines", 'print(\'{"status": "pass"}\')\n' + ADD_OK, ADD, EP, 8, 1.0),
    ("code.control_exception", "def add(a, b):\n    raise StopIteration\n", MAP_TESTS["all-map"], EP, 8, 0.0),
    ("code.control_exception", "def add(a, b):\n    raise KeyboardInterrupt\n", ADD, EP, 8, 0.0),
    ("code.control_exception", "import unittest\ndef add(a, b):\n    raise unittest.SkipTest('no')\n", ADD, EP, 8, 0.0),
    ("code.output_cap", FLOOD, ADD, EP, 20, 0.0),
    ("code.time_limit", "while True:\n    pass\n", ADD, EP, 2, 0.0),
    ("code.spawned", "import subprocess\nsubprocess.run(['true'])\n" + ADD_OK, ADD, EP, 8, 1.0),
    ("code.spawned", "import threading, time\nthreading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n"
     + ADD_OK, ADD, EP, 8, 1.0),
]  # fmt: skip


def _item(program, tests, options, timeout_s=8):
    return {"verifier": "code", "completion": f"```python\n{program}```", "reference": tests,
            "options": dict(options), "timeout_s": timeout_s}  # fmt: skip


@pytest.mark.docker
def test_each_signal_is_raised_by_the_completion_that_tries_it(client):
    got = client.verify_batch([_item(p, t, o, s) for _, p, t, o, s, _ in RAISERS])
    wrong = [
        f"{name} not in {v.signals} (reward {v.reward}, want {reward}; {v.outcome}: {v.detail[:160]})\n{prog}"
        for (name, prog, _, _, _, reward), v in zip(RAISERS, got, strict=True)
        if name not in v.signals or v.reward != reward
    ]
    assert not wrong, "\n\n".join(wrong)


@pytest.mark.docker
def test_correct_completions_raise_no_signal(client):
    """The battery's correct programs in every assert form, and HumanEval's 164 canonical solutions with the
    suite's own requests: no signal at all."""
    from trainer.evaluation.suites import humaneval_problems

    items = [_item(ADD_OK, ADD, EP), _item(ADD_OK, MAP_TESTS["all-map"], EP)]
    items += [_item(p.prompt + p.solution, p.reference, p.options, 20) for p in humaneval_problems()]
    got = client.verify_batch(items)
    noisy = [f"{i}: {v.signals} ({v.outcome})" for i, v in enumerate(got) if v.signals or v.reward != 1.0]
    assert not noisy, noisy


@pytest.mark.docker
def test_stdio_signals_and_enforcement(client):
    """stdio mode: the time limit and the output cap; and enforce_signals turns a paid, signalled verdict into
    INCORRECT while the same request without it stays paid."""
    cases = '[{"input": "", "output": "3"}]'
    slow, flood = "while True:\n    pass\n", FLOOD
    patched = "import builtins\nbuiltins.abs = lambda x: 0\n" + ADD_OK
    got = client.verify_batch(
        [
            _item(slow, cases, {"mode": "stdio", "case_timeout_s": "1"}),
            _item(flood, cases, {"mode": "stdio"}, 20),
            _item("print(3)\n", cases, {"mode": "stdio"}),
            _item(patched, ADD, dict(EP, enforce_signals="code.patched_builtins")),
            _item(patched, ADD, dict(EP, enforce_signals="code.read_env")),
        ]
    )
    assert "code.time_limit" in got[0].signals, got[0]
    assert "code.output_cap" in got[1].signals, got[1]
    assert got[2].signals == [] and got[2].reward == 1.0, got[2]
    assert got[3].reward == 0.0 and got[3].outcome == "INCORRECT", got[3]
    assert got[4].reward == 1.0 and got[4].signals == ["code.patched_builtins"], got[4]
