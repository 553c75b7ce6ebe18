"""The lexer of ``fastparse``: latex2sympy's tokens for the part of its grammar fastparse reads.

``tokens(text)`` gives (kind, text) pairs, lexed as latex2sympy's ANTLR lexer (PS.g4) would lex them, or raises
``Decline`` wherever that lexer might make another token of the same characters: a bare word that begins one
of the grammar's keywords (``tr``, ``gcd``, ``norm``...), ``d`` and ``E`` (differentials, e-notation), a command
not in the tables below, ``^T`` / ``^\\circ`` (transpose, degree), Unicode.
"""

from __future__ import annotations

import re

NUMBER = re.compile(r"[0-9]*\.[0-9]+|[0-9]+")
COMMAND = re.compile(r"\\([a-zA-Z]+)")
PERCENT = re.compile(r"[ \t\r\n]?(\\%|%)")
SPACE = re.compile(r"[ \t\r\n]+|\\[,:;!]")
TEXT = re.compile(r"\\(text|textbf|textit|textnormal|mbox)[ \t\r\n]?\{([A-Za-z0-9 ()]*)\}")
MATRIX = re.compile(r"\\(begin|end)\{(matrix|pmatrix|bmatrix)\}|\\(begin)\{array\}\{[clr]*\}|\\(end)\{array\}|\\\\")
DIGITS = set("0123456789")
# the grammar's bare-word tokens: a letter run starting one of these is lexed as the keyword, not letters
KEYWORDS = ("arsinh", "arcsinh", "arcosh", "arccosh", "artanh", "arctanh", "gcd", "lcm", "floor", "ceil", "eye",
            "zeros", "ones", "cols", "rows", "diag", "norm", "rank", "tr", "rref", "hstack", "vstack", "orth",
            "nullspace", "eig", "svd", "SVD", "matrix", "pmatrix", "bmatrix", "vmatrix")  # fmt: skip
GREEK = {"alpha", "beta", "delta", "Delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "Theta", "vartheta",
         "iota", "kappa", "lambda", "Lambda", "mu", "nu", "xi", "Xi", "omicron", "pi", "Pi", "varpi", "rho",
         "varrho", "sigma", "Sigma", "varsigma", "tau", "upsilon", "Upsilon", "phi", "Phi", "varphi", "chi",
         "psi", "Psi", "omega", "Omega"}  # fmt: skip
COMMANDS = {"frac": "frac", "dfrac": "frac", "tfrac": "frac", "cfrac": "frac", "sqrt": "sqrt", "cdot": "*",
            "times": "*", "div": "/", "infty": "inf", "le": "<=", "leq": "<=", "ge": ">=", "geq": ">=",
            "lt": "<", "gt": ">", "ne": "!=", "neq": "!=", "pm": "pm", "mp": "pm", "cup": "cup", "in": "in",
            "sum": "sum", "prod": "sum"}  # fmt: skip
# latex2sympy's one-argument functions: f(x), f x, f^2(x), \\log_b x
FUNCTIONS = {"sin", "cos", "tan", "csc", "sec", "cot", "arcsin", "arccos", "arctan", "arccsc", "arcsec", "arccot",
             "sinh", "cosh", "tanh", "log", "ln", "exp"}  # fmt: skip
TWO = {"==": "==", "<=": "<=", ">=": ">=", "!=": "!=", "\\{": "{s", "\\}": "}s", "\\(": "(v", "\\)": ")v"}
SINGLE = set("+-*/:()[]{},;^_!=<>&|")
# what the grammar lexes after a caret as one token: a transpose (declined), a degree (ignored: convert_degrees off)
TRANSPOSE = ("T", "{T}", "{\\top}")
DEGREE = re.compile(r"\^(\\circle|\\circ|\\degree|°|\{\\circ\}|\{\\degree\}|\{\\circle\}|\{°\})")


class Decline(Exception):
    """The text is outside what fastparse reads exactly: the ANTLR parser takes it."""


def tokens(s: str) -> list[tuple[str, str]]:
    """(kind, text) pairs; Decline on anything latex2sympy's lexer might read otherwise."""
    out, i, n = [], 0, len(s)
    while i < n:
        m = SPACE.match(s, i)
        if m:
            i = m.end()
            continue
        c = s[i]
        if c in DIGITS or c == "." and s[i + 1 : i + 2] in DIGITS:
            j = NUMBER.match(s, i).end()
            pct = PERCENT.match(s, j)
            if s.startswith(("E", "."), j):
                raise Decline("e-notation or a second period after a number")
            out.append(("pct", s[i : pct.end()]) if pct else ("num", s[i:j]))
            i = pct.end() if pct else j
        elif c.isascii() and c.isalpha():
            if c in "dE" or (c == "I" and s.startswith(("^", "_"), i + 1)) or s.startswith(KEYWORDS, i):
                raise Decline(f"letter {c!r} at {i} may lex as another token")
            out.append(("e", c) if c == "e" else ("letter", c))
            i += 1
        elif c == "\\":
            i = _command(s, i, out)
        elif s[i : i + 2] in TWO and s[i : i + 3] not in ("!==", "<->", "<=>"):
            out.append((TWO[s[i : i + 2]], s[i : i + 2]))
            i += 2
        elif c in SINGLE:
            deg = DEGREE.match(s, i) if c == "^" else None
            if c == "^" and s.startswith(TRANSPOSE, i + 1):
                raise Decline("a transpose")
            out.append(("deg", deg.group()) if deg else (c, c))
            i = deg.end() if deg else i + 1
        else:
            raise Decline(f"character {c!r}")
    return out


def _command(s: str, i: int, out: list) -> int:
    """Lex the backslash token at ``i`` into ``out``; return where the next one starts."""
    m = MATRIX.match(s, i)
    if m:  # \begin{pmatrix}, \end{array}, the row break \\: latex2sympy's matrix tokens (written with no spaces)
        text = m.group()
        out.append(("row" if text == "\\\\" else "begin" if text.startswith("\\begin") else "end_m", text))
        return m.end()
    m = TEXT.match(s, i)
    if m:  # \text{C}: latex2sympy's ACCENT token, read as the symbol of its letters (spaces, parentheses dropped)
        out.append(("text", m.group(2).replace(" ", "").replace("(", "").replace(")", "")))
        if not out[-1][1]:
            raise Decline("empty \\text{}")
        return m.end()
    m = COMMAND.match(s, i)
    if m:
        name = m.group(1)
        if name.startswith(("quad", "qquad")):  # \quadx: the space \quad, then x (no other token starts so)
            return i + (5 if name.startswith("quad") else 6)
        if name in FUNCTIONS:
            out.append(("fn", name))
        elif name in GREEK:
            out.append(("greek", name))
        elif name in COMMANDS:
            if COMMANDS[name] is not None:
                out.append((COMMANDS[name], name))
            if name == "infty" and s.startswith(("%", "\\%"), m.end()):
                raise Decline("\\infty%")
        else:
            raise Decline(f"command \\{name}")
        return m.end()
    if s[i : i + 2] in TWO and not s.startswith(("\\{\\}", "\\(\\)"), i):
        out.append((TWO[s[i : i + 2]], s[i : i + 2]))
        return i + 2
    raise Decline(f"{s[i : i + 2]!r}")
