"""Tests that cannot pass by accident: no wall-clock assert, no skip decided by the code under test.

Two checks over every module under tests/ (by its syntax tree, nothing is imported):

* a **wall-clock assert**: an ``assert`` comparing something derived from ``time.time``,
  ``time.monotonic``, ``time.perf_counter`` (or a name or attribute called ``elapsed...``) to a value
  that is not itself such a time (an ordering of two times is fine). Timings belong in bench/; a test
  asserts on the result's own fields (timed out, signal, limit) and on the order of events.
* a **skip decided by project code**: ``pytest.skip``/``pytest.xfail`` under an ``if`` (or
  ``skipif``/``xfail`` markers, ``importorskip``) whose condition reads something imported from
  ``sandbox``, ``verifiers``, ``trainer`` or ``deploy`` (directly, through a name assigned from it, or
  through a function of the test modules that reads it). A regression in a probe would then turn a
  test into a skip. The allowed skips are the optional parts declared in tests/parts.py (``skip_unless``).

The scratch-tree tests plant one of each and show the check names them.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PROJECT = ("sandbox", "verifiers", "trainer", "deploy")
CLOCKS = {"time", "monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns", "time_ns"}
ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
SKIPS = {"skip", "xfail", "skipif", "importorskip"}


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time":
        return True
    return isinstance(f, ast.Name) and f.id in CLOCKS - {"time"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _targets(node: ast.AST) -> list[str]:
    """Names an assignment-like statement binds (a loop's or a comprehension's targets included)."""
    if isinstance(node, (ast.For, ast.comprehension)):
        return [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _value(node: ast.AST) -> ast.AST | None:
    return node.iter if isinstance(node, (ast.For, ast.comprehension)) else getattr(node, "value", None)


def _spread(scope: ast.AST, tainted: set[str], seed) -> set[str]:
    """``tainted`` plus every name ``scope`` assigns from a tainted expression (to a fixed point)."""
    out = set(tainted)
    assigns = [n for n in ast.walk(scope) if _targets(n) and _value(n) is not None]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            if (seed(_value(a)) or _names(_value(a)) & out) and not set(_targets(a)) <= out:
                out |= set(_targets(a))
                changed = True
    return out


def _a_time_by_name(name: str) -> bool:
    return "elapsed" in name or "stamp" in name


def _time_derived(node: ast.AST, timed: set[str]) -> bool:
    for n in ast.walk(node):
        if _is_clock(n) or (isinstance(n, ast.Name) and (n.id in timed or _a_time_by_name(n.id))):
            return True
        if isinstance(n, ast.Attribute) and _a_time_by_name(n.attr):
            return True
    return False


def wall_clock_asserts(tree: ast.Module) -> list[int]:
    """Line numbers of asserts comparing a time (clock reading, ``elapsed``) to a number."""
    lines = []
    for fn in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        timed = _spread(
            fn,
            set(),
            lambda v: any(_is_clock(n) or (isinstance(n, ast.Name) and _a_time_by_name(n.id)) for n in ast.walk(v)),
        )
        for a in (n for n in ast.walk(fn) if isinstance(n, ast.Assert)):
            for c in (n for n in ast.walk(a.test) if isinstance(n, ast.Compare)):
                sides = [c.left, *c.comparators]
                if not any(isinstance(op, ORDER) for op in c.ops):
                    continue
                derived = [_time_derived(s, timed) for s in sides]
                if any(derived) and not all(derived):
                    lines.append(a.lineno)
    return sorted(set(lines))


def _project_imports(tree: ast.AST) -> set[str]:
    """Names bound by imports from the project's packages anywhere in ``tree``."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] in PROJECT:
            out |= {a.asname or a.name for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name.split(".")[0] in PROJECT}
    return out


def project_functions(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Per test module (dotted name), its top-level functions whose answer reads project code."""
    found: dict[str, set[str]] = {m: set() for m in trees}
    changed = True
    while changed:
        changed = False
        for mod, tree in trees.items():
            tainted = _module_taint(mod, tree, found)
            for fn in (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                if fn.name not in found[mod] and (_project_imports(fn) or _names(fn) & tainted):
                    found[mod].add(fn.name)
                    changed = True
    return found


def _module_taint(mod: str, tree: ast.Module, found: dict[str, set[str]]) -> set[str]:
    """Module-level names whose value comes from project code (imports, tainted helpers, assignments)."""
    names = {n for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)) for n in _project_imports(s)}
    for s in tree.body:
        if isinstance(s, ast.ImportFrom) and s.module and s.module.startswith("tests.") and s.module in found:
            names |= {a.asname or a.name for a in s.names if a.name in found[s.module]}
    names |= found[mod]
    top = ast.Module(body=[s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))], type_ignores=[])
    return _spread(top, names, lambda v: False)


def _skip_call(node: ast.AST) -> str:
    """'skip', 'xfail', 'skipif', 'importorskip' for pytest.<that>(...) / pytest.mark.<that>(...)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SKIPS:
        root = node.func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id == "pytest":
            return node.func.attr
    return ""


def _conditions(tree: ast.Module):
    """(skip call, the expressions deciding it, the function it sits in or the module)."""
    parents: dict[ast.AST, ast.AST] = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for call in (n for n in ast.walk(tree) if _skip_call(n)):
        kind, conds, node, fn = _skip_call(call), [], call, tree
        if kind in ("skipif", "xfail") and (call.args or any(k.arg == "condition" for k in call.keywords)):
            conds += call.args[:1] + [k.value for k in call.keywords if k.arg == "condition"]
        if kind == "importorskip" and call.args:
            mod = call.args[0]
            if isinstance(mod, ast.Constant) and str(mod.value).split(".")[0] in PROJECT:
                conds.append(ast.Name(id=str(mod.value).split(".")[0]))
        while node in parents:
            child, node = node, parents[node]
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and child is not node.test:
                conds.append(node.test)
            if isinstance(node, ast.Try) and child in node.handlers:  # skipped when the try's body raised
                conds += node.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn is tree:
                fn = node
        yield call, conds, fn


def project_skips(tree: ast.Module, module_taint: set[str]) -> list[int]:
    """Line numbers of skips/xfails whose condition is computed by project code."""
    lines = []
    for call, conds, fn in _conditions(tree):
        tainted = _spread(fn, module_taint | _project_imports(fn), lambda v: False)
        pseudo = {n.id for c in conds for n in ast.walk(c) if isinstance(n, ast.Name) and n.id in PROJECT}
        if pseudo or any(_names(c) & tainted for c in conds):
            lines.append(call.lineno)
    return sorted(set(lines))


def scan(root: Path, package: str = "tests") -> dict[str, list[str]]:
    """{relative path: ["line N: what"]} for every finding under ``root``."""
    trees: dict[str, ast.Module] = {}
    paths: dict[str, Path] = {}
    for p in sorted(root.rglob("*.py")):
        mod = ".".join((package, *p.relative_to(root).with_suffix("").parts))
        trees[mod] = ast.parse(p.read_text(), filename=str(p))
        paths[mod] = p
    functions = project_functions(trees)
    found: dict[str, list[str]] = {}
    for mod, tree in trees.items():
        rows = [f"line {n}: wall-clock assert" for n in wall_clock_asserts(tree)]
        rows += [
            f"line {n}: skip decided by project code" for n in project_skips(tree, _module_taint(mod, tree, functions))
        ]
        if rows:
            found[str(paths[mod].relative_to(root))] = rows
    return found


def test_no_test_module_asserts_on_the_wall_clock_or_skips_on_project_code():
    found = scan(TESTS)
    assert not found, "\n".join(f"tests/{p}: {r}" for p, rows in found.items() for r in rows)


SCRATCH = {
    "test_slow.py": """
import time
def test_fast(run):
    t0 = time.monotonic()
    run()
    took = time.monotonic() - t0
    assert took < 5
def test_result_field(r):
    assert r.elapsed_s < 2 + 5
def test_ordering_is_fine():
    a = time.monotonic()
    b = time.monotonic()
    assert a <= b
""",
    "helpers.py": """
def bwrap_reason():
    from sandbox.backends.bwrap import bwrap_usable
    ok, why = bwrap_usable()
    return why
""",
    "test_skips.py": """
import pytest
from sandbox.backends.podman import podman_available
from tests.helpers import bwrap_reason
from tests.parts import skip_unless
OK, WHY = podman_available()
needs = pytest.mark.skipif(not OK, reason=WHY)
def test_via_helper():
    why = bwrap_reason()
    if why:
        pytest.skip(why)
def test_import():
    pytest.importorskip("verifiers.launch")
@skip_unless("gpu")
def test_declared_optional_is_fine():
    pytest.importorskip("peft")
def test_when_the_probe_raises():
    try:
        podman_available()
    except OSError:
        pytest.skip("no podman")
""",
}


def test_the_check_names_each_planted_example(tmp_path):
    for name, text in SCRATCH.items():
        (tmp_path / name).write_text(text)
    found = scan(tmp_path)
    assert found == {
        "test_slow.py": ["line 7: wall-clock assert", "line 9: wall-clock assert"],
        "test_skips.py": [
            "line 7: skip decided by project code",
            "line 11: skip decided by project code",
            "line 13: skip decided by project code",
            "line 21: skip decided by project code",
        ],
    }, found
