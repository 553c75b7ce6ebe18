"""Shared fixtures. Docker-marked tests need the engine and the sandbox image (`make setup`)."""

from __future__ import annotations

import os
import subprocess

# Before anything imports torch: OpenMP threads that finish a parallel region sleep instead of spinning. The
# suite runs two workers on two cores beside Docker and servers; spinning threads took the CPU the other
# worker's processes were waiting for (bench/results/alarm_cost.txt: a training step 3.9-4.3 s with the
# default policy against 0.34-0.36 s passive on this machine under load). Subprocesses inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from tests.parts import pg_bindir, require
from verifiers.client import VerifierClient
from verifiers.launch import LocalServer


def docker_ready() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# -- skips: only the optional parts tests/parts.py declares ------------------------------------------------
DECLARED = "optional part "  # how tests/parts.py's skip reasons begin (skip_unless; a part present likewise)


def _skips(config) -> tuple[list[str], list[str]]:
    """(declared, undeclared) skip lines of this session: 'nodeid: reason'."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    rows = []
    for rep in reporter.stats.get("skipped", []) if reporter else []:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rows.append(f"{rep.nodeid}: {reason.removeprefix('Skipped: ')}")
    return [r for r in rows if DECLARED in r], [r for r in rows if DECLARED not in r]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    declared, undeclared = _skips(config)
    if declared or undeclared:
        terminalreporter.section("skips by part (tests/parts.py)")
        terminalreporter.line(f"{len(declared)} for declared optional parts, {len(undeclared)} for anything else")
        for row in undeclared:
            terminalreporter.line(f"UNDECLARED {row}")


def pytest_sessionfinish(session, exitstatus):
    """Under `make test` (RLVR_REQUIRE_PARTS=1, so .ci/run too) a skip for anything but a declared optional
    part fails the run: a required part must not go missing quietly."""
    import os

    if os.environ.get("RLVR_REQUIRE_PARTS") and _skips(session.config)[1] and session.exitstatus == 0:
        session.exitstatus = 1


# -- order: the files that hold a slow test first --------------------------------------------------------
def pytest_collection_modifyitems(session, config, items):
    """Files holding a test marked ``slow`` run first (a stable sort: the order is otherwise unchanged), so
    that under ``-n N --dist loadfile`` the workers end on small files together instead of one worker
    starting a long file last. pyproject's ``--no-loadscope-reorder`` keeps this order: xdist would
    otherwise queue the files by their number of tests, the long service files (few tests each) last."""
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in heavy)


@pytest.fixture(scope="session")
def verifier_server(tmp_path_factory):
    """One real verifier service (2 sandbox containers) on a free loopback port for the session, its HTTP
    front on too (OpenRLHF's /get_reward grading with ``math``): the gRPC and the HTTP files share it."""
    if not docker_ready():
        pytest.fail("Docker engine not reachable: run `make setup` (tests marked docker need it)")
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = ["--http-port", "0", "--reward-verifier", "math"]
    with LocalServer(pool_size=2, log_path=str(log), extra_args=args) as srv:
        yield srv


@pytest.fixture(scope="session")
def served_http(verifier_server):
    """(the session's server, an httpx.Client on its HTTP port)."""
    import httpx

    from tests.http_helpers import http_base

    with httpx.Client(base_url=http_base(verifier_server), timeout=120) as http:
        yield verifier_server, http


@pytest.fixture(scope="session")
def client(verifier_server):
    with VerifierClient(verifier_server.target, timeout_s=120) as c:
        yield c


@pytest.fixture(scope="session")
def langs_service(tmp_path_factory):
    """One real in-process service over the one pool (2 Python sandboxes, 2 toolchain sandboxes) for every
    code-language file a worker runs (tests/langs_helpers.make_service): its start cost a pool start per file.
    Tests that count compiles clear its artifact cache first, and tests that must not meet the verdict cache
    grade fresh prose."""
    from tests.langs_helpers import make_service

    svc, close = make_service(tmp_path_factory)
    yield svc
    close()


# -- PostgreSQL: a throwaway cluster for the registry's shared (postgresql://) backend ------------------
@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL cluster of its own for the session: initdb in a temp dir, a free loopback port, trust
    auth for the user ``rlvr``, fsync off (it is thrown away). Run as the ``postgres`` user when the tests
    run as root. PostgreSQL is a required part (tests/parts.py, `make postgres`): where it is missing or
    cannot start, the tests that use it fail saying why; they never skip."""
    import os
    import pwd
    import shutil
    import socket
    import tempfile
    from pathlib import Path

    require("postgresql")
    bindir = pg_bindir()
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")  # the part's check: as root there is a 'postgres' user
        run_as = ["runuser", "-u", "postgres", "--"]
    base = Path(tempfile.mkdtemp(prefix="rlvr-pg-"))
    if run_as:
        os.chown(base, user.pw_uid, user.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data, pg_ctl = base / "data", str(bindir / "pg_ctl")
    opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    try:
        subprocess.run(
            [*run_as, str(bindir / "initdb"), "-D", str(data), "-U", "rlvr", "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            text=True,
            timeout=180,
        )
        subprocess.run(
            [*run_as, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-t", "90", "-o", opts, "start"],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as e:
        why = (getattr(e, "stderr", "") or str(e)).strip().splitlines()[-1:] or [type(e).__name__]
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"could not start a throwaway PostgreSQL with {bindir}: {why[0]}")
    try:
        yield f"postgresql://rlvr@127.0.0.1:{port}"
    finally:
        subprocess.run(
            [*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60
        )
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh, empty database on the session's PostgreSQL: ``postgresql://rlvr@127.0.0.1:PORT/tXXXX``."""
    import uuid

    import psycopg

    name = f"t{uuid.uuid4().hex[:16]}"
    with psycopg.connect(f"{postgres_server}/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return f"{postgres_server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def registry_url(request, tmp_path):
    """Where a registry lives, once per backend: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "registry.sqlite")
    return request.getfixturevalue("postgres_url")
