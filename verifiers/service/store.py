"""Persistence for registered verifiers (built-ins are code, never stored): one interface,
``RegistryStore``, and a backend per URL scheme, picked by ``registry.open_store``: a file path (or
``sqlite:///path``) is SQLite (this module, the default); ``postgresql://…`` is PostgreSQL
(``verifiers/service/store_postgres.py``), for replicas that share one registry. Both keep the same table
and the same rules; what follows holds for both.

One row per name. A registration or removal is one ``BEGIN IMMEDIATE … COMMIT`` transaction in WAL mode
with ``synchronous=FULL``: a process killed at any instant (SIGKILL included) leaves either the old
row or the new one, never half of one, and a registration the client saw succeed is on disk.

Removal keeps the row as a tombstone (``deleted = 1``) so that ``version`` only ever grows for a
name: a verifier removed and registered again gets a version it never had, and a verdict cached
under an older version cannot be served for it.

Several servers may share one store (one SQLite file on one host, or one PostgreSQL anywhere): the
store is the authority (a version is assigned inside the write transaction, so two replicas never
hand out the same one), and each server's registry compares ``marker()`` with what it loaded, at
most every second and at once on an unknown name, to pick up the others' changes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from verifiers.shapes.base import AlreadyExists, ServiceError

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS verifiers (
    name        TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    spec        TEXT NOT NULL,            -- JSON: the kind's fields
    version     INTEGER NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL NOT NULL
)
"""


class StoreError(ServiceError):
    """The registry file cannot be used (corrupt, not SQLite, unwritable)."""

    status = "INTERNAL"


@dataclass
class Row:
    name: str
    kind: str
    description: str
    spec: dict
    version: int

    @classmethod
    def decode(cls, name: str, kind: str, description: str, spec: str, version: int) -> Row:
        """A row as stored; a spec that is not JSON is kept as ``{"__corrupt__": text}`` (the registry skips it)."""
        try:
            return cls(name, kind, description, json.loads(spec), int(version))
        except (ValueError, TypeError):
            return cls(name, kind, description, {"__corrupt__": spec}, int(version))


def already_exists(name: str, version: int) -> AlreadyExists:
    return AlreadyExists(f"verifier {name!r} is already registered (version {version}): set replace to overwrite it")


class RegistryStore(ABC):
    """Where registered verifiers live. Thread-safe. ``path``: where it is, fit for logs (no password)."""

    path: str

    @abstractmethod
    def load(self) -> list[Row]:
        """Every live row, by name."""

    @abstractmethod
    def put(self, name: str, kind: str, description: str, spec: dict, *, replace: bool) -> int:
        """Insert or (with ``replace``) overwrite ``name`` in one transaction; returns its new version.
        Raises AlreadyExists when the name is live and ``replace`` is false."""

    @abstractmethod
    def delete(self, name: str) -> bool:
        """Turn ``name`` into a tombstone; False when it was not registered."""

    @abstractmethod
    def marker(self) -> tuple:
        """Changes whenever any write happened: (sum of versions, number of tombstones). Every put raises
        the first, every delete the second, and nothing lowers the first."""

    @abstractmethod
    def integrity(self) -> str:
        """'ok', or what is wrong."""

    @abstractmethod
    def close(self) -> None: ...


class Store(RegistryStore):
    """SQLite. ``path=None`` keeps everything in memory (unit tests)."""

    def __init__(self, path: str | None):
        self.path = path or ":memory:"
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            ok = self._db.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                raise sqlite3.DatabaseError(ok)
            self._db.execute(SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise StoreError(
                f"registry {self.path} is unusable ({e}): move it aside to start with an empty registry"
            ) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def load(self) -> list[Row]:
        """Every live row, by name. Rows whose spec is not JSON are skipped (and reported by name)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT name, kind, description, spec, version FROM verifiers WHERE deleted = 0 ORDER BY name"
            ).fetchall()
        return [Row.decode(*r) for r in rows]

    def put(self, name: str, kind: str, description: str, spec: dict, *, replace: bool) -> int:
        """Insert or (with ``replace``) overwrite ``name`` atomically; returns its new version."""
        blob = json.dumps(spec, sort_keys=True)
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute("SELECT version, deleted FROM verifiers WHERE name = ?", (name,)).fetchone()
                if row is not None and not row[1] and not replace:
                    raise already_exists(name, row[0])
                version = 1 if row is None else row[0] + 1
                self._db.execute(
                    "INSERT INTO verifiers (name, kind, description, spec, version, deleted, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, 0, ?) ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, "
                    "description = excluded.description, spec = excluded.spec, version = excluded.version, "
                    "deleted = 0, updated_at = excluded.updated_at",
                    (name, kind, description, blob, version, time.time()),
                )
                self._db.execute("COMMIT")
                return version
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def delete(self, name: str) -> bool:
        """Turn ``name`` into a tombstone; False when it was not registered."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE verifiers SET deleted = 1, updated_at = ? WHERE name = ? AND deleted = 0", (time.time(), name)
            )
            return cur.rowcount > 0

    def marker(self) -> tuple:
        with self._lock:
            return tuple(self._db.execute("SELECT total(version), total(deleted) FROM verifiers").fetchone())

    def integrity(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0]
