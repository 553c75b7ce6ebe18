"""``POST /v1/verify`` and ``/v1/verify_batch`` served directly: canonical JSON → ``verifiers.shapes.base.Request``
→ ``VerifierService`` → ``Verdict`` → canonical JSON, without the proto messages in between.

The gRPC servicer's way (JSON → proto → ``Request.from_proto`` → service → ``verdict_to_proto`` → JSON)
costs proto building and ``json_format``'s field walk in Python on top of gRPC's own call (docs/serve.md);
OpenRLHF's ``/get_reward`` already went dicts → ``service.verify_batch`` → dict. This does the same and answers what the servicer would, in protobuf's canonical JSON mapping as
``json_format.MessageToDict(always_print_fields_with_no_presence=True)`` prints it: lowerCamelCase names,
enums by name, every field printed, doubles as numbers (``"NaN"``/``"Infinity"`` when not finite).

Only the plain form is taken here: a JSON object (no duplicate keys) whose keys are VerifyRequest field
names (lowerCamelCase or proto), strings as strings (valid UTF-8), ``options`` an object of strings,
``timeoutS`` a finite number. Any other body — ``null`` values, numbers as strings, unknown fields, bad
JSON — goes the servicer's way (``verifiers.fronts.http.api``), so json_format parses it and its error messages
stay the library's. Errors from the service map as the servicer maps them (same status and message).
``tests/verifiers/fronts/test_http_v1.py`` compares both ways verdict by verdict over a real server on loopback.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.fronts.http.common import HttpError
from verifiers.shapes.base import ServiceError, Verdict
from verifiers.shapes.outcome import CaseStatus, Outcome
from verifiers.shapes.request import Request


class Slow(Exception):
    """Not the plain form: the body goes the servicer's way."""


# JSON key (lowerCamelCase or proto name) → VerifyRequest field name
_FIELDS = {k: f.name for f in pb.VerifyRequest.DESCRIPTOR.fields for k in (f.name, f.json_name)}
_BATCH_FIELDS = {k: f.name for f in pb.VerifyBatchRequest.DESCRIPTOR.fields for k in (f.name, f.json_name)}


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # json_format refuses duplicate keys
        raise Slow
    return obj


def _utf8(v: str) -> None:
    """Slow for a lone surrogate: proto strings are UTF-8, and json_format says what is wrong."""
    if not v.isascii():
        try:
            v.encode()
        except UnicodeEncodeError:
            raise Slow from None


def _text(v: Any) -> str:
    if type(v) is not str:
        raise Slow
    _utf8(v)
    return v


JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
              type(None): "null"}  # fmt: skip


def json_type(v: Any) -> str:
    return JSON_TYPES.get(type(v), type(v).__name__)


def require_completion(obj: Any, where: str = "") -> None:
    """HttpError (400 INVALID_ARGUMENT) for a request object without ``completion`` (or with ``null``): a
    missing field is the caller's bug, not an empty answer. ``""`` stays a completion (graded NO_ANSWER).
    gRPC cannot tell the two apart (proto3 sends no empty string), so this is the JSON fronts' check."""
    if type(obj) is dict and obj.get("completion") is None:
        raise HttpError(
            "INVALID_ARGUMENT",
            f"{where}field 'completion' is missing: every request needs the model's "
            'text ("completion": "" for an empty one, graded NO_ANSWER)',
        )


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError:
        return None  # not JSON: json_format's message says where


def check_items(body: bytes) -> None:
    """Before json_format parses a batch: an item of ``items`` that is not a JSON object, named by its index
    (json_format's message for one names a field it never saw)."""
    obj = _loads(body)
    items = obj.get("items") if type(obj) is dict else None
    for i, item in enumerate(items if type(items) is list else []):
        if type(item) is not dict:
            raise HttpError(
                "INVALID_ARGUMENT",
                f"items[{i}] must be a JSON object (a verifier.v1.VerifyRequest: "
                f'{{"verifier", "completion", "reference", ...}}), got a JSON {json_type(item)}',
            )


def check_completions(body: bytes, method: str) -> None:
    """After json_format accepted the body (its errors come first): a request without ``completion``."""
    obj = _loads(body)
    if type(obj) is not dict:
        return
    if method == "Verify":
        require_completion(obj)
        return
    items = obj.get("items")
    for i, item in enumerate(items if type(items) is list else []):
        require_completion(item, f"items[{i}]: ")


def _request(obj: Any, where: str = "") -> Request:
    """One VerifyRequest object → Request, as ``Request.from_proto(json_format.Parse(obj))`` gives it."""
    if type(obj) is not dict or not _FIELDS.keys() >= obj.keys():  # not an object, or an unknown field
        raise Slow
    if "timeoutS" in obj and "timeout_s" in obj:  # one field in both spellings (the only two-word field)
        raise Slow
    get = obj.get
    verifier, completion, reference, prompt, rid = (get("verifier", ""), get("completion", ""),
                                                    get("reference", ""), get("prompt", ""), get("id", ""))  # fmt: skip
    try:
        _utf8("".join((verifier, completion, reference, prompt, rid)))  # TypeError: one is not a string
    except TypeError:
        raise Slow from None
    options = get("options", {})
    if type(options) is not dict:
        raise Slow
    timeout = get("timeoutS", get("timeout_s", 0.0))
    if type(timeout) is int:
        try:
            timeout = float(timeout)
        except OverflowError:
            raise Slow from None
    elif type(timeout) is not float:
        raise Slow
    if not math.isfinite(timeout):
        raise Slow
    opts = {_text(k): _text(x) for k, x in options.items()} if options else {}
    require_completion(obj, where)  # after every Slow: json_format's own errors come first, as on the slow path
    return Request(verifier, completion, reference, prompt, opts, timeout, rid)


def parse_one(body: bytes) -> Request:
    """A VerifyRequest body → Request; raises Slow when it is not in the plain form."""
    try:
        obj = json.loads(body or b"{}", object_pairs_hook=_object)
    except ValueError:
        raise Slow from None
    return _request(obj)


def parse_batch(body: bytes) -> list[Request]:
    """A VerifyBatchRequest body → its Requests; raises Slow when it is not in the plain form."""
    try:
        obj = json.loads(body or b"{}", object_pairs_hook=_object)
    except ValueError:
        raise Slow from None
    if type(obj) is not dict or any(k not in _BATCH_FIELDS for k in obj):
        raise Slow
    items = obj.get("items", [])
    if type(items) is not list:
        raise Slow
    return [_request(x, f"items[{i}]: ") for i, x in enumerate(items)]


# -- Verdict → canonical JSON ---------------------------------------------------------------------------
@cache
def _enum_names() -> tuple[dict[Outcome, str], dict[CaseStatus, str]]:
    """The proto enum name of each outcome and case status (verifiers/shapes/outcome.py: the members are the proto's)."""
    outcomes = {o: pb.Outcome.Name(o.to_proto()) for o in Outcome}
    statuses = {s: pb.CaseVerdict.Status.Name(s.to_proto()) for s in CaseStatus}
    return outcomes, statuses


def _double(v: Any) -> float | str:
    v = float(v)
    if v - v == 0.0:  # finite
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


def verdict_dict(v: Verdict, req_id: str) -> dict:
    """``MessageToDict(verdict_to_proto(v, req_id), always_print_fields_with_no_presence=True)``."""
    outcomes, statuses = _enum_names()
    reward, elapsed = float(v.reward), float(v.elapsed_s)
    return {
        "reward": reward if reward - reward == 0.0 else _double(reward),
        "outcome": outcomes[v.outcome],
        "detail": v.detail,
        "elapsedS": elapsed if elapsed - elapsed == 0.0 else _double(elapsed),
        "id": req_id,
        "components": {k: _double(x) for k, x in v.components.items()} if v.components else {},
        "cached": bool(v.cached),
        "steps": [{"reward": _double(s.reward), "start": int(s.start), "end": int(s.end)} for s in v.steps]
        if v.steps
        else [],
        "cases": [{"status": statuses[c.status], "detail": c.detail, "elapsedS": _double(c.elapsed_s)} for c in v.cases]
        if v.cases
        else [],
        "signals": list(v.signals),
    }


def _dumps(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def verify_one(service: Any, req: Request, *, caller: str = "", show_cached: bool = True) -> bytes:
    """What the servicer's Verify answers, as JSON bytes; ServiceError → HttpError (same status, message).
    ``caller`` scopes the cache; ``show_cached``: whether the caller may see a cache hit (the admin)."""
    try:
        v = service.verify(req, None, caller=caller)  # no deadline, as HttpContext.time_remaining() says
    except ServiceError as e:
        raise HttpError(e.status, str(e)) from None
    v.cached = v.cached and show_cached
    return _dumps(verdict_dict(v, req.id))


def verify_batch(service: Any, reqs: list[Request], *, caller: str = "", show_cached: bool = True) -> bytes:
    """What the servicer's VerifyBatch answers, as JSON bytes."""
    try:
        verdicts = service.verify_batch(reqs, None, caller=caller)
    except ServiceError as e:
        raise HttpError(e.status, str(e)) from None
    for v in verdicts:
        v.cached = v.cached and show_cached
    return _dumps({"results": [verdict_dict(v, r.id) for v, r in zip(verdicts, reqs, strict=True)]})
