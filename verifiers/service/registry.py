"""Name → verifier. Built-ins are code and fixed; registered verifiers (python, remote, composite,
reward_model) are added over gRPC and persisted in a store (``verifiers/service/store.py``: a SQLite file by default, or a
``postgresql://`` URL shared by replicas), so they survive a restart.
Each kind (how its spec is built, converted to and from proto, and checked) is declared once, in
``verifiers/kinds/table.py``.

Replicas sharing one store: the store is the authority. Each registry compares the store's change
marker with what it loaded at most every ``refresh_s`` (1 s) and at once on an unknown name or
before a write, so a verifier registered through one replica is served by all of them (a new name
at once, a replacement or removal within ``refresh_s``).

Rules: names match ``NAME_RE``; a built-in name can be neither registered, replaced nor removed
(PERMISSION_DENIED); a taken name needs ``replace`` (ALREADY_EXISTS otherwise), which bumps the
version; a composite's components must exist and may not lead back to it; a verifier that a
composite uses cannot be removed until that composite is (FAILED_PRECONDITION).

Checks that need the sandbox or the network (the python dry run, the remote's reachability) are the
service's job and happen before ``add``; ``add`` itself only takes the lock long enough to write one
SQLite transaction.
"""

from __future__ import annotations

import logging
import threading
import time

from verifiers.kinds import table as kinds
from verifiers.kinds.composite import Composite, Part
from verifiers.kinds.table import check_name
from verifiers.service.store import RegistryStore, Store, StoreError
from verifiers.shapes.base import AlreadyExists, BadRequest, NotFound, PermissionDenied, ServiceError, Verifier

log = logging.getLogger(__name__)

MAX_DESCRIPTION = 1000
STORE_RETRY_S = 15.0  # after the shared store failed to answer, serve what is loaded this long before asking again


class InUse(ServiceError):
    status = "FAILED_PRECONDITION"


def open_store(location: str | None) -> RegistryStore:
    """The store a ``--registry`` value names: ``postgresql://``/``postgres://`` URLs, ``sqlite:///path``,
    a plain file path, or None (SQLite in memory)."""
    if location and location.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        from verifiers.service.store_postgres import PostgresStore  # psycopg only where it is used

        return PostgresStore(location)
    if location and location.startswith("sqlite://"):  # SQLAlchemy's form: sqlite:///rel/path, sqlite:////abs/path
        location = location.removeprefix("sqlite://").removeprefix("/") or None
    if location and "://" in location:
        raise StoreError(f"registry {location!r}: unknown scheme; use a file path, sqlite:///path or postgresql://…")
    return Store(location)


def builtin_verifiers() -> dict[str, Verifier]:
    """The built-in verifiers, one per ``register_builtin`` line (verifiers/kinds/table.py)."""
    return kinds.builtin_verifiers()


def build(name: str, kind: str, description: str, spec: dict, version: int = 1) -> Verifier:
    """A verifier object from its stored form. Raises BadRequest on a malformed spec."""
    if len(description) > MAX_DESCRIPTION:
        raise BadRequest(f"description is over {MAX_DESCRIPTION} characters")
    return kinds.kind(kind).build(name, description, spec, version)  # verifiers/kinds/table.py: one table of kinds


class Registry:
    def __init__(self, path: str | None = None, *, refresh_s: float = 1.0):
        """``path``: a SQLite file, ``sqlite:///path``, a ``postgresql://`` URL, or None (in memory)."""
        self.path = path
        self.refresh_s = refresh_s
        self._builtins = builtin_verifiers()
        self._custom: dict[str, Verifier] = {}
        self._lock = threading.Lock()  # guards _custom
        self._write = threading.RLock()  # serialises add/remove/refresh (a writer may look names up)
        self.store = open_store(path)
        self._marker: tuple | None = None
        self._checked = 0.0  # monotonic time of the last look at the store's marker
        self.refresh(force=True)
        if self._custom:
            log.info("registry %s: %d registered verifiers loaded", self.store.path, len(self._custom))

    def close(self) -> None:
        self.store.close()

    # -- following the store (other replicas' writes) -----------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Reload from the store when it changed. Never blocks a reader: when another thread is writing
        or refreshing, return at once (unless ``force``, which the writers themselves use)."""
        if not self._write.acquire(blocking=force):
            return
        try:
            self._sync()
        finally:
            self._write.release()

    def _sync(self) -> None:  # caller holds _write
        self._checked = time.monotonic()
        marker = self.store.marker()
        if marker == self._marker:
            return
        custom: dict[str, Verifier] = {}
        with self._lock:
            old = dict(self._custom)
        for row in self.store.load():
            have = old.get(row.name)
            if have is not None and getattr(have, "version", None) == row.version:
                custom[row.name] = have  # unchanged: keep the object (and whatever it has warmed up)
                continue
            try:
                custom[row.name] = build(row.name, row.kind, row.description, row.spec, row.version)
            except ServiceError as e:
                log.error("registry %s: skipping verifier %r: %s", self.store.path, row.name, e)
        with self._lock:
            self._custom = custom
        self._marker = marker

    def _maybe_refresh(self, now: bool = False) -> None:
        """Refresh when ``refresh_s`` has passed (or ``now``: waiting for a refresh in progress)."""
        if now or time.monotonic() - self._checked >= self.refresh_s:
            try:
                self.refresh(force=now)
            except ServiceError as e:  # the store is unreachable: keep serving what is loaded, look again later
                self._checked = time.monotonic() + STORE_RETRY_S
                log.warning(
                    "registry %s: could not check for changes (next try in %.0f s): %s",
                    self.store.path,
                    STORE_RETRY_S,
                    e,
                )

    # -- reading ------------------------------------------------------------------------------------
    def get(self, name: str) -> Verifier:
        v = self._builtins.get(name)
        if v is not None:
            return v
        self._maybe_refresh()
        with self._lock:
            v = self._custom.get(name)
        if v is None and self._checked <= time.monotonic():  # registered through another replica a moment ago?
            self._maybe_refresh(now=True)
            with self._lock:
                v = self._custom.get(name)
        if v is None:
            raise NotFound(f"unknown verifier {name!r}; ListVerifiers shows the registered names")
        return v

    def peek(self, name: str) -> Verifier | None:
        """The verifier ``name`` as loaded now, without asking the store (cheap enough for an event loop)."""
        v = self._builtins.get(name)
        if v is None:
            with self._lock:
                v = self._custom.get(name)
        return v

    def all(self) -> list[Verifier]:
        self._maybe_refresh()
        with self._lock:
            return list(self._builtins.values()) + sorted(self._custom.values(), key=lambda v: v.name)

    def is_builtin(self, name: str) -> bool:
        return name in self._builtins

    def cache_version(self, v: Verifier | str) -> str | None:
        """What the cache key must include for a verifier: its version and, for a composite, its
        components' (so replacing a component invalidates the composite). None: do not cache.
        Pass the object being run, not its name, so a replacement in between cannot mix them up."""
        v = self.get(v) if isinstance(v, str) else v
        if not getattr(v, "cacheable", True):
            return None
        own = str(getattr(v, "version", 1))
        if not isinstance(v, Composite):
            return own
        subs = [self.cache_version(p.verifier) for p in v.parts]
        if any(s is None for s in subs):
            return None
        return own + "[" + ",".join(f"{p.verifier}={s}" for p, s in zip(v.parts, subs, strict=True)) + "]"

    def dependents(self, name: str) -> list[str]:
        with self._lock:
            return sorted(
                v.name
                for v in self._custom.values()
                if isinstance(v, Composite) and any(p.verifier == name for p in v.parts)
            )

    # -- writing ------------------------------------------------------------------------------------
    def check_writable(self, name: str, replace: bool) -> None:
        check_name(name)
        if name in self._builtins:
            raise PermissionDenied(f"{name!r} is a built-in verifier: it cannot be replaced; choose another name")
        with self._lock:
            v = self._custom.get(name)
        if v is not None and not replace:
            raise AlreadyExists(
                f"verifier {name!r} is already registered (version {v.version}): set replace to overwrite it"
            )

    def check_components(self, name: str, parts: list[Part]) -> None:
        """Every component exists, and none leads back to ``name`` (directly or through composites)."""
        for p in parts:
            if p.verifier == name:
                raise BadRequest(f"composite {name!r} cannot contain itself")
            self._components_exist(name, p)
        for p in parts:
            path = self._path_to(name, p.verifier, [name])
            if path:
                raise BadRequest(f"composite {name!r} would make a cycle: {' -> '.join(path)}")

    def _components_exist(self, name: str, p: Part) -> None:
        try:
            self.get(p.verifier)
        except NotFound:
            raise NotFound(
                f"component {p.verifier!r} of composite {name!r} is not registered: register it first"
            ) from None

    def _path_to(self, target: str, start: str, trail: list[str]) -> list[str] | None:
        try:
            v = self.get(start)
        except NotFound:
            return None
        if not isinstance(v, Composite):
            return None
        for p in v.parts:
            if p.verifier == target:
                return [*trail, start, target]
            if p.verifier not in trail:
                found = self._path_to(target, p.verifier, [*trail, start])
                if found:
                    return found
        return None

    def add(self, name: str, kind: str, description: str, spec: dict, *, replace: bool = False) -> Verifier:
        """Persist and publish a verifier whose spec has been checked. Returns it with its new version."""
        build(name, kind, description, spec)  # shape errors before anything is written
        with self._write:  # one writer at a time: the checks and the write are atomic together
            self._sync()  # another replica's writes count for the checks
            self.check_writable(name, replace)
            kinds.kind(kind).check_stored(self, name, spec)  # e.g. a composite's components, in the same lock
            version = self.store.put(name, kind, description, spec, replace=replace)
            v = build(name, kind, description, spec, version)
            with self._lock:
                self._custom[name] = v
        log.info("registered %s verifier %r version %d", kind, name, version)
        return v

    def remove(self, name: str) -> None:
        check_name(name)
        if name in self._builtins:
            raise PermissionDenied(f"{name!r} is a built-in verifier: it cannot be removed")
        with self._write:
            self._sync()
            users = self.dependents(name)
            if users:
                raise InUse(
                    f"verifier {name!r} is a component of {', '.join(users)}: unregister or replace those first"
                )
            with self._lock:
                if name not in self._custom:
                    raise NotFound(f"verifier {name!r} is not registered")
            self.store.delete(name)
            with self._lock:
                self._custom.pop(name, None)
        log.info("unregistered verifier %r", name)
