"""The structure of the ``code`` verifier's tests, read from their parsed source (``ast``), never from text.

Runs in the tests' process of the sandbox (harness.py), on
the tests and the prelude only: they are trusted problem data. The candidate's code is never parsed here.
It answers the two questions the harness used to guess from substrings:

* **does ``check`` exist, and do the tests call it?** ``check`` exists when a top-level statement of the
  tests defines it; the tests call it when a top-level statement is the expression ``check(...)``. A
  call nested in anything (an ``if __name__ == "__main__":``, a loop, a helper, an assert message, a
  comment, a string) does not count: the harness then calls ``check(candidate)`` itself, which at worst
  runs the tests twice and never zero times.
* **which function is under test?** The entry point the request names; else the single name the tests
  pass to their top-level ``check(NAME)``; else, where every name the asserts read from outside is a
  builtin (``assert pow(2, 3) == 8``: an MBPP task named like a builtin), the one builtin called in
  every assert and innermost in each (``all(pow(a, b) == c for ...)``: ``pow``). That name is then the
  candidate's, not the builtin. Where the asserts read any other name the candidate must supply
  (``assert sorted(my_sort(x)) == ...``), the builtins stay the builtins, so a candidate that shadows
  a helper the tests use changes nothing.

>>> shape = Shape.of([parse("def check(c):\\n    assert c(1) == 2, 'check(c) failed'\\n")])
>>> shape.defines_check, shape.calls_check, shape.subject
(True, False, '')
>>> Shape.of([parse("assert all(pow(a, b) == c for a, b, c in [(2, 3, 8)])")]).subject
'pow'
>>> Shape.of([parse("assert math.isclose(pow(2, 0.5), 1.4142, rel_tol=1e-4)")]).subject
'pow'
>>> Shape.of([parse("assert sorted(f([2, 1])) == [1, 2]")]).subject
''
"""

import ast
import builtins
from dataclasses import dataclass

BUILTINS = frozenset(vars(builtins))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def parse(source, filename="tests.py"):
    """The module's tree (a SyntaxError is raised to the caller)."""
    return ast.parse(source, filename)


def _top_level_defined(tree):
    """Names a module's own statements bind at its top level (defs, classes, imports, assignments, loops)."""
    out = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _local(node):
    """Names bound inside ``node`` itself (comprehension targets, lambda arguments, walrus targets)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _calls(node):
    """(callee name, call node) for every call of a plain name inside ``node``."""
    return [(n.func.id, n) for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def _asserts(tree):
    """The assert statements a module runs itself (not those inside its functions or classes)."""
    out, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assert):
            out.append(node)
        elif not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _innermost(name, asserts, among):
    """True when, in every assert, no call of ``name`` has a call of another name in ``among`` inside it."""
    for a in asserts:
        for callee, call in _calls(a):
            if callee == name and any(c != name and c in among for c, _ in _calls(call)[1:]):
                return False
    return True


def _builtin_subject(asserts, defined):
    """The builtin-named function the asserts test ('' if they read other outside names, '?' if unclear)."""
    called = None
    for a in asserts:
        local = _local(a)
        bases = {id(n.value) for n in ast.walk(a) if isinstance(n, ast.Attribute)}  # math in math.isclose: a module
        outside = {
            n.id for n in ast.walk(a) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in bases
        }
        outside -= local | defined
        if outside - BUILTINS:
            return ""  # the candidate supplies a name that is not a builtin: that is what is under test
        names = {c for c, _ in _calls(a)} - local - defined
        called = names if called is None else called & names
    if not called:
        return ""
    inner = [n for n in sorted(called) if _innermost(n, asserts, called)]
    return inner[0] if len(inner) == 1 else "?"


COUNTER = "__rlvr_assert__"  # the tests' process counts each assert statement it reaches through this name


class _Count(ast.NodeTransformer):
    def visit_Assert(self, node):
        call = ast.Expr(ast.Call(ast.Name(COUNTER, ast.Load()), [], []))
        return [ast.copy_location(call, node), node]


def counted(tree):
    """``tree`` with a call of ``COUNTER`` before each assert statement (how many ran is proof tests ran)."""
    return ast.fix_missing_locations(_Count().visit(tree))


def _runs(trees):
    """Names called by a top-level expression statement of the tests (``test_x()``: already run by them)."""
    out = set()
    for t in trees:
        for stmt in t.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                out.add(call.func.id)
    return out


def _imports(trees):
    """The top-level module names the tests import, anywhere in them."""
    out = set()
    for t in trees:
        for n in ast.walk(t):
            if isinstance(n, ast.Import):
                out.update(a.name.split(".")[0] for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                out.add(n.module.split(".")[0])
    return out


def _collect(trees):
    """(test functions to run, their definition order; test classes; why the tests cannot run, or '')."""
    funcs, classes, why, called = [], [], "", _runs(trees)
    helpers = {c for t in trees for c, _ in _calls(t)}  # a test* function the tests call is a helper of theirs
    for t in trees:
        for stmt in t.body:
            if isinstance(stmt, ast.AsyncFunctionDef) and stmt.name.startswith("test") and stmt.name not in helpers:
                why = why or f"{stmt.name} is an async test function"
            elif isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test"):
                a = stmt.args
                if len(a.posonlyargs) + len(a.args) > len(a.defaults) or any(d is None for d in a.kw_defaults):
                    if stmt.name not in helpers:  # one the tests call with its arguments is a helper of theirs
                        why = why or f"{stmt.name} takes arguments (pytest fixtures or parametrize)"
                elif stmt.name not in called:
                    funcs.append(stmt.name)
            elif isinstance(stmt, ast.ClassDef):
                classes.append(stmt.name)
    return tuple(funcs), tuple(classes), why


def _collected_asserts(trees, funcs, classes):
    """The asserts inside the test functions and classes the harness runs (pytest's shape: ``def test_pow():
    assert pow(2, 3) == 8`` names its function under test as a top-level assert does)."""
    out = []
    for t in trees:
        for stmt in t.body:
            if (
                isinstance(stmt, ast.FunctionDef)
                and stmt.name in funcs
                or isinstance(stmt, ast.ClassDef)
                and stmt.name in classes
            ):
                out += [n for n in ast.walk(stmt) if isinstance(n, ast.Assert)]
    return out


@dataclass(frozen=True)
class Shape:
    """What the parsed tests say about themselves (see the module docstring)."""

    defines_check: bool  # a top-level ``def check``
    calls_check: bool  # a top-level statement ``check(...)``
    subject: str  # the function under test when the tests name it ('' none, '?' several possible)
    test_functions: tuple = ()  # top-level ``def test*()`` the tests define and do not call themselves (pytest's)
    test_classes: tuple = ()  # top-level classes: run where they are unittest.TestCase or pytest ``Test*`` classes
    imports: frozenset = frozenset()  # top-level module names the tests import
    cannot_run: str = ""  # why the tests' shape cannot be run here ('' when it can)

    @classmethod
    def of(cls, trees, prelude=None):
        """The shape of the tests (one tree, or one per MBPP assert) and, optionally, the prelude's tree."""
        defined = set()
        for t in trees + ([prelude] if prelude is not None else []):
            defined |= _top_level_defined(t)
        defines = calls = False
        passed = set()
        for t in trees:
            for stmt in t.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "check":
                    defines = True
                call = stmt.value if isinstance(stmt, ast.Expr) else None
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check":
                    calls = True
                    arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
                    passed.add(arg.id if isinstance(arg, ast.Name) else "")
        funcs, classes, why = _collect(trees)
        more = dict(test_functions=funcs, test_classes=classes, imports=frozenset(_imports(trees)), cannot_run=why)
        if calls:  # HumanEval's own form: the tests say what they check
            return cls(defines, calls, passed.pop() if len(passed) == 1 else "", **more)
        asserts = [a for t in trees for a in _asserts(t)] + _collected_asserts(trees, funcs, classes)
        return cls(defines, calls, _builtin_subject(asserts, defined) if asserts else "", **more)
