"""Text-level helpers of the math grader: whitespace, delimiters, words, malformed LaTeX. Nothing here
parses math; ``grader.py`` imports these names (in the sandbox, from the image's in_sandbox/math/).
"""

import re

import sympy

DELIMITERS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")


def fix_malformed(s):
    """``\\sqrt(x)`` → ``\\sqrt{x}`` with balanced parentheses (Math-Verify's own fix for this pattern
    doubles the backslash, and the parse then silently keeps only the leading number)."""
    out, i = [], 0
    while True:
        j = s.find("\\sqrt", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        k = j + 5
        while k < len(s) and s[k] == " ":
            k += 1
        if k >= len(s) or s[k] != "(":
            out.append(s[i:k])
            i = k
            continue
        depth, m = 0, k
        while m < len(s):
            depth += {"(": 1, ")": -1}.get(s[m], 0)
            if depth == 0:
                break
            m += 1
        if depth:
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:j] + "\\sqrt{" + s[k + 1 : m] + "}")
        i = m + 1


def escape_dollars(s):
    return "".join("\\$" if c == "$" and (i == 0 or s[i - 1] != "\\") else c for i, c in enumerate(s))


def squash_space(s):
    """Every run of whitespace (newlines, tabs, no-break and other Unicode spaces) → one space, ends
    trimmed: LaTeX reads them all alike, and Math-Verify's delimiters do not match across a newline."""
    return " ".join(s.split())


# what may stand outside a plain expression's match: words (units, "apples") and punctuation, never an
# operator, bracket, digit or command that would make the match a fragment (``2x +`` is not 2)
OUTSIDE_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"")


_REGIONS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"), ("\\boxed{", "}"), ("\\fbox{", "}"))
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{[^{}]*\}")
_MATH_WORDS = {
    "sin",
    "cos",
    "tan",
    "cot",
    "sec",
    "csc",
    "log",
    "exp",
    "sqrt",
    "min",
    "max",
    "gcd",
    "lcm",
    "det",
    "mod",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "inf",
    "infty",
    "and",
    "or",
}


def _balanced(s):
    depth = 0
    for c in s:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def sole_region(g):
    """The inside of a reference that is exactly one math region (``$…$``, ``\\(…\\)``, ``\\boxed{…}``…),
    else None."""
    for a, b in _REGIONS:
        if len(g) > len(a) + len(b) and g.startswith(a) and g.endswith(b):
            inner = g[len(a) : -len(b)]
            if b == "}" and _balanced(inner) or b != "}" and a not in inner and b not in inner:
                return inner.strip()
    return None


def words_of(text):
    """Words (3+ letters, outside ``\\text{}`` and commands) that a LaTeX parse would read as letters."""
    return [w for w in _WORD.findall(_TEXT_ARG.sub(" ", text)) if w.lower() not in _MATH_WORDS]


def read_as_letters(text, value):
    """True when the parse turned a word of ``text`` into a product of its letters (``yes`` → E*s*y)."""
    words = words_of(text)
    if not words or not isinstance(value, sympy.Basic):
        return False
    names = {str(x) for x in value.free_symbols} | ({"e", "E"} if value.has(sympy.E) else set())
    return any(sum(c in names for c in set(w)) >= 2 for w in words)


def text_key(s):
    """A reference made only of words is compared as text: case, ``\\text{}`` wrappers, spacing and a
    final period do not count."""
    s = TEXT_UNWRAP.sub(r"\1", squash_space(s))
    return " ".join(s.replace("$", " ").replace("\\", " ").split()).strip(" .").lower()


TEXT_UNWRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
ONLY_WORDS = re.compile(r"[A-Za-z][A-Za-z ,.'-]*")


class BadReference(Exception):
    """The reference cannot be graded against as written: its message says why."""


def clip(s):
    return repr(s[:80] + ("…" if len(s) > 80 else ""))


def upright_constants(s):
    """``\\mathrm{e}`` → ``e`` (and ``i``): Math-Verify strips ``\\mathrm{…}`` as a unit and cuts the rest."""
    return s.replace("\\mathrm{e}", "e").replace("\\mathrm{i}", "i")


_CHOICE = re.compile(r"(?:\\text(?:bf|rm)?\s*\{\s*\(([A-E])\)\s*([^{}]*)\}|\(([A-E])\))\s*(.*)")
_LETTER = re.compile(r"(?:\\text(?:bf|rm)?\s*\{\s*)?\(?([A-E])\)?\s*\}?")


def choice_part(answer, gold):
    """A multiple-choice answer written with its value (``\\text{(C) } 7``): the letter against a letter
    reference (``C``), the value against any other; anything else is returned as it is."""
    m = _CHOICE.fullmatch(answer.strip())
    if not m:
        return answer
    letter, value = m.group(1) or m.group(3), f"{m.group(2) or ''} {m.group(4) or ''}".strip()
    if not value:
        return answer
    return f"\\text{{({letter})}}" if _LETTER.fullmatch(gold.strip().strip("$").strip()) else value


_MODULUS = re.compile(
    r"\s*(?:\\pmod\s*(?:\{[^{}]*\}|\w+)|\(\s*\\(?:bmod|mod)\s*(?:\{[^{}]*\}|\w+)\s*\)"
    r"|\\(?:bmod|mod)\s*(?:\{[^{}]*\}|\w+)|\(\s*\\text\s*\{\s*mod\s*\}\s*\w+\s*\))\s*$"
)


def without_modulus(answer, gold):
    """A congruence's residue (``3 \\pmod 7``, ``x \\equiv 3 \\pmod{7}``: 3, ``x = 3``) against a reference
    that names no modulus; the answer as it is otherwise (docs/verifiers.md, "Disputed forms")."""
    if "mod" in gold:
        return answer
    return _MODULUS.sub("", answer).replace("\\equiv", "=")
