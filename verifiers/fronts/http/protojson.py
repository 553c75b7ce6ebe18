"""Protobuf's canonical JSON mapping, fast for the common shapes, ``json_format`` for everything else.

``google.protobuf.json_format`` walks every field in Python, which for a large batch costs as much as gRPC's
whole call. These two functions give the same
result as ``json_format.Parse`` / ``MessageToDict(always_print_fields_with_no_presence=True)`` on the
forms they accept, and hand anything else to ``json_format`` (so its error messages and its rarer
forms — numbers as strings, ``null``, well-known types — stay exactly the library's):

* ``parse(body, cls)``: JSON objects whose keys are field names (lowerCamelCase or the proto name) and
  whose values have the field's plain JSON type (string, number, bool, enum name, object, array);
* ``to_dict(message)``: any message of this API (scalars, enums, maps, repeated and nested messages).

``tests/verifiers/fronts/test_http_protojson.py`` checks both against ``json_format`` on every message of the API.
"""

from __future__ import annotations

import base64
import json
import math
from functools import cache
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.internal import type_checkers

F = FieldDescriptor
_INTS = {F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32, F.TYPE_UINT32, F.TYPE_FIXED32}
_INT64S = {F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64, F.TYPE_UINT64, F.TYPE_FIXED64}
_FLOATS = {F.TYPE_DOUBLE, F.TYPE_FLOAT}


class _Unusual(Exception):
    """A form the fast path does not take: json_format decides."""


@cache
def _shape(f: FieldDescriptor) -> tuple[bool, bool]:
    """(is a map, is repeated), looked up once per field (descriptor options are slow to read)."""
    is_map = f.message_type is not None and f.message_type.GetOptions().map_entry
    flag = getattr(f, "is_repeated", None)
    return is_map, flag if flag is not None else f.label == F.LABEL_REPEATED


def _repeated(f: FieldDescriptor) -> bool:
    return _shape(f)[1]


def _is_map(f: FieldDescriptor) -> bool:
    return _shape(f)[0]


@cache
def _by_key(d: Descriptor) -> dict[str, FieldDescriptor]:
    return {**{f.name: f for f in d.fields}, **{f.json_name: f for f in d.fields}}


# -- JSON → message -----------------------------------------------------------------------------------
def _scalar_in(f: FieldDescriptor, v: Any) -> Any:
    t = f.type
    if t == F.TYPE_STRING and type(v) is str:
        return v
    if t in _FLOATS and type(v) in (int, float):
        return v
    if t in _INTS and type(v) is int:
        return v
    if t == F.TYPE_BOOL and type(v) is bool:
        return v
    if t == F.TYPE_ENUM and type(v) is str and v in f.enum_type.values_by_name:
        return v
    if t == F.TYPE_MESSAGE and type(v) is dict and f.message_type.full_name.startswith("verifier."):
        return _kwargs(v, f.message_type)
    raise _Unusual


def _value_in(f: FieldDescriptor, v: Any) -> Any:
    if _is_map(f):
        if type(v) is not dict:
            raise _Unusual
        vf = f.message_type.fields_by_name["value"]
        return {k: _scalar_in(vf, x) for k, x in v.items()}
    if _repeated(f):
        if type(v) is not list:
            raise _Unusual
        return [_scalar_in(f, x) for x in v]
    return _scalar_in(f, v)


@cache
def _plan(d: Descriptor) -> dict[str, tuple[str, str | None, bool, FieldDescriptor]]:
    """JSON key → (field name, its oneof, whether it is a plain string field, field), once per message."""
    return {
        key: (
            f.name,
            f.containing_oneof.name if f.containing_oneof else None,
            f.type == F.TYPE_STRING and not _repeated(f),
            f,
        )
        for key, f in _by_key(d).items()
    }


def _kwargs(obj: dict, d: Descriptor) -> dict:
    plan = _plan(d)
    out: dict[str, Any] = {}
    oneofs: set[str] = set()
    for key, v in obj.items():
        p = plan.get(key)
        if p is None or p[0] in out:  # unknown or given twice: json_format says what is wrong
            raise _Unusual
        name, oneof, plain_string, f = p
        if oneof is not None:
            if oneof in oneofs:  # two members of one oneof
                raise _Unusual
            oneofs.add(oneof)
        out[name] = v if plain_string and type(v) is str else _value_in(f, v)
    return out


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Unusual
    return obj


def parse(body: bytes | str, cls: type) -> Any:
    """``json_format.Parse(body, cls())``, fast for plain JSON. Raises json_format.ParseError."""
    try:
        obj = json.loads(body, object_pairs_hook=_no_duplicate_keys)
        if type(obj) is not dict:
            raise _Unusual
        return cls(**_kwargs(obj, cls.DESCRIPTOR))
    except (_Unusual, ValueError, TypeError):
        return json_format.Parse(body, cls())


# -- message → JSON -----------------------------------------------------------------------------------
def _float_out(v: float) -> float | str:
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def _scalar_out(f: FieldDescriptor, v: Any) -> Any:
    t = f.type
    if t == F.TYPE_MESSAGE:
        return to_dict(v)
    if t == F.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    if t == F.TYPE_DOUBLE:
        return _float_out(v)
    if t == F.TYPE_FLOAT:
        return _float32_out(v)
    if t in _INT64S:
        return str(v)
    if t == F.TYPE_BYTES:
        return base64.b64encode(v).decode()
    return v


def _float32_out(v: float) -> Any:
    return _float_out(type_checkers.ToShortestFloat(v)) if math.isfinite(v) else _float_out(v)


@cache
def _defaults(d: Descriptor) -> tuple[dict[str, Any], tuple[tuple[str, type], ...]]:
    """The fields printed even when unset (those without presence): immutable defaults as one dict, and
    (json name, dict or list) of the maps and repeated fields, which get a fresh empty value per message."""
    scalars: dict[str, Any] = {}
    empties: list[tuple[str, type]] = []
    for f in d.fields:
        if _is_map(f):
            empties.append((f.json_name, dict))
        elif _repeated(f):
            empties.append((f.json_name, list))
        elif getattr(f, "has_presence", f.type == F.TYPE_MESSAGE or f.containing_oneof is not None):
            continue
        else:
            scalars[f.json_name] = _scalar_out(f, f.default_value)
    return scalars, tuple(empties)


def _identity(v: Any) -> Any:
    return v


@cache
def _out_fn(f: FieldDescriptor) -> Any:
    """The converter of one field's value, built once per field."""
    is_map, repeated = _shape(f)
    if is_map:
        vf = f.message_type.fields_by_name["value"]
        one = _one_out(vf)
        return lambda v: {str(k): one(x) for k, x in v.items()}
    one = _one_out(f)
    if repeated:
        return lambda v: [one(x) for x in v]
    return one


def _one_out(f: FieldDescriptor) -> Any:
    t = f.type
    if t == F.TYPE_MESSAGE:
        return to_dict
    if t == F.TYPE_DOUBLE:
        return _float_out
    if t in (F.TYPE_STRING, F.TYPE_BOOL) or t in _INTS:
        return _identity
    return lambda v: _scalar_out(f, v)


def to_dict(msg: Any) -> dict:
    """``json_format.MessageToDict(msg, always_print_fields_with_no_presence=True)``."""
    scalars, empties = _defaults(msg.DESCRIPTOR)
    out = scalars.copy()
    for k, empty in empties:
        out[k] = empty()
    for f, v in msg.ListFields():
        out[f.json_name] = _out_fn(f)(v)
    return out


def to_json(msg: Any) -> str:
    return json.dumps(to_dict(msg), ensure_ascii=False)
