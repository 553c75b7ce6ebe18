"""Registry rules and persistence, without Docker, on both stores (a SQLite file and a throwaway
PostgreSQL, via the ``registry_url`` fixture): names, built-ins, replace/version, composite components
and cycles, cache versions, crash safety of the store, two registries sharing one store (replicas),
and remote forwarding against an in-process gRPC server that implements only Verify."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from concurrent import futures

import grpc
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.kinds.remote import RemoteVerifier, Unreachable, check_reachable
from verifiers.service.registry import InUse, Registry, open_store
from verifiers.service.store import Store, StoreError
from verifiers.shapes.base import AlreadyExists, BadRequest, Context, NotFound, PermissionDenied
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

PY = {"source": "def verify(c, r, o):\n    return 1.0\n", "entrypoint": "verify"}


def comp(*parts: tuple[str, float]) -> dict:
    return {"components": [{"verifier": n, "weight": w} for n, w in parts]}


@pytest.fixture
def reg(registry_url):
    r = Registry(registry_url)
    yield r
    r.close()


@pytest.mark.parametrize(
    "name,ok",
    [
        ("countdown", True),
        ("a", True),
        ("0x.y-z_w", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("Upper", False),
        ("-lead", False),
        ("_lead", False),
        ("has space", False),
        ("sl/ash", False),
        ("é", False),
    ],
)
def test_names(reg, name, ok):
    if ok:
        reg.add(name, "python", "", PY)
        assert reg.get(name).version == 1
    else:
        with pytest.raises(BadRequest):
            reg.add(name, "python", "", PY)


@pytest.mark.parametrize("name", ["math", "think_format", "tag_count", "r1"])
def test_builtins_cannot_be_registered_replaced_or_removed(reg, name):
    for replace in (False, True):
        with pytest.raises(PermissionDenied):
            reg.add(name, "python", "", PY, replace=replace)
    with pytest.raises(PermissionDenied):
        reg.remove(name)
    assert reg.get(name).kind == "builtin"


def test_duplicate_needs_replace_which_bumps_the_version(reg):
    reg.add("v", "python", "", PY)
    with pytest.raises(AlreadyExists):
        reg.add("v", "python", "", PY)
    assert reg.add("v", "python", "second", PY, replace=True).version == 2
    assert reg.get("v").description == "second"


def test_version_never_goes_back_after_unregister(reg):
    reg.add("v", "python", "", PY)
    reg.add("v", "python", "", PY, replace=True)
    reg.remove("v")
    with pytest.raises(NotFound):
        reg.get("v")
    assert reg.add("v", "python", "", PY).version == 3
    reg.close()
    assert Registry(reg.path).get("v").version == 3


def test_unregister_unknown_is_not_found(reg):
    with pytest.raises(NotFound):
        reg.remove("nothing_here")


@pytest.mark.parametrize(
    "kind,spec",
    [
        ("python", {"source": "  "}),
        ("python", {"source": "x", "entrypoint": "not a name"}),
        ("python", {"source": "x", "entrypoint": "class"}),
        ("remote", {"target": ""}),
        ("remote", {"target": "nohost"}),
        ("remote", {"target": "h:99999"}),
        ("composite", {"components": []}),
        ("composite", comp(("math", 0.0))),
        ("composite", comp(("math", float("nan")))),
        ("composite", comp(("math", 1), ("math", 1))),
        ("composite", comp(("Bad Name", 1))),
        ("lua", {}),
    ],
    ids=[
        "empty-source",
        "bad-entrypoint",
        "keyword-entrypoint",
        "empty-target",
        "no-port",
        "bad-port",
        "no-components",
        "zero-weight",
        "nan-weight",
        "duplicate-component",
        "bad-component-name",
        "unknown-kind",
    ],
)
def test_malformed_specs_are_bad_requests(reg, kind, spec):
    with pytest.raises(BadRequest):
        reg.add("x", kind, "", spec)


def test_composite_components_must_exist_and_cycles_are_refused(reg):
    with pytest.raises(NotFound, match="missing"):
        reg.add("c", "composite", "", comp(("math", 0.5), ("missing", 0.5)))
    with pytest.raises(BadRequest, match="itself"):
        reg.add("c", "composite", "", comp(("c", 1.0)))
    reg.add("a", "python", "", PY)
    reg.add("b", "composite", "", comp(("a", 1.0), ("r1", 1.0)))
    reg.add("c", "composite", "", comp(("b", 1.0)))
    with pytest.raises(BadRequest, match="cycle: a -> c -> b -> a"):
        reg.add("a", "composite", "", comp(("c", 1.0)), replace=True)
    assert reg.get("a").kind == "python"  # the refused replacement changed nothing


def test_a_component_in_use_cannot_be_removed(reg):
    reg.add("a", "python", "", PY)
    reg.add("b", "composite", "", comp(("a", 1.0)))
    with pytest.raises(InUse, match="b"):
        reg.remove("a")
    reg.remove("b")
    reg.remove("a")


def test_cache_version_follows_components_and_skips_remotes(reg):
    reg.add("a", "python", "", PY)
    reg.add("b", "composite", "", comp(("a", 0.5), ("think_format", 0.5)))
    before = reg.cache_version("b")
    reg.add("a", "python", "", PY, replace=True)
    assert reg.cache_version("b") != before  # a composite's cached verdicts go stale with its parts
    reg.add("rem", "remote", "", {"target": "127.0.0.1:1"})  # reachability is the service's check, not the registry's
    reg.add("c", "composite", "", comp(("rem", 1.0)))
    assert reg.cache_version("rem") is None and reg.cache_version("c") is None


def test_registered_verifiers_survive_reopening(registry_url):
    path = registry_url
    r = Registry(path)
    r.add("p", "python", "desc", {**PY, "example_completion": "e"})
    r.add("c", "composite", "", comp(("p", 0.7), ("math", 0.3)))
    r.add("rem", "remote", "", {"target": "127.0.0.1:50099", "verifier": "math"})
    r.close()
    r2 = Registry(path)
    assert [v.name for v in r2.all()][-3:] == ["c", "p", "rem"]
    assert r2.get("p").spec() == {**PY, "example_completion": "e", "example_reference": ""}
    assert [(p.verifier, p.weight) for p in r2.get("c").parts] == [("p", 0.7), ("math", 0.3)]
    assert r2.get("rem").remote_name == "math"


def _insert_raw(path: str, rows: list[tuple]) -> None:
    """Rows written behind the registry's back (an older version, a hand edit)."""
    if path.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(path, autocommit=True) as db:
            for row in rows:
                db.execute("INSERT INTO verifiers VALUES (%s, %s, %s, %s, %s, %s, %s)", row)
    else:
        with sqlite3.connect(path) as db:
            db.executemany("INSERT INTO verifiers VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def test_a_row_that_no_longer_builds_is_skipped_not_fatal(registry_url):
    path = registry_url
    Registry(path).add("good", "python", "", PY)
    _insert_raw(path, [("bad", "lua", "", "{}", 1, 0, 0), ("bad2", "python", "", "not json", 1, 0, 0)])
    r = Registry(path)
    assert r.get("good") and not {"bad", "bad2"} & {v.name for v in r.all()}


def test_a_file_that_is_not_sqlite_is_reported(tmp_path):
    p = tmp_path / "reg.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="move it aside"):
        Store(str(p))


def test_store_is_chosen_by_the_url_scheme(tmp_path):
    assert isinstance(open_store(str(tmp_path / "a.sqlite")), Store)
    assert open_store(f"sqlite:///{tmp_path}/b.sqlite").path == f"{tmp_path}/b.sqlite"
    assert open_store(None).path == ":memory:"
    with pytest.raises(StoreError, match="unknown scheme"):
        open_store("mysql://db/registry")


def test_an_unreachable_postgresql_is_reported_without_its_password():
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as err:
        Registry("postgresql://rlvr:s3cret@127.0.0.1:1/registry?connect_timeout=2")
    assert "s3cret" not in str(err.value) and "rlvr:***@127.0.0.1:1" in str(err.value)


def _write_forever(path: str, start: int, started) -> None:
    s = open_store(path)
    i = start
    while True:
        s.put(f"v{i}", "python", "x" * 5000, {"source": "def verify(c, r, o):\n    return 1\n" * 50, "i": i},
              replace=True)  # fmt: skip
        started.set()
        i += 1


def test_sigkill_mid_write_leaves_the_store_consistent(registry_url):
    path = registry_url
    ctx = multiprocessing.get_context("spawn")
    for round_ in range(5):
        started = ctx.Event()
        p = ctx.Process(target=_write_forever, args=(path, round_ * 100_000, started))
        p.start()
        assert started.wait(60)
        time.sleep(0.05 + 0.07 * round_)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        s = open_store(path)
        assert s.integrity() == "ok"
        rows = s.load()
        assert any(r.name == f"v{round_ * 100_000}" for r in rows)  # what was acknowledged is there
        for row in rows:  # every row is whole: its spec parses and names its own number
            assert row.spec["i"] == int(row.name[1:]) and row.description == "x" * 5000
        s.close()


# -- replicas: two registries sharing one store -----------------------------------------------------------
def test_a_verifier_registered_through_one_replica_is_served_by_the_other(registry_url):
    a, b = Registry(registry_url, refresh_s=0.2), Registry(registry_url, refresh_s=0.2)
    try:
        a.add("p", "python", "first", PY)
        assert b.get("p").description == "first"  # a new name: at once
        a.add("p", "python", "second", PY, replace=True)
        time.sleep(0.3)
        assert (b.get("p").version, b.get("p").description) == (2, "second")  # a replacement: within refresh_s
        with pytest.raises(AlreadyExists, match="version 2"):  # the store, not b's memory, decides
            b.add("p", "python", "", PY)
        assert b.add("p", "python", "third", PY, replace=True).version == 3
        b.add("c", "composite", "", comp(("p", 1.0)))
        with pytest.raises(InUse, match="c"):  # a's check sees b's composite
            a.remove("p")
        b.remove("c")
        a.remove("p")
        time.sleep(0.3)
        with pytest.raises(NotFound):
            b.get("p")
        assert [v.name for v in b.all() if not b.is_builtin(v.name)] == []
    finally:
        a.close()
        b.close()


def test_a_lost_postgresql_leaves_the_loaded_verifiers_served(postgres_url, caplog):
    import psycopg

    r = Registry(postgres_url, refresh_s=0.0)
    r.add("p", "python", "", PY)
    base, db = postgres_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as c:
        c.execute(f'DROP DATABASE "{db}" WITH (FORCE)')  # the registry's connection is cut and cannot come back
    assert r.get("p").version == 1  # served from memory; the failed check is logged, not raised
    assert "could not check for changes" in caplog.text
    with pytest.raises(NotFound):
        r.get("other")
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        r.add("q", "python", "", PY)
    r.close()


def test_replicas_racing_for_one_name_get_distinct_versions(registry_url):
    regs = [Registry(registry_url) for _ in range(4)]
    got: list[int] = []
    refused: list[str] = []

    def register(r: Registry) -> None:
        for _ in range(5):
            try:
                got.append(r.add("race", "python", "", PY, replace=True).version)
            except AlreadyExists as e:
                refused.append(str(e))
        try:
            r.add(f"only-{id(r)}", "python", "", PY)
            r.add("first", "python", "", PY)  # exactly one of the four wins this name
            got.append(0)
        except AlreadyExists as e:
            refused.append(str(e))

    threads = [threading.Thread(target=register, args=(r,)) for r in regs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert sorted(v for v in got if v) == list(range(1, 21))  # 20 writes, 20 versions, none handed out twice
        assert got.count(0) == 1 and len(refused) == 3
        assert Registry(registry_url).get("race").version == 20
    finally:
        for r in regs:
            r.close()


# -- remote forwarding against a Verify-only server ---------------------------------------------------
class _VerifyOnly(pb_grpc.VerifierServiceServicer):
    def __init__(self):
        self.seen: list[tuple[pb.VerifyRequest, float]] = []

    def Verify(self, request, context):
        self.seen.append((request, context.time_remaining()))
        if request.completion == "slow":
            time.sleep(3)
        return pb.VerifyResponse(reward=0.25, outcome=pb.OUTCOME_INCORRECT, detail="from afar", components={"x": 0.25})


@pytest.fixture
def verify_only_server():
    servicer = _VerifyOnly()
    server = grpc.server(futures.ThreadPoolExecutor(4))
    pb_grpc.add_VerifierServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(0)


def _ctx(seconds: float) -> Context:
    return Context(run_job=None, lookup=None, deadline=time.monotonic() + seconds)


def test_remote_forwards_the_request_with_the_callers_deadline(verify_only_server):
    target, servicer = verify_only_server
    check_reachable(target, "anything")  # GetVerifier is UNIMPLEMENTED there: a Verify-only server is fine
    rv = RemoteVerifier("mine", target, "theirs")
    v = rv.verify(Request("mine", "c", "r", "p", {"k": "v"}, 2.0, "id7"), _ctx(4.0))
    assert (v.reward, v.outcome, v.detail, v.components) == (0.25, Outcome.INCORRECT, "from afar", {"x": 0.25})
    req, left = servicer.seen[-1]
    assert (req.verifier, req.completion, req.reference, req.prompt, dict(req.options), req.timeout_s, req.id) == (
        "theirs",
        "c",
        "r",
        "p",
        {"k": "v"},
        2.0,
        "id7",
    )
    assert 3.0 < left <= 4.1  # the remaining deadline travelled with the call
    v = rv.verify(Request("mine", "slow"), _ctx(0.5))
    assert v.outcome is Outcome.SANDBOX_ERROR and "DEADLINE_EXCEEDED" in v.detail  # the 0.5 s deadline ended it


def test_remote_unreachable_is_sandbox_error_and_refused_at_registration():
    with pytest.raises(Unreachable):
        check_reachable("127.0.0.1:1", "math", timeout_s=0.5)
    v = RemoteVerifier("r", "127.0.0.1:1").verify(Request("r", "x"), _ctx(1.0))
    assert v.outcome is Outcome.SANDBOX_ERROR and v.reward == 0.0


def test_python_registration_without_a_sandbox_is_unavailable(registry_url):
    from verifiers.service.core import VerifierService
    from verifiers.shapes.base import Unavailable

    svc = VerifierService(Registry(registry_url), pool=None)
    try:
        with pytest.raises(Unavailable, match="sandbox"):
            svc.register("p", "python", "", PY)
        with pytest.raises(NotFound):
            svc.registry.get("p")  # nothing half-registered
        svc.register("c", "composite", "", comp(("think_format", 1.0)))  # needs no sandbox
        assert svc.verify(Request("c", "<think>a</think>b")).reward == 1.0
    finally:
        svc.close()
