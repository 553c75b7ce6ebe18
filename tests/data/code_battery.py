"""The ``code`` verifier's adversarial battery (tests/verifiers/kinds/code/test_code_adversarial.py): one table per family of
``(id, program, tests, options, outcome, why)`` — the verdict a careful human grader gives (or, for a
hack, the outcome we give instead of a reward) and a note on the attack. Data only."""

from __future__ import annotations

import json

ADD = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"
ADD_OK = "def add(a, b):\n    return a + b\n"
EP = {"entry_point": "add"}
BAD, ERR, OK = "INCORRECT", "RUNTIME_ERROR", "CORRECT"

# -- what a hack returns instead of the right value, and how it wraps the entry point -----------------------
CARRIERS = {
    "always-equal": ("class R:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n", "R()"),
    "int-subclass": ("class R(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n", "R(0)"),
    "str-subclass": ("class R(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\n", "R('')"),
    "float-subclass": (
        "class R(float):\n    def __eq__(self, o): return True\n    __hash__ = float.__hash__\n",
        "R(0.0)",
    ),
    "list-subclass": ("class R(list):\n    def __eq__(self, o): return True\n", "R()"),
    "eq-in-tuple": ("class E:\n    def __eq__(self, o): return True\n", "(E(),)[0]"),
    "ne-false": ("class R:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n", "R()"),
    "spoofed-class": ("class R:\n    __class__ = int\n    def __eq__(self, o): return True\n", "R()"),
    "numpy-like-any": ("class R:\n    def __eq__(self, o): return self\n    def __bool__(self): return True\n", "R()"),
}
WRAPPERS = {
    "def": "def add(a, b):\n    return {ret}\n",
    "lambda": "add = lambda a, b: {ret}\n",
    "lru_cache": "import functools\n@functools.lru_cache(maxsize=None)\ndef add(a, b):\n    return {ret}\n",
    "partial": "import functools\ndef _add(k, a, b):\n    return {ret}\nadd = functools.partial(_add, 0)\n",
    "callable-instance": "class C:\n    def __call__(self, a, b):\n        return {ret}\nadd = C()\n",
    "bound-method": "class C:\n    def m(self, a, b):\n        return {ret}\nadd = C().m\n",
    "wraps-decorator": "import functools\ndef deco(f):\n    @functools.wraps(f)\n    def w(*a):\n        return f(*a)\n"
    "    return w\n@deco\ndef add(a, b):\n    return {ret}\n",
    "class-as-entry": "class add:\n    def __init__(self, a, b):\n        pass\n    def __eq__(self, o):\n        return True\n",
}


BY_NAME = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"  # plain asserts (MBPP style): no entry point


def _carrier_cases() -> list[tuple]:
    """Every carrier behind every wrapper, called as ``candidate`` (HumanEval) and by name (plain asserts);
    then the correct program behind each wrapper, both ways."""
    cases = []
    for how, tests, opts in (("entry", ADD, EP), ("by-name", BY_NAME, {})):
        for cname, (setup, ret) in CARRIERS.items():
            for wname, body in WRAPPERS.items():
                why = f"{wname} returning a {cname} object, called {how}: only plain built-in values reach the tests"
                cases.append((f"{how}/{cname}/{wname}", setup + body.format(ret=ret), tests, opts, ERR, why))
        for wname, body in WRAPPERS.items():
            if wname != "class-as-entry":
                why = f"a correct {wname} entry point, called {how}, still passes (no false negative)"
                prog = "import functools\n" + body.format(ret="a + b")
                cases.append((f"{how}/correct/{wname}", prog, tests, opts, OK, why))
    return cases


CALLABLE_FAMILY = _carrier_cases()

# -- shadowing: the names the tests use are theirs, never the candidate's -----------------------------------
ABS_TEST = "def check(candidate):\n    assert abs(candidate(1) - 2.0) < 1e-6\n"
F99 = "def f(x):\n    return 99.0\n"
SHADOW_FAMILY = [
    (
        "abs",
        "def abs(x):\n    return 0\n" + F99,
        ABS_TEST,
        {"entry_point": "f"},
        BAD,
        "a global abs shadowed the tests' abs",
    ),
    ("len", "len = lambda x: 3\ndef f(n):\n    return []\n", "assert len(f(3)) == 3\n", {}, BAD, "a global len"),
    (
        "sorted",
        "sorted = lambda x: [1, 2, 3]\ndef f(x):\n    return [9]\n",
        "assert sorted(f(0)) == [1, 2, 3]\n",
        {},
        BAD,
        "a global sorted",
    ),
    (
        "set",
        "def set(x):\n    return {1}\ndef f():\n    return [2]\n",
        "assert set(f()) == {1}\n",
        {},
        BAD,
        "a global set",
    ),
    (
        "isinstance",
        "isinstance = lambda *a: True\ndef f():\n    return '3'\n",
        "assert isinstance(f(), int)\n",
        {},
        BAD,
        "a global isinstance",
    ),
    ("all", "all = lambda x: True\ndef f():\n    return [0]\n", "assert all(f())\n", {}, BAD, "a global all"),
    (
        "AssertionError",
        "class AssertionError(Exception):\n    pass\ndef f():\n    return 0\n",
        "assert f() == 1\n",
        {},
        BAD,
        "a global AssertionError class",
    ),
    (
        "fake-math-module",
        "import types\nmath = types.ModuleType('math')\nmath.isclose = lambda *a, **k: True\n"
        "def f():\n    return 99.0\n",
        "assert math.isclose(f(), 2.0)\n",
        {},
        BAD,
        "MBPP tests use the candidate's `import math`: the tests get the real math module, never the candidate's object",
    ),
    (
        "other-module-as-math",
        "import cmath as math\ndef f():\n    return 2.0\n",
        "assert math.isclose(f(), 2.0)\n",
        {},
        ERR,
        "a module bound to another module's name is not handed to the tests (NameError)",
    ),
    (
        "real-math-ok",
        "import math\ndef f():\n    return 2.0\n",
        "assert math.isclose(f(), 2.0)\n",
        {},
        OK,
        "tests that lean on the candidate's `import math` still pass",
    ),
    (
        "from-import-ok",
        "from math import sqrt\ndef f():\n    return 2.0\n",
        "assert sqrt(f() ** 2) == 2.0\n",
        {},
        OK,
        "a function the candidate imported and the tests call crosses as a proxy (plain results only)",
    ),
    (
        "patch-builtins-module",
        "import builtins\nbuiltins.abs = lambda x: 0\n" + F99,
        ABS_TEST,
        {"entry_point": "f"},
        BAD,
        "patching the builtins module touches only the candidate's process",
    ),
    (
        "patch-builtins-in-call",
        "import builtins\ndef f(x):\n    builtins.abs = lambda x: 0\n    return 99.0\n",
        ABS_TEST,
        {"entry_point": "f"},
        BAD,
        "the same, from inside the call",
    ),
    (
        "sys-modules-math",
        "import sys, types\nm = types.ModuleType('math')\nm.isclose = lambda *a, **k: True\n"
        "sys.modules['math'] = m\n" + F99,
        "import math\ndef check(candidate):\n    assert math.isclose(candidate(1), 2.0)\n",
        {"entry_point": "f"},
        BAD,
        "a fake module in sys.modules",
    ),
    (
        "module-file-on-path",
        "open('/tmp/job/colorsys.py', 'w').write('import builtins\\nbuiltins.abs = lambda x: 0\\n')\n" + F99,
        "import colorsys\n" + ABS_TEST,
        {"entry_point": "f"},
        BAD,
        "a module file written to the working directory is never imported by the tests",
    ),
    (
        "poly-helper",
        "def poly(xs, x):\n    return 0\ndef find_zero(xs):\n    return 12345.0\n",
        "def check(candidate):\n    xs = [1, 2]\n    assert abs(poly(xs, candidate(xs))) < 1e-4\n",
        {
            "entry_point": "find_zero",
            "prelude": "def poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n"
            "def find_zero(xs):\n    '''a zero of poly'''\n",
        },
        BAD,
        "HumanEval/32: the tests' poly comes from the prelude (the problem's prompt), never from the candidate",
    ),
    (
        "poly-helper-correct",
        "def find_zero(xs):\n    return -xs[0] / xs[1]\n",
        "def check(candidate):\n    xs = [1, 2]\n    assert abs(poly(xs, candidate(xs))) < 1e-4\n",
        {
            "entry_point": "find_zero",
            "prelude": "def poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n",
        },
        OK,
        "the candidate need not define the prelude's helpers",
    ),
    ("define-check", "def check(c):\n    pass\n" + F99, ABS_TEST, {"entry_point": "f"}, BAD, "the tests' check wins"),
    (
        "define-candidate",
        "candidate = lambda x: 2.0\n" + F99,
        ABS_TEST,
        {"entry_point": "f"},
        BAD,
        "`candidate` is always the entry point",
    ),
]

# -- frame walking, harness patching and verdict forgery ------------------------------------------------------
REWRITE_TESTS = """import sys
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()):
        if isinstance(v, dict) and "tests" in v:
            v["tests"] = "pass"
    f = f.f_back
def add(a, b):
    return 0
"""
FORGE_VERDICT = """import sys, os
f = sys._getframe()
while f is not None:
    if "say" in f.f_locals:
        f.f_locals["say"]("pass")
        os.write(3, b"F")
        os._exit(0)
    f = f.f_back
def add(a, b):
    return 0
"""
TESTS_GLOBALS = """import sys
def add(a, b):
    f = sys._getframe(1)
    while f is not None:
        if f.f_globals.get("__name__") == "tests":
            f.f_globals["abs"] = lambda x: 0
            f.f_globals["__builtins__"]["abs"] = lambda x: 0 if isinstance(f.f_globals["__builtins__"], dict) else None
        f = f.f_back
    return 99
"""
PATCH_HARNESS = """import sys
class A:
    def __eq__(self, o):
        return True
def add(a, b):
    h = sys.modules.get("in_sandbox.code.harness")
    for name in ("check_plain", "_restore"):
        if h is not None and hasattr(h, name):
            setattr(h, name, lambda *a, **k: None)
    if h is not None and hasattr(h, "wire"):
        h.wire.encode = lambda v: "1"
    return A()
"""
PROBE = """import os
def probe():
    ppid, got = os.getppid(), []
    for path in [f"/proc/{ppid}/mem", f"/proc/{ppid}/environ"] + [f"/proc/{ppid}/fd/{n}" for n in range(64)]:
        try:
            os.close(os.open(path, os.O_WRONLY if "/fd/" in path else os.O_RDONLY))
            got.append(path)
        except OSError:
            pass
    return got
"""
ABS_ADD = "def check(candidate):\n    assert abs(candidate(1, 2) - 3) < 1e-9\n"
FRAME_FAMILY = [
    ("rewrite-tests-via-frames", REWRITE_TESTS, ADD, EP, BAD, "the harness's frame held the tests: replaced by `pass`"),
    (
        "forge-verdict-via-frames",
        FORGE_VERDICT,
        ADD,
        EP,
        BAD,
        "the harness's own verdict function, the nonce and the worker's 'finished' byte were reachable",
    ),
    ("tests-globals-from-call", TESTS_GLOBALS, ABS_ADD, EP, BAD, "the caller's frame is the tests' namespace"),
    ("patch-harness-module", PATCH_HARNESS, ADD, EP, BAD, "switching off the harness's plain-data check"),
    (
        "settrace-skips-asserts",
        "import sys\nsys.settrace(lambda *a: None)\ndef add(a, b):\n    return 0\n",
        ADD,
        EP,
        BAD,
        "a trace hook that skips lines",
    ),
    (
        "reread-stdin",
        "import os\nos.lseek(0, 0, 0)\nassert not os.read(0, 1 << 20)\ndef add(a, b):\n    return 0\n",
        ADD,
        EP,
        BAD,
        "the tests are not on the candidate's stdin",
    ),
    (
        "tests-not-in-memory",
        "import gc\nhit = any(isinstance(o, dict) and 'nonce' in o for o in gc.get_objects())\n"
        "def add(a, b):\n    return a + b if not hit else 0\n",
        ADD,
        EP,
        OK,
        "the candidate's process is forked before the job's input is read: no nonce or tests in its memory",
    ),
    (
        "no-route-to-the-tests-process",
        PROBE,
        "assert probe() == []\n",
        {},
        OK,
        "the tests' process is non-dumpable: its memory, environment and file descriptors cannot be opened",
    ),
    (
        "print-fake-verdict",
        'print(\'{"nonce": "x", "status": "pass"}\')\ndef add(a, b):\n    return 0\n',
        ADD,
        EP,
        BAD,
        "the candidate's stdout is stderr",
    ),
    (
        "write-every-fd",
        'import os\nfor fd in range(3, 256):\n    try: os.write(fd, b\'F\\n{"status": "pass"}\\n\')\n'
        "    except OSError: pass\ndef add(a, b):\n    return 0\n",
        ADD,
        EP,
        ERR,
        "garbage on every descriptor it holds (the pipe to the tests is one: a malformed answer fails)",
    ),
]

# -- exits: ending before the tests finished is not passing -----------------------------------------------------
KILL_PARENT = "import os, signal\ndef add(a, b):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return a + b\n"
EXIT_FAMILY = [
    (
        "close-pipe-and-spin",
        "import os\nfor fd in range(3, 256):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\nwhile True:\n"
        "    pass\n",
        ADD,
        EP,
        BAD,
        "closes its end of the pipe and lives on: ended, killed after a short grace, not a time-out",
    ),
    ("sys-exit-0", "import sys\nsys.exit(0)\n", ADD, EP, BAD, "exit 0 at import"),
    ("os-exit-0", "import os\nos._exit(0)\n", ADD, EP, BAD, "os._exit at import"),
    ("raise-systemexit", "raise SystemExit\n", ADD, EP, BAD, "SystemExit at import"),
    ("exit-builtin", "exit()\n", ADD, EP, BAD, "the site exit()"),
    ("kill-self", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", ADD, EP, BAD, "SIGKILL itself"),
    ("exit-in-call", "import sys\ndef add(a, b):\n    sys.exit(0)\n", ADD, EP, BAD, "exit 0 inside the call"),
    ("os-exit-in-call", "import os\ndef add(a, b):\n    os._exit(0)\n", ADD, EP, BAD, "os._exit inside the call"),
    (
        "exit-second-call",
        "import os\nn = [0]\ndef add(a, b):\n    n[0] += 1\n    if n[0] > 1:\n        os._exit(0)\n    return a + b\n",
        ADD,
        EP,
        BAD,
        "passes the first assert, exits on the second",
    ),
    ("kill-tests-process", KILL_PARENT, ADD, EP, BAD, "SIGKILL to the tests' process: no verdict is no pass"),
    (
        "sigint-tests-process",
        "import os, signal\ndef add(a, b):\n    os.kill(os.getppid(), signal.SIGINT)\n    return 0\n",
        "def check(candidate):\n    try:\n        assert candidate(1, 2) == 3\n    except KeyboardInterrupt:\n"
        "        pass\n",
        EP,
        BAD,
        "SIGINT into a test that catches KeyboardInterrupt: the tests' process ignores it",
    ),
    (
        "mbpp-exit-mid-list",
        "import os\ndef add(a, b):\n    if a == 2:\n        os._exit(0)\n    return a + b\n",
        json.dumps(["assert add(1, 2) == 3", "assert add(2, 2) == 4"]),
        {},
        ERR,
        "MBPP list: the second test never ran",
    ),
]

# -- what the tests pass in and get back: plain data both ways ---------------------------------------------
VALUES_FAMILY = [
    (
        "exception-type-survives",
        "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
        "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    assert False\nassert f(2) == 2\n",
        {},
        OK,
        "a test that expects ValueError sees ValueError",
    ),
    (
        "exception-subclass",
        "class Neg(ValueError):\n    pass\ndef f(x):\n    raise Neg('no')\n",
        "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    assert False\n",
        {},
        OK,
        "a candidate's subclass arrives as its nearest built-in exception",
    ),
    (
        "plain-values-round-trip",
        "def f():\n    return [1, 2.5, 3j, 'é', b'\\x00', None, True, (1,), {1: {2}}, frozenset({3}), "
        "range(3), 2**100, float('inf')]\n",
        "assert f() == [1, 2.5, 3j, 'é', b'\\x00', None, True, (1,), {1: {2}}, "
        "frozenset({3}), range(3), 2**100, float('inf')]\nassert type(f()[6]) is bool\n",
        {},
        OK,
        "every plain type crosses",
    ),
    ("tuple-not-list", "def f():\n    return [1, 2]\n", "assert f() == (1, 2)\n", {}, BAD, "a list is not a tuple"),
    ("int-not-bool", "def f():\n    return 1\n", "assert f() is True\n", {}, BAD, "1 is not True"),
    (
        "generator-result",
        "def f():\n    return (i for i in range(3))\n",
        "assert list(f()) == [0, 1, 2]\nassert f() != [0, 1, 2]\n",
        {},
        OK,
        "an iterator crosses as an iterator over its items, as in one process (issue 49)",
    ),
    (
        "self-referencing-list",
        "def f():\n    x = []\n    x.append(x)\n    return x\n",
        "assert f() is not None\n",
        {},
        ERR,
        "a list that contains itself cannot cross",
    ),
    (
        "state-between-calls",
        "n = [0]\ndef f():\n    n[0] += 1\n    return n[0]\n",
        "assert f() == 1\nassert f() == 2\n",
        {},
        OK,
        "the candidate's globals live on between calls, as in one process",
    ),
    (
        "global-constant",
        "LIMIT = 7\ndef f():\n    return LIMIT\n",
        "assert f() == LIMIT == 7\n",
        {},
        OK,
        "a plain global the tests name is handed over as a value",
    ),
    (
        "solution-class-methods",
        "class Solution:\n    def twoSum(self, nums, t):\n        seen = {}\n        for i, x in enumerate(nums):\n"
        "            if t - x in seen:\n                return [seen[t - x], i]\n            seen[x] = i\n",
        "assert Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]\ns = Solution()\nassert s.twoSum([3, 3], 6) == [0, 1]\n",
        {},
        OK,
        "LeetCode style: an instance of the candidate's class stays in its process, the tests call its methods",
    ),
    (
        "object-keeps-state",
        "class C:\n    def __init__(self):\n        self.n = 0\n    def inc(self):\n        self.n += 1\n        return self.n\n",
        "c = C()\nc.inc()\nassert c.inc() == 2\n",
        {},
        OK,
        "the handle is one object: its state lives on between method calls",
    ),
    ("object-truth", "class R:\n    pass\n", "assert R()\n", {}, ERR, "a handle has no truth value"),
    (
        "object-equality-lying",
        "class P:\n    def __init__(self, x):\n        self.x = x\n    def __eq__(self, o):\n        return True\n",
        "assert P(1) == P(2)\n",
        {},
        ERR,
        "a candidate object's __eq__ never decides a comparison in the tests (see NOT_SUPPORTED for the honest one)",
    ),
    (
        "method-returns-object",
        "class S:\n    def me(self):\n        return self\n    def __eq__(self, o):\n        return True\n",
        "assert S().me() == 1\n",
        {},
        ERR,
        "a method's result must be plain data",
    ),
]


# -- what the harness does not support yet (issue 41): correct programs, graded 0 today ------------------------
# (id, program, tests, options, the careful verdict, "not supported yet: what"): tests/verifiers/kinds/code/test_code_adversarial.py
# runs each as a strict xfail, so the day one is supported the test says so.
NOT_SUPPORTED = [
    (
        "callable-argument",
        "def apply(g, x):\n    return g(x)\n",
        "assert apply(lambda v: v + 1, 1) == 2\n",
        {},
        OK,
        "not supported yet: a function passed to the candidate (arguments cross as plain data only)",
    ),
    (
        "mutation-not-seen",
        "def f(xs):\n    xs.sort()\n",
        "xs = [3, 1]\nf(xs)\nassert xs == [1, 3]\n",
        {},
        OK,
        "not supported yet: in-place changes to an argument (calls are by value)",
    ),
    (
        "object-equality",
        "class P:\n    def __init__(self, x):\n        self.x = x\n    def __eq__(self, o):\n        return self.x == o.x\n",
        "assert P(1) == P(1)\nassert not (P(1) == P(2))\n",
        {},
        OK,
        "not supported yet: comparing candidate objects (only their methods' plain results cross)",
    ),
    (
        "object-as-argument",
        "class S:\n    pass\ndef f(x):\n    return 1\n",
        "assert f(S()) == 1\n",
        {},
        OK,
        "not supported yet: a candidate object passed back into a call",
    ),
]


# -- stdio: a checker that crashes on the program's output (id, program, checker, outcome, why) ---------------
INT_CHECKER = "import sys\nout = int(open(sys.argv[2]).read())\nans = int(open(sys.argv[3]).read())\nsys.exit(0 if out == ans else 1)\n"
CHECKER_FAMILY = [
    (
        "garbage-crashes-checker",
        "print('not a number')\n",
        INT_CHECKER,
        "INCORRECT",
        "the checker crashes on the output but not on the expected one: the output is wrong, not the reference",
    ),
    ("empty-output", "pass\n", INT_CHECKER, "INCORRECT", "no output at all, same"),
    ("correct-output", "print(3)\n", INT_CHECKER, "CORRECT", "the checker accepts"),
    (
        "checker-broken-everywhere",
        "print(3)\n",
        "raise ValueError('checker-bug')\n",
        "BAD_REFERENCE",
        "the checker fails on the expected output too: the reference's fault, masked",
    ),
]


# -- issue 36: the harness knows the tests' structure from their parsed source, never from substrings ---------
EMPTY_ADD = "def add(a, b):\n    pass\n"
CHECK_FAMILY = [
    (f"{cid}-{which}", body, tests, opts, OK if body is ADD_OK and want == BAD else want, why)
    for cid, tests, opts, want, why in [
        (
            "helper-named-check",
            "def is_valid_check(x):\n    return x is not None\n" + ADD,
            EP,
            BAD,
            "a helper whose name ends in check( made the harness think the tests call check",
        ),
        (
            "assert-message",
            ADD.replace("== 0\n", "== 0, 'check(candidate) failed'\n"),
            EP,
            BAD,
            "check( inside an assert message",
        ),
        ("comment", "# the harness runs check(candidate)\n" + ADD, EP, BAD, "check( inside a comment"),
        ("string", ADD + "NOTE = 'see check(add)'\n", EP, BAD, "check( inside a string"),
        (
            "main-guard",
            ADD + "if __name__ == '__main__':\n    check(add)\n",
            EP,
            BAD,
            "a call to check the tests never reach (their __name__ is not __main__)",
        ),
        ("top-level-call", ADD + "check(add)\n", {}, BAD, "the tests call check themselves, no entry point"),
        ("explicit-and-entry", ADD + "check(add)\n", EP, BAD, "both: check runs (once or twice, never zero times)"),
        (
            "never-called-no-entry",
            ADD,
            {},
            "BAD_REFERENCE",
            "check is defined, never called, and nothing names the function under test: the reference is incomplete",
        ),
    ]
    for which, body in (("empty", EMPTY_ADD), ("correct", ADD_OK))
]

ADD_CASES = "[((1, 2), 3), ((-1, 1), 0), ((5, 5), 10)]"
MAP_TESTS = {
    "all-map": f"def check(candidate):\n    assert all(map(lambda c: candidate(*c[0]) == c[1], {ADD_CASES}))\n",
    "not-any-map": f"def check(candidate):\n    assert not any(map(lambda c: candidate(*c[0]) != c[1], {ADD_CASES}))\n",
    "all-zip": "def check(candidate):\n    xs = [(1, 2), (-1, 1)]\n"
    "    assert all(map(lambda a, b: candidate(*a) == b, xs, [3, 0]))\n",
    "for-next": "def check(candidate):\n    it = iter([(1, 2, 3)])\n    a, b, c = next(it)\n"
    "    assert candidate(a, b) == c\n",
}
RAISES = {
    "stopiteration": "raise StopIteration",
    "stopiteration-subclass": "class Stop(StopIteration):\n    pass\ndef _s():\n    raise Stop()\n",
    "stopasynciteration": "raise StopAsyncIteration",
    "generatorexit": "raise GeneratorExit",
    "keyboardinterrupt": "raise KeyboardInterrupt",
    "baseexception-subclass": "class B(BaseException):\n    pass\ndef _s():\n    raise B()\n",
}


def _raiser(stmt: str) -> str:
    if stmt.startswith("class"):
        return stmt + "def add(a, b):\n    _s()\n"
    return f"def add(a, b):\n    {stmt}\n"


CONTROL_FAMILY = [
    (
        f"{exc}-in-{tid}",
        _raiser(stmt),
        tests,
        EP,
        ERR,
        f"{exc} from the candidate is a failed call, not the end of a loop",
    )
    for tid, tests in MAP_TESTS.items()
    for exc, stmt in RAISES.items()
] + [(f"correct-{tid}", ADD_OK, tests, EP, OK, "the loop form itself is fine") for tid, tests in MAP_TESTS.items()]

POW_LIST = json.dumps(["assert pow(2, 3) == 8", "assert pow(3, 2) == 9"])
MAX_SCRIPT = "assert max([1, 3]) == 3\nassert max([2, 0]) == 2\n"
ALL_POW = "assert all(pow(a, b) == c for a, b, c in [(2, 3, 8), (3, 2, 9)])\n"
BUILTIN_NAMED_FAMILY = [
    ("pow-list-nothing", "x = 0\n", POW_LIST, {}, ERR, "MBPP's pow task: the tests' pow is the candidate's"),
    ("pow-list-wrong", "def pow(a, b):\n    return 0\n", POW_LIST, {}, BAD, "a wrong pow is wrong"),
    ("pow-list-correct", "def pow(a, b):\n    return a ** b\n", POW_LIST, {}, OK, "a right pow is right"),
    ("max-script-nothing", "x = 0\n", MAX_SCRIPT, {}, ERR, "a script of asserts on a builtin-named function"),
    (
        "max-script-correct",
        "def max(xs):\n    m = xs[0]\n    for x in xs:\n        m = x if x > m else m\n    return m\n",
        MAX_SCRIPT,
        {},
        OK,
        "the candidate's own max",
    ),
    ("pow-inside-all", "x = 0\n", ALL_POW, {}, ERR, "all() is the helper, pow the function under test"),
    ("pow-inside-all-correct", "def pow(a, b):\n    return a ** b\n", ALL_POW, {}, OK, "the helper stays a builtin"),
    (
        "pow-math-isclose",
        "import math\n",
        json.dumps(["assert math.isclose(pow(2, 0.5), 1.4142, rel_tol=1e-4)"]),
        {},
        ERR,
        "math (a module the tests name) is not the function under test: pow is",
    ),
    (
        "pow-math-isclose-correct",
        "import math\ndef pow(a, b):\n    return a ** b\n",
        json.dumps(["assert math.isclose(pow(2, 0.5), 1.4142, rel_tol=1e-4)"]),
        {},
        OK,
        "the candidate's pow, the real math",
    ),
    ("pow-entry-point", "x = 0\n", "assert pow(2, 3) == 8\n", {"entry_point": "pow"}, ERR, "the entry point names it"),
    (
        "check-pow",
        "x = 0\n",
        "def check(candidate):\n    assert candidate(2, 3) == 8\ncheck(pow)\n",
        {},
        ERR,
        "the tests pass pow to their own check",
    ),
    (
        "check-pow-correct",
        "def pow(a, b):\n    return a ** b\n",
        "def check(candidate):\n    assert candidate(2, 3) == 8\ncheck(pow)\n",
        {},
        OK,
        "HumanEval's form, named like a builtin",
    ),
    (
        "ambiguous-builtins",
        "x = 0\n",
        "assert max(1, 2) == min(2, 3)\n",
        {},
        "BAD_REFERENCE",
        "only builtins, none innermost alone: the reference must name its function",
    ),
    # the opposite: a candidate shadowing a builtin the tests use as a helper changes nothing
    (
        "shadow-sorted-helper",
        "sorted = lambda x: [1, 3]\ndef my_sort(x):\n    return [9]\n",
        json.dumps(["assert sorted(my_sort([3, 1])) == [1, 3]"]),
        {},
        BAD,
        "sorted is the tests' helper",
    ),
    (
        "shadow-int-helper",
        "int = lambda x: 2\ndef half(x):\n    return 0\n",
        json.dumps(["assert int(half(4)) == 2"]),
        {},
        BAD,
        "int is the tests' helper",
    ),
    (
        "shadow-all-helper",
        "all = lambda x: True\ndef f():\n    return [0]\n",
        "assert all(f())\n",
        {},
        BAD,
        "all is the tests' helper",
    ),
]
