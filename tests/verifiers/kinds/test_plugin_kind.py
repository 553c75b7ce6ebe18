"""The verifier plug-in seam (verifiers/kinds/table.py): a new kind is one file (tests/toy_kind.py) plus one
``register_builtin`` line, and is then served over a real gRPC server on loopback like the built-ins:
Verify, VerifyBatch (its own request check naming the item), ListVerifiers, GetVerifier. Every
registered built-in declares the seam (options schema, sandbox entry, warm-up, result type), and a
class that does not is refused with the missing names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from verifiers.client import Outcome, VerifierClient, VerifierError
from verifiers.fronts.server import build_server
from verifiers.kinds import table as kinds
from verifiers.service.core import VerifierService
from verifiers.service.registry import Registry
from verifiers.shapes.base import Verdict

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def toy_server():
    kinds.register_builtin("shout", "tests.toy_kind:Shout")  # the one registration line
    try:
        registry = Registry(None)
        service = VerifierService(registry, None)  # the toy runs nothing in the sandbox: no pool needed
        server, _, port = build_server(service, "127.0.0.1", 0)
        server.start()
        try:
            with VerifierClient(f"127.0.0.1:{port}", timeout_s=10, retries=0) as c:
                yield c
        finally:
            server.stop(0).wait()
            service.close()
            registry.close()
    finally:
        kinds.BUILTINS.pop("shout", None)


def test_a_kind_added_by_one_file_and_one_line_is_served_over_grpc(toy_server):
    c = toy_server
    assert c.verify("shout", "  HELLO \n", "hello").outcome == Outcome.CORRECT
    r = c.verify("shout", " HELLO", "hello", options={"strip": "0"})
    assert r.outcome == Outcome.INCORRECT and r.reward == 0.0
    batch = c.verify_batch(
        [
            {"verifier": "shout", "completion": "A", "reference": "a"},
            {"verifier": "math", "completion": "$\\boxed{2}$", "reference": "2"},
        ]
    )
    assert [b.outcome for b in batch] == [Outcome.CORRECT, Outcome.CORRECT]  # beside a built-in (host fast path)
    with pytest.raises(VerifierError) as e:
        c.verify_batch([{"verifier": "shout", "completion": "A", "reference": "a", "options": {"strip": "x"}}])
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "items[0]" in str(e.value)
    info = {v.name: v for v in c.list_verifiers()}["shout"]
    assert info.builtin and info.kind == "builtin" and "capitals" in info.description
    assert c.get_verifier("shout").name == "shout"


def test_every_builtin_declares_the_seam():
    for name, v in kinds.builtin_verifiers().items():
        cls = type(v)
        assert isinstance(cls.options, dict) and all(isinstance(k, str) for k in cls.options), name
        assert isinstance(cls.sandbox_entry, str) and isinstance(cls.warmup, str), name
        assert issubclass(cls.result, Verdict), name
    warm = kinds.sandbox_warmup()
    assert kinds.build_builtin("math").warmup in warm and kinds.build_builtin("code").warmup in warm
    assert warm.rstrip().endswith("gc.freeze()")
    assert (
        "in_sandbox.code" not in kinds.build_builtin("math").warmup
    )  # the math warm-up no longer loads code's harness


# the modules whose code reads each kind's options
READERS = {
    "math": ["verifiers/kinds/math/verifier.py"],
    "code": ["verifiers/kinds/code/options.py"],  # the one reader: CodeOptions.parse
    "language": ["verifiers/kinds/consistency.py"],
}


def _options_read(path: Path) -> set[str]:
    """Option names a module reads: ``options.get("k")``, ``options["k"]``, ``"k" in options`` (any ``*.options``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            owner, key = node.func.value, node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript):
            owner, key = node.value, node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In):
            owner, key = node.comparators[0], node.left
        else:
            continue
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "options" and isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
    return found


@pytest.mark.parametrize("kind", sorted(READERS))
def test_the_options_schema_names_every_option_the_kind_reads(kind):
    read = set().union(*(_options_read(ROOT / p) for p in READERS[kind]))
    declared = set(type(kinds.build_builtin(kind)).options)
    assert read, f"found no option reads for {kind}: the scan is broken"
    assert read <= declared, f"{kind} reads options its schema does not declare: {sorted(read - declared)}"


@dataclass
class _Undeclared:
    name: str = "undeclared"
    kind: str = "builtin"
    description: str = ""
    version: int = 1
    default_timeout_s: float = 1.0


def test_a_kind_that_does_not_declare_the_seam_is_refused():
    kinds.register_builtin("undeclared", _Undeclared)
    try:
        with pytest.raises(TypeError, match="options, sandbox_entry, warmup, result"):
            kinds.build_builtin("undeclared")
    finally:
        kinds.BUILTINS.pop("undeclared", None)
