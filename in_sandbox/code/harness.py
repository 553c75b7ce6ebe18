"""The sandbox half of the ``code`` verifier's assert mode. Never runs in the service process.

The warm-up (``verifiers/kinds/code/verifier.py``, ``CODE_WARMUP``) imports this module once per warm worker,
so a job is ``harness.main()``.
Two processes grade a job, and the tests never run in the candidate's:

* **the candidate's process** is forked first thing, before the job's stdin (the tests, the nonce) is
  read, so none of it is in its memory. It keeps only stdin = /dev/null, stdout = stderr (its prints
  count against the output cap) and two pipes to the tests' process; it receives the candidate's code,
  runs it, then answers calls: a global's name and plain arguments in, one plain value (wire.py), the
  built-in class and message of the exception raised, or a handle to a new instance of a class out.
* **the tests' process** (the job, a fresh fork of the warm worker in which no candidate code ever runs:
  its builtins and modules are pristine) is non-dumpable (the candidate's process cannot open its /proc
  files or memory, or ptrace it), ignores SIGINT, imports only from directories the job cannot write,
  runs the trusted ``prelude`` (the problem's own code: HumanEval's prompt and its helpers), then the
  tests with ``candidate`` and every other candidate global the tests name (unless the builtins or the
  prelude define it) bound to proxies into the candidate's process; a candidate's module the tests name
  is the real module of that name, imported here; any other non-plain value is not bound.

Which function is under test and whether the tests call ``check`` themselves come from the tests' parsed
source (testshape.py), never from their text. An exception the candidate raises arrives as its nearest
built-in class, StopIteration as RuntimeError (CONTROL_FLOW). The exploit signals the candidate's process
notes (candidate.Watch) arrive with its answers; the harness adds its own and writes them on nonce lines
``{"nonce", "signals"}`` (verifiers/shapes/signals.py names them; they never change the verdict).

``main`` reads ``{"candidate", "tests", "entry_point", "prelude", "nonce"}`` on stdin (``tests``: a script,
or a list of independent asserts, MBPP style, each reported on its own line ``{"nonce", "case",
"status"}``) and writes the verdict line carrying the nonce to a copy of stdout only the tests' process
holds: ``pass`` | ``assert`` | ``error`` | ``exited`` (the candidate's process ended before the tests
finished) | ``bad_reference`` (the prelude failed). Reaching ``pass`` is the only way to pass.
"""

import builtins
import json
import os
import signal
import sys
import time
import traceback

from in_sandbox.code import candidate as candidate_side
from in_sandbox.code import collect, wire
from in_sandbox.code import testshape as shape
from in_sandbox.jobs import PYTHON_ASSERT

MAX_LINE = 64 << 20  # the longest answer the tests' process reads from the candidate's
# Exploit signals (verifiers/shapes/signals.py) the candidate's process may report (candidate.Watch); the rest are
# the harness's own or the host's. SEEN: this job's, carried on every line the tests' process writes.
REPORTED = frozenset(
    {
        "code.read_files",
        "code.read_env",
        "code.foreign_fd",
        "code.spawned",
        "code.patched_builtins",
        "code.eq_override",
        "code.control_exception",
    }
)
SEEN = set()
RAN = {"tests": 0, "asserts": 0, "calls": 0}  # what the tests ran: carried on every verdict line (proof tests ran)
CANDIDATE_MODULES = ("solution",)  # ``from solution import f`` (KodCode's tests): the candidate's names, as proxies
ANSWER_KEYS = frozenset({"names", "value", "raise", "object", "exit", "report"})  # what candidate.py's answers carry


# -- the tests' process ---------------------------------------------------------------------------------
class Candidate:
    """The tests' end of the pipes to the candidate's process."""

    def __init__(self, pid, rf, wf, say):
        self.pid, self.rf, self.wf, self.say = pid, rf, wf, say
        self.running = False  # the candidate's code has run: it answers calls (and reports)

    def ask(self, msg):
        try:
            wire.send(self.wf, msg)
            line = self.rf.readline(MAX_LINE)
        except OSError:  # a broken pipe: it has ended
            line = b""
        if len(line) >= MAX_LINE and not line.endswith(b"\n"):
            raise TypeError(f"the candidate's answer is longer than {MAX_LINE >> 20} MiB")
        if not line.endswith(b"\n"):  # the end of the pipe, maybe after a partial line
            self.ended()
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if type(reply) is not dict or not ANSWER_KEYS & reply.keys():
            self.signal("code.foreign_fd")  # only our half writes this pipe, and it writes answers
        if type(reply) is not dict:
            raise TypeError("the candidate's process sent something that is not an answer")
        if type(reply.get("signals")) is list:
            self.signal(*(n for n in reply["signals"] if n in REPORTED))
        if "exit" in reply:  # it is exiting (sys.exit, SystemExit): the pipe closes next
            self.ended()
        return reply

    def report(self):
        """Ask the candidate's process for its signals once the tests are done (never ends the job: a process
        that is gone or answers nonsense reports nothing)."""
        if not self.running:
            return
        try:
            wire.send(self.wf, {"report": 1})
            reply = json.loads(self.rf.readline(1 << 16))
        except (OSError, ValueError):
            return
        if type(reply) is dict and type(reply.get("signals")) is list:
            self.signal(*(n for n in reply["signals"] if n in REPORTED))

    def signal(self, *names):
        """Note exploit signals; new ones go out at once on their own line (a later time-out keeps them)."""
        new = set(names) - SEEN
        if new:
            SEEN.update(new)
            self.say(None)

    def ended(self):
        """The candidate's process closed its end before the tests finished: never a pass, whatever its exit
        code (one that closed it and lives on is killed after a grace of ~0.5 s)."""
        for _ in range(100):
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.005)
        else:
            os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
        SEEN.add("code.early_exit")
        self.say("exited", f"the candidate's program ended ({how}) before the tests finished")
        os._exit(1)

    def proxy(self, name, of=None):
        """A function that calls the candidate's global ``name`` (or method ``name`` of its object ``of``)."""
        ask = self.ask

        def call(*args, **kwargs):
            RAN["calls"] += 1
            try:
                payload = wire.encode([args, kwargs])
            except wire.NotPlain as e:
                raise TypeError(
                    f"{name}: an argument is not plain data ({e}): the candidate runs in a process of its own and "
                    "receives only numbers, strings, bytes, None and containers of them"
                ) from None
            reply = ask({"call": name, "args": payload, "of": of})
            if type(reply.get("value")) is str:
                try:
                    value = wire.decode(reply["value"])
                except wire.NotPlain as e:
                    raise TypeError(f"{name} returned something that is not plain data: {e}") from None
                if wire.nonfinite(value):  # NaN compares false: an assert written "not greater than" passes it
                    self.signal("code.nonfinite_output")
                return value
            if of is None and type(reply.get("object")) is int:
                return Remote(self, reply["object"], reply.get("type"))
            raise _rebuilt(reply.get("raise"))

        call.__name__ = call.__qualname__ = name
        return call


class Remote:
    """An instance of one of the candidate's classes (``Solution()``), living in the candidate's process: the
    tests may call its methods, plain data in and out, and nothing else. Comparing it, testing its truth,
    hashing it or passing it to a call is a TypeError, so it can never stand in for an expected value."""

    __slots__ = ("_cand", "_id", "_what")

    def __init__(self, cand, ident, what):
        self._cand, self._id, self._what = cand, ident, what if type(what) is str else "candidate"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._cand.proxy(name, self._id)

    def _refuse(self, *_):
        raise TypeError(f"a {self._what} object lives in the candidate's process: the tests can only call its methods")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __len__ = __iter__ = _refuse
    __hash__ = None

    def __repr__(self):
        return f"<{self._what} object in the candidate's process>"


# Exceptions that are control flow to the code that catches them: ``map``, ``zip``, ``filter`` and ``next``
# end quietly on StopIteration, so ``all(map(lambda c: candidate(*c) == ..., cases))`` would pass every case.
# A call that raises one is a failed call, a RuntimeError, as PEP 479 does for generators.
CONTROL_FLOW = ("StopIteration", "StopAsyncIteration")


def _rebuilt(raised):
    """The candidate's exception, as the built-in class it derives from (RuntimeError if none, or if it is
    one of CONTROL_FLOW): a failed call in the tests, never control flow."""
    ok = type(raised) is list and len(raised) == 2 and all(type(x) is str for x in raised)
    name, msg = raised if ok else ("RuntimeError", "the candidate's process sent an unreadable answer")
    if name in CONTROL_FLOW:
        SEEN.add("code.control_exception")
        return RuntimeError(f"the candidate raised {msg}")
    try:
        return wire.EXCEPTIONS.get(name, RuntimeError)(msg)
    except Exception:
        return RuntimeError(msg)


def _fork_candidate():
    """(pid, read file, write file): the candidate's process, started before any of the job is read."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    candidate_side.dumpable(0)
    pid = os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(rep_r)
        candidate_side.serve(req_r, rep_w)
    os.close(req_r)
    os.close(rep_w)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return pid, os.fdopen(rep_r, "rb"), os.fdopen(req_w, "wb")


def _compiled(source, filename):
    """(the parsed tree or None, the code object or the error compiling it raised)."""
    try:
        tree = shape.parse(source, filename)
        return tree, compile(shape.counted(tree), filename, "exec", dont_inherit=True, optimize=0)
    except BaseException as e:  # raised when the test runs, as before
        return None, e


def _names(code, into):
    """Every global name ``code`` (and the code nested in it) may read."""
    if isinstance(code, BaseException):
        return into
    into.update(code.co_names)
    for c in code.co_consts:
        if type(c) is type(code):
            _names(c, into)
    return into


def _trusted_path():
    """Only directories the job cannot write to stay on the tests' import path, and the import finders cached
    for the others go. Only those: the rest of the cache is the warm worker's, whose path never held a
    writable directory, and this process imported nothing before this. (Clearing the whole cache freed every
    directory listing cached there, a copy-on-write page fault per page touched;
    bench/code_grading/isolation.py --phases.)"""
    keep = [p for p in sys.path if os.path.isabs(p) and os.path.exists(p) and not os.access(p, os.W_OK)]
    for p in set(sys.path) - set(keep):
        sys.path_importer_cache.pop(p, None)
    sys.path[:] = keep


_ALIASES = {"np": "numpy", "pd": "pandas"}


def _bind(cand, code, tests_ns, names, entry):
    """Put the candidate's globals the tests name into their namespace (builtins and the prelude's win,
    bar ``entry``, the function under test); (True, "") or (False, why the candidate's code failed)."""
    wanted = {n for n in names if not n.startswith("__") and n not in vars(builtins) and n not in tests_ns}
    reply = cand.ask({"code": code, "names": sorted(wanted | ({entry} if entry else set()))})
    if "names" not in reply or type(reply["names"]) is not dict:
        return False, " ".join(map(str, _rebuilt(reply.get("raise")).args))
    got = reply["names"]
    cand.running = True
    for n, k in got.items():
        if (n not in wanted and n != entry) or type(k) is not list or len(k) not in (1, 2):
            continue
        if k == ["call"]:
            tests_ns[n] = cand.proxy(n)
        elif k[0] == "value" and type(k[-1]) is str:
            try:
                tests_ns[n] = wire.decode(k[1])
            except wire.NotPlain:
                pass
        elif k[0] == "module" and type(k[-1]) is str and k[1] in (n, _ALIASES.get(n)):
            try:  # the real module of that name, from the trusted path: never the candidate's object
                tests_ns[n] = __import__(k[1])
            except BaseException:
                pass
    if entry:
        if got.get(entry) != ["call"]:
            return False, f"NameError: the function under test {entry!r} is not defined by the candidate"
        tests_ns["candidate"] = tests_ns[entry] = cand.proxy(entry)
    return True, ""


def main():
    pid, rf, wf = _fork_candidate()
    q = PYTHON_ASSERT.loads(sys.stdin.read())
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    mark = os.dup(1)
    os.dup2(2, 1)  # never /dev/null: output the sandbox cannot see is output the cap cannot stop
    nonce = q.pop("nonce")
    _trusted_path()

    def say(status, detail="", case=None):
        d = {"nonce": nonce, "status": status, "detail": detail[-2000:]} if status else {"nonce": nonce}
        if case is not None:
            d["case"] = case
        if SEEN:
            d["signals"] = sorted(SEEN)
        if status:
            d["ran"] = dict(RAN)
        os.write(mark, ("\n" + json.dumps(d) + "\n").encode())

    def fail(status, why=""):
        detail = why + traceback.format_exc()
        cand.report()
        sys.stderr.write(detail)
        sys.stderr.flush()
        say(status, detail)
        os._exit(1)

    cand = Candidate(pid, rf, wf, say)
    many = isinstance(q["tests"], list)  # MBPP style: independent asserts, each graded on its own

    def fail_with(status, detail):
        say(status, detail)
        os._exit(1)

    codes, tests_ns, form = _load(q, fail, fail_with)
    subject = q.get("entry_point") or form.subject
    refused = collect.refused(form, subject)
    if refused:
        say("bad_reference", refused)
        os._exit(1)
    names = set()
    for c in codes:
        _names(c, names)
    try:
        ok, why = _bind(cand, q["candidate"], tests_ns, names, subject)
        if ok and CANDIDATE_MODULES[0] in form.imports:
            collect.candidate_module(CANDIDATE_MODULES[0], tests_ns, names)
    except BaseException:  # a malformed answer from the candidate's process
        fail("error")
    if not ok:
        say("error", why)
        os._exit(1)
    if many:
        for i, code in enumerate(codes):
            say(*_one_test(code, tests_ns), case=i)
    else:
        try:
            _run(codes[0], tests_ns)
            if form.defines_check and not form.calls_check and subject:  # HumanEval: the tests define check, we call it
                RAN["tests"] += 1
                tests_ns["check"](tests_ns["candidate"])
            collect.run(form, tests_ns, RAN)  # pytest's test functions and classes, unittest's TestCases
        except AssertionError:
            fail("assert")
        except ImportError as e:
            if RAN["calls"] == 0 and e.name not in CANDIDATE_MODULES:  # the tests' own import, before any call
                fail("bad_reference", "the tests' own import failed before any call into the candidate: ")
            fail("error")
        except BaseException:
            fail("error")
    cand.report()
    say("pass")  # every test ran (passed or not, in the MBPP style)
    os.kill(pid, signal.SIGKILL)  # the worker reaps it with the rest of the sandbox's processes


def _load(q, fail, fail_with):
    """(the tests' code objects, their namespace with the prelude run in it, their parsed shape)."""
    tests = q["tests"]
    many = isinstance(tests, list)
    parsed = [_compiled(t, f"test_{i}.py") for i, t in enumerate(tests)] if many else [_compiled(tests, "tests.py")]
    tests_ns = {"__name__": "tests", "__builtins__": builtins}
    prelude = None
    if q.get("prelude"):
        try:
            prelude = shape.parse(q["prelude"], "prelude.py")
            exec(compile(prelude, "prelude.py", "exec", dont_inherit=True), tests_ns)
        except BaseException:
            fail("bad_reference")
    tests_ns[shape.COUNTER] = _asserted
    form = shape.Shape.of([t for t, _ in parsed if t is not None], prelude)
    bad = next((c for t, c in parsed if t is None), None)
    if bad is not None and not many:  # the tests do not compile: their fault, not the candidate's
        say_bad = "".join(traceback.format_exception_only(type(bad), bad))
        fail_with("bad_reference", f"the tests do not compile: {say_bad}")
    if "unittest" in form.imports:
        collect.defer_unittest_main()
    return [c for _, c in parsed], tests_ns, form


def _asserted():
    RAN["asserts"] += 1


def _run(code, ns):
    if isinstance(code, BaseException):
        raise code
    exec(code, ns)


def _one_test(code, tests_ns):
    """Run one independent test; (pass | assert | error, traceback tail)."""
    try:
        _run(code, tests_ns)
        return "pass", ""
    except AssertionError:
        return "assert", traceback.format_exc()[-600:]
    except BaseException:
        return "error", traceback.format_exc()[-600:]
