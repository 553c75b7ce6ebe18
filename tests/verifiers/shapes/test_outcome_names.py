"""Outcome names come from the proto enum alone (verifiers/shapes/outcome.py).

- every ``verifier.v1.Outcome`` and ``CaseVerdict.Status`` value has a member, and back;
- no module under verifiers/, sandbox/ or trainer/ spells an outcome name as a string (an AST scan of
  string constants, docstrings and ``__all__`` left out): they use ``Outcome.X`` from
  ``verifiers.client`` (clients, the trainer) or ``verifiers.shapes.base`` (the service).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import OUTCOMES, UNGRADED, CaseStatus, Outcome

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("verifiers", "sandbox", "trainer")
ENUM_MODULE = "verifiers/shapes/outcome.py"
# Modules of other owners still spelling names, with how many; each must leave this table once fixed
# (the test fails on an entry that no longer spells any). Their owners were told what to import.
PENDING: dict[str, int] = {}
NAMES = {n.removeprefix("OUTCOME_") for n in pb.Outcome.keys()} | {
    n.removeprefix("STATUS_") for n in pb.CaseVerdict.Status.keys()
}
PREFIXES = ("OUTCOME_", "STATUS_")


def spelled_names(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string constant that is an outcome/status name or a proto prefix."""
    tree = ast.parse(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                skip.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            skip.update(id(n) for n in ast.walk(node.value))  # names a module exports, not outcomes
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
            if text in NAMES or text.startswith(PREFIXES):
                found.append((node.lineno, text))
    return found


def _modules() -> list[Path]:
    return sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py") if "_pb2" not in p.name)


def test_every_proto_value_has_a_member_and_back():
    for enum, proto, prefix in ((Outcome, pb.Outcome, "OUTCOME_"), (CaseStatus, pb.CaseVerdict.Status, "STATUS_")):
        assert {prefix + m.value for m in enum} == set(proto.keys())
        for value in proto.values():
            member = enum.from_proto(value)
            assert member.to_proto() == value and member.name == proto.Name(value).removeprefix(prefix)
    assert set(OUTCOMES) == set(Outcome) - {Outcome.UNSPECIFIED}
    assert UNGRADED == {Outcome.SANDBOX_ERROR, Outcome.BAD_REFERENCE}
    assert Outcome.CORRECT == "CORRECT" and "SANDBOX_ERROR" in UNGRADED  # records read back from JSON compare


@pytest.mark.parametrize(
    "source, hits",
    [
        ('x = r.outcome == "CORRECT"', 1),
        ('BAD = ("SANDBOX_ERROR", "BAD_REFERENCE")', 2),
        ('v = pb.Outcome.Value(f"OUTCOME_{name}")', 1),
        ('"""A CORRECT docstring."""\n__all__ = ["SANDBOX_ERROR"]\nx = Outcome.CORRECT\ny = "correct"', 0),
    ],
)
def test_the_scan_finds_spelled_names(source, hits):
    assert len(spelled_names(source)) == hits


def test_no_module_spells_an_outcome_name():
    spelled, pending_seen = [], {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel == ENUM_MODULE:
            continue
        found = spelled_names(path.read_text())
        if rel in PENDING:
            pending_seen[rel] = len(found)
            continue
        spelled += [f"{rel}:{line}: {text!r}" for line, text in found]
    assert not spelled, "outcome names spelled as strings (use verifiers.client.Outcome):\n" + "\n".join(spelled)
    grown = {k: (n, PENDING[k]) for k, n in pending_seen.items() if n > PENDING[k]}
    assert not grown, f"pending modules spell more names than before (found, allowed): {grown}"
    cleaned = [k for k, n in pending_seen.items() if n == 0]
    assert not cleaned, f"remove these from PENDING, they spell no outcome name now: {cleaned}"
