"""PostgreSQL persistence for registered verifiers, for replicas that share one registry.

    python -m verifiers.fronts.server --registry postgresql://rlvr:secret@db.internal:5432/rlvr

Same table and rules as the SQLite store (``verifiers/service/store.py``): one row per name, the spec as
JSON text, tombstones so a version never goes back, one transaction per change. What PostgreSQL
adds is that several servers on several hosts write to it at once: each write takes a transaction
advisory lock on its name, so two replicas registering the same name are serialised and the second
sees the first's row (ALREADY_EXISTS, or version n+1 with ``replace``). Table creation is serialised
the same way, so replicas can start together on an empty database.

The table is created in the first schema of the connection's ``search_path``; to keep it out of
``public``, add ``?options=-csearch_path%3Drlvr`` to the URL. A lost connection is reopened once per
operation; a server that cannot be reached is a ``StoreError`` naming the URL without its password.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg

from verifiers.service.store import SCHEMA, SCHEMA_VERSION, RegistryStore, Row, StoreError, already_exists

T = TypeVar("T")
LOCK_SPACE = 0x726C7672  # "rlvr": the first key of every advisory lock taken here
META = "CREATE TABLE IF NOT EXISTS rlvr_registry_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


class PostgresStore(RegistryStore):
    def __init__(self, url: str, connect_timeout_s: float = 5.0):
        self.url = url
        self.path = redact(url)
        self._timeout = max(1, int(connect_timeout_s))
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._run(self._create_schema)

    # -- connection -----------------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(
                self.url, autocommit=True, connect_timeout=self._timeout, application_name="rlvr-verifier-registry"
            )
        except psycopg.Error as e:
            raise StoreError(
                f"registry {self.path}: cannot connect to PostgreSQL ({_first_line(e)}): check the URL, "
                "that the server runs and accepts this host (pg_hba.conf)"
            ) from None

    def _run(self, op: Callable[[psycopg.Connection], T], *, write: bool = False) -> T:
        """``op`` on the connection, reopened when it was lost; a read is tried again once on the new one
        (a write is not: its commit may have landed). Errors become StoreError."""
        with self._lock:
            for attempt in (0, 1):
                if self._conn is None or self._conn.closed or self._conn.broken:
                    self._conn = self._connect()
                try:
                    return op(self._conn)
                except psycopg.OperationalError as e:
                    self._conn.close()
                    self._conn = None
                    if attempt or write:
                        raise StoreError(f"registry {self.path}: PostgreSQL failed ({_first_line(e)})") from None
                except psycopg.Error as e:
                    raise StoreError(f"registry {self.path}: {type(e).__name__}: {_first_line(e)}") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- schema ---------------------------------------------------------------------------------------
    @staticmethod
    def _create_schema(conn: psycopg.Connection) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SPACE,))
            conn.execute(SCHEMA.replace("updated_at  REAL", "updated_at  DOUBLE PRECISION"))
            conn.execute(META)
            conn.execute(
                "INSERT INTO rlvr_registry_meta VALUES ('schema_version', %s) ON CONFLICT (key) DO UPDATE "
                "SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    # -- reading --------------------------------------------------------------------------------------
    def load(self) -> list[Row]:
        rows = self._run(
            lambda c: c.execute(
                "SELECT name, kind, description, spec, version FROM verifiers WHERE deleted = 0 ORDER BY name"
            ).fetchall()
        )
        return [Row.decode(*r) for r in rows]

    def marker(self) -> tuple:
        row = self._run(
            lambda c: c.execute("SELECT coalesce(sum(version), 0), coalesce(sum(deleted), 0) FROM verifiers").fetchone()
        )
        return (float(row[0]), float(row[1]))

    def integrity(self) -> str:
        def check(c: psycopg.Connection) -> str:
            bad = c.execute("SELECT count(*) FROM verifiers WHERE version < 1 OR deleted NOT IN (0, 1)").fetchone()
            return "ok" if bad[0] == 0 else f"{bad[0]} rows with an impossible version or deleted flag"

        return self._run(check)

    # -- writing --------------------------------------------------------------------------------------
    def put(self, name: str, kind: str, description: str, spec: dict, *, replace: bool) -> int:
        blob = json.dumps(spec, sort_keys=True)

        def write(c: psycopg.Connection) -> int:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, name))
                row = c.execute("SELECT version, deleted FROM verifiers WHERE name = %s", (name,)).fetchone()
                if row is not None and not row[1] and not replace:
                    raise already_exists(name, row[0])
                version = 1 if row is None else row[0] + 1
                c.execute(
                    "INSERT INTO verifiers (name, kind, description, spec, version, deleted, updated_at) "
                    "VALUES (%s, %s, %s, %s, %s, 0, %s) ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, "
                    "description = excluded.description, spec = excluded.spec, version = excluded.version, "
                    "deleted = 0, updated_at = excluded.updated_at",
                    (name, kind, description, blob, version, time.time()),
                )
                return version

        return self._run(write, write=True)

    def delete(self, name: str) -> bool:
        def tombstone(c: psycopg.Connection) -> bool:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, name))
                cur = c.execute(
                    "UPDATE verifiers SET deleted = 1, updated_at = %s WHERE name = %s AND deleted = 0",
                    (time.time(), name),
                )
                return cur.rowcount > 0

        return self._run(tombstone, write=True)


def _first_line(e: Any) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
