"""The sandbox has one door (issue 52): no product module outside the pool's room holds a pool, a gate or
limits at module level, and no code but the wiring module (verifiers/service/wiring.py) builds a pool or a
gate. Read from the source (ast), so a second door cannot come back unseen."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("proto", "languages", "sandbox", "in_sandbox", "verifiers", "trainer")
BUILT = {"SandboxPool", "FairGate"}  # what only the wiring module builds
HELD = BUILT | {"ServiceLimits", "SandboxConfig"}  # what no module holds in a global
WIRING = "verifiers/service/wiring.py"
POOL_ROOM = "sandbox/pool.py"
GLOBAL_NAME = re.compile(r"(^|_)(pool|pools|gate|gates|limits)$", re.IGNORECASE)


def _names(node: ast.AST | None) -> set[str]:
    """Every bare or dotted name an expression mentions (``SandboxPool``, ``pool.SandboxPool``)."""
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _called(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def problems(root: Path) -> list[str]:
    """What breaks the one-door rule in the tree at ``root`` (empty: nothing)."""
    found = []
    for room in ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(), rel)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _called(node) in BUILT and rel != WIRING:
                    found.append(f"{rel}:{node.lineno} builds a {_called(node)} (only {WIRING} does)")
                if isinstance(node, ast.Global) and rel != POOL_ROOM:
                    held = [n for n in node.names if GLOBAL_NAME.search(n)]
                    found += [f"{rel}:{node.lineno} rebinds a module-level {n}" for n in held]
            if rel == POOL_ROOM:
                continue
            for stmt in tree.body:  # module level only
                targets, value, annotation = [], None, None
                if isinstance(stmt, ast.Assign):
                    targets, value = stmt.targets, stmt.value
                elif isinstance(stmt, ast.AnnAssign):
                    targets, value, annotation = [stmt.target], stmt.value, stmt.annotation
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                typed = HELD & _names(annotation)
                built = isinstance(value, ast.Call) and _called(value) in HELD
                if names and (typed or built):
                    found.append(f"{rel}:{stmt.lineno} holds {', '.join(names)} at module level")
    return found


def test_no_second_door_into_the_sandbox():
    assert problems(ROOT) == []


def test_the_rule_sees_a_module_level_pool_a_gate_built_elsewhere_and_a_global_limits(tmp_path):
    """The check itself can fail: the shapes the old toolchain pool had are each reported."""
    bad = tmp_path / "verifiers" / "kinds" / "x.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from sandbox.pool import SandboxPool\nfrom verifiers.service.fair import FairGate\n"
        "from verifiers.shapes.limits import ServiceLimits\n"
        "_pool: SandboxPool | None = None\n_limits = ServiceLimits()\n"
        "def configure(limits):\n    global _limits\n    _limits = limits\n"
        "def gate():\n    return FairGate(2)\n"
    )
    found = problems(tmp_path)
    assert any("holds _pool" in p for p in found) and any("holds _limits" in p for p in found), found
    assert any("rebinds a module-level _limits" in p for p in found), found
    assert any("builds a FairGate" in p for p in found), found
