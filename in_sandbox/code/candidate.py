"""The candidate's process of the ``code`` verifier's assert mode (harness.py forks it; never runs
in the service process).

``serve`` keeps stdin = /dev/null, stdout = stderr and the two pipes to the tests' process, closes every
other descriptor, reads the candidate's code (the first line on the pipe, with the names the tests
use), runs it and says how each of those names crosses over (``_kind``), then answers calls until the
pipe closes: a global's name (or a method of an object it made) and plain arguments in; one plain
value, the nearest built-in class and message of the exception raised, or a handle to a new instance of
one of its classes out. Exiting (``sys.exit``, ``os._exit``) ends the process; the tests' process sees
the pipe close. Nothing here is trusted: the tests' process believes only plain data it decodes itself.
``Watch`` notes what the candidate tries (exploit signals: files, environment, descriptors, processes,
patched builtins, what it returns and raises) and every answer carries them; they never decide a verdict.
"""

import _thread
import builtins
import collections
import collections.abc
import ctypes
import json
import os
import sys
import traceback
from types import ModuleType

from in_sandbox.code import wire

PR_SET_DUMPABLE = 4
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _libc = None


def dumpable(flag):
    """prctl(PR_SET_DUMPABLE): 0 keeps other processes of the same uid out of this one's /proc and memory."""
    _libc.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0) if _libc is not None else None


# -- what the candidate tries (exploit signals; verifiers/shapes/signals.py names them) ----------------------
# Noted in this process by an audit hook installed before the candidate's code runs, a watched os.environ and
# checks after each call, and sent with every answer as ``"signals"``. They inform and never change a verdict;
# a program that digs this module out of sys.modules can silence them (the reward does not depend on them).
_READS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob", "os.chdir"})
_SPAWNS = frozenset(
    {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system", "subprocess.Popen", "pty.spawn"}
)
_EQ_NAMES = ("__eq__", "__ne__", "__hash__", "__bool__", "__instancecheck__", "__subclasscheck__")
_CONTROL = ("StopIteration", "StopAsyncIteration", "GeneratorExit", "KeyboardInterrupt", "SystemExit", "SkipTest")


class Watch:
    """The signals this process has seen (``seen``); ``install`` before the candidate's code runs."""

    def __init__(self):
        self.seen = set()
        self.trusted = ()
        self.modules_obj = self.addrs = self.tags = None

    def install(self):
        dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        dirs.update(p for p in sys.path if p and os.path.isabs(p) and not os.access(p, os.W_OK))
        self.trusted = tuple(d.rstrip("/") + "/" for d in dirs if d)
        self.modules_obj = sys.modules
        self.addrs = (id(vars(builtins)), id(sys.modules))  # before the hook: id() is an audited event
        self.tags = tuple(map(_tag, self.addrs)) if _tag is not None else None
        sys.addaudithook(self.hook)
        if type(os.environ) is _Environ:
            os.environ.__class__ = _WatchedEnviron

    def hook(self, event, args):
        try:
            if event in _READS:
                self._read(event, args)
            elif event in _SPAWNS:
                self.seen.add("code.spawned")
        except BaseException:  # never break the program's own operation
            pass

    def _read(self, event, args):
        path = args[0] if args else "."
        if type(path) is int:
            if event == "open" and path > 2:
                self.seen.add("code.foreign_fd")
            return
        path = os.path.abspath(os.fsdecode(path if path is not None else "."))
        if path.startswith(self.trusted) or path == "/dev/null" or _importing():
            return
        self.seen.add("code.read_files")
        if path.startswith("/proc/") and "/fd" in path:
            self.seen.add("code.foreign_fd")
        elif path.startswith("/proc/") and path.endswith("/environ"):
            self.seen.add("code.read_env")

    def env(self):
        if not _importing():
            self.seen.add("code.read_env")

    def _patched(self):
        """Builtins or modules replaced since install: the dicts' version tags (O(1), touching none of their
        objects), then, where sys.modules changed (an import, or worse), the modules there at the warm-up by
        identity (not equality: a look-alike's __eq__ lies)."""
        if sys.modules is not self.modules_obj:
            return True
        if self.tags is None:
            return False  # no cheap check on this interpreter: no signal rather than a slow job
        if _tag(self.addrs[0]) != self.tags[0]:
            return True
        if _tag(self.addrs[1]) == self.tags[1]:
            return False
        # A module the warm-up had, replaced; or an entry that is no module (None marks a failed import, and
        # typing.io is a class).
        mods = sys.modules
        replaced = any(mods.get(k, self) is not v for k, v in _AT_BUILD.items())
        return replaced or not all(v is None or isinstance(v, (ModuleType, type)) for v in list(mods.values()))

    def after(self, value=None, raised=None, full=False):
        """Checks after a call: live threads, the value returned or the exception raised; ``full`` (after the
        candidate's code, at an exit and at the harness's final report) also patched builtins or modules.
        The sorted signals so far."""
        if full and self.modules_obj is not None and "code.patched_builtins" not in self.seen and self._patched():
            self.seen.add("code.patched_builtins")
        if _thread._count():
            self.seen.add("code.spawned")
        if raised is not None and any(c.__name__ in _CONTROL for c in type(raised).__mro__):
            self.seen.add("code.control_exception")
        if value is not None and _overrides(value, self.trusted):
            self.seen.add("code.eq_override")
        return sorted(self.seen)


def _version_tag():
    """A reader of a dict's version tag at its address (CPython 3.11's PyDictObject.ma_version_tag, which
    changes on every change to the dict), or None where that layout does not hold. Comparing snapshots of
    builtins and sys.modules instead touched the refcounts of ~600 objects the worker shares with the job
    (copy-on-write page faults, bench/code_grading/isolation.py --base 9e73923)."""
    try:
        read = lambda addr: ctypes.c_uint64.from_address(addr + 24).value  # noqa: E731
        d = {}
        tags = [read(id(d))]
        for v in (1, 2):
            d["x"] = v
            tags.append(read(id(d)))
        ok = sys.version_info[:2] == (3, 11) and ctypes.c_ssize_t.from_address(id(d) + 16).value == 1
        return read if ok and tags[0] != tags[1] != tags[2] else None
    except Exception:  # pragma: no cover - another interpreter
        return None


_tag = _version_tag()
_AT_BUILD = dict(sys.modules)  # the modules there when the warm-up built this one (shared with every job)
_Environ = type(os.environ)


class _WatchedEnviron(_Environ):
    """os.environ, noting reads (os.getenv reads it too)."""

    def __getitem__(self, key):
        WATCH.env()
        return _Environ.__getitem__(self, key)

    def __iter__(self):
        WATCH.env()
        return _Environ.__iter__(self)


def _importing():
    """True when the import system is on the stack (it opens, lists and reads the environment on its own)."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.startswith("<frozen importlib"):
            return True
        f = f.f_back
    return False


_PLAIN_TYPES = frozenset(v for v in vars(builtins).values() if isinstance(v, type))


def _overrides(v, trusted, depth=0):
    """True when ``v`` (or a member, a few levels down) is of a class defined outside the trusted library
    that defines equality, hashing, truth or instance checks of its own."""
    t = type(v)
    if t in _PLAIN_TYPES:
        if depth < 3 and t in (list, tuple, set, frozenset):
            return any(_overrides(x, trusted, depth + 1) for x in list(v)[:100])
        if depth < 3 and t is dict:
            return any(_overrides(x, trusted, depth + 1) for x in list(v.values())[:100])
        return False
    for c in (*t.__mro__, type(t)):
        if c in _PLAIN_TYPES or not any(n in vars(c) for n in _EQ_NAMES):
            continue
        mod = sys.modules.get(getattr(c, "__module__", None))
        where = getattr(mod, "__file__", None)
        if not (type(where) is str and where.startswith(trusted)):
            return True
    return False


WATCH = Watch()
_REPLY = []  # the reply pipe, once serve has opened it: an exit says so on it first


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
    code = code & 0xFF if type(code) is int else 0 if code is None else 1
    if _REPLY:
        try:
            wire.send(_REPLY[0], {"exit": code, "signals": WATCH.after(raised=e, full=True)})
        except BaseException:
            pass
    os._exit(code)


MAX_ITEMS = 1 << 20  # an iterator returned to the tests crosses as its items, up to this many
_MAPPINGS = frozenset({collections.Counter, collections.defaultdict, collections.OrderedDict})
_ITERATORS = (collections.abc.Iterator,)


def by_value(v, depth=0):
    """``v`` as the tests would compare it in one process, in plain data: a Counter, defaultdict or
    OrderedDict as a dict, a namedtuple as a tuple, an iterator (generator, map, ...) as its items (at most
    ``MAX_ITEMS``: an endless one is refused); containers of them likewise. Anything else is returned as is
    (``wire.encode`` then decides: a subclass with an equality of its own is never plain)."""
    t = type(v)
    if depth > wire.MAX_DEPTH or t in _SCALARS:
        return v
    if t in _MAPPINGS:
        return {by_value(k, depth + 1): by_value(x, depth + 1) for k, x in dict.items(v)}
    if t is dict:
        return {k: by_value(x, depth + 1) for k, x in v.items()}
    if t in (list, tuple):
        return t(by_value(x, depth + 1) for x in v)
    if issubclass(t, tuple) and type(getattr(t, "_fields", None)) is tuple and _plain_tuple(t):
        return tuple(by_value(x, depth + 1) for x in tuple.__iter__(v))
    if t in (set, frozenset):
        return t(by_value(x, depth + 1) for x in v)
    if isinstance(v, _ITERATORS) and t.__module__ in ("builtins", "itertools", "collections"):
        items = []
        for x in v:
            if len(items) >= MAX_ITEMS:
                raise wire.NotPlain(f"an iterator with more than {MAX_ITEMS} items")
            items.append(by_value(x, depth + 1))
        return wire.Iterated(items)
    return v


_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes, range})
_TUPLE_OPS = ("__eq__", "__ne__", "__hash__", "__len__", "__iter__", "__getitem__", "__lt__", "__le__", "__gt__",
              "__ge__", "__contains__", "__bool__")  # fmt: skip


def _plain_tuple(t):
    """A namedtuple class that changes none of tuple's comparisons or access (so its value is its items)."""
    return all(getattr(t, n, None) is getattr(tuple, n, None) for n in _TUPLE_OPS)


def _answer(ns, objects, msg):
    of = msg.get("of")
    try:
        args, kwargs = wire.decode(msg["args"])
        target = ns[msg["call"]] if of is None else getattr(objects[of], msg["call"])
        r = by_value(target(*args, **kwargs))  # an iterator's items are the call's: what they raise, it raised
    except SystemExit as e:
        _exit(e)
    except BaseException as e:
        traceback.print_exc()
        return {"raise": _describe(e), "signals": WATCH.after(raised=e)}
    try:
        return {"value": wire.encode(r), "signals": WATCH.after()}
    except (wire.NotPlain, RecursionError) as e:
        signals = WATCH.after(value=r)
        if of is None and isinstance(target, type):  # a new instance of a class: it stays here, the tests get a handle
            objects.append(r)
            return {"object": len(objects) - 1, "type": str(getattr(target, "__name__", "candidate"))[:100],
                    "signals": signals}  # fmt: skip
        return {
            "raise": ["TypeError", f"{msg['call']} returned {e}: only plain data reaches the tests"],
            "signals": signals,
        }


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
        _REPLY.append(wf)
        q = json.loads(rf.readline())
        ns = {"__name__": "solution", "__builtins__": builtins}
        WATCH.install()
        try:
            exec(compile(q.pop("code"), "solution.py", "exec", dont_inherit=True), ns)
        except SystemExit as e:
            _exit(e)
        except BaseException as e:
            traceback.print_exc()
            _flush()
            wire.send(wf, {"raise": _describe(e), "signals": WATCH.after(raised=e, full=True)})
            os._exit(1)
        names = {n: k for n in q["names"] if n in ns and (k := _kind(ns[n])) is not None}
        signals = WATCH.after(full=True)
        for n in q["names"]:  # a value the tests will read that is not plain data
            if n in ns and names.get(n) is None and _overrides(ns[n], WATCH.trusted):
                signals = sorted({*signals, "code.eq_override"})
        wire.send(wf, {"names": names, "signals": signals})
        _flush()
        objects = []
        while True:
            line = rf.readline()
            if not line:
                os._exit(0)
            msg = json.loads(line)
            reply = {"report": 1, "signals": WATCH.after(full=True)} if "report" in msg else _answer(ns, objects, msg)
            _flush()
            wire.send(wf, reply)
    except SystemExit as e:
        _exit(e)
    except BaseException:
        traceback.print_exc()
        _flush()
    os._exit(1)
