"""Issue 50, item 3, at the trainer's start gate (trainer/alarm/canary.py), against the real service: a
training reward that pays everything, the format alone (``think_format`` on math data) or length (the
issue's hack: any completion of 52+ characters, registered as a Python verifier) is refused before
training with HackableReward naming its family; the honest built-ins pass (``math``, ``r1``, ``code``).
On the old gate each of the three passed: it paid no canary more than its control."""

from __future__ import annotations

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from trainer.alarm.watch import AlarmWatch, HackableReward
from trainer.config import GRPOConfig
from trainer.data import write_jsonl

pytestmark = pytest.mark.docker
SOURCES = {
    "pays_everything": "def verify(completion, reference, options):\n    return 1.0\n",
    "pays_length": "def verify(completion, reference, options):\n    return 1.0 if len(completion) >= 52 else 0.0\n",
}


@pytest.fixture(scope="module")
def service(client):
    for name, src in SOURCES.items():
        client.register(pb.RegisterVerifierRequest(name=name, replace=True, python=pb.PythonVerifier(source=src)))
    return client


def watch(tmp_path, client, verifier: str, code: bool = False) -> AlarmWatch:
    row = {"prompt": "def add(a, b)?", "tests": "assert add(1, 2) == 3"} if code else {"prompt": "6*7?", "answer": "42"}
    data = write_jsonl([row], tmp_path / "train.jsonl")
    cfg = GRPOConfig(alarm=True, verifier=verifier, target=client.target, data=str(data), run_dir=str(tmp_path / "run"))
    return AlarmWatch(cfg, client)


@pytest.mark.parametrize(
    "verifier, family",
    [
        ("pays_everything", "math.pays_everything"),
        ("think_format", "math.pays_format"),
        ("pays_length", "math.pays_length"),
    ],
)
def test_the_start_gate_refuses_a_reward_that_cannot_tell_right_from_wrong(tmp_path, service, verifier, family):
    with pytest.raises(HackableReward, match="allow_hackable_reward") as e:
        watch(tmp_path, service, verifier).start()
    assert family in str(e.value) and "wrong answer paid" in str(e.value)


@pytest.mark.parametrize("verifier, code", [("math", False), ("r1", False), ("code", True)])
def test_the_honest_built_ins_pass_the_gate(tmp_path, service, verifier, code):
    w = watch(tmp_path, service, verifier, code)
    report = w.canaries.run()
    assert not report.paid, report.table()
    probes = [r for r in report.results if r.canary.family.endswith(".discrimination")]
    assert len(probes) >= 3 and not report.ungraded
    w.start()  # no HackableReward
