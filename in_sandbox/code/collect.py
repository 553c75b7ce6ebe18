"""The tests' own test functions and classes, run by the tests' process of assert mode (harness.py).

Tests written for pytest (``def test_...(): assert ...``, a ``class TestX`` of such methods) or unittest
(``TestCase`` classes, under a ``__main__`` guard, after ``unittest.main(exit=False)`` or a bare
``unittest.main()``) define their tests and leave running them to a runner the sandbox never starts: run
as a script they test nothing. The harness runs them here, after the script, in the tests' process (on the
trusted tests only: which functions and classes are tests comes from their parsed source, testshape.py):

* each top-level ``def test*()`` the tests do not call themselves, in definition order;
* each top-level class that is a ``unittest.TestCase`` (unittest's loader and a ``TestResult``: a failure
  is a failed test, an error a crash, a skipped test did not run), or named ``Test*`` with ``test*``
  methods (pytest's: made with no arguments, ``setup_method``/``teardown_method`` around each);
* ``unittest.main`` does nothing (the classes run here, once): a bare ``unittest.main()`` would exit the
  tests' process, and ``main(exit=False)`` would look for tests in the worker's ``__main__``.

What cannot run here is refused before the candidate is run (``HOW_TO_SEND`` says how to send it): test
functions that take arguments (fixtures, parametrize), async ones, tests that import pytest. Standard
library only: the sandbox runs it.
"""

import sys
import types

HOW_TO_SEND = (
    "send the tests as asserts or check(candidate), as def test_...() functions without arguments (pytest's "
    "shape: run in definition order, no fixtures or parametrize, no import of pytest), or as unittest.TestCase "
    "classes"
)


def _no_main(*args, **kwargs):
    """The tests' ``unittest.main``: their TestCase classes are run by the harness, after the script."""
    return None


def defer_unittest_main():
    import unittest

    unittest.main = _no_main


def candidate_module(name, tests_ns, names):
    """A module ``name`` (``solution``) in the tests' process whose attributes are the candidate's names the
    tests read (the proxies and values bound in ``tests_ns``): ``from solution import f`` and
    ``solution.f(...)`` reach the candidate as the tests' bare names do."""
    mod = types.ModuleType(name)
    for n in names:
        if n in tests_ns and not n.startswith("__") and n != name:
            setattr(mod, n, tests_ns[n])
    sys.modules[name] = mod


def run(form, ns, ran):
    """Run the tests' collected functions and classes (``form``: testshape.Shape); count each in ``ran``.
    The first failure raises AssertionError, the first error the error (or a RuntimeError saying it)."""
    for name in form.test_functions:
        f = ns.get(name)
        if isinstance(f, types.FunctionType):
            ran["tests"] += 1
            f()
    unittest = sys.modules.get("unittest")
    cases = []
    for name in form.test_classes:
        c = ns.get(name)
        if not isinstance(c, type):
            continue
        if unittest is not None and issubclass(c, unittest.TestCase):
            cases.append(c)
        elif name.startswith("Test") and "__init__" not in vars(c):
            _pytest_class(c, ran)
    if cases:
        _unittest(unittest, cases, ran)


def _pytest_class(c, ran):
    for name, f in list(vars(c).items()):
        if not (name.startswith("test") and isinstance(f, types.FunctionType)):
            continue
        obj = c()
        setup, teardown = getattr(obj, "setup_method", None), getattr(obj, "teardown_method", None)
        if setup is not None:
            setup(getattr(obj, name))
        ran["tests"] += 1
        try:
            getattr(obj, name)()
        finally:
            if teardown is not None:
                teardown(getattr(obj, name))


def _unittest(unittest, cases, ran):
    loader = unittest.TestLoader()
    suite = unittest.TestSuite([loader.loadTestsFromTestCase(c) for c in cases])
    result = unittest.TestResult()
    suite.run(result)
    ran["tests"] += result.testsRun - len(result.skipped)
    if result.errors:
        raise RuntimeError(f"{result.errors[0][0]}: {result.errors[0][1]}")
    if result.failures:
        raise AssertionError(f"{result.failures[0][0]}: {result.failures[0][1]}")
    if result.unexpectedSuccesses:
        raise AssertionError(f"{result.unexpectedSuccesses[0]}: an expected failure passed")


def refused(form, subject):
    """Why the tests cannot be run as they stand ('' when they can): a shape the harness does not run, or which
    function is under test is unclear."""
    if form.cannot_run or "pytest" in form.imports:
        why = form.cannot_run or "the tests import pytest, which the sandbox does not have"
        return f"{why}: {HOW_TO_SEND}"
    if subject == "?":
        return (
            "the tests call only builtins and more than one of them could be the function under test: "
            "name it with options entry_point"
        )
    if form.defines_check and not form.calls_check and not subject and not (form.test_functions or form.test_classes):
        return (
            "the tests define check(candidate) but never call it: name the function under test with options entry_point"
        )
    return ""
