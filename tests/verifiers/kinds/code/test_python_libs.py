"""numpy and pandas in the Python sandbox image (issue 40: SandboxFusion's image bundles them and its users'
programs import them): a program using each graded CORRECT by the real service through the code verifier
(stdio and assert mode) and through ``/run_code`` in SandboxFusion's shape, under the default job limits
(address space, pids: numpy's BLAS starts its threads inside the job); and the warm worker does not hold
them (not preloaded: a job that does not import them pays nothing). The security battery for the Python
image is tests/security/; the size and build time are in bench/results/sandbox.txt."""

from __future__ import annotations

import json

import pytest

from sandbox.image.python import RUNTIME_PACKAGES
from tests.sandboxfusion_helpers import verl_result

pytestmark = pytest.mark.docker

# a BLAS call big enough to start OpenBLAS's thread pool (a 256x256 matmul), then an exact integer answer
NUMPY_STDIO = (
    "import sys\nimport numpy as np\n"
    "v = np.array(sys.stdin.read().split(), dtype=np.int64)\n"
    "m = np.ones((256, 256))\nassert (m @ m)[0, 0] == 256.0\n"
    "print(int(v.sum()))\n"
)
PANDAS_STDIO = (
    "import io, sys\nimport pandas as pd\n"
    "df = pd.read_csv(io.StringIO(sys.stdin.read()))\n"
    "print(int(df.groupby('k')['v'].sum().max()))\n"
)
STDIO = {
    "numpy": (NUMPY_STDIO, [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5 5", "output": "15"}]),
    "pandas": (
        PANDAS_STDIO,
        [{"input": "k,v\na,1\nb,5\na,7\n", "output": "8\n"}, {"input": "k,v\nz,-3\n", "output": "-3"}],
    ),
}
ASSERT = {
    "numpy": (
        "import numpy as np\ndef solve(a, b):\n    return int(np.linalg.solve(np.array(a), np.array(b)).round().sum())\n",
        "def check(candidate):\n    assert candidate([[2.0, 0.0], [0.0, 4.0]], [2.0, 8.0]) == 3\n",
    ),
    "pandas": (
        "import pandas as pd\ndef solve(rows):\n"
        "    return pd.DataFrame(rows, columns=['k', 'v']).groupby('k')['v'].sum().to_dict()\n",
        "def check(candidate):\n    assert candidate([('a', 1), ('b', 2), ('a', 3)]) == {'a': 4, 'b': 2}\n",
    ),
}


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


def test_the_libraries_are_pinned_in_the_image_recipe():
    names = {p.split("==")[0] for p in RUNTIME_PACKAGES}
    assert {"numpy", "pandas", "python-dateutil", "tzdata"} <= names
    assert all("==" in p for p in RUNTIME_PACKAGES)


@pytest.mark.parametrize("lib", sorted(STDIO))
def test_stdio_program_using_the_library_is_correct(client, lib):
    code, cases = STDIO[lib]
    r = client.verify("code", fenced(code), json.dumps(cases), options={"mode": "stdio"}, timeout_s=30)
    assert r.outcome == "CORRECT", r.detail
    wrong = code.replace("print(int(", "print(1 + int(")
    r = client.verify("code", fenced(wrong), json.dumps(cases), options={"mode": "stdio"}, timeout_s=30)
    assert r.outcome == "INCORRECT", r.detail


@pytest.mark.parametrize("lib", sorted(ASSERT))
def test_assert_program_using_the_library_is_correct(client, lib):
    code, tests = ASSERT[lib]
    r = client.verify("code", fenced(code), tests, options={"entry_point": "solve"}, timeout_s=30)
    assert r.outcome == "CORRECT", r.detail
    wrong = code.replace("    return ", "    return 0 and ")
    r = client.verify("code", fenced(wrong), tests, options={"entry_point": "solve"}, timeout_s=30)
    assert r.outcome == "INCORRECT", r.detail


def test_the_warm_worker_does_not_hold_them(client):
    # a job is forked from the warm worker: what the worker imported is in the job's sys.modules already
    probe = "import sys\nprint(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n"
    cases = [{"input": "", "output": "[]"}]
    r = client.verify("code", fenced(probe), json.dumps(cases), options={"mode": "stdio"}, timeout_s=30)
    assert r.outcome == "CORRECT", r.detail


def test_numpy_runs_one_blas_thread(client):
    # OpenBLAS starts a thread per host CPU unless told (sandbox/image/python.py NUMPY_INIT): on a big host that
    # is dozens of pids and stacks in a sandbox with one CPU's quota; a program may still ask for more
    probe = (
        "import numpy as np\nm = np.ones((512, 512))\nassert (m @ m)[0, 0] == 512.0\n"
        "print([line.split()[1] for line in open('/proc/self/status') if line.startswith('Threads:')][0])\n"
    )
    cases = [{"input": "", "output": "1"}]
    r = client.verify("code", fenced(probe), json.dumps(cases), options={"mode": "stdio"}, timeout_s=30)
    assert r.outcome == "CORRECT", r.detail


@pytest.fixture(scope="module")
def http(served_http):
    return served_http[1]  # the session's server (tests/conftest.py)


@pytest.mark.parametrize("lib", sorted(STDIO))
def test_run_code_sandboxfusion_shape(http, lib):
    code, cases = STDIO[lib]
    body = {"compile_timeout": 10, "run_timeout": 20, "code": code, "stdin": cases[0]["input"],
            "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}  # fmt: skip
    r = http.post("/run_code", json=body)
    assert r.status_code == 200, r.text
    assert verl_result(r.json(), cases[0]["output"]) is True, r.json()
