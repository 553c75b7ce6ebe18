"""The sandbox half of the ``code`` verifier's assert mode. Never runs in the service process.

``math_verifier.WARMUP`` execs this source once per warm worker as the module ``rlvr_code``, so a job
is two lines (``rlvr_code.main()``) instead of a harness compiled per job. ``main`` reads
``{"candidate", "tests", "entry_point", "nonce"}`` on stdin (``tests``: a script, or a list of
independent asserts, MBPP style, each reported on its own line ``{"nonce", "case", "status"}``), replaces stdin with /dev/null (the tests and
the nonce cannot be re-read) and stdout with stderr (the candidate's prints land there, where they
count against the sandbox's output cap like any program's output and show in an error's detail), keeps
a private copy of stdout, runs the candidate then the tests, and writes one verdict line carrying the
nonce to that copy. Reaching that line is the only way to pass.
"""

import builtins
import json
import math
import os
import sys
import threading
import traceback

_PLAIN = {id(t) for t in (int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset, range)}
_SEQ = {id(t) for t in (list, tuple, set, frozenset)}
_DICT = id(dict)
_type, _id, _list, _isinstance, _callable, _setattr, _delattr = type, id, list, isinstance, callable, setattr, delattr
_SAVED = {}  # module → its namespace as the job started
_FUNCTION = type(lambda: None)


def _restore():
    """Undo trace hooks and any patch of ``builtins``/``math``, comparing by identity (a patched value's
    ``__eq__`` must not hide the patch)."""
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)
    for m, saved in _SAVED.items():
        md = m.__dict__
        for k in _list(md):
            if k not in saved:
                _delattr(m, k)
        for k, v in saved.items():
            if k not in md or md[k] is not v:
                _setattr(m, k, v)


def check_plain(value, name):
    """The value and everything inside it has an exact built-in type (no subclass, no lying __eq__)."""
    stack, seen = [value], 0
    while stack:
        v = stack.pop()
        seen += 1
        if seen > 1_000_000:
            raise TypeError(f"{name} returned a structure too large to check")
        t = _id(_type(v))
        if t not in _PLAIN:
            raise TypeError(f"{name} returned a {_type(v).__name__}, not a built-in value")
        if t in _SEQ:
            stack.extend(v)
        elif t == _DICT:
            stack.extend(v.keys())
            stack.extend(v.values())


def guard(fn, name):
    def candidate(*args, **kwargs):
        try:
            r = fn(*args, **kwargs)
        finally:
            _restore()
        check_plain(r, name)
        return r

    candidate.__name__ = name
    return candidate


def main():
    q = json.loads(sys.stdin.read())
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    mark = os.dup(1)
    os.dup2(2, 1)  # never /dev/null: output the sandbox cannot see is output the cap cannot stop
    nonce = q.pop("nonce")
    _SAVED.update({m: dict(m.__dict__) for m in (builtins, math)})

    def say(status, detail=""):
        line = json.dumps({"nonce": nonce, "status": status, "detail": detail[-2000:]})
        os.write(mark, ("\n" + line + "\n").encode())

    def fail(status):
        _restore()
        detail = traceback.format_exc()
        sys.stderr.write(detail)
        sys.stderr.flush()
        say(status, detail)
        os._exit(1)

    ns = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(compile(q["candidate"], "solution.py", "exec", dont_inherit=True), ns)
    except SystemExit:
        raise  # exiting is not passing: the worker sees the program end before its last line
    except BaseException:
        fail("error")
    _restore()
    tests_ns = {"__name__": "tests", "__builtins__": dict(_SAVED[builtins])}
    for k, v in _list(ns.items()):
        if not k.startswith("__"):
            tests_ns[k] = guard(v, k) if _type(v) is _FUNCTION else v
    entry = q.get("entry_point") or ""
    if entry:
        if entry not in ns or not _callable(ns[entry]):
            say("error", f"NameError: the entry point {entry!r} is not defined by the candidate")
            os._exit(1)
        tests_ns["candidate"] = guard(ns[entry], entry)
    if isinstance(q["tests"], list):  # MBPP style: independent asserts, each graded on its own
        for i, test in enumerate(q["tests"]):
            status, detail = _one_test(test, i, tests_ns)
            os.write(
                mark,
                ("\n" + json.dumps({"nonce": nonce, "case": i, "status": status, "detail": detail}) + "\n").encode(),
            )
        say("pass")  # every test ran (passed or not)
        return
    calls_check = "check(" in q["tests"].replace("def check(", "")
    try:
        exec(compile(q["tests"], "tests.py", "exec", dont_inherit=True, optimize=0), tests_ns)
        if entry and _callable(tests_ns.get("check")) and not calls_check:
            tests_ns["check"](tests_ns["candidate"])
    except AssertionError:
        fail("assert")
    except SystemExit:
        raise
    except BaseException:
        fail("error")
    _restore()
    say("pass")


def _one_test(test, i, tests_ns):
    """Run one independent test; (pass | assert | error, traceback tail). Exiting is not caught."""
    try:
        exec(compile(test, f"test_{i}.py", "exec", dont_inherit=True, optimize=0), tests_ns)
        result = ("pass", "")
    except AssertionError:
        result = ("assert", traceback.format_exc()[-600:])
    except SystemExit:
        raise
    except BaseException:
        result = ("error", traceback.format_exc()[-600:])
    _restore()
    return result
