"""``make eval`` never reuses a grade that the verifier serving now would not give (issue 51): the resume
fingerprint covers the verifier's version and definition on the serving registry (VerifierInfo.digest) and
the service's grader version, so replacing a verifier, or pointing the same command at another server whose
registry holds another definition under the same name and version, grades again. A failed evaluation
leaves no empty samples file; a missing verifier is named the way the user names it (``VERIFIER=`` under
make, ``--verifier`` otherwise). Real servers on loopback (LocalServer), real sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from trainer.evaluation import evaluate
from verifiers.client import VerifierClient
from verifiers.launch import ROOT, LocalServer

pytestmark = pytest.mark.docker

STRICT = "def verify(completion, reference, options):\n    return completion.strip() == reference.strip()\n"
PAYS_ALL = "def verify(completion, reference, options):\n    return 1.0\n"
ROWS = [
    {"id": "a", "completion": "4", "reference": "4"},
    {"id": "b", "completion": "5", "reference": "4"},
    {"id": "c", "completion": "7", "reference": "7"},
    {"id": "d", "completion": "x", "reference": "7"},
]


def register(client: VerifierClient, name: str, source: str, replace: bool = True) -> pb.VerifierInfo:
    return client.register(
        pb.RegisterVerifierRequest(name=name, python=pb.PythonVerifier(source=source), replace=replace)
    )


def evaluate_file(target: str, f: Path, out: Path, verifier: str) -> dict:
    return evaluate.main(
        [
            "--completions",
            str(f),
            "--verifier",
            verifier,
            "--out",
            str(out),
            "--target",
            target,
            "--format-verifier",
            "none",
            "--no-progress",
        ]
    )


def completions(tmp_path: Path) -> Path:
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return f


def test_a_replaced_verifier_grades_again_instead_of_reusing_stale_grades(tmp_path, verifier_server, client):
    f, out = completions(tmp_path), tmp_path / "r.json"
    first = register(client, "h51_strict", STRICT)
    r1 = evaluate_file(verifier_server.target, f, out, "h51_strict")
    assert r1["accuracy"] == pytest.approx(0.5) and r1["graded_now"] == 4
    again = evaluate_file(verifier_server.target, f, out, "h51_strict")  # nothing changed: all reused
    assert (again["reused"], again["graded_now"]) == (4, 0)
    second = register(client, "h51_strict", PAYS_ALL)  # --replace: version 2, now paying everything
    assert second.version == first.version + 1 and second.digest != first.digest
    r2 = evaluate_file(verifier_server.target, f, out, "h51_strict")
    assert (r2["reused"], r2["graded_now"]) == (0, 4) and r2["accuracy"] == pytest.approx(1.0)


def test_another_registry_with_the_same_name_and_version_grades_again(tmp_path, verifier_server, client):
    f, out = completions(tmp_path), tmp_path / "r.json"
    if "h51_same" in {v.name for v in client.list_verifiers()}:
        client.unregister("h51_same")
    with LocalServer(pool_size=1, log_path=str(tmp_path / "other.log")) as other, VerifierClient(other.target) as oc:
        a = register(client, "h51_same", STRICT, replace=False)
        b = register(oc, "h51_same", PAYS_ALL, replace=False)
        assert a.version == b.version == 1 and a.digest != b.digest and a.grader_version == b.grader_version
        r1 = evaluate_file(verifier_server.target, f, out, "h51_same")
        r2 = evaluate_file(other.target, f, out, "h51_same")
    assert r1["accuracy"] == pytest.approx(0.5)
    assert (r2["reused"], r2["graded_now"]) == (0, 4) and r2["accuracy"] == pytest.approx(1.0)
    client.unregister("h51_same")


def test_a_composite_digest_follows_its_components(verifier_server, client):
    register(client, "h51_part", STRICT)
    client.register(
        pb.RegisterVerifierRequest(
            name="h51_comp",
            replace=True,
            composite=pb.CompositeVerifier(components=[pb.Component(verifier="h51_part", weight=1.0)]),
        )
    )
    before = client.get_verifier("h51_comp")
    register(client, "h51_part", PAYS_ALL)
    after = client.get_verifier("h51_comp")
    assert after.version == before.version and after.digest != before.digest  # the composite itself is unchanged


def test_a_failed_evaluation_leaves_no_empty_samples_file(tmp_path, verifier_server):
    f, out = completions(tmp_path), tmp_path / "r.json"
    with pytest.raises(SystemExit):
        evaluate_file(verifier_server.target, f, out, "h51_no_such_verifier")
    assert not out.with_suffix(".samples.jsonl").exists()


def _eval_cmd(target: str, f: Path, out: Path) -> list[str]:
    return [str(ROOT / ".venv/bin/python"), "-m", "trainer.evaluation.evaluate", "--completions", str(f),
            "--verifier", "h51_missing", "--out", str(out), "--target", target, "--no-progress"]  # fmt: skip


def test_a_missing_verifier_is_named_the_way_the_user_names_it(tmp_path, verifier_server):
    f, out = completions(tmp_path), tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if k != "RLVR_FROM_MAKE"}
    direct = subprocess.run(
        _eval_cmd(verifier_server.target, f, out), capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert direct.returncode == 1 and "h51_missing not registered" in direct.stderr
    assert "--verifier NAME" in direct.stderr and "VERIFIER=" not in direct.stderr
    made = subprocess.run(
        [
            "make",
            "-s",
            "-o",
            "setup",
            "eval",
            f"COMPLETIONS={f}",
            "VERIFIER=h51_missing",
            f"OUT={out}",
            f"TARGET={verifier_server.target}",
            "ARGS=--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert made.returncode != 0 and "h51_missing not registered" in made.stderr
    assert "VERIFIER=NAME" in made.stderr and "--verifier" not in made.stderr
