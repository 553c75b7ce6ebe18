"""Least exposure (issue 30), on real server processes over loopback: a verifier's definition is the
admin's to read (names, kinds, descriptions stay public); a cache hit never answers another caller's
submission and is reported to the admin only; remote targets are host:port only (no unix socket); the
admin token is in neither /proc/<pid>/environ nor /proc/<pid>/cmdline of the running server."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from tests.http_helpers import http_service
from verifiers.kinds.remote import check_target
from verifiers.shapes.base import BadRequest

pytestmark = pytest.mark.docker
TOKEN = "s3cret-admin-token-for-exposure-test"
ADMIN = {"authorization": f"Bearer {TOKEN}"}
# a component's stored options are checked against the keys it reads (issue 42): language reads "script"
SECRET_PART = {"verifier": "language", "weight": 0.25, "options": {"script": "the-secret-option"}}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with http_service(tmp_path_factory.mktemp("exposure"), token=TOKEN, pool_size=1) as (srv, http):
        body = {"name": "mixed", "description": "format, partly",
                "composite": {"components": [{"verifier": "think_format", "weight": 0.75}, SECRET_PART]}}  # fmt: skip
        r = http.post("/v1/verifiers", json=body, headers=ADMIN)
        assert r.status_code == 200, r.text
        yield srv, http


def _proc(pid: int, what: str) -> bytes:
    return Path(f"/proc/{pid}/{what}").read_bytes()


@pytest.mark.slow
def test_the_token_is_not_in_the_servers_environment_or_arguments(served):
    srv, http = served
    for what in ("environ", "cmdline"):
        assert TOKEN.encode() not in _proc(srv.proc.pid, what), what
    # and it still guards registration
    bad = {"name": "x1", "composite": {"components": [{"verifier": "think_format", "weight": 1}]}}
    assert http.post("/v1/verifiers", json=bad).status_code == 401


@pytest.mark.slow
def test_a_token_file_keeps_it_out_of_sight(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    with http_service(tmp_path, extra_args=("--admin-token-file", str(path)), pool_size=1) as (srv, http):
        for what in ("environ", "cmdline"):
            assert TOKEN.encode() not in _proc(srv.proc.pid, what), what
        body = {"name": "x2", "composite": {"components": [{"verifier": "think_format", "weight": 1}]}}
        assert http.post("/v1/verifiers", json=body).status_code == 401
        assert http.post("/v1/verifiers", json=body, headers=ADMIN).status_code == 200


def test_definitions_are_the_admins_names_and_kinds_are_public(served):
    srv, http = served
    public = http.get("/v1/verifiers/mixed").json()
    assert public["name"] == "mixed" and public["kind"] == "composite" and public["description"]
    assert "the-secret-option" not in str(public) and "language" not in str(public)
    listed = {v["name"]: v for v in http.get("/v1/verifiers").json()["verifiers"]}
    assert listed["mixed"]["kind"] == "composite" and "the-secret-option" not in str(listed)
    assert "the-secret-option" in str(http.get("/v1/verifiers/mixed", headers=ADMIN).json())
    assert "the-secret-option" in str(http.get("/v1/verifiers", headers=ADMIN).json())
    with grpc.insecure_channel(srv.target) as ch:  # the same over gRPC
        stub = pb_grpc.VerifierServiceStub(ch)
        assert not stub.GetVerifier(pb.GetVerifierRequest(name="mixed")).HasField("composite")
        got = stub.GetVerifier(pb.GetVerifierRequest(name="mixed"), metadata=tuple(ADMIN.items()))
        assert got.composite.components[1].options["script"] == "the-secret-option"


def test_a_cache_hit_never_answers_another_callers_submission(served):
    _, http = served
    item = {"verifier": "think_format", "completion": "<think>only alice wrote this</think>42"}
    alice, bob = {"x-client-id": "alice"}, {"x-client-id": "bob"}
    assert http.post("/v1/verify", json=item, headers=alice).json()["cached"] is False
    # alice again: a hit, but only the admin is told so
    assert http.post("/v1/verify", json=item, headers=alice).json()["cached"] is False
    assert http.post("/v1/verify", json=item, headers={**alice, **ADMIN}).json()["cached"] is True
    # bob (even as the admin) never gets alice's entry: it is graded afresh in his own scope
    assert http.post("/v1/verify", json=item, headers={**bob, **ADMIN}).json()["cached"] is False
    batch = http.post("/v1/verify_batch", json={"items": [item]}, headers=alice).json()
    assert batch["results"][0]["cached"] is False


@pytest.mark.parametrize(
    "target",
    [
        "unix:///var/run/docker.sock",
        "unix:/var/run/docker.sock",
        "dns:///h:1",
        "ipv4:127.0.0.1:50051",
        "unix-abstract:sock",
        "h/x:1",
    ],
)
def test_remote_targets_are_host_port_only(served, target):
    _, http = served
    with pytest.raises(BadRequest, match="not host:port"):
        check_target(target)
    r = http.post("/v1/verifiers", json={"name": "rm", "remote": {"target": target}}, headers=ADMIN)
    assert r.status_code == 400 and "not host:port" in r.json()["error"]["message"], r.text
