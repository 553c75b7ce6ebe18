"""``enforce_signals`` (issue 37): a request option every verifier accepts, a comma list of exploit signal
names (or ``all``). A paid verdict carrying an enforced signal becomes INCORRECT with reward 0, its detail
naming the signal; without the option a signal only informs (monitor mode). Applied once, in the service
core (verifiers/service/core.py), so it holds for every kind and front: shown here over a real gRPC server
on loopback with a built-in added through the plug-in seam that emits a signal, alone and inside a composite.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierClient, VerifierError
from verifiers.fronts.server import build_server
from verifiers.kinds import table as kinds
from verifiers.service.core import VerifierService, enforce, enforced_signals
from verifiers.service.registry import Registry
from verifiers.shapes.base import Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


@dataclass
class TwoBoxes:
    """Pays a completion holding the reference, and signals answer.several when it holds 'or'."""

    name: str = "two_boxes"
    kind: str = "builtin"
    description: str = "test double: pays the reference, signals 'or'"
    version: int = 1
    default_timeout_s: float = 1.0
    options = {"strict": "unused"}
    sandbox_entry = ""
    warmup = ""
    result = Verdict

    def verify(self, req: Request, ctx: Context) -> Verdict:
        v = Verdict.of(Outcome.CORRECT if req.reference in req.completion else Outcome.INCORRECT, "graded")
        return v.signal("answer.several") if " or " in req.completion else v


@pytest.fixture(scope="module")
def served():
    kinds.register_builtin("two_boxes", lambda: TwoBoxes())
    registry = Registry(None)
    service = VerifierService(registry, None)  # nothing runs in the sandbox here
    server, _, port = build_server(service, "127.0.0.1", 0)
    server.start()
    try:
        with VerifierClient(f"127.0.0.1:{port}", timeout_s=10, retries=0) as c:
            yield c
    finally:
        server.stop(0).wait()
        service.close()
        registry.close()
        kinds.BUILTINS.pop("two_boxes", None)


def test_a_signal_informs_unless_enforced(served):
    r = served.verify("two_boxes", "3 or 4", "3")
    assert (r.outcome, r.reward, r.signals) == (Outcome.CORRECT, 1.0, ["answer.several"])  # monitor mode
    for names in ("answer.several", "answer.hedge, answer.several", "all"):
        r = served.verify("two_boxes", "3 or 4", "3", options={"enforce_signals": names})
        assert (r.outcome, r.reward, r.signals) == (Outcome.INCORRECT, 0.0, ["answer.several"]), names
        assert "answer.several enforced" in r.detail
    # another signal enforced, or a clean completion: the verdict stands
    assert served.verify("two_boxes", "3 or 4", "3", options={"enforce_signals": "answer.hedge"}).reward == 1.0
    assert served.verify("two_boxes", "3", "3", options={"enforce_signals": "all"}).reward == 1.0


def test_a_composite_passes_it_to_its_parts_and_enforces_the_union(served):
    comp = pb.CompositeVerifier(
        components=[pb.Component(verifier="two_boxes", weight=0.5), pb.Component(verifier="tag_count", weight=0.5)]
    )
    served.register(pb.RegisterVerifierRequest(name="boxes_and_tags", composite=comp))
    text = "<think>a</think><answer>3 or 4</answer>"
    assert served.verify("boxes_and_tags", text, "3").reward == 1.0
    r = served.verify("boxes_and_tags", text, "3", options={"enforce_signals": "answer.several"})
    assert (r.outcome, r.reward) == (Outcome.INCORRECT, 0.0)  # the format half is not paid either
    # enforced in a component's stored options: that part's reward is withheld, the rest is paid
    comp.components[0].options["enforce_signals"] = "answer.several"
    served.register(pb.RegisterVerifierRequest(name="boxes_enforced", composite=comp))
    r = served.verify("boxes_and_tags", text, "3")
    assert r.reward == 1.0  # the first composite is unchanged (nothing enforced)
    r = served.verify("boxes_enforced", text, "3")
    assert r.reward == 0.5 and r.components == {"two_boxes": 0.0, "tag_count": 1.0}


def test_an_unknown_signal_name_is_refused(served):
    with pytest.raises(VerifierError) as e:
        served.verify("two_boxes", "3", "3", options={"enforce_signals": "answer.sevral"})
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "answer.sevral" in e.value.message
    comp = pb.CompositeVerifier(
        components=[pb.Component(verifier="two_boxes", weight=1.0, options={"enforce_signals": "answer.sevral"})]
    )
    with pytest.raises(VerifierError) as e:
        served.register(pb.RegisterVerifierRequest(name="boxes_typo", composite=comp))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "answer.sevral" in e.value.message


def test_enforce_leaves_unpaid_and_clean_verdicts_alone():
    v = Verdict(0.0, Outcome.NO_ANSWER, "none", signals=["answer.several"])
    enforce(v, {"answer.several"})
    assert (v.outcome, v.detail) == (Outcome.NO_ANSWER, "none")  # nothing to withhold: the outcome keeps its reason
    v = Verdict(0.5, Outcome.INCORRECT, "half", signals=["code.early_exit", "answer.hedge"])
    enforce(v, {"code.early_exit"})
    assert (v.reward, v.outcome) == (0.0, Outcome.INCORRECT) and v.detail.startswith("exploit signal code.early_exit")
    assert enforced_signals(Request("math", "x")) == set()


@pytest.mark.docker
def test_through_the_real_service_a_math_signal_is_enforced_on_math_and_r1(client):
    """End to end (Docker sandbox, gRPC): math pays a right answer that hides a zero-width space and signals
    answer.invisible; enforced, the same completion earns 0, alone and through r1 (its format part too)."""
    text = "<think>1+1</think> The answer is \\boxed{2}\u200b"
    r = client.verify("math", text, "2")
    assert (r.reward, r.outcome) == (1.0, Outcome.CORRECT) and "answer.invisible" in r.signals
    r = client.verify("math", text, "2", options={"enforce_signals": "answer.invisible"})
    assert (r.reward, r.outcome) == (0.0, Outcome.INCORRECT) and "answer.invisible enforced" in r.detail
    assert client.verify("r1", text, "2").reward == 1.0
    r = client.verify("r1", text, "2", options={"enforce_signals": "all"})
    assert (r.reward, r.outcome) == (0.0, Outcome.INCORRECT) and r.components["math"] == 0.0
