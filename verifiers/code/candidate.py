"""The candidate's process of the ``code`` verifier's assert mode (harness.py forks it; never runs
in the service process). Built by the warm-up as the module ``rlvr_code_candidate``.

``serve`` keeps stdin = /dev/null, stdout = stderr and the two pipes to the tests' process, closes every
other descriptor, reads the candidate's code (the first line on the pipe, with the names the tests
use), runs it and says how each of those names crosses over (``_kind``), then answers calls until the
pipe closes: a global's name (or a method of an object it made) and plain arguments in; one plain
value, the nearest built-in class and message of the exception raised, or a handle to a new instance of
one of its classes out. Exiting (``sys.exit``, ``os._exit``) ends the process; the tests' process sees
the pipe close. Nothing here is trusted: the tests' process believes only plain data it decodes itself.
"""

import builtins
import ctypes
import json
import os
import sys
import traceback

try:
    import rlvr_code_wire as wire  # the sandbox: built by the warm-up (or the job) from verifiers/code/wire.py
except ImportError:  # pragma: no cover - the host, for tests that import this module
    from verifiers.code import wire

PR_SET_DUMPABLE = 4
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


def dumpable(flag):
    """prctl(PR_SET_DUMPABLE): 0 keeps other processes of the same uid out of this one's /proc and memory."""
    _libc.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0) if _libc is not None else None


def _describe(e):
    """[the nearest built-in exception class's name, the message], for the tests' process to re-raise."""
    name = next((c.__name__ for c in type(e).__mro__ if wire.EXCEPTIONS.get(c.__name__) is c), "RuntimeError")
    try:
        msg = str(e)
    except BaseException:
        msg = "?"
    return [name, f"{type(e).__name__}: {msg}"[:2000] if type(msg) is str else type(e).__name__]


def _kind(v):
    """How a global the tests name crosses over: a module by name, a callable as a proxy, plain data as itself."""
    if type(v) is type(sys) and type(getattr(v, "__name__", None)) is str:
        return ["module", v.__name__]
    if callable(v):
        return ["call"]
    try:
        return ["value", wire.encode(v)]
    except wire.NotPlain:
        return None


def _flush():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:  # a closed or replaced stream: its output is the candidate's business
            continue


def _exit(e):
    _flush()
    code = e.code
    os._exit(code & 0xFF if type(code) is int else 0 if code is None else 1)


def _answer(ns, objects, msg):
    of = msg.get("of")
    try:
        args, kwargs = wire.decode(msg["args"])
        target = ns[msg["call"]] if of is None else getattr(objects[of], msg["call"])
        r = target(*args, **kwargs)
    except SystemExit as e:
        _exit(e)
    except BaseException as e:
        traceback.print_exc()
        return {"raise": _describe(e)}
    try:
        return {"value": wire.encode(r)}
    except (wire.NotPlain, RecursionError) as e:
        if of is None and isinstance(target, type):  # a new instance of a class: it stays here, the tests get a handle
            objects.append(r)
            return {"object": len(objects) - 1, "type": str(getattr(target, "__name__", "candidate"))[:100]}
        return {"raise": ["TypeError", f"{msg['call']} returned {e}: only plain data reaches the tests"]}


def serve(req_r, rep_w):
    """The forked candidate's process; never returns."""
    try:
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(2, 1)
        keep = sorted((req_r, rep_w))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 16)
        dumpable(1)
        rf, wf = os.fdopen(req_r, "rb"), os.fdopen(rep_w, "wb")
        q = json.loads(rf.readline())
        ns = {"__name__": "solution", "__builtins__": builtins}
        try:
            exec(compile(q.pop("code"), "solution.py", "exec", dont_inherit=True), ns)
        except SystemExit as e:
            _exit(e)
        except BaseException as e:
            traceback.print_exc()
            _flush()
            wire.send(wf, {"raise": _describe(e)})
            os._exit(1)
        wire.send(wf, {"names": {n: k for n in q["names"] if n in ns and (k := _kind(ns[n])) is not None}})
        _flush()
        objects = []
        while True:
            line = rf.readline()
            if not line:
                os._exit(0)
            reply = _answer(ns, objects, json.loads(line))
            _flush()
            wire.send(wf, reply)
    except SystemExit as e:
        _exit(e)
    except BaseException:
        traceback.print_exc()
        _flush()
    os._exit(1)
