"""Python assert mode runs the tests' own shapes, and a pass carries proof that tests ran (issue 49).

Through the real gRPC service (session ``client``): tests written for pytest (``def test_...(): assert ...``,
KodCode's ``from solution import ...``, a plain ``class TestX``) or unittest (``TestCase`` classes under a
``__main__`` guard, ``unittest.main(exit=False)``, a bare ``unittest.main()``) ran nothing before, so a
wrong candidate was paid 1.0. Each is now collected and run in the tests' process; what cannot be run
(fixtures, parametrize, ``import pytest``) is refused as a bad reference saying how to send it. Every
pass says how many test functions, asserts and calls into the candidate ran; zero is never CORRECT.
Correct solutions returning a Counter, a namedtuple, a Fraction, a generator ... pass (they crossed the
process wall as RUNTIME_ERROR before).
"""

from __future__ import annotations

import pytest

OK = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"

# (id, tests, entry_point) in each shape a dataset sends; the wrong candidate must fail, the right one pass
SHAPES = [
    ("pytest-functions", "def test_add():\n    assert add(2, 3) == 5\n\ndef test_neg():\n    assert add(-1, 1) == 0\n", ""),
    ("pytest-functions-entry", "def test_add():\n    assert add(2, 3) == 5\n", "add"),
    ("kodcode-import", "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n", ""),
    ("kodcode-import-star", "from solution import *\n\ndef test_add():\n    assert add(2, 3) == 5\n", ""),
    ("import-solution", "import solution\n\ndef test_add():\n    assert solution.add(2, 3) == 5\n", ""),
    ("pytest-class", "class TestAdd:\n    def test_one(self):\n        assert add(2, 3) == 5\n", ""),
    ("unittest-main-guard",
     "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
     "if __name__ == '__main__':\n    unittest.main()\n", ""),
    ("unittest-exit-false",
     "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
     "unittest.main(exit=False)\n", ""),
    ("unittest-bare-main",
     "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
     "unittest.main()\n", ""),
    ("unittest-runner-ignores-result",
     "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertTrue(add(2, 3) == 5)\n\n"
     "unittest.TextTestRunner().run(unittest.TestLoader().loadTestsFromTestCase(T))\n", ""),
    ("from-unittest-import",
     "from unittest import TestCase, main\n\nclass T(TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n", ""),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("tests, entry", [(t, e) for _, t, e in SHAPES], ids=[s[0] for s in SHAPES])
def test_a_wrong_candidate_fails_tests_in_every_shape(client, tests, entry):
    opts = {"entry_point": entry} if entry else {}
    r = client.verify("code", f"```python\n{WRONG}```", tests, options=opts)
    assert (r.outcome, r.reward) == ("INCORRECT", 0.0), r.detail


@pytest.mark.docker
@pytest.mark.parametrize("tests, entry", [(t, e) for _, t, e in SHAPES], ids=[s[0] for s in SHAPES])
def test_a_right_candidate_passes_and_says_what_ran(client, tests, entry):
    opts = {"entry_point": entry} if entry else {}
    r = client.verify("code", f"```python\n{OK}```", tests, options=opts)
    assert (r.outcome, r.reward) == ("CORRECT", 1.0), r.detail
    assert "1 test" in r.detail or "2 tests" in r.detail, r.detail
    assert r.components["tests_ran"] >= 1 and r.components["calls"] >= 1, r.components


@pytest.mark.docker
def test_counts_of_a_humaneval_pass(client):
    tests = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"
    r = client.verify("code", f"```python\n{OK}```", tests, options={"entry_point": "add"})
    assert r.outcome == "CORRECT", r.detail
    assert (r.components["asserts_ran"], r.components["calls"]) == (2, 2), r.components
    assert "2 asserts" in r.detail and "2 calls" in r.detail, r.detail


# Tests that run nothing: never CORRECT, whatever the candidate (a bad reference: the tests' fault)
RUN_NOTHING = [
    ("only-definitions", "def helper(x):\n    assert add(x, 0) == x\n"),
    ("skipped-unittest",
     "import unittest\n\n@unittest.skip('later')\nclass T(unittest.TestCase):\n    def test_add(self):\n"
     "        self.assertEqual(add(2, 3), 5)\n"),
    ("guarded-calls", "def run():\n    assert add(2, 3) == 5\n\nif __name__ == '__main__':\n    run()\n"),
    # found by bench/code_grading/fuzz_code.py --shapes: a test function that asserts nothing and calls nothing proves nothing
    ("empty-test-function", "def test_add():\n    ['assert add(2, 3) == 5']\n"),
    ("asserts-on-builtins-only", "def test_add():\n    assert abs(-2) == 2\n    assert add\n"),
]  # fmt: skip


@pytest.mark.docker
@pytest.mark.parametrize("tests", [t for _, t in RUN_NOTHING], ids=[i for i, _ in RUN_NOTHING])
def test_tests_that_run_nothing_are_never_paid(client, tests):
    r = client.verify("code", f"```python\n{WRONG}```", tests)
    assert (r.outcome, r.reward) == ("BAD_REFERENCE", 0.0), r.detail
    assert "ran no" in r.detail, r.detail


@pytest.mark.docker
def test_a_builtin_named_function_in_a_test_function_is_the_candidate_s(client):
    """Found by bench/code_grading/fuzz_code.py --shapes: MBPP's builtin-named task (``pow``) in pytest's shape; the asserts
    inside the test function name the function under test as top-level asserts do, so a broken pow fails."""
    tests = "def test_pow():\n    assert pow(2, 3) == 8\n    assert pow(3, 2) == 9\n"
    broken = client.verify("code", "```python\ndef pow(a, b):\n    return 0\n```", tests)
    assert broken.reward == 0.0, broken.detail
    ok = client.verify("code", "```python\ndef pow(a, b):\n    return a ** b\n```", tests)
    assert (ok.outcome, ok.components["calls"]) == ("CORRECT", 2.0), ok.detail


# Shapes assert mode cannot run: refused as a bad reference saying how to send them
REFUSED = [
    ("fixture", "def test_add(tmp_path):\n    assert add(2, 3) == 5\n", "takes arguments"),
    ("import-pytest",
     "import pytest\n\n@pytest.mark.parametrize('a,b,c', [(2, 3, 5)])\ndef test_add(a, b, c):\n    assert add(a, b) == c\n",
     "pytest"),
    ("async", "async def test_add():\n    assert add(2, 3) == 5\n", "async"),
]  # fmt: skip


@pytest.mark.docker
@pytest.mark.parametrize("tests, why", [(t, w) for _, t, w in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_shapes_that_cannot_run_are_refused_saying_how(client, tests, why):
    r = client.verify("code", f"```python\n{WRONG}```", tests)
    assert (r.outcome, r.reward) == ("BAD_REFERENCE", 0.0), r.detail
    assert why in r.detail and "send" in r.detail, r.detail


# Correct solutions whose values are not plain data, compared as the tests would compare them in one process
VALUES = [
    ("counter", "from collections import Counter\ndef f(s):\n    return Counter(s)\n",
     "assert f('aab') == {'a': 2, 'b': 1}\nassert f('aab')['a'] == 2\n"),
    ("defaultdict", "from collections import defaultdict\ndef f(s):\n    d = defaultdict(int)\n"
     "    for c in s:\n        d[c] += 1\n    return d\n", "assert f('aab') == {'a': 2, 'b': 1}\n"),
    ("ordereddict", "from collections import OrderedDict\ndef f(s):\n    return OrderedDict((c, 1) for c in s)\n",
     "assert f('ab') == {'a': 1, 'b': 1}\nassert list(f('ba')) == ['b', 'a']\n"),
    ("namedtuple", "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f():\n    return P(1, 2)\n",
     "assert f() == (1, 2)\nassert f()[0] == 1\n"),
    ("fraction", "from fractions import Fraction\ndef f():\n    return Fraction(1, 3)\n",
     "from fractions import Fraction\nassert f() == Fraction(1, 3)\nassert abs(f() - 1/3) < 1e-9\n"),
    ("decimal", "from decimal import Decimal\ndef f():\n    return Decimal('1.5')\n",
     "from decimal import Decimal\nassert f() == Decimal('1.5')\nassert f() == 1.5\n"),
    ("generator", "def f(n):\n    for i in range(n):\n        yield i * i\n", "assert list(f(4)) == [0, 1, 4, 9]\n"),
    ("map", "def f(xs):\n    return map(str, xs)\n", "assert list(f([1, 2])) == ['1', '2']\n"),
    ("filter", "def f(xs):\n    return filter(None, xs)\n", "assert list(f([0, 1, 2])) == [1, 2]\n"),
]  # fmt: skip


@pytest.mark.docker
@pytest.mark.parametrize("program, tests", [(p, t) for _, p, t in VALUES], ids=[i for i, _, _ in VALUES])
def test_library_values_cross_by_value(client, program, tests):
    r = client.verify("code", f"```python\n{program}```", tests)
    assert (r.outcome, r.reward) == ("CORRECT", 1.0), r.detail


@pytest.mark.docker
def test_a_subclass_lying_about_equality_still_fails(client):
    """Crossing by value does not open the door to always-equal values: a Counter subclass with its own
    __eq__, a namedtuple with one, an endless generator are refused, never compared."""
    lying = ("from collections import Counter\nclass C(Counter):\n    def __eq__(self, o):\n        return True\n"
             "def f(s):\n    return C()\n")  # fmt: skip
    r = client.verify("code", f"```python\n{lying}```", "assert f('aab') == {'a': 2, 'b': 1}\n")
    assert r.reward == 0.0, r.detail
    endless = "import itertools\ndef f(s):\n    return itertools.count()\n"
    r = client.verify("code", f"```python\n{endless}```", "assert list(f('a'))[:2] == [0, 1]\n")
    assert r.reward == 0.0, r.detail


@pytest.mark.docker
def test_the_tests_own_import_error_is_a_bad_reference(client):
    """The tests' own error before any call into the candidate is not charged to the candidate (issue 49); a
    name the candidate should have supplied (``from solution import add`` without an ``add``) still is."""
    r = client.verify("code", f"```python\n{OK}```", "import no_such_module_rlvr\nassert add(2, 3) == 5\n")
    assert (r.outcome, r.reward) == ("BAD_REFERENCE", 0.0) and "before any call" in r.detail, r.detail
    r = client.verify("code", "```python\ndef plus(a, b):\n    return a + b\n```", SHAPES[2][1])
    assert (r.outcome, r.reward) == ("RUNTIME_ERROR", 0.0), r.detail
