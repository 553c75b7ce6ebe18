"""The comparison rules of the ``math`` grader, on values Math-Verify has parsed; ``install()`` puts them
in place of Math-Verify's own (its sets, tuples, intervals and matrices call these for their elements).
Runs only in the sandbox, next to ``grader.py``.

Where these depart from Math-Verify:

* ``numeric_eq``: two exact numbers are compared exactly (rationals) or to 40 significant digits, never
  by rounding to 6 decimals; a float that rounds to 0 is compared relatively; ``rel_tol`` compares
  relatively; a number with an infinity in it equals only the same infinity (Math-Verify's closeness
  test ``|∞ - x| <= tol·∞`` holds for every x).
* ``symbolic_eq``: ``expand(a - b) == 0`` proves and values at two exact points disprove before
  ``simplify``.
* ``expr_eq``: an equation against a value counts only as ``name = value`` or ``value = name``
  (Math-Verify takes any equation's right side, so ``1 + 1 = 3`` was 3); an inequality in one variable
  against an interval is the set it defines (``x \\le 2`` is ``(-\\infty, 2]``). A reference ``x \\in S``
  against an inequality stays Math-Verify's default (not equal), as its test suite expects. A linear
  inequality's set is computed by ``fastequal.as_set`` (the same set as sympy's ``as_set``, without solving).
"""

import sympy
from math_verify import grader

from in_sandbox.math import fastequal

# Math-Verify's own functions, kept once per process (so that executing this source again cannot wrap ours)
_MV = getattr(grader, "rlvr_originals", None) or {
    n: getattr(grader, n) for n in ("sympy_numeric_eq", "sympy_symbolic_eq", "sympy_expr_eq")
}
grader.rlvr_originals = _MV


class State:  # per item, set by grader.grade / main
    rel_tol = None  # options["rel_tol"] of the item being graded
    out_of_memory = False


_mv_numeric_eq = _MV["sympy_numeric_eq"]


def _plain_number(x):
    return isinstance(x, sympy.Expr) and grader.get_pct_val(x) is None and x.is_number


def _close(a, b, rel_tol, digits=40):
    """|a - b| <= rel_tol * max(|a|, |b|), evaluated to ``digits`` significant digits."""
    x, y = sympy.N(a, digits), sympy.N(b, digits)
    if not (x.is_number and y.is_number) or x.has(sympy.nan, sympy.zoo) or y.has(sympy.nan, sympy.zoo):
        return False
    diff, scale = abs(sympy.N(x - y, digits)), max(abs(x), abs(y))
    if scale == 0:
        return bool(diff == 0)
    return bool(diff <= rel_tol * scale)


_INFINITIES = (sympy.oo, -sympy.oo, sympy.zoo, sympy.nan)


def _infinite(x):
    return isinstance(x, sympy.Basic) and not isinstance(x, sympy.MatrixBase) and x.has(*_INFINITIES)


def _same_infinity(a, b):
    """Numbers with an infinity in them are equal only when both evaluate to the same one (NaN never)."""
    try:
        x, y = sympy.simplify(grader.safe_sympy_doit(a)), sympy.simplify(grader.safe_sympy_doit(b))
    except Exception:
        return False
    return x in _INFINITIES[:3] and x == y


def numeric_eq(a, b, float_rounding, numeric_precision):
    """Replaces Math-Verify's numeric comparison (its set/tuple/interval/matrix code calls this too)."""
    try:
        if _infinite(a) or _infinite(b):  # ∞ - x <= tol·∞ would hold for any x: ∞ equals only the same ∞
            return _same_infinity(a, b)
        if not (_plain_number(a) and _plain_number(b)):
            return _mv_numeric_eq(a, b, float_rounding, numeric_precision)
        x, y = grader.safe_sympy_doit(a), grader.safe_sympy_doit(b)
        if State.rel_tol is not None:
            return _close(x, y, State.rel_tol)
        if not x.has(sympy.Float) and not y.has(sympy.Float):
            if x.is_Rational and y.is_Rational:
                return bool(x == y)
            return _close(x, y, 1e-30)
        ok = _mv_numeric_eq(a, b, float_rounding, numeric_precision)
        if ok and max(abs(sympy.N(x)), abs(sympy.N(y))) < 10.0**-float_rounding:
            return _close(x, y, 10.0**-float_rounding)  # rounding both to 0 proves nothing
        return bool(ok)
    except MemoryError:
        State.out_of_memory = True
        raise


_mv_symbolic_eq = _MV["sympy_symbolic_eq"]
_PROBES = (sympy.Rational(7310, 10007), sympy.Rational(-13, 7))  # arbitrary points, exact


def _bounds_symbols(e):
    """The variables in the limits of a sum or product of ``e`` (``n`` in ``\\sum_{k=0}^{n-1} a_k``)."""
    found = set()
    for s in e.atoms(sympy.Sum, sympy.Product):
        for limit in s.limits:
            for bound in limit[1:]:
                found |= getattr(bound, "free_symbols", set())
    return found


def _differs_somewhere(a, b):
    """True when a and b take clearly different values at two arbitrary points (so a - b is not
    identically zero and ``simplify`` cannot prove otherwise); False when undecided. Undecided without
    evaluating where a variable bounds a sum or product: a non-integer point there means nothing, and
    evaluating such a sum (Euler-Maclaurin) took most of a second."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    if _bounds_symbols(a) | _bounds_symbols(b):
        return False
    for p in _PROBES:
        point = {s: p + sympy.Rational(i, 97) for i, s in enumerate(symbols)}
        x, y = sympy.N(a.subs(point), 30), sympy.N(b.subs(point), 30)
        if not (x.is_number and y.is_number) or x.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
            return False
        if x.has(sympy.Float) is False or y.has(sympy.Float) is False:
            return False
        if not abs(x - y) > 1e-12 * max(1, abs(x), abs(y)):
            return False
    return True


def symbolic_eq(a, b):
    """Math-Verify's ``simplify(a - b) == 0``, after cheap tests: two polynomials or two constants that
    fastequal can decide; on expressions with variables ``expand(a - b) == 0`` proves polynomial
    identities, different values at two points disprove."""
    try:
        fast = fastequal.symbolic(a, b)
        if fast is not None:
            return fast
        if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr) and (a.free_symbols or b.free_symbols):
            if sympy.expand(a - b) == 0:
                return True
            if _differs_somewhere(a, b):
                return False
    except MemoryError:
        State.out_of_memory = True
        raise
    except Exception:
        pass
    return _mv_symbolic_eq(a, b)


_mv_expr_eq = _MV["sympy_expr_eq"]


def _is_name(e):
    """``x``, ``a_n``, ``f(2)``, or a tuple of names (``(x, y)``)."""
    if isinstance(e, sympy.Tuple):
        return len(e) > 0 and all(_is_name(x) for x in e)
    return isinstance(e, sympy.Symbol) or isinstance(getattr(e, "func", None), sympy.core.function.UndefinedFunction)


def assigned_value(eq, float_rounding, numeric_precision):
    """The value an equation gives, when it is ``name = value`` or ``value = name`` (a chain ``x = 2 + 1 = 3``
    holds only when each step is equal), else None: ``x + 1 = 3`` and ``1 + 1 = 3`` give no value."""
    steps = list(eq._unsorted_args) if isinstance(eq, sympy.And) else [eq]
    if not all(isinstance(r, sympy.Eq) for r in steps):
        return None
    first, last = steps[0], steps[-1]
    if len(steps) == 1 and _is_name(first.rhs) and not _is_name(first.lhs):
        return first.lhs if first.rhs not in first.lhs.free_symbols else None
    if not _is_name(first.lhs):
        return None
    if any(not _mv_expr_eq(r.lhs, r.rhs, float_rounding, numeric_precision) for r in steps[1:]):
        return None
    return last.rhs


def _alternatives_as_set(x, other):
    """``x < 1 \\text{ or } x > 3`` (read as a set of inequalities in one variable) against a set: the union
    of the sets they define, ``(-\\infty, 1) \\cup (3, \\infty)``."""
    if not (isinstance(x, sympy.FiniteSet) and len(x) > 1 and isinstance(other, sympy.Set)):
        return x
    if isinstance(other, sympy.FiniteSet) or not all(grader.is_relation(r) for r in x.args):
        return x
    names = set().union(*(r.free_symbols for r in x.args))
    if len(names) != 1:
        return x
    try:
        return sympy.Union(*(fastequal.as_set(r) for r in x.args))
    except Exception:
        return x


def _committed_interval(gold):
    """The set a reference commits to as an interval (``x \\in (1, 2)``, ``1 < x < 2``), else None (a bare
    ``(1, 2)`` is a point or an interval: docs/verifiers.md, "Disputed forms")."""
    if isinstance(gold, sympy.Eq) and isinstance(gold.lhs, sympy.Symbol) and isinstance(gold.rhs, sympy.Set):
        return gold.rhs if isinstance(gold.rhs, sympy.Interval | sympy.Union) else None
    return fastequal.as_set(gold) if _simple_relation(gold) else None


def _simple_relation(r):
    """An inequality (or a chain of them) between one plain variable and numbers: ``1 < x < 2``, ``x \\le 2``."""
    parts = list(r.args) if isinstance(r, sympy.And) else [r]
    if not parts or not all(
        isinstance(p, sympy.core.relational.Relational) and not isinstance(p, sympy.Eq | sympy.Ne) for p in parts
    ):
        return False
    names = set()
    for p in parts:
        for side in (p.lhs, p.rhs):
            if isinstance(side, sympy.Symbol):
                names.add(side)
            elif not (isinstance(side, sympy.Expr) and side.is_number):
                return False
    return len(names) == 1


def _assignments(x):
    """Several ``name = value`` (a point given by its coordinates)."""
    return isinstance(x, sympy.FiniteSet | sympy.Tuple) and len(x) > 1 and all(isinstance(e, sympy.Eq) for e in x)


def expr_eq(gold, pred, float_rounding, numeric_precision, allow_set_relation_comp=False, strict=True):
    """Math-Verify's comparison (its sets, tuples and intervals call this for their elements), except: an
    equation against a value counts only as ``name = value`` (Math-Verify takes any equation's right
    side), and an inequality in one variable against an interval is compared as the set it defines."""
    gold, pred = _alternatives_as_set(gold, pred), _alternatives_as_set(pred, gold)
    interval = _committed_interval(gold)
    if interval is not None:  # the reference says "an interval": a point's coordinates are not one
        if _assignments(pred):
            return False
        if isinstance(pred, sympy.Eq) and isinstance(pred.rhs, sympy.Set):
            pred = pred.rhs
        elif grader.is_relation(pred) and not grader.is_equation(pred) and len(pred.free_symbols) == 1:
            try:  # any inequality in the variable (-x > -1) as the set it defines
                pred = fastequal.as_set(pred)
            except Exception:
                return False
        return _mv_expr_eq(interval, pred, float_rounding, numeric_precision, allow_set_relation_comp, strict)
    if grader.is_equation(pred) and not grader.is_equation(gold):
        pred = assigned_value(pred, float_rounding, numeric_precision)
        if pred is None:
            return False
    elif grader.is_relation(pred) and isinstance(gold, sympy.Set) and len(pred.free_symbols) == 1:
        try:
            pred = fastequal.as_set(pred)
        except Exception:
            return False
    return _mv_expr_eq(gold, pred, float_rounding, numeric_precision, allow_set_relation_comp, strict)


def install():
    """Put these rules in place of Math-Verify's (once per process)."""
    grader.sympy_numeric_eq = numeric_eq
    grader.sympy_symbolic_eq = symbolic_eq
    grader.sympy_expr_eq = expr_eq
