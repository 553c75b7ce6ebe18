"""Random LaTeX in (and at the edges of) the grammar fastparse reads, for its differential test."""

from __future__ import annotations

import random

LETTERS = "abcxyzXYZnkpqrtABCI" + "deE"  # the last three fastparse must decline or read as latex2sympy does
GREEK = ("\\pi", "\\alpha", "\\theta", "\\Delta", "\\omega")
MUL = ("*", "\\cdot", "\\times", "/", ":", "\\div", "", " ")
REL = ("=", "<", ">", "\\le", "\\leq", "\\ge", "\\geq", "\\ne", "\\neq", "<=", ">=", "!=", "==")


class Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def sp(self):
        return self.pick(("", "", "", " ", "  ", "\\,", "\\;", "\\quad "))

    def number(self):
        r = self.r.random()
        if r < 0.55:
            return str(self.r.choice([0, 1, 2, 3, 5, 7, 10, 12, 100, 2024, self.r.randrange(1000)]))
        if r < 0.8:
            return f"{self.r.randrange(100)}.{self.r.randrange(1000):0{self.r.randrange(1, 4)}d}"
        if r < 0.85:
            return "." + str(self.r.randrange(1, 100))
        if r < 0.93:
            return str(self.r.randrange(200)) + self.pick(("\\%", "%", " \\%"))
        if r < 0.97:
            return "0" + str(self.r.randrange(100))
        return str(self.r.randrange(1000)) + self.pick(("_5", "_{10}", "_2", "_x"))  # a base, dropped

    def name(self):
        r = self.r.random()
        base = self.pick(LETTERS) if r < 0.8 else self.pick(GREEK)
        if self.r.random() < 0.15:
            base += "_" + self.pick(("1", "2", "n", "{12}", "{n-1}", "{k+1}", "{ab}", "0"))
        if self.r.random() < 0.05:
            base = "\\text{" + self.pick(("C", "A", "Even", "(B)", "km")) + "}"
        return base

    def atom(self, d):
        r = self.r.random()
        if r < 0.35:
            return self.number()
        if r < 0.6:
            return self.name()
        if r < 0.65:
            return "\\infty"
        if d <= 0:
            return self.number()
        if r < 0.72:
            return f"({self.expr(d - 1)})"
        if r < 0.75:
            return f"[{self.expr(d - 1)}]" if self.r.random() < 0.4 else f"|{self.expr(d - 1)}|"
        if r < 0.83:
            frac = self.pick(("\\frac", "\\dfrac", "\\tfrac", "\\cfrac"))
            return f"{frac}{{{self.expr(d - 1)}}}{{{self.expr(d - 1)}}}"
        if r < 0.88:
            root = f"[{self.pick(('3', 'n', '2'))}]" if self.r.random() < 0.3 else ""
            return f"\\sqrt{root}{{{self.expr(d - 1)}}}"
        if r < 0.92:
            return "e" + self.pick(("", "^2", "^x", "^{i\\pi}", "^{-x}", "^{2x+1}"))
        if r < 0.93:
            return self.function(d)
        if r < 0.96:
            f = self.pick("fgFx")
            args = ", ".join(self.atom(0) for _ in range(self.r.randrange(1, 3)))
            return f"{f}({args})"
        return f"{self.atom(d - 1)}!"

    def function(self, d):
        name = self.pick(
            (
                "\\sin",
                "\\cos",
                "\\tan",
                "\\sec",
                "\\arcsin",
                "\\sinh",
                "\\log",
                "\\ln",
                "\\exp",
                "\\log_2",
                "\\log_{10}",
                "\\sum_{k=1}^{n}",
                "\\prod^{5}_{i=0}",
            )
        )
        power = self.pick(("", "", "^2", "^{-1}", "^{2}"))
        arg = self.pick((f"({self.expr(d - 1)})", f" {self.power(0)}", f" {self.term(0)}", f"{{{self.expr(0)}}}"))
        return name + power + arg + self.pick(("", "", "^\\circ", "^{\\circ}", "\\quad"))

    def power(self, d):
        a = self.atom(d)
        while self.r.random() < 0.2:
            small = str(self.r.randrange(13))  # small powers: sympy evaluates e^(huge) and comparisons of them slowly
            exp = self.pick((small, "1.5", self.pick(LETTERS), f"{{{self.pick(LETTERS)}+{small}}}", "2", "{-1}"))
            a += "^" + exp
        return a

    def term(self, d):
        parts = [self.power(d)]
        while self.r.random() < 0.25:
            parts.append(self.pick(MUL) + self.sp() + self.power(d))
        return self.sp().join(parts)

    def expr(self, d=1):
        s = self.pick(("", "", "", "-", "+", "-")) + self.term(d)
        while self.r.random() < 0.25:
            s += self.sp() + self.pick(("+", "-")) + self.sp() + self.pick(("", "", "-")) + self.term(d)
        return s

    def element(self):
        r = self.r.random()
        if r < 0.6:
            return self.expr()
        if r < 0.7:
            return self.expr() + self.pick((" \\pm ", "\\mp")) + self.expr(1)
        if r < 0.85:
            return f"{self.pick('([')}{self.expr(1)}, {self.expr(1)}{self.pick(')]')}"
        return f"{self.expr(1)} {self.pick(REL)} {self.expr(1)}"

    def top(self):
        r = self.r.random()
        if r < 0.45:
            return self.expr(1 + (self.r.random() < 0.3))
        if r < 0.55:
            return f"{self.expr()} {self.pick(REL)} {self.expr()}" + (
                f" {self.pick(REL)} {self.expr()}" if self.r.random() < 0.3 else ""
            )
        if r < 0.65:
            return self.pick((", ", ",", "; ")).join(self.element() for _ in range(self.r.randrange(2, 4)))
        if r < 0.72:
            o, c = self.pick((("\\{", "\\}"), ("{", "}")))
            return o + ", ".join(self.element() for _ in range(self.r.randrange(1, 4))) + c
        if r < 0.76:
            return f"({self.name()}, {self.name()}) = " + ", ".join(
                self.element() for _ in range(self.r.randrange(1, 3))
            )
        if r < 0.78:
            rows = [" & ".join(self.expr(0) for _ in range(2)) for _ in range(self.r.randrange(1, 3))]
            kind = self.pick(("pmatrix", "bmatrix", "matrix"))
            return f"\\begin{{{kind}}}" + " \\\\ ".join(rows) + f"\\end{{{kind}}}"
        if r < 0.8:
            return (
                self.name()
                + self.pick((" = ", " \\in "))
                + ", ".join(self.element() for _ in range(self.r.randrange(1, 3)))
            )
        if r < 0.88:
            items = ", ".join(self.expr(1) for _ in range(self.r.randrange(2, 4)))
            return self.pick(("(", "[", "\\(")) + items + self.pick((")", "]", "\\)"))
        if r < 0.94:
            sets = [
                f"[{self.expr(0)}, {self.expr(0)})",
                "\\{" + self.expr(0) + "\\}",
                f"({self.expr(0)}, {self.expr(0)}]",
            ]
            return " \\cup ".join(self.pick(sets) for _ in range(self.r.randrange(2, 4)))
        return self.pick(("1,000", "12,345.5", "-1,000,000", "0,500", "1, 000")) + self.pick(("", " "))
