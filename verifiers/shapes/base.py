"""The shapes every verifier shares: a request, a verdict with an outcome, the errors that map to gRPC
statuses, and the context a verifier runs in (the sandbox pool, the registry, the deadline)."""

from __future__ import annotations

import contextvars
import typing
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from sandbox.deadline import Deadline
from verifiers.shapes.outcome import CaseStatus, Outcome
from verifiers.shapes.request import Request

if TYPE_CHECKING:
    from sandbox.backend import Job, Result


@dataclass
class CaseVerdict:
    status: CaseStatus
    detail: str = ""  # for the first failing case: a truncated diff or message
    elapsed_s: float = 0.0


@dataclass
class Step:
    """Process supervision: the reward of one reasoning step and the characters of the completion it
    covers, ``completion[start:end]`` (proto StepReward)."""

    reward: float
    start: int
    end: int


@dataclass
class Verdict:
    reward: float
    outcome: Outcome
    detail: str = ""
    components: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    cached: bool = False
    cases: list[CaseVerdict] = field(default_factory=list)  # code: one verdict per test case, in order
    steps: list[Step] = field(default_factory=list)  # process supervision: per-step rewards, in order
    signals: list[str] = field(default_factory=list)  # exploit signals (what the completion tried), sorted

    def signal(self, *names: str) -> Verdict:
        """Add exploit signals (each once, kept sorted); returns the verdict for chaining."""
        self.signals = sorted({*self.signals, *names})
        return self

    @classmethod
    def correct(cls, detail: str = "", reward: float = 1.0) -> Verdict:
        return cls(reward, Outcome.CORRECT, detail)

    @classmethod
    def of(cls, outcome: Outcome, detail: str = "") -> Verdict:
        return cls(1.0 if outcome is Outcome.CORRECT else 0.0, outcome, detail)


class ServiceError(Exception):
    """Base of the errors a request can cause; each maps to one gRPC status."""

    status = "INTERNAL"


class BadRequest(ServiceError):
    status = "INVALID_ARGUMENT"


class NotFound(ServiceError):
    status = "NOT_FOUND"


class AlreadyExists(ServiceError):
    status = "ALREADY_EXISTS"


class PermissionDenied(ServiceError):
    status = "PERMISSION_DENIED"


class Unauthenticated(ServiceError):
    status = "UNAUTHENTICATED"


class Unavailable(ServiceError):
    status = "UNAVAILABLE"


@dataclass
class Context:
    """What a verifier may use while grading one request.

    ``run_job`` runs untrusted code in the sandbox and returns its ``Result``. ``Result.finished`` is
    advisory: it catches accidental early exits (``sys.exit(0)``, ``os._exit(0)``), but the program can
    forge it (it can write to the worker's status pipe), so a verdict must never rest on it alone (the
    code verifier also requires a marker carrying a per-job nonce; docs/sandbox.md). ``exit_code``,
    ``signal``, ``timed_out`` and ``sandbox_error`` are what the worker observed from outside the program.

    ``parallelism`` is the sandbox pool's size: how many jobs can run at once, so a verifier that
    batches work (math) knows how many jobs to keep in flight.
    """

    run_job: Callable[[Job], Result]  # runs untrusted code in the sandbox (see the note on Result.finished)
    lookup: Callable[[str], Verifier]  # resolves another verifier by name (composites)
    deadline: Deadline  # the request's (sandbox/deadline.py): jobs carry it, nothing adds slack to it
    verify: Callable[[Request], Verdict] | None = None  # full path (cache, timing) for composites
    parallelism: int = 1  # sandbox jobs that can run at once (the pool size)
    output_cap: int = 1 << 20  # bytes of stdout + stderr a job may write (the service's --output-cap-bytes)

    def __post_init__(self) -> None:
        self.deadline = Deadline.of(self.deadline)  # a bare time.monotonic() instant is accepted too

    def time_left(self) -> float:
        return self.deadline.remaining()

    def map(self, fn: Callable, items, width: int) -> list:
        """``[fn(x) for x in items]`` on up to ``width`` threads, in order: how a verifier runs jobs side by side.
        Each call runs in a copy of the calling thread's context, which holds the service's caller, so the jobs
        wait their turn for a sandbox as the request's caller (a bare thread pool would run them as nobody)."""
        with ThreadPoolExecutor(max(1, width)) as ex:
            return [f.result() for f in [ex.submit(contextvars.copy_context().run, fn, x) for x in items]]


class Verifier(Protocol):
    name: str
    kind: str  # builtin | python | remote | composite
    description: str
    version: int
    default_timeout_s: float

    def verify(self, req: Request, ctx: Context) -> Verdict: ...


@dataclass
class Builtin:
    """What every built-in verifier declares (verifiers/kinds/table.py checks it when a registry is built): a
    subclass sets its name, description, version and default budget, its options schema, the job code it
    runs in the sandbox and the code each sandbox worker runs once before forking jobs ("": none)."""

    name: str = ""
    kind: str = "builtin"
    description: str = ""
    version: int = 1
    default_timeout_s: float = 5.0
    options: ClassVar[Mapping[str, str]] = {}  # option name -> what it does ({}: takes none)
    sandbox_entry: ClassVar[str] = ""  # "": runs nothing in the sandbox
    warmup: ClassVar[str] = ""
    result: ClassVar[type[Verdict]] = Verdict  # what verify() returns


def declarations() -> dict[str, type]:
    """What a built-in kind declares besides the ``Verifier`` protocol, each with the type it must have: the
    class-level attributes of ``Builtin`` above, read from its annotations, so they are written once.
    verifiers/kinds/table.py checks every built-in against it (a kind need not subclass ``Builtin``)."""
    found = {}
    for name, hint in typing.get_type_hints(Builtin).items():
        if typing.get_origin(hint) is ClassVar:
            (inner,) = typing.get_args(hint)
            found[name] = typing.get_origin(inner) or inner
    return found
