"""The layering proto ← sandbox ← verifiers ← trainer, enforced on the source (DESIGN.md, "Rooms").

Every `import` in every module of the four packages is read with `ast` (top-level and function-level
imports alike: a lazy import is still a dependency). The rules:

- `proto` imports no package of this repository;
- `sandbox` imports only itself (stdlib and the `docker` SDK are outside the check);
- `verifiers` may import `proto` and `sandbox`, never `trainer`;
- `trainer` reaches the service only through the client side of `verifiers`: `verifiers.client`
  (the RPCs), `verifiers.launch` (starts the server as a separate process, never imports it) and
  `verifiers.integrations` (adapters built on the client); never `sandbox` or `proto` directly;
- no import cycle between modules (apart from KNOWN_CYCLES, listed with the reason it still exists).

`test_a_wrong_import_is_caught` writes a module that breaks a rule into a scratch copy of the tree and
checks that the same functions report it, so the rule test itself can fail.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proto", "sandbox", "verifiers", "trainer")
ALLOWED = {
    "proto": set(),
    "sandbox": {"sandbox"},
    "verifiers": {"verifiers", "sandbox", "proto"},
    "trainer": {"trainer", "verifiers.client", "verifiers.launch", "verifiers.integrations"},
}
KNOWN_CYCLES = []


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> set[str]:
    """Project modules `path` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] in PACKAGES}
    return found


def project_modules(root: Path) -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            if "_pb2" not in path.name:
                mods[module_name(path, root)] = path
    return mods


def resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The project module an imported name denotes (`a.b.C` → `a.b` when C is a symbol)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def graph(root: Path) -> dict[str, set[str]]:
    mods = project_modules(root)
    edges = {}
    for name, path in mods.items():
        targets = {resolve(i, mods) for i in imports_of(path, root)}
        edges[name] = {t for t in targets if t and t != name}
    return edges


def violations(root: Path) -> list[str]:
    bad = []
    for src, targets in sorted(graph(root).items()):
        allowed = ALLOWED[src.split(".")[0]]
        for t in sorted(targets):
            if not any(t == a or t.startswith(a + ".") for a in allowed):
                bad.append(f"{src} imports {t}")
    return bad


def cycles(root: Path) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan)."""
    edges = graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_import_follows_the_layering():
    assert violations(ROOT) == []


def test_no_import_cycles():
    assert cycles(ROOT) == KNOWN_CYCLES


def test_a_wrong_import_is_caught(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(tmp_path) == [] and cycles(tmp_path) == KNOWN_CYCLES
    (tmp_path / "sandbox" / "leak.py").write_text("def f():\n    from verifiers.base import Outcome\n")
    (tmp_path / "trainer" / "leak.py").write_text("from verifiers.server import serve\nfrom sandbox import pool\n")
    (tmp_path / "verifiers" / "cyc_a.py").write_text("from . import cyc_b\n")
    (tmp_path / "verifiers" / "cyc_b.py").write_text("import verifiers.cyc_a\n")
    assert violations(tmp_path) == [
        "sandbox.leak imports verifiers.base",
        "trainer.leak imports sandbox.pool",
        "trainer.leak imports verifiers.server",
    ]
    assert ["verifiers.cyc_a", "verifiers.cyc_b"] in cycles(tmp_path)
