"""Plain data across the pipe between the ``code`` verifier's two sandbox processes (harness.py).

The candidate's process answers the tests' calls with values encoded here, and the tests' process
decodes them; the arguments of a call travel the other way the same way. Only *plain data* crosses:
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes`` and ``list``, ``tuple``,
``dict``, ``set``, ``frozenset``, ``range`` of them, ``fractions.Fraction`` and ``decimal.Decimal``, an
iterator's items (``Iterated``: decoded as an iterator over them), each of its exact type (a subclass,
whatever its ``__eq__`` says, is refused, as is anything else). The text is JSON, whose parser builds
only those types, with a tag for each container, so decoding never runs code named by the data (no
pickle, no marshal) and what it returns can be nothing but plain data. Standard library only: the
sandbox runs it.

>>> v = [1, (2.5, "x"), {b"k": {3j, None}}, frozenset({2**80}), range(3)]
>>> decode(encode(v)) == v
True
>>> encode(True), encode((1, "a"))
('true', '["t",[1,"a"]]')
"""

import builtins
import json
from decimal import Decimal
from fractions import Fraction

MAX_DEPTH = 200  # containers nested deeper than this are refused (both ways), well inside the recursion limit
_SMALL = 1 << 62  # ints beyond this travel as hex text: JSON's decimal form has a length limit (int_max_str_digits)
_SEQ = {list: "l", tuple: "t", set: "s", frozenset: "f"}
_BUILD = {"l": list, "t": tuple, "s": set, "f": frozenset}
# the exception classes a failed call is described by (name and message; the tests' process re-raises that class)
EXCEPTIONS = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, Exception)}


class NotPlain(TypeError):
    """A value that is not plain data (or a message that does not decode to plain data)."""


class Iterated:
    """An iterator's items, taken (up to a bound) where it was made: it crosses as an iterator over them."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


def _int(v):
    return v if -_SMALL < v < _SMALL else ["I", format(v, "x")]


def _enc(v, depth):
    t = type(v)
    if v is None or t is bool or t is str or t is float:
        return v
    if t is int:
        return _int(v)
    if depth > MAX_DEPTH:
        raise NotPlain(f"containers nested more than {MAX_DEPTH} deep")
    tag = _SEQ.get(t)
    if tag is not None:
        return [tag, [_enc(x, depth + 1) for x in v]]
    if t is dict:
        flat = []
        for k, x in v.items():
            flat.append(_enc(k, depth + 1))
            flat.append(_enc(x, depth + 1))
        return ["d", flat]
    if t is bytes:
        return ["b", v.hex()]
    if t is complex:
        return ["c", v.real, v.imag]
    if t is range:
        return ["r", _int(v.start), _int(v.stop), _int(v.step)]
    if t is Fraction:
        return ["q", _int(v.numerator), _int(v.denominator)]
    if t is Decimal:
        return ["D", str(v)]
    if t is Iterated:
        return ["i", [_enc(x, depth + 1) for x in v.items]]
    raise NotPlain(f"a {t.__name__} is not plain data")


def encode(value) -> str:
    """JSON text for a plain value; ``NotPlain`` for anything else (a subclass of a built-in type too)."""
    return json.dumps(_enc(value, 0), separators=(",", ":"))


def _dec(v, depth):
    t = type(v)
    if v is None or t is bool or t is str or t is float or t is int:
        return v
    if t is not list or len(v) < 2 or type(v[0]) is not str or depth > MAX_DEPTH:
        raise NotPlain("not an encoded plain value")
    tag, body = v[0], v[1]
    build = _BUILD.get(tag)
    if build is not None and type(body) is list and len(v) == 2:
        return build([_dec(x, depth + 1) for x in body])
    if tag == "d" and type(body) is list and len(body) % 2 == 0 and len(v) == 2:
        items = [_dec(x, depth + 1) for x in body]
        return dict(zip(items[::2], items[1::2], strict=True))
    if tag == "I" and type(body) is str and len(v) == 2:
        return int(body, 16)
    if tag == "b" and type(body) is str and len(v) == 2:
        return bytes.fromhex(body)
    if tag == "c" and len(v) == 3 and all(type(x) in (int, float) for x in v[1:]):
        return complex(v[1], v[2])
    if tag == "r" and len(v) == 4:
        return range(*(_dec(x, depth + 1) for x in v[1:]))
    if tag == "q" and len(v) == 3:
        num, den = _dec(v[1], depth + 1), _dec(v[2], depth + 1)
        if type(num) is int and type(den) is int and den > 0:
            return Fraction(num, den)
    if tag == "D" and type(body) is str and len(v) == 2 and len(body) < 10_000:
        return Decimal(body)
    if tag == "i" and type(body) is list and len(v) == 2:
        return iter([_dec(x, depth + 1) for x in body])  # an iterator, as the candidate returned one
    raise NotPlain(f"unknown tag {tag!r}")


def decode(text: str):
    """The plain value ``encode`` wrote; ``NotPlain`` for text that is not one (whoever wrote it)."""
    try:
        return _dec(json.loads(text), 0)
    except NotPlain:
        raise
    except (
        ValueError,
        TypeError,
        ArithmeticError,
        RecursionError,
        MemoryError,
    ) as e:  # TypeError: an unhashable key or member
        raise NotPlain(f"not an encoded plain value ({type(e).__name__})") from None


def send(f, msg: dict) -> None:
    """One message between the two processes: a JSON object on one line (``json`` escapes every newline)."""
    f.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
    f.flush()


def nonfinite(v, depth=0):
    """True when a plain value holds a nan or an infinity (the first 1000 items of each container, 3 deep)."""
    t = type(v)
    if t is float:
        return v != v or v in (float("inf"), float("-inf"))
    if t is complex:
        return nonfinite(v.real) or nonfinite(v.imag)
    if depth < 3 and t in (list, tuple, set, frozenset):
        return any(nonfinite(x, depth + 1) for x in list(v)[:1000])
    if depth < 3 and t is dict:
        return any(nonfinite(x, depth + 1) for x in list(v.values())[:1000])
    return False
