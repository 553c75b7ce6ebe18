"""Shortcuts for the ``math`` grader's comparison: answers given without sympy's general machinery, only for
shapes whose result is certain to be the one that machinery gives. Runs only in the sandbox, next to
``equal.py``; each shortcut is pinned against the full path on generated values by
tests/verifiers/kinds/math/test_math_fastequal.py.

* ``decide(gold, pred, rel_tol)``: the verdict of Math-Verify's ``verify`` (with equal.py's rules) for one
  (gold, answer) pair, or None where it is not certain:

  - two exact rational numbers (no ``rel_tol``): equal exactly when they are the same number. The full path
    says so too (equal.numeric_eq compares rationals exactly) and then runs ``simplify(a - b)`` on a nonzero
    rational to say False again.
  - two polynomials with small rational coefficients (neither a lone name, which Math-Verify compares as
    names): equal exactly when their expanded forms agree, computed here with Python fractions. The full
    path's ``expand(a - b) == 0`` proves the same identity; where it fails, two probes and sometimes
    ``simplify`` say False. Coefficients are bounded (|numerator|, denominator <= 10,000) so that
    Math-Verify's floating test ``(a - b).evalf() == 0``, which runs first, cannot find a cancellation that
    exact arithmetic does not (two such rationals never round to the same 15-digit float).
  - two exact constants (``2`` and ``(1 + \\sqrt{5})/2``) whose values clearly differ: False, where the full
    path compares them to 40 digits and then runs ``simplify(a - b)`` to say False again.

* ``symbolic(a, b)``: the same two rules for equal.symbolic_eq, which Math-Verify's sets, tuples, intervals
  and relations call on their parts (``simplify`` is what proves or refutes there).

* ``as_set(relation)``: ``relation.as_set()``, computed directly where the relation is linear in its one
  variable with small rational coefficients (``x \\le 5``, ``-x > -1``, ``-2 \\le x \\le 7``): sympy checks
  every relation's periodicity and solves the inequality to give the same interval.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

LIMIT = 10_000  # |numerator| and denominator of every rational a shortcut reads
MAX_POWER = 12  # largest integer exponent expanded here
MAX_NODES = 300  # largest expression tree walked
MAX_TERMS = 400  # largest expanded polynomial

Poly = dict  # {monomial: Fraction}; a monomial is a frozenset of (symbol, exponent)


class _TooBig(Exception):
    pass


def decide(gold, pred, rel_tol):
    """True or False where the full comparison's verdict on this one pair is certain, else None."""
    if rel_tol is not None or not (isinstance(gold, sympy.Expr) and isinstance(pred, sympy.Expr)):
        return None
    if isinstance(gold, sympy.Rational) and isinstance(pred, sympy.Rational):
        return bool(gold == pred)
    if isinstance(gold, sympy.Symbol) or isinstance(pred, sympy.Symbol):
        return None  # Math-Verify compares names by their spelling (``ab`` against a·b)
    return symbolic(gold, pred)


def symbolic(a, b):
    """equal.symbolic_eq's answer where it is certain without expand, probes or ``simplify``: two polynomials
    with small rational coefficients are equal exactly when their expansions agree; two exact constants whose
    values clearly differ are not equal. None otherwise."""
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return None
    pa, pb = polynomial(a), polynomial(b)
    if pa is not None and pb is not None:
        return pa == pb
    if constant(a) and constant(b) and clearly_apart(a, b):
        return False
    return None


def polynomial(e) -> Poly | None:
    """``e`` expanded, as {monomial: coefficient}, where it is a polynomial in plain names with rationals
    of at most LIMIT; None otherwise (a float, a constant such as π, a function, a negative power...)."""
    try:
        return _walk(e, [MAX_NODES])
    except _TooBig:
        return None


def _walk(e, budget) -> Poly | None:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(e, sympy.Rational):
        if abs(e.p) > LIMIT or e.q > LIMIT:
            return None
        return {frozenset(): Fraction(int(e.p), int(e.q))} if e.p else {}
    if type(e) is sympy.Symbol and e.is_commutative:
        return {frozenset({(e, 1)}): Fraction(1)}
    if isinstance(e, sympy.Add | sympy.Mul):
        parts = [_walk(a, budget) for a in e.args]
        if any(p is None for p in parts):
            return None
        out = parts[0]
        for p in parts[1:]:
            out = _add(out, p) if isinstance(e, sympy.Add) else _mul(out, p)
        return out
    if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Integer) and 0 <= e.exp <= MAX_POWER:
        base = _walk(e.base, budget)
        if base is None:
            return None
        out = {frozenset(): Fraction(1)}
        for _ in range(int(e.exp)):
            out = _mul(out, base)
        return out
    return None


def _put(out: Poly, m: frozenset, c: Fraction) -> None:
    """Add ``c`` to the coefficient of ``m`` in ``out``, dropping a term that cancels."""
    s = out.get(m, 0) + c
    if s:
        out[m] = s
    else:
        out.pop(m, None)


def _add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for m, c in b.items():
        _put(out, m, c)
    return out


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            exps = dict(ma)
            for s, k in mb:
                exps[s] = exps.get(s, 0) + k
            _put(out, frozenset(exps.items()), ca * cb)
    if len(out) > MAX_TERMS:
        raise _TooBig
    return out


# -- constants ---------------------------------------------------------------------------------------------
_FUNCTIONS = (sympy.exp, sympy.log, sympy.sin, sympy.cos, sympy.tan)


def constant(e) -> bool:
    """An exact number built from rationals, π, e, powers and a few elementary functions (no float, no ∞)."""
    budget = [MAX_NODES]

    def ok(e):
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if isinstance(e, sympy.Rational) or e in (sympy.pi, sympy.E):
            return True
        if isinstance(e, sympy.Add | sympy.Mul | sympy.Pow) or isinstance(e, _FUNCTIONS):
            return all(ok(a) for a in e.args)
        return False

    return isinstance(e, sympy.Expr) and ok(e)


def clearly_apart(a, b) -> bool:
    """Whether two exact numbers differ beyond doubt: their values to 30 digits differ by more than 1e-12
    (relative, or absolute below 1). The full path compares them to 40 digits (equal.numeric_eq), then asks
    ``simplify(a - b)``, which cannot make two different numbers equal."""
    x, y = sympy.N(a, 30), sympy.N(b, 30)
    if not (isinstance(x, sympy.Float) and isinstance(y, sympy.Float)):
        return False  # complex, or not evaluated: undecided
    return bool(abs(x - y) > 1e-12 * max(1, abs(x), abs(y)))


# -- inequalities as sets ---------------------------------------------------------------------------
_SIDE = {  # relation type: (bounds the variable from above?, strict?)
    sympy.StrictLessThan: (True, True),
    sympy.LessThan: (True, False),
    sympy.StrictGreaterThan: (False, True),
    sympy.GreaterThan: (False, False),
}


def as_set(rel):
    """``rel.as_set()``; computed here where ``rel`` is a linear inequality (or a conjunction of them) in one
    variable, with the very same result."""
    fast = linear_set(rel)
    return fast if fast is not None else rel.as_set()


def linear_set(rel):
    """The interval a linear inequality in one variable defines, an ``And`` of them the intersection;
    None for anything else (where ``as_set`` must decide)."""
    free = getattr(rel, "free_symbols", ())
    if len(free) != 1:
        return None
    (x,) = free
    if not (type(x) is sympy.Symbol and x in (sympy.Symbol(x.name), sympy.Symbol(x.name, real=True))):
        return None
    if isinstance(rel, sympy.And):
        parts = [_one_linear(r, x) for r in rel.args]
        return None if not parts or any(p is None for p in parts) else sympy.Intersection(*parts)
    return _one_linear(rel, x)


def _one_linear(rel, x):
    side = _SIDE.get(type(rel))
    if side is None:
        return None
    lhs, rhs = polynomial(rel.lhs), polynomial(rel.rhs)
    if lhs is None or rhs is None:
        return None
    d = _add(lhs, {m: -c for m, c in rhs.items()})
    a, b = d.pop(frozenset({(x, 1)}), 0), d.pop(frozenset(), Fraction(0))
    if not a or d:  # not linear in x (a constant, or x² terms)
        return None
    r = -b / a
    bound = sympy.Rational(r.numerator, r.denominator)
    upper, strict = side
    if a < 0:
        upper = not upper
    if upper:
        return sympy.Interval(-sympy.oo, bound, True, strict)
    return sympy.Interval(bound, sympy.oo, strict, True)
