"""The expression rules of ``fastparse``: latex2sympy's trees for sums, products, powers, fractions, roots, names.

Each rule builds what latex2sympy's visitor builds for the same grammar rule (PS.g4's ``additive``, ``mp``, ``unary``,
``postfix``, ``exp``, ``atom``...), with the converter's own helpers where it has them (``add_flat``, ``mul_flat``,
``get_symbol``), and raises ``Decline`` wherever that grammar could read the tokens another way.
"""

from __future__ import annotations

import sympy
import sympy.functions.elementary.hyperbolic as hyperbolic
import sympy.functions.elementary.trigonometric as trig
from latex2sympy2_extended.symbols import get_symbol

from in_sandbox.math.fastlex import Decline

STARTS_POSTFIX = {"num", "pct", "letter", "greek", "text", "e", "inf", "frac", "sqrt", "fn", "sum", "(", "["}
# after the first factor of a function's argument without parentheses (\\sin 2x), latex2sympy's grammar takes no
# function (its postfix_nofunc): the argument ends before one; brackets there are declined
NOFUNC_GOES_ON = {"num", "pct", "letter", "greek", "text", "inf", "frac"}
NOFUNC_ENDS = {"e", "sqrt", "fn", "sum"}
SIMPLE_OPS = ("+", "-", "*", "/", "^", "_", ",")


def number(text: str):
    """latex2sympy's ``parse_number`` result (``sympy.Number(text)``, which runs ``parse_expr``) made
    directly: a digit run is that Integer, a decimal the Float of its text (what parse_expr's auto_number makes)."""
    return sympy.Integer(int(text)) if text.isdigit() else sympy.Float(text)


class ExprParser:
    """Recursive descent over fastlex's tokens, one method a grammar rule."""

    def __init__(self, converter, toks):
        self.c, self.t, self.i = converter, toks + [("end", "")], 0
        self.in_abs = False  # |..| does not nest here: a bar inside one may open or close

    def peek(self, k=0):
        return self.t[self.i + k][0]

    def take(self, kind=None):
        tok = self.t[self.i]
        if kind is not None and tok[0] != kind:
            raise Decline(f"expected {kind}, got {tok[0]}")
        self.i += 1
        return tok

    # -- expressions: additive > multiplicative > unary > implicit product > postfix > power > atom ----------
    def expr(self):
        lh = self.product()
        while self.peek() in ("+", "-"):
            op, rh = self.take()[0], self.product()
            if op == "-":
                rh = -rh if rh.func.is_Number else self.c.mul_flat(-1, rh)
            lh = self.c.add_flat(lh, rh)
        return lh

    def product(self, nofunc=False):
        lh = self.unary(nofunc)
        while self.peek() in ("*", "/", ":"):
            op, rh = self.take()[0], self.unary(nofunc)
            if op == "*":
                lh = self.c.mul_flat(lh, rh)
            elif lh.is_Integer and rh.is_Integer:
                lh = sympy.Rational(lh, rh)
            else:
                lh = sympy.Mul(lh, sympy.Pow(rh, -1, evaluate=False), evaluate=False)
        return lh

    def unary(self, nofunc=False):
        if self.peek() == "+":
            self.take()
            return self.unary(nofunc)
        if self.peek() == "-":
            self.take()
            x = self.unary(nofunc)
            return -x if x.func.is_Number or x.is_Number else self.c.mul_flat(-1, x)
        items = [self.postfix()]
        while self.peek() in STARTS_POSTFIX:
            if nofunc and self.peek() in NOFUNC_ENDS:
                break
            if nofunc and (self.peek() not in NOFUNC_GOES_ON or self.peek(1) in ("(", "[", "{")):
                raise Decline("a function's argument without parentheses goes on into brackets")
            items.append(self.postfix())
        res = items[-1]
        for left in reversed(items[:-1]):  # latex2sympy multiplies right to left, reading n p/q as n + p/q
            if left.is_Integer and res.is_Rational and res.p > 0 and res.q > 0:
                res = sympy.Rational(left * res.q + (-res.p if left < 0 else res.p), res.q)
            else:
                res = self.c.mul_flat(left, res)
        return res

    def postfix(self):
        x = self.power()
        while self.peek() in ("!", "deg"):
            if self.take()[0] == "!":
                x = sympy.factorial(x, evaluate=False)
        if not isinstance(x, sympy.Expr):
            raise Decline("not an expression")
        return x

    def power(self):
        kind = self.peek()
        x = self.atom()
        looped = False
        while self.peek() == "^":
            if kind == "e":
                raise Decline("e^..^..")
            self.take()
            x, looped = sympy.Pow(x, self.exponent(), evaluate=False), True
        if self.peek() in ("(", "[", "{") and (looped or kind in ("e", "inf")):
            raise Decline("a bracket after a power or constant (a function call to latex2sympy?)")
        return x

    def exponent(self, then_sub=False):
        """``^`` takes one atom (a whole digit run: ``x^23`` is x**23) or a braced expression; ``then_sub``: a
        name's subscript may follow a number (``x^2_1`` is x_1**2)."""
        kind, text = self.take()
        if kind == "{":
            x = self.expr()
            self.take("}")
            return x
        if self.peek() == "_" and not (then_sub and kind == "num") or kind != "num" and self.peek() == "^":
            raise Decline("x^a_b or x^a^b")
        if kind == "num":
            return number(text)
        if kind == "inf":
            return sympy.oo
        if kind in ("letter", "greek") and text != "I":
            return get_symbol(
                text if kind == "letter" else "\\" + text, self.c.is_real, self.c.config.lowercase_symbols
            )
        raise Decline(f"exponent {kind}")

    def atom(self):
        kind = self.peek()
        if kind in ("letter", "greek", "text"):
            x, name, plain = self.atom_expr()
            if self.peek() in ("(", "[", "{"):
                if not plain or kind != "letter" or name == "I" or self.peek() != "(":
                    raise Decline("a name before a bracket (a function call to latex2sympy)")
                return self.function(name) or x
            return x
        kind, text = self.take()
        if kind == "num":
            if self.peek() == "_":  # latex2sympy drops a number's subscript (a base: 204_5 is 204)
                self.take()
                self.subscript()
            return number(text)
        if kind == "pct":
            digits = text.replace("\\%", "").replace("%", "")
            if digits != digits.strip() and digits.strip()[0] == "0" and digits.strip().isdigit() and len(digits) > 2:
                raise Decline("'053 %': latex2sympy's parse_expr refuses a spaced number with a leading zero")
            value = number(digits.strip())
            return sympy.Mul(value, sympy.UnevaluatedExpr(sympy.Rational(1, 100)), evaluate=False)
        if kind == "inf":
            return sympy.oo
        if kind == "e":  # latex2sympy's exponential function: e, e^{x}, evaluated
            return sympy.exp(self.exponent() if self.peek() == "^" and self.take() else 1)
        if kind in ("(", "["):
            x = self.expr()
            self.take(")" if kind == "(" else "]")
            return x
        if kind == "frac":
            top, bottom = self.braced(), self.braced()
            if top.is_Integer and bottom.is_Integer:
                return sympy.Rational(top, bottom)
            return sympy.Mul(top, sympy.Pow(bottom, -1, evaluate=False), evaluate=False)
        if kind == "|":  # |x|; never a bar inside a bar, nor a bar continuing a product (2|x|, |a|b|c|)
            if self.in_abs:
                raise Decline("a bar inside |..|")
            self.in_abs = True
            x = self.expr()
            self.take("|")
            self.in_abs = False
            return sympy.Abs(x, evaluate=False)
        if kind == "fn":
            return self.function_of(text)
        if kind == "sum":
            return self.sum_or_product(sympy.Sum if text == "sum" else sympy.Product)
        if kind == "sqrt":
            root = None
            if self.peek() == "[":
                self.take()
                root = self.expr()
                self.take("]")
            base = self.braced()
            return sympy.Pow(base, sympy.S.Half if root is None else 1 / root, evaluate=False)
        raise Decline(f"unexpected {kind}")

    def atom_expr(self):
        """A name with its optional subscript and superscript, in either order: (value, name as written,
        whether it has neither); the symbol as latex2sympy makes it (lowercased, ``x_{12}``, ``\\text{C}`` is c)."""
        kind, text = self.take()
        sub = sup = None
        while True:
            if self.peek() == "_" and sub is None:
                self.take()
                sub = self.subscript()
            elif self.peek() == "^" and sup is None:
                self.take()
                sup = self.exponent(then_sub=sub is None)
            else:
                break
        if kind == "letter" and text == "I":
            return sympy.I, text, True
        name = text if kind != "greek" else "\\" + text
        tail = "" if sub is None else "_" + sub if len(sub) == 1 else "_{" + sub + "}"
        x = get_symbol(name + tail, self.c.is_real, self.c.config.lowercase_symbols)
        plain = sub is None and sup is None
        return (x if sup is None else sympy.Pow(x, sup, evaluate=False)), name, plain

    def subscript(self) -> str:
        """The text of ``_1``, ``_a``, ``_{n-1}`` as latex2sympy names it (its tokens' text, spaces dropped)."""
        kind, text = self.take()
        if kind in ("letter", "num") and text.isalnum():
            if kind == "letter" and self.peek() in ("^", "_"):
                raise Decline("x_n^2: latex2sympy may read the power into the subscript")
            return text
        if kind != "{":
            raise Decline(f"subscript {kind}")
        start = self.i
        while self.peek() in ("num", "letter", "+", "-"):
            self.take()
        inner = self.t[start : self.i]
        self.take("}")
        if not inner or any(k == "num" and not t.isdigit() for k, t in inner):
            raise Decline("a subscript other than letters, digits, + and -")
        ExprParser(self.c, inner).whole_expr()
        return "".join(t for _, t in inner)

    def whole_expr(self):
        x = self.expr()
        self.take("end")
        return x

    def function(self, name):
        """``f(x)``, ``f(a, b)``: latex2sympy's Function of the arguments (each parsed again from its text), where
        the parentheses hold one atom or a comma; None where it reads a product (``x(x+1)``)."""
        depth, j = 0, self.i
        while True:
            k = self.t[j][0]
            depth += (k == "(") - (k == ")")
            if depth == 0 or k == "end":
                break
            j += 1
        inner = self.t[self.i + 1 : j]
        kinds = [k for k, _ in inner]
        if not all(k in ("num", "letter") or k in SIMPLE_OPS and t == k for k, t in inner) or kinds[-1:] == [","]:
            raise Decline("a function call latex2sympy may read otherwise")
        if "," not in kinds and kinds not in (["num"], ["letter"], ["letter", "_", "num"], ["letter", "_", "letter"]):
            if "^" in kinds or "_" in kinds:
                raise Decline("a name before (x^2): perhaps a function call")
            return None  # x(x+1), f(2x): a product
        self.i = j + 1
        args = "".join(t for _, t in inner).split(",")
        return sympy.Function(name)(*[self.c.parse(a) for a in args])

    def braced(self, opener="{", closer="}"):
        self.take(opener)
        x = self.expr()
        self.take(closer)
        return x

    def function_of(self, name):
        """``\\sin(x)``, ``\\sin 2x``, ``\\sin^2 x``, ``\\sin^{-1} x``, ``\\log_2 8``, ``\\ln x``: latex2sympy's tree."""
        base = power = None
        if self.peek() == "_" and name == "log":
            self.take()
            base = self.exponent()
        if self.peek() == "^":
            self.take()
            power = self.exponent()
        if self.peek() in ("_", "^"):
            raise Decline("a function's sub- and superscripts in another order")
        if self.peek() == "(":
            arg = self.braced("(", ")")
        else:
            arg = self.product(nofunc=True)
        if name in ("log", "ln"):
            f = sympy.log(arg, sympy.E if name == "ln" else 10 if base is None else base, evaluate=False)
        elif name == "exp":
            f = sympy.exp(arg, evaluate=False)
        else:
            if name.startswith("arc"):
                name = "a" + name[3:]
            elif power == -1:
                name, power = "a" + name, None
            f = getattr(hyperbolic if name.endswith("h") else trig, name)(arg, evaluate=False)
        return sympy.Pow(f, power, evaluate=False) if power else f

    def sum_or_product(self, kind):
        """``\\sum_{k=1}^{n} f``: latex2sympy's Sum (Product) of the multiplicative expression after it."""
        var = start = end = None
        for _ in range(2):
            if self.peek() == "_" and var is None:
                self.take()
                self.take("{")
                var = self.expr()
                self.take("=")
                start = self.expr()
                self.take("}")
            elif self.peek() == "^" and end is None:
                self.take()
                end = self.exponent()
        if var is None or end is None:
            raise Decline("a sum without both bounds")
        return kind(self.product(), (var, start, end))
