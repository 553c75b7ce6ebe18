"""The math grader's shortcuts (in_sandbox/math/fastequal.py) against the path they skip, on generated values.

``decide(gold, pred)`` must give Math-Verify's ``verify`` verdict (with equal.py's rules installed, as the grader
runs it, and no shortcut inside) wherever it answers; ``symbolic(a, b)`` equal.symbolic_eq's answer without it;
``linear_set(r)`` sympy's ``r.as_set()`` (the same object) wherever it answers. Seeded generators, a few thousand
pairs: rationals, polynomials (expanded against factored, one coefficient nudged, coefficients at and past the
bound, a factor nudged below float precision), exact constants (radicals, π, e, logs; nudged by down to 1e-15),
linear inequalities and their conjunctions, and LaTeX answers parsed by the grader itself. Each family also has a
floor on how many pairs its shortcut answers (ANSWERED), so that a shortcut that stopped answering cannot pass.

The checks run in a fresh interpreter (this file as a script): importing the grader puts our rules in place of
Math-Verify's for the whole process.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
ANSWERED = {"rationals": 1000, "polynomials": 500, "constants": 150, "inequalities": 250, "parsed": 30, "symbolic": 700}
FAMILIES = list(ANSWERED)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_shortcut_gives_the_full_verdict(family):
    out = subprocess.run([sys.executable, __file__, family], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["wrong"] == [], got["wrong"][:10]
    assert got["answered"] >= ANSWERED[family], got  # the shortcut still decides as many as it did
    if family != "inequalities":  # both verdicts are exercised
        assert got["answered_true"] > 0 and got["answered_false"] > 0, got


# -- generators (run in the child) --------------------------------------------------------------------------
def _rationals(rnd, sympy):
    out = []
    for _ in range(1000):
        p, q = rnd.randint(-(10 ** rnd.randint(1, 30)), 10**6), rnd.randint(1, 10 ** rnd.randint(1, 12))
        a = sympy.Rational(p, q)
        b = rnd.choice([a, sympy.Rational(p * 3, q * 3), a + sympy.Rational(1, 10 ** rnd.randint(1, 40)), -a, a + 1])
        out.append((a, b))
    return out


def _polynomial(rnd, sympy, xs, terms=3):
    coef = lambda: sympy.Rational(rnd.randint(-12, 12), rnd.choice([1, 1, 2, 3, 7]))  # noqa: E731
    return sum(coef() * sympy.Mul(*(x ** rnd.randint(0, 3) for x in xs)) for _ in range(terms))


def _polynomials(rnd, sympy):
    x, y = sympy.Symbol("x", real=True), sympy.Symbol("y", real=True)
    out = []
    for _ in range(800):
        xs = [x] if rnd.random() < 0.5 else [x, y]
        p, q = _polynomial(rnd, sympy, xs), _polynomial(rnd, sympy, xs, 2)
        gold = sympy.expand(p * q)
        nudge = rnd.choice([0, 0, 1, sympy.Rational(1, 9999), sympy.Rational(1, 10**8), x, y**2])
        pred = sympy.Mul(p, q, evaluate=False) + nudge if rnd.random() < 0.5 else p * q + nudge
        big = sympy.Rational(10 ** rnd.randint(3, 6) + 1, 10 ** rnd.randint(3, 6))  # at and past the bound
        if rnd.random() < 0.2:
            gold, pred = gold * big, sympy.Mul(big, p * q, evaluate=False) + nudge
        out.append((gold, pred))
    for _ in range(100):  # a factor nudged below float precision: Math-Verify's evalf test calls these equal
        p, q = _polynomial(rnd, sympy, [x], 2), _polynomial(rnd, sympy, [x], 2)
        tiny = sympy.Rational(rnd.choice([1, -1]), 10 ** rnd.randint(14, 24))
        out.append((sympy.Mul(p, q, evaluate=False), sympy.Mul(p, q + tiny, evaluate=False)))
    out += [(x, x * 1), (x * y, sympy.Symbol("xy")), (x**2 - 1, (x - 1) * (x + 1))]
    return out


def _constant(rnd, sympy):
    atoms = [sympy.sqrt(rnd.randint(2, 50)), sympy.pi, sympy.E, sympy.log(rnd.randint(2, 9)),
             sympy.Rational(rnd.randint(-9, 9), rnd.randint(1, 9)), sympy.cbrt(rnd.randint(2, 9)),
             sympy.sin(sympy.Rational(rnd.randint(1, 5), 3)), sympy.exp(sympy.Rational(1, rnd.randint(1, 4)))]  # fmt: skip
    a, b = rnd.sample(atoms, 2)
    return rnd.choice([a + b, a * b, a / b, a - b, a**2 + b])


def _constants(rnd, sympy):
    out = []
    for _ in range(500):
        a = _constant(rnd, sympy)
        b = rnd.choice(
            [
                a,
                _constant(rnd, sympy),
                a + sympy.Rational(1, 10 ** rnd.randint(1, 15)),
                sympy.nsimplify(a) if a.is_Rational else sympy.expand(a),
                a * (1 + sympy.Rational(1, 10**13)),
            ]
        )
        out.append((a, b))
    r2, r3 = sympy.sqrt(2), sympy.sqrt(3)
    out += [(sympy.Integer(2), (1 + sympy.sqrt(5)) / 2), ((r2 + r3) ** 2, 5 + 2 * sympy.sqrt(6)),
            (sympy.sin(sympy.pi / 7) ** 2 + sympy.cos(sympy.pi / 7) ** 2, sympy.Integer(1)), (sympy.sqrt(8), 2 * r2)]  # fmt: skip
    return out


def _inequalities(rnd, sympy):
    out = []
    for _ in range(400):
        x = sympy.Symbol("x", real=True) if rnd.random() < 0.7 else sympy.Symbol("x")
        side = lambda x=x: sympy.Rational(rnd.randint(-5, 5), rnd.randint(1, 4)) * x + rnd.randint(-9, 9)  # noqa: E731
        op = rnd.choice([sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge, sympy.Eq, sympy.Ne])
        r = op(side(), side(), evaluate=False) if rnd.random() < 0.5 else op(x, rnd.randint(-9, 9))
        if rnd.random() < 0.4:
            r = sympy.And(r, rnd.choice([sympy.Lt, sympy.Ge])(x, rnd.randint(-9, 9), evaluate=False))
        out.append(r)
    x = sympy.Symbol("x", real=True)
    out += [sympy.And(x > 3, x < 1), sympy.And(x >= 3, x <= 3), x**2 < 4, sympy.Lt(2 * x, 2 * x + 1, evaluate=False)]
    return out


def _parsed(rnd, grader):
    def number():
        return rnd.choice(
            [
                str(rnd.randint(-99, 999)),
                f"\\frac{{{rnd.randint(1, 30)}}}{{{rnd.randint(2, 30)}}}",
                f"{rnd.randint(1, 9)}\\sqrt{{{rnd.randint(2, 20)}}}",
                "\\pi",
                f"{rnd.randint(1, 9)}/{rnd.randint(2, 9)}",
            ]
        )

    def poly():
        a, b = rnd.randint(-9, 9), rnd.randint(-9, 9)
        return rnd.choice(
            [
                (f"x^2 + {a + b}x + {a * b}", f"(x + {a})(x + {b})"),
                (f"{a}x - {b}", f"-{b} + {a}x"),
                (f"x^2 - {a * a}", f"(x-{a})(x+{a})"),
                (f"{a}x + {b}y", f"{b}y + {a + 1}x"),
            ]
        )

    def ineq():
        c = rnd.randint(-9, 9)
        return rnd.choice(
            [
                (f"x \\le {c}", f"{c} \\ge x"),
                (f"x < {c}", f"-x > {-c}"),
                (f"-2 \\le x \\le {c}", f"[-2, {c}]"),
                (f"x > {c}", f"({c}, \\infty)"),
                (f"x \\ge {c}", f"x > {c}"),
            ]
        )

    out = []
    for _ in range(60):
        kind = rnd.random()
        g, p = (number(), number()) if kind < 0.4 else poly() if kind < 0.7 else ineq()
        out.append((grader.parse_whole(g), grader.parse_whole(p)))
    return out


def _child(family: str) -> dict:
    sys.setrecursionlimit(10_000)
    import sympy
    from math_verify import verify

    from in_sandbox.math import equal, fastequal, grader

    def full(g, p):  # verify as the grader runs it, with no shortcut anywhere (equal.py's calls included)
        fastequal.linear_set, fastequal.symbolic = (lambda r: None), (lambda a, b: None)
        try:
            return bool(verify(g, p, float_rounding=6, timeout_seconds=None))
        finally:
            fastequal.linear_set, fastequal.symbolic = linear_set, symbolic

    linear_set, symbolic = fastequal.linear_set, fastequal.symbolic

    rnd, equal.State.rel_tol = random.Random(f"fastequal-{family}"), None
    decided, wrong, pairs = [], [], 0
    if family == "inequalities":
        for r in _inequalities(rnd, sympy):
            pairs += 1
            fast = fastequal.linear_set(r)
            if fast is not None:
                decided.append(True)
                try:
                    slow = r.as_set()
                except Exception as e:  # noqa: BLE001 (a shortcut that answers where as_set fails is wrong)
                    slow = f"raises {type(e).__name__}"
                if not (isinstance(slow, sympy.Basic) and sympy.srepr(fast) == sympy.srepr(slow)):
                    wrong.append(f"{r}: shortcut {sympy.srepr(fast)}, as_set {slow}")
        return {"pairs": pairs, "answered": len(decided), "wrong": wrong}
    if family == "symbolic":  # equal.symbolic_eq's shortcut against symbolic_eq without it
        symbolic = fastequal.symbolic
        for g, p in _polynomials(rnd, sympy) + _constants(rnd, sympy):
            pairs += 1
            fast = symbolic(g, p)
            if fast is not None:
                decided.append(fast)
                fastequal.symbolic = lambda a, b: None
                try:
                    slow = equal.symbolic_eq(g, p)
                finally:
                    fastequal.symbolic = symbolic
                if fast != slow:
                    wrong.append(f"{g!s} vs {p!s}: shortcut {fast}, symbolic_eq {slow}")
        return {"pairs": pairs, "answered": len(decided), "answered_true": decided.count(True),
                "answered_false": decided.count(False), "wrong": wrong}  # fmt: skip
    if family == "parsed":
        got = [(g, p) for gs, ps in _parsed(rnd, grader) for g in gs for p in ps]
    else:
        got = {"rationals": _rationals, "polynomials": _polynomials, "constants": _constants}[family](rnd, sympy)
    for g, p in got:
        pairs += 1
        fast = fastequal.decide(g, p, None)
        if fast is not None:
            decided.append(fast)
            if fast != full(g, p):
                wrong.append(f"{g!s} vs {p!s}: shortcut {fast}, verify {not fast}")
    if family == "parsed":  # the grader's own comparison, every shortcut on, against verify with none
        for gs, ps in _parsed(random.Random("fastequal-parsed-whole"), grader):
            slow = full(gs, ps)
            if grader.equivalent(gs, ps) != slow:
                wrong.append(f"{gs} vs {ps}: grader {not slow}, verify {slow}")
    return {"pairs": pairs, "answered": len(decided), "answered_true": decided.count(True),
            "answered_false": decided.count(False), "wrong": wrong}  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(_child(sys.argv[1])))
