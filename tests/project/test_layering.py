"""The layering proto ← sandbox ← verifiers ← trainer, and in_sandbox beside them, enforced on the source
(DESIGN.md, "Rooms").

Every `import` in every module of the four packages is read with `ast` (top-level and function-level
imports alike: a lazy import is still a dependency). The rules:

- `proto` imports no package of this repository;
- `in_sandbox` (the code that runs inside the sandbox, shipped into the image as files) imports only itself:
  nothing from the host side;
- `languages` (one record per language, plain data) imports only itself;
- `sandbox` imports only itself and `languages` (the image build reads the records' packages; stdlib and the
  `docker` SDK are outside the check);
- `verifiers` may import `proto`, `languages`, `sandbox` and `in_sandbox`, never `trainer`;
- `trainer` reaches the service only through the client side of `verifiers`: `verifiers.client`
  (the RPCs), `verifiers.launch` (starts the server as a separate process, never imports it) and
  `verifiers.integrations` (adapters built on the client) and `verifiers.canaries` (known-bad completions
  replayed through a reward, on the client); never `sandbox` or `proto` directly;
- no import cycle between modules (apart from KNOWN_CYCLES, listed with the reason it still exists).

`test_a_wrong_import_is_caught` writes a module that breaks a rule into a scratch copy of the tree and
checks that the same functions report it, so the rule test itself can fail.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("proto", "languages", "in_sandbox", "sandbox", "verifiers", "trainer")
ALLOWED = {
    "proto": set(),
    "languages": {"languages"},
    "in_sandbox": {"in_sandbox"},
    "sandbox": {"sandbox", "languages"},
    "verifiers": {"verifiers", "sandbox", "proto", "in_sandbox", "languages"},
    "trainer": {"trainer", "verifiers.client", "verifiers.launch", "verifiers.integrations", "verifiers.canaries"},
}
KNOWN_CYCLES = []


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def from_module(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The absolute name of the module a `from ... import` in `path` reads (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    return ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))


def imports_of(path: Path, root: Path) -> set[str]:
    """Project modules `path` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = from_module(node, path, root)
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
    (tmp_path / "sandbox" / "leak.py").write_text("def f():\n    from verifiers.shapes.base import Outcome\n")
    (tmp_path / "in_sandbox" / "code" / "leak.py").write_text("from sandbox import backend\n")
    (tmp_path / "trainer" / "leak.py").write_text(
        "from verifiers.fronts.server import serve\nfrom sandbox import pool\n"
    )
    (tmp_path / "verifiers" / "cyc_a.py").write_text("from . import cyc_b\n")
    (tmp_path / "verifiers" / "cyc_b.py").write_text("import verifiers.cyc_a\n")
    assert violations(tmp_path) == [
        "in_sandbox.code.leak imports sandbox.backend",
        "sandbox.leak imports verifiers.shapes.base",
        "trainer.leak imports sandbox.pool",
        "trainer.leak imports verifiers.fronts.server",
    ]
    assert ["verifiers.cyc_a", "verifiers.cyc_b"] in cycles(tmp_path)


# -- inside trainer/: rooms, doors, public names ------------------------------------------------------------
# The rooms of trainer/ from the bottom up (docs/architecture.md); a module imports only its own room or one
# below it. The modules directly in trainer/ (config, cli, errors, data, policy, distributed, ...) are the
# ground floor, "trainer"; the run's management (checkpoint, interrupt, metrics, progress, ...) stands on it.
TRAINER_ROOMS = (
    "trainer",
    "trainer.run",  # what a run needs around the algorithm: the step logs through it, it sees no GRPO code
    "trainer.rollout",
    "trainer.alarm",  # the reward-hacking alarm: the step calls it (AlarmWatch.check), it sees no GRPO code
    "trainer.grpo",
    "trainer.evaluation",
    "trainer.train",
    "trainer.pipelines",
)
# the only rollout names the algorithm sees: sample, score log-probs, the rollout itself, a backend's type
ROLLOUT_DOORS = {
    "trainer.rollout.decode": {"Rollout", "generate_rollout"},
    "trainer.rollout.logprobs": {"completion_logprobs"},
    "trainer.rollout.backends": {"RolloutBackend", "make_backend"},
    "trainer.rollout.tool_decode": {"generate_tool_rollout"},  # tool rollouts: the third way samples are made
    "trainer.rollout.tools": {"ToolRunner", "ToolTrace", "tool_signals"},  # their executor and what they did
}
SCANNED = ("trainer", "tests", "bench", "examples")


def trainer_room(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 2 and ".".join(parts[:2]) in TRAINER_ROOMS:
        return ".".join(parts[:2])
    return "trainer"


def room_violations(root: Path) -> list[str]:
    bad = []
    rank = {r: i for i, r in enumerate(TRAINER_ROOMS)}
    for src, targets in sorted(graph(root).items()):
        if not src.startswith("trainer"):
            continue
        for t in sorted(targets):
            if t.startswith("trainer") and rank[trainer_room(t)] > rank[trainer_room(src)]:
                bad.append(f"{src} imports {t} (a room above)")
    return bad


def imported_names(root: Path):
    """(file, module, name) for every project name a scanned file takes from another module: each
    `from <project module> import name`, and each `module.name` read through an imported project module."""
    for folder in PACKAGES + SCANNED[1:]:
        for path in sorted((root / folder).rglob("*.py")):
            if "_pb2" in path.name:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            bound: dict[str, str] = {}  # local name -> the project module or symbol it denotes
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = from_module(node, path, root)
                    if base.split(".")[0] not in PACKAGES:
                        continue
                    for alias in node.names:
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                        yield path.relative_to(root).as_posix(), base, alias.name
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.split(".")[0] in PACKAGES:
                            top = alias.name.split(".")[0]
                            bound[alias.asname or top] = alias.name if alias.asname else top
            for node in ast.walk(tree):
                # a read (patching the binding a module looks a name up by, `mod.name = fake`, is not a use)
                attr = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                if attr and isinstance(node.value, ast.Name) and node.value.id in bound:
                    yield path.relative_to(root).as_posix(), bound[node.value.id], node.attr


def private_imports(root: Path) -> list[str]:
    """Private names (`_x`, not dunders) taken from another module, in any package, test or bench."""
    return sorted(
        {
            f"{f}: from {m} import {n}"
            for f, m, n in imported_names(root)
            if n.startswith("_") and not n.startswith("__")
        }
    )


# -- inside verifiers/: floors that are folders ---------------------------------------------------------------
# From the bottom up (verifiers/__init__.py, docs/architecture.md): the shapes every floor shares; the kinds (and
# their table); the service behind both fronts; the fronts (gRPC server, HTTP). The client side is the package's
# top (client, targets, cli, session_cli, launch, integrations, canaries): it takes only the shapes, so a trainer
# never loads the service. A module in none of these lies loose, and is reported.
VERIFIER_FLOORS = ("verifiers.shapes", "verifiers.kinds", "verifiers.service", "verifiers.fronts")
VERIFIER_CLIENT_SIDE = ("verifiers.client", "verifiers.cli", "verifiers.launch", "verifiers.integrations",
                        "verifiers.canaries", "verifiers.session_cli", "verifiers.targets")  # fmt: skip


def verifier_floor(module: str) -> int | str:
    def within(prefix: str) -> bool:
        return module == prefix or module.startswith(prefix + ".")

    for i, floor in enumerate(VERIFIER_FLOORS):
        if within(floor):
            return i
    if module == "verifiers" or any(within(p) for p in VERIFIER_CLIENT_SIDE):
        return "client side"
    return "loose"


def verifier_floor_violations(root: Path) -> list[str]:
    bad = []
    for src, targets in sorted(graph(root).items()):
        if not src.startswith("verifiers"):
            continue
        if verifier_floor(src) == "loose":
            bad.append(f"{src} lies loose: in no floor's folder and not on the client side")
        for t in sorted(x for x in targets if x.startswith("verifiers")):
            here, there = verifier_floor(src), verifier_floor(t)
            if here == "client side":
                ok = there in (0, "client side")
            else:
                ok = there not in ("client side", "loose") and here != "loose" and there <= here
            if not ok:
                bad.append(f"{src} ({here}) imports {t} ({there})")
    return bad


def test_verifier_rooms_import_downward_only():
    assert verifier_floor_violations(ROOT) == []


# modules whose re-exports are their documented public surface: the client names the outcome vocabulary for
# the trainer (which may import nothing else of verifiers)
SURFACES = {"verifiers.client"}


def top_level_names(path: Path) -> tuple[set[str], set[str]]:
    """(names a module defines, names it only imports) at its top level, `if`/`try` blocks included."""
    defined: set[str] = set()
    imported: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(sub.name)
            elif isinstance(sub, (ast.Assign, ast.AnnAssign)):
                for target in sub.targets if isinstance(sub, ast.Assign) else [sub.target]:
                    defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                imported |= {a.asname or a.name.split(".")[0] for a in sub.names}
    return defined, imported - defined


def borrowed_imports(root: Path) -> list[str]:
    """`from M import N` where module M only imports N: N is to be imported from where it is defined.
    A package's `__init__` and the SURFACES may hand names on."""
    mods = project_modules(root)
    names = {}
    found = set()
    for f, m, n in imported_names(root):
        path = mods.get(m)
        if path is None or path.name == "__init__.py" or m in SURFACES or f.endswith("__init__.py"):
            continue
        if m not in names:
            names[m] = top_level_names(path)
        if n in names[m][1]:
            found.add(f"{f}: {m}.{n}")
    return sorted(found)


def door_violations(root: Path) -> list[str]:
    """Imports by the algorithm (trainer/grpo/) of rollout names other than the doors."""
    return [
        f"{f}: from {m} import {n}"
        for f, m, n in imported_names(root)
        if f.startswith("trainer/grpo/") and m.startswith("trainer.rollout") and n not in ROLLOUT_DOORS.get(m, set())
    ]


def reexport_only(root: Path) -> list[str]:
    """Modules that import things and define nothing (a face over other modules), in every package; a
    package's ``__init__`` may: it states the public surface."""

    def is_face_line(node: ast.stmt) -> bool:  # an import, the docstring, or `__all__ = [...]`
        if isinstance(node, (ast.Import, ast.ImportFrom)) or isinstance(node, ast.Expr):
            return True
        return isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"]

    found = []
    for name, path in sorted(project_modules(root).items()):
        if path.name == "__init__.py":  # a package's face is its public surface
            continue
        body = ast.parse(path.read_text()).body
        imports = [
            n for n in body if isinstance(n, (ast.Import, ast.ImportFrom)) and getattr(n, "module", "") != "__future__"
        ]
        if imports and all(is_face_line(n) for n in body):
            found.append(name)
    return found


def test_trainer_rooms_import_downward_only():
    assert room_violations(ROOT) == []


def test_no_private_name_is_imported_from_another_module():
    assert private_imports(ROOT) == []


def test_the_algorithm_sees_only_the_rollout_doors():
    assert door_violations(ROOT) == []


def test_public_names_are_imported_from_where_they_are_defined():
    assert borrowed_imports(ROOT) == []


def test_no_module_only_reexports():
    assert reexport_only(ROOT) == []


def getattr_faces(root: Path) -> list[str]:
    """Modules with a module-level ``__getattr__``: names handed on lazily are re-exports all the same."""
    found = []
    for name, path in sorted(project_modules(root).items()):
        body = ast.parse(path.read_text()).body
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in body):
            found.append(name)
    return found


def test_no_module_hands_on_names_through_getattr():
    assert getattr_faces(ROOT) == []


def test_every_package_states_its_public_surface():
    for init in sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.splitlines()) >= 2, f"{init.relative_to(ROOT)}: no docstring naming its public surface"


@pytest.mark.slow
def test_the_trainer_checks_catch_a_breach(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in SCANNED[1:]:
        (tmp_path / folder).mkdir()
    (tmp_path / "trainer" / "rollout" / "leak.py").write_text(
        "from trainer.grpo.loss import grpo_loss\n\nUSED = grpo_loss\n"
    )
    (tmp_path / "trainer" / "run" / "leak.py").write_text(
        "from trainer.rollout.decode import Rollout\n\nUSED = Rollout\n"
    )
    (tmp_path / "trainer" / "grpo" / "peek.py").write_text(
        "from trainer.rollout.replay import Recording\n\nUSED = Recording\n"
    )
    (tmp_path / "tests" / "test_x.py").write_text("from trainer.grpo.update import _chunks\n")
    (tmp_path / "bench" / "b.py").write_text("from sandbox.image import python as image\n\nSHA = image._digest\n")
    (tmp_path / "trainer" / "face.py").write_text("from trainer.config import GRPOConfig\n\n__all__ = ['GRPOConfig']\n")
    assert room_violations(tmp_path) == [
        "trainer.rollout.leak imports trainer.grpo.loss (a room above)",
        "trainer.run.leak imports trainer.rollout.decode (a room above)",
    ]
    assert private_imports(tmp_path) == [
        "bench/b.py: from sandbox.image.python import _digest",
        "tests/test_x.py: from trainer.grpo.update import _chunks",
    ]
    assert door_violations(tmp_path) == ["trainer/grpo/peek.py: from trainer.rollout.replay import Recording"]
    assert reexport_only(tmp_path) == ["trainer.face"]
    (tmp_path / "tests" / "test_y.py").write_text("from verifiers.shapes.base import Outcome\n")
    assert borrowed_imports(tmp_path) == ["tests/test_y.py: verifiers.shapes.base.Outcome"]
    (tmp_path / "sandbox" / "lazy.py").write_text("def __getattr__(name):\n    raise AttributeError(name)\n")
    assert getattr_faces(tmp_path) == ["sandbox.lazy"]
    (tmp_path / "verifiers" / "kinds" / "code" / "peek.py").write_text(
        "from verifiers.service.core import VerifierService\n"
    )
    (tmp_path / "verifiers" / "integrations" / "heavy.py").write_text("from verifiers.kinds.math import verifier\n")
    (tmp_path / "verifiers" / "stray.py").write_text("")
    assert verifier_floor_violations(tmp_path) == [
        "verifiers.integrations.heavy (client side) imports verifiers.kinds.math.verifier (1)",
        "verifiers.kinds.code.peek (1) imports verifiers.service.core (2)",
        "verifiers.stray lies loose: in no floor's folder and not on the client side",
    ]
