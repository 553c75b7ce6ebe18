"""The checked-in stubs are what `make proto` generates from the .proto file."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ["verifier_pb2.py", "verifier_pb2.pyi", "verifier_pb2_grpc.py"]


def test_checked_in_stubs_match_a_fresh_generation(tmp_path):
    proto = "proto/verifier/v1/verifier.proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            str(ROOT),
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            str(ROOT / proto),
        ],
        check=True,
    )
    for name in GENERATED:
        fresh = (tmp_path / "proto/verifier/v1" / name).read_text()
        checked_in = (ROOT / "proto/verifier/v1" / name).read_text()
        assert fresh == checked_in, f"{name} is stale: run `make proto` and commit the result"


def test_contract_names_are_fixed():
    from proto.verifier.v1 import verifier_pb2 as pb

    assert pb.DESCRIPTOR.package == "verifier.v1"
    svc = pb.DESCRIPTOR.services_by_name["VerifierService"]
    for rpc in ["Verify", "VerifyBatch", "ListVerifiers", "RegisterVerifier", "UnregisterVerifier"]:
        assert rpc in svc.methods_by_name
    fields = pb.VerifyRequest.DESCRIPTOR.fields_by_name
    assert [
        fields[n].number for n in ["verifier", "completion", "reference", "prompt", "options", "timeout_s", "id"]
    ] == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
    ]
    assert pb.Outcome.Value("OUTCOME_SANDBOX_ERROR") == 6
