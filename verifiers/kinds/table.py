"""The registrable verifier kinds, declared in one table. Each kind says how its stored spec (a plain
dict, what the registry's store keeps) becomes a verifier, how the spec converts to and from its proto
message (the ``spec`` oneof field of the same name in RegisterVerifierRequest and VerifierInfo), and
which checks registration runs that need the sandbox, the network or a model.

Adding a kind is a module with its verifier plus one ``Kind(...)`` line in ``KINDS``; the registry
(``registry.build``), the service (``VerifierService.register``) and the servicer (``server.py``'s
``info_to_proto`` / ``spec_from_proto``) only look kinds up here.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from proto.verifier.v1 import verifier_pb2 as pb
from sandbox.deadline import Deadline
from sandbox.lanes import Lane
from verifiers.kinds.composite import Composite, Part
from verifiers.shapes.base import BadRequest, Context, Verdict, Verifier, declarations
from verifiers.shapes.signals import parse_enforced

log = logging.getLogger(__name__)
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
MAX_COMPONENTS = 16
VerifierService = Any  # verifiers.service.core.VerifierService (not imported: the service imports this module)


@dataclass(frozen=True)
class Kind:
    name: str
    build: Callable[[str, str, dict, int], Verifier]  # (name, description, spec, version) → verifier
    to_proto: Callable[[dict], Any]  # stored spec → its proto message
    from_proto: Callable[[Any], dict]  # proto message → stored spec
    # registration checks beyond the spec's shape, spending from the registration's deadline
    check: Callable[[VerifierService, str, Any, Deadline], None]
    # checks against the registry itself, run under its write lock together with the write
    check_stored: Callable[[Any, str, dict], None] = lambda registry, name, spec: None


def check_name(name: str, field: str = "name") -> None:
    if not name:
        raise BadRequest(f"field {field!r} is empty: give the verifier a name like 'countdown'")
    if not NAME_RE.fullmatch(name):
        raise BadRequest(f"field {field!r} = {name[:80]!r} is not a valid name: use [a-z0-9][a-z0-9_.-]{{0,63}}")


def parts(spec: dict) -> list[Part]:
    """A composite spec's components, checked (names, no duplicates, finite non-zero weights)."""
    comps = spec.get("components") or []
    if not comps:
        raise BadRequest("composite.components is empty: list the verifiers to combine with their weights")
    if len(comps) > MAX_COMPONENTS:
        raise BadRequest(f"composite has {len(comps)} components, over the limit of {MAX_COMPONENTS}")
    out, seen = [], set()
    for i, c in enumerate(comps):
        name, weight = c.get("verifier", ""), c.get("weight", 0.0)
        check_name(name, f"composite.components[{i}].verifier")
        if name in seen:
            raise BadRequest(f"composite names {name!r} twice: give each component once")
        seen.add(name)
        if not isinstance(weight, int | float) or not math.isfinite(weight) or weight == 0:
            raise BadRequest(f"composite.components[{i}] ({name}) needs a finite, non-zero weight, got {weight!r}")
        opts = c.get("options") or {}
        out.append(Part(name, float(weight), {str(k): str(v) for k, v in opts.items()}))
    return out


# options every verifier accepts, whatever its kind (applied by the service core, verifiers/service/core.py)
COMMON_OPTIONS = {
    "enforce_signals": "a comma list of exploit signal names (verifiers/shapes/signals.py), or all: a paid verdict "
    "carrying one becomes INCORRECT with reward 0",
}


def known_options(v: Verifier, lookup: Callable[[str], Verifier]) -> set[str] | None:
    """The option keys ``v`` reads, COMMON_OPTIONS included; None where any key is accepted: a python
    verifier's options are free-form (its ``verify`` gets them all), a remote one's are checked by the
    server it points at. A composite knows the union of its parts' keys (``lookup`` resolves a part)."""
    if isinstance(v, Composite):
        keys: set[str] = set(COMMON_OPTIONS)
        for p in v.parts:
            part = known_options(lookup(p.verifier), lookup)
            if part is None:
                return None
            keys |= part
        return keys
    if v.kind in ("python", "remote"):
        return None
    return set(getattr(type(v), "options", {})) | set(COMMON_OPTIONS)  # a reward model declares none


def check_options(v: Verifier, options: Mapping[str, str], lookup: Callable[[str], Verifier], where: str = "") -> None:
    """BadRequest naming each option key ``v`` does not know (a typo such as ``fallbak`` would otherwise be
    ignored: the default applies and rewards go silently wrong), the keys it knows and the nearest one."""
    known = known_options(v, lookup)
    unknown = [] if known is None else sorted(set(options) - known)
    if not unknown:
        return
    near = [m for k in unknown for m in difflib.get_close_matches(k, known, 1)]
    hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
    raise BadRequest(
        f"{where or v.name}: unknown option{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(map(repr, unknown))}{hint}; {v.name} knows: {', '.join(sorted(known))}"
    )


def _check_composite(service: VerifierService, name: str, v: Any, deadline: Deadline) -> None:
    """Its components exist and make no cycle; each component's stored options are ones that part knows."""
    service.registry.check_components(name, v.parts)
    for i, p in enumerate(v.parts):
        where = f"composite.components[{i}] ({p.verifier}).options"
        check_options(service.registry.get(p.verifier), p.options, service.registry.get, where)
        try:
            parse_enforced(p.options.get("enforce_signals", ""))
        except ValueError as e:
            raise BadRequest(f"{where}['enforce_signals']: {e}") from None


def _build_python(name: str, description: str, spec: dict, version: int) -> Verifier:
    from verifiers.kinds.python_verifier import PythonVerifier, check_spec

    source, entry = spec.get("source", ""), spec.get("entrypoint") or "verify"
    check_spec(source, entry)
    return PythonVerifier(
        name, source, entry, description, version, spec.get("example_completion", ""), spec.get("example_reference", "")
    )


def _check_python(service: VerifierService, name: str, v: Any, deadline: Deadline) -> None:
    from verifiers.kinds import python_verifier

    ctx = Context(
        run_job=service.run_job, lookup=service.registry.get, deadline=deadline, parallelism=service.parallelism
    )
    python_verifier.dry_run(ctx, name, v.source, v.entrypoint, v.example_completion, v.example_reference)


def _build_remote(name: str, description: str, spec: dict, version: int) -> Verifier:
    from verifiers.kinds.remote import RemoteVerifier, check_target

    target = spec.get("target", "")
    check_target(target)
    if spec.get("verifier"):
        check_name(spec["verifier"], "remote.verifier")
    return RemoteVerifier(name, target, spec.get("verifier", ""), description, version)


def _check_remote(service: VerifierService, name: str, v: Any, deadline: Deadline) -> None:
    from verifiers.kinds import remote

    if (
        remote.check_reachable(v.target, v.remote_name, min(remote.CHECK_TIMEOUT_S, deadline.remaining()))
        == service.instance_id
    ):
        raise BadRequest(
            f"remote.target {v.target} is this server itself: use {v.remote_name!r} directly, or a composite of it"
        )


def _build_composite(name: str, description: str, spec: dict, version: int) -> Verifier:
    return Composite(name, parts(spec), description=description, version=version)


def _build_reward_model(name: str, description: str, spec: dict, version: int) -> Verifier:
    from verifiers.kinds.reward_model import RewardModelVerifier  # torch/transformers load only when a model does

    return RewardModelVerifier.build(name, description, spec, version)


KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        Kind(
            "python",
            _build_python,
            lambda s: pb.PythonVerifier(**s),
            lambda m: {
                "source": m.source,
                "entrypoint": m.entrypoint or "verify",
                "example_completion": m.example_completion,
                "example_reference": m.example_reference,
            },
            _check_python,
        ),
        Kind(
            "remote",
            _build_remote,
            lambda s: pb.RemoteVerifier(**s),
            lambda m: {"target": m.target, "verifier": m.verifier},
            _check_remote,
        ),
        Kind(
            "composite",
            _build_composite,
            lambda s: pb.CompositeVerifier(components=[pb.Component(**c) for c in s["components"]]),
            lambda m: {
                "components": [
                    {"verifier": c.verifier, "weight": c.weight, "options": dict(c.options)} for c in m.components
                ]
            },
            _check_composite,
            lambda registry, name, spec: registry.check_components(name, parts(spec)),
        ),
        Kind(
            "reward_model",
            _build_reward_model,
            lambda s: pb.RewardModelVerifier(**s),
            lambda m: {
                "path": m.path,
                "mapping": m.mapping or "sigmoid",
                "low": m.low,
                "high": m.high,
                "max_length": m.max_length,
            },
            lambda service, name, v, deadline: v.warm_up(),
        ),  # the model loads (and stays loaded)
    ]
}


def kind(name: str) -> Kind:
    found = KINDS.get(name)
    if found is None:
        raise BadRequest(f"unknown verifier kind {name!r}: register one of {', '.join(KINDS)}")
    return found


# -- built-in kinds: verifiers defined in code, each declared by one register_builtin(...) line ----------
BUILTINS: dict[str, str | Callable[[], Verifier]] = {}  # name -> "module:attr" (a class or a factory)


def register_builtin(name: str, entry_point: str | Callable[[], Verifier]) -> None:
    """Make ``name`` a built-in verifier of every registry built from now on. ``entry_point``: a
    "module:attr" string (imported when a registry is built: a host without a kind's dependencies
    skips it with a warning) or a callable; either, called with no arguments, gives the verifier."""
    check_name(name)
    BUILTINS[name] = entry_point


def build_builtin(name: str) -> Verifier:
    """The verifier ``name`` registers, its class's declarations checked (TypeError naming what is missing)."""
    target = BUILTINS[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    v = target()
    declares = declarations()
    missing = [k for k, t in declares.items() if not isinstance(getattr(type(v), k, None), t)]
    if missing or not issubclass(type(v).result, Verdict) or v.name != name:
        raise TypeError(
            f"built-in verifier {name!r} ({type(v).__qualname__}) must be named {name!r} and declare "
            f"{', '.join(declares)} (verifiers/shapes/base.py Builtin); missing or wrong: {missing}"
        )
    return v


def builtin_verifiers() -> dict[str, Verifier]:
    found = {}
    for name in BUILTINS:
        try:
            found[name] = build_builtin(name)
        except ImportError as e:  # an optional dependency of that kind is missing on this host
            log.warning("built-in verifier %r not available: %s", name, e)
    return found


def sandbox_lanes() -> dict[str, Lane]:
    """The pool's lanes (sandbox/pool.py): a built-in kind declaring ``lane`` (a name; optional, as are the two
    below) gets sandboxes of its own that import its ``lane_preload`` (default none) and run only its warm-up,
    started with the pool or, with ``lane_lazy``, on its first request. The code kind's hold nothing but its
    harness, so its jobs fork from a small worker; the math kind's hold the parser's tables, built only in a
    service that grades math (a worker's warm-up is 1.6 s of CPU)."""
    return {
        v.lane: Lane(
            preload=tuple(getattr(v, "lane_preload", ())), warmup=v.warmup, lazy=getattr(v, "lane_lazy", False)
        )
        for v in builtin_verifiers().values()
        if getattr(v, "lane", "")
    }


def sandbox_count(size: int, burst: int, started: tuple[str, ...] = ()) -> int:
    """How many sandboxes a server's pool keeps: its ``size`` and ``burst`` for each lane that starts with it, and
    for each one started since that ``started`` names: ``"math"`` once it graded math, ``""`` (the pool's own) once
    it ran a registered Python verifier or /run_code's Python (verifiers/service/wiring.py)."""
    up = [n for n, lane in sandbox_lanes().items() if not lane.lazy or n in started]
    return (size + burst) * (len(up) + ("" in started))


def sandbox_warmup(lanes: Collection[str] = ()) -> str:
    """The pool's warm-up: every built-in kind's declared ``warmup`` (each once, in registration order) but those
    of the kinds whose jobs run in one of ``lanes``, then the heap frozen so the collector in a job never walks
    (and copies) the worker's objects."""
    parts: list[str] = []
    for v in builtin_verifiers().values():
        if v.warmup and v.warmup not in parts and getattr(v, "lane", "") not in lanes:
            parts.append(v.warmup)
    return "\n".join([*parts, "import gc\ngc.collect()\ngc.freeze()\n"])


# The built-in kinds. Adding one: its module (a class with the Verifier attributes and the declarations
# of verifiers/shapes/base.py Builtin) plus one line here (docs/verifiers.md, "Adding a verifier kind").
register_builtin("think_format", "verifiers.kinds.format:ThinkFormat")
register_builtin("tag_count", "verifiers.kinds.format:TagCount")
register_builtin("math", "verifiers.kinds.math.verifier:MathVerifier")
register_builtin("arith_steps", "verifiers.kinds.steps:ArithSteps")
register_builtin("language", "verifiers.kinds.consistency:LanguageConsistency")
register_builtin("answer_consistency", "verifiers.kinds.consistency:AnswerConsistency")
register_builtin("code", "verifiers.kinds.code.verifier:CodeVerifier")
register_builtin("r1", "verifiers.kinds.composite:r1")
