"""The outcome names, taken from the proto enums alone (proto/verifier/v1/verifier.proto).

``Outcome`` has one member per ``verifier.v1.Outcome`` value, named without the ``OUTCOME_`` prefix,
and ``CaseStatus`` one per ``CaseVerdict.Status`` value without ``STATUS_``; a value added to the proto
is a member here with nothing else to edit. Members are strings (``StrEnum``), so
``result.outcome == Outcome.CORRECT`` and comparisons with what older callers hold both work.

Nothing else in the tree spells an outcome name as a string (tests/verifiers/shapes/test_outcome_names.py scans for
it): services use ``verifiers.shapes.base``'s re-export, clients and the trainer ``verifiers.client``'s.

    >>> Outcome.from_proto(Outcome.CORRECT.to_proto()) is Outcome.CORRECT
    True
    >>> Outcome.SANDBOX_ERROR in UNGRADED
    True
"""

from __future__ import annotations

from enum import StrEnum

from proto.verifier.v1 import verifier_pb2 as pb


class _ProtoEnum(StrEnum):
    """A StrEnum whose members are a proto enum's values, its names without ``_prefix``."""

    _proto: object  # the proto EnumTypeWrapper (set on each derived class)
    _prefix: str

    @classmethod
    def from_proto(cls, value: int):
        """The member for a proto enum value (ValueError for a value this build does not know)."""
        return cls(cls._proto.Name(value).removeprefix(cls._prefix))

    def to_proto(self) -> int:
        return self._proto.Value(self._prefix + self.value)


def _derive(name: str, proto, prefix: str):
    cls = _ProtoEnum(name, [(n.removeprefix(prefix),) * 2 for n in proto.keys()], module=__name__)
    cls._proto, cls._prefix = proto, prefix
    return cls


Outcome = _derive("Outcome", pb.Outcome, "OUTCOME_")
Outcome.__doc__ = "Why a verification gave its reward (proto verifier.v1.Outcome)."
CaseStatus = _derive("CaseStatus", pb.CaseVerdict.Status, "STATUS_")
CaseStatus.__doc__ = "The verdict of one test case (proto CaseVerdict.Status)."

# What a grader can answer; UNSPECIFIED is the proto's zero value (a response that set no outcome).
OUTCOMES: tuple[Outcome, ...] = tuple(o for o in Outcome if o is not Outcome.UNSPECIFIED)
# Verdicts that say nothing about the completion: the service could not grade it (SANDBOX_ERROR) or
# the reference itself is unusable (BAD_REFERENCE). Training on a fake 0 for these would punish the model.
UNGRADED: frozenset[Outcome] = frozenset({Outcome.SANDBOX_ERROR, Outcome.BAD_REFERENCE})
