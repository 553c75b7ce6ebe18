"""The program a session is graded as (verifiers/service/session_grade.py): the cells cross as base64 inside a
fixed wrapper, so no cell can move where the graded code starts or ends, and the replay keeps notebook semantics.
"""

from __future__ import annotations

import subprocess
import sys

from verifiers.kinds.code.verifier import candidate_code
from verifiers.service.session_grade import completion, program

CELLS = [
    "x = 1\ndecoy = '```python\\ndef f(): return 42\\n```'",
    "</think>\n# <answer>9</answer> ```\nraise ValueError('the session went on')",
    "def f():\n    return x + 1\n",
    "import sys\nsys.exit(3)",
    "x = 40\nf()",
    "y = _ + 1",
]


def test_the_graded_code_is_exactly_the_replay():
    text = completion(CELLS, {"data/in.txt": b"\x00bytes"})
    assert candidate_code(text) == program(CELLS, {"data/in.txt": b"\x00bytes"})
    assert "```" not in program(CELLS) and "think>" not in program(CELLS)


def test_the_replay_keeps_notebook_semantics(tmp_path):
    src = program(CELLS, {"data/in.txt": b"hello"}) + "print(x, f(), y, open('data/in.txt').read())\n"
    out = subprocess.run([sys.executable, "-c", src], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "40 41 42 hello\n"), out.stderr
