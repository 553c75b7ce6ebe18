"""The sandbox half of the ``math`` verifier: parse with Math-Verify, compare with sympy.

This module never runs in the service process. ``math_verifier.WARMUP`` execs its source once in each
sandbox worker (as the module ``rlvr_math``), so every forked job finds the parsers, regexes and
antlr caches warm and only calls ``rlvr_math.main()``. It reads ``{"items": [...]}`` as JSON on stdin
and prints one JSON line per item, in order, flushed as each finishes, so that when the job is killed
the host knows which items were done and which one was running.

An item is ``{"gold", "preds": [answer, ...], "mode": "answer" | "full", "rel_tol", "timeout"}``:

* ``answer``: each pred is a final answer the host already extracted (a ``\\boxed{}`` or ``<answer>``
  content). It is parsed *as a whole* (LaTeX first, then a plain expression that must account for
  every digit), so malformed LaTeX is never truncated into a different number (``4\\sqrt(2)`` is not 4).
  With several preds (several different boxed answers) the item is correct only when every one of them,
  or all of them together as one list, equals the gold: spraying guesses never wins.
* ``full``: the pred is the whole completion, extracted the way Math-Verify does (LaTeX + expression
  extractors, boxed first).

Where this departs from Math-Verify's ``verify``: two exact numbers are compared exactly (rationals) or
to 40 significant digits (irrationals), never by rounding to 6 decimals, so ``1/2004!`` is not
``1/2006!`` and ``e^{-1000}`` is not ``e^{-1001}``; a float that rounds to 0 is compared relatively;
``rel_tol`` compares numbers relatively; running out of memory reports a timeout, not a wrong answer.
Parsing is Math-Verify's, with ANTLR's two-stage (SLL, then LL) prediction for speed.
"""

import json
import re
import signal
import sys

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2
from math_verify import grader
from math_verify import parse as mv_parse
from math_verify import verify as mv_verify
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, extract_expr, get_extraction_regexes

LATEX = (LatexExtractionConfig(boxed_match_priority=0),)
EXPR = (ExprExtractionConfig(),)
BOTH = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
FULL_TAIL = 10_000  # full mode reads the last this-many characters of the completion
DELIMITERS = ("$", "\\(", "\\[", "\\boxed", "\\fbox")


class SoftTimeout(BaseException):
    """Raised by SIGALRM inside this sandbox job (never in a server thread) to end one item."""


class _State:
    rel_tol = None  # options["rel_tol"] of the item being graded
    out_of_memory = False


# -- two-stage antlr parsing ---------------------------------------------------------------------------
# latex2sympy's grammar sends many decisions (sets, intervals, commas) to ANTLR's full-context LL
# prediction, which is never cached and costs ~100 ms a parse. The standard ANTLR remedy: parse with SLL
# prediction first (cached, ~5x faster here) and only when that fails, parse again with full LL. Checked
# on 3,098 parses (Math-Verify's test strings, our tables, the bench pairs): identical results.
_l2s = latex2sympy2._Latex2Sympy
_create_parser, _parse_ll = _l2s.create_parser, _l2s.parse


def _create_parser_sll(self, latex_str):
    parser = _create_parser(self, latex_str)
    if getattr(self, "_sll", False):
        parser._interp.predictionMode = PredictionMode.SLL
    return parser


def _parse_two_stage(self, latex_str):
    self._sll = True
    try:
        return _parse_ll(self, latex_str)
    except Exception:
        pass
    finally:
        self._sll = False
    return _parse_ll(self, latex_str)


_l2s.create_parser, _l2s.parse = _create_parser_sll, _parse_two_stage


# -- parsing -----------------------------------------------------------------------------------------
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


def _escape_dollars(s):
    return "".join("\\$" if c == "$" and (i == 0 or s[i - 1] != "\\") else c for i, c in enumerate(s))


def squash_space(s):
    """Every run of whitespace (newlines, tabs, no-break and other Unicode spaces) → one space, ends
    trimmed: LaTeX reads them all alike, and Math-Verify's delimiters do not match across a newline."""
    return " ".join(s.split())


def parse_whole(answer):
    """Parse a complete final answer, or return [] — never a piece of it."""
    s = fix_malformed(squash_space(answer))
    s = _upright_constants(s)
    if not s:
        return []
    got = mv_parse("$" + _escape_dollars(s) + "$", LATEX, fallback_mode="no_fallback",
                   extraction_mode="first_match", parsing_timeout=None)  # fmt: skip
    if got:
        return got + [s]
    return parse_plain_expr(s)


# what may stand outside a plain expression's match: words (units, "apples") and punctuation, never an
# operator, bracket, digit or command that would make the match a fragment (``2x +`` is not 2)
_OUTSIDE_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"")


def parse_plain_expr(s):
    """Math-Verify's expression extractor, accepted only when what the match leaves outside it is words
    and punctuation (``5 apples`` → 5; ``4\\sqrt(2`` and ``2x +`` → nothing)."""
    regexes = get_extraction_regexes(EXPR)
    matches = sorted((m for pats, _ in regexes for p, _ in pats for m in p.finditer(s)),
                     key=lambda m: (m.end(), -m.start()), reverse=True)  # fmt: skip
    for m in matches:
        rest = s[: m.start()] + s[m.end() :]
        if not set(rest) <= _OUTSIDE_OK:
            continue
        value, text = extract_expr(m)
        if value is not None:
            return [value, text]
    return []


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
    s = _TEXT_UNWRAP.sub(r"\1", squash_space(s))
    return " ".join(s.replace("$", " ").replace("\\", " ").split()).strip(" .").lower()


_TEXT_UNWRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_ONLY_WORDS = re.compile(r"[A-Za-z][A-Za-z ,.'-]*")


class BadReference(Exception):
    """The reference cannot be graded against as written: its message says why."""


def parse_gold(gold):
    """The reference parsed as a whole: a list like ``parse_whole``'s, or ``["text", key]`` for a reference
    made only of words. Raises BadReference rather than ever keeping a fragment of it."""
    g = squash_space(gold)
    inner = sole_region(g)
    g = inner if inner is not None else g
    plain = _TEXT_UNWRAP.sub(r"\1", g)
    if _ONLY_WORDS.fullmatch(plain) and words_of(plain):
        return ["text", text_key(plain)]
    if any(d in g for d in DELIMITERS):  # text around math regions: Math-Verify's extraction, LaTeX only
        got = mv_parse(g, LATEX, parsing_timeout=None)
        got = got if got and not isinstance(got[0], str) else []
    else:
        got = parse_whole(g)
    if not got:  # only the very same text can be graded against it
        return ["unparsed", squash_space(inner if inner is not None else gold)]
    if read_as_letters(g, got[0]):
        raise BadReference(f"reference {_clip(gold)} mixes words and math (its words would be read as "
                           f"a product of letters: {_show(got)})")  # fmt: skip
    return got


def _clip(s):
    return repr(s[:80] + ("…" if len(s) > 80 else ""))


def _upright_constants(s):
    """``\\mathrm{e}`` → ``e`` (and ``i``): Math-Verify strips ``\\mathrm{…}`` as a unit and cuts the rest."""
    return s.replace("\\mathrm{e}", "e").replace("\\mathrm{i}", "i")


def parse_full(text):
    return mv_parse(_upright_constants(text[-FULL_TAIL:]), BOTH, parsing_timeout=None)


# -- comparison ----------------------------------------------------------------------------------------
_mv_numeric_eq = grader.sympy_numeric_eq


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


def numeric_eq(a, b, float_rounding, numeric_precision):
    """Replaces Math-Verify's numeric comparison (its set/tuple/interval/matrix code calls this too)."""
    try:
        if not (_plain_number(a) and _plain_number(b)):
            return _mv_numeric_eq(a, b, float_rounding, numeric_precision)
        x, y = grader.safe_sympy_doit(a), grader.safe_sympy_doit(b)
        if _State.rel_tol is not None:
            return _close(x, y, _State.rel_tol)
        if not x.has(sympy.Float) and not y.has(sympy.Float):
            if x.is_Rational and y.is_Rational:
                return bool(x == y)
            return _close(x, y, 1e-30)
        ok = _mv_numeric_eq(a, b, float_rounding, numeric_precision)
        if ok and max(abs(sympy.N(x)), abs(sympy.N(y))) < 10.0**-float_rounding:
            return _close(x, y, 10.0**-float_rounding)  # rounding both to 0 proves nothing
        return bool(ok)
    except MemoryError:
        _State.out_of_memory = True
        raise


grader.sympy_numeric_eq = numeric_eq
_mv_symbolic_eq = grader.sympy_symbolic_eq
_PROBES = (sympy.Rational(7310, 10007), sympy.Rational(-13, 7))  # arbitrary points, exact


def _differs_somewhere(a, b):
    """True when a and b take clearly different values at two arbitrary points (so a - b is not
    identically zero and ``simplify`` cannot prove otherwise); False when undecided."""
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
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
    """Math-Verify's ``simplify(a - b) == 0``, after two cheap tests on expressions with variables:
    ``expand(a - b) == 0`` proves polynomial identities; different values at two points disprove."""
    try:
        if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr) and (a.free_symbols or b.free_symbols):
            if sympy.expand(a - b) == 0:
                return True
            if _differs_somewhere(a, b):
                return False
    except MemoryError:
        _State.out_of_memory = True
        raise
    except Exception:
        pass
    return _mv_symbolic_eq(a, b)


grader.sympy_symbolic_eq = symbolic_eq


def equivalent(gold, pred):
    return bool(mv_verify(gold, pred, float_rounding=6, timeout_seconds=None))


def _show(parsed):
    if not parsed:
        return "?"
    return (str(parsed[0]) if not isinstance(parsed[0], str) else f"{parsed[0]!r} (unparsed text)")[:80]


# -- one item --------------------------------------------------------------------------------------
def grade(item, gold_cache):
    gold = gold_cache.get(item["gold"])
    if gold is None:
        try:
            gold = gold_cache[item["gold"]] = parse_gold(item["gold"])
        except BadReference as e:
            gold = gold_cache[item["gold"]] = e
    if isinstance(gold, BadReference):
        return {"bad_reference": str(gold)}
    _State.rel_tol = item.get("rel_tol")
    if gold[0] == "text":
        return _grade_text(gold[1], item)
    if gold[0] == "unparsed":
        return _grade_unparsed(gold[1], item)
    if item.get("mode") == "full":
        pred = parse_full(item["preds"][0])
        if not pred:
            return {"no_answer": "no math found in the completion"}
        ok = equivalent(gold, pred)
        return {"ok": ok, "why": f"gold={_show(gold)} pred={_show(pred)}"}
    # an answer that does not parse is kept as its exact text: it can only equal a gold spelled the same
    preds = [parse_whole(p) or [squash_space(p)] for p in item["preds"]]
    if len(preds) == 1:
        return {"ok": equivalent(gold, preds[0]), "why": f"gold={_show(gold)} pred={_show(preds[0])}"}
    every = all(equivalent(gold, p) for p in preds)
    together = every or equivalent(gold, parse_whole(", ".join(item["preds"])) or [])
    why = f"{len(preds)} different boxed answers, " + ("all equal to the gold" if every else
          "equal to the gold together" if together else "not all equal to the gold (answer spraying)")  # fmt: skip
    return {"ok": every or together, "why": why + f"; gold={_show(gold)}"}


def _answer_texts(item):
    """The answer(s) as written (in full mode, the text of the math Math-Verify extracts)."""
    if item.get("mode") != "full":
        return item["preds"]
    got = parse_full(item["preds"][0])
    return [got[-1]] if got and isinstance(got[-1], str) else [""]


def _grade_unparsed(gold, item):
    """A reference that does not parse as a whole: an answer spelled exactly the same (spacing aside) is
    correct; anything else cannot be graded, and no piece of the reference is ever compared instead."""
    if {squash_space(p) for p in _answer_texts(item)} == {gold}:
        return {"ok": True, "why": f"gold {_clip(gold)} does not parse as math; the answer is the same text"}
    return {"bad_reference": f"reference {_clip(gold)} does not parse as math as a whole (only the very "
                             "same text could be graded against it)"}  # fmt: skip


def _grade_text(key, item):
    """A words-only reference (``yes``, ``north-east``): the answer must say the same words."""
    keys = {text_key(p) for p in _answer_texts(item)}
    ok = keys == {key}
    return {"ok": ok, "why": f"gold text {key[:60]!r} pred text {sorted(keys)[0][:60]!r}"}


def _alarm(*_):
    raise SoftTimeout


def main():
    q = json.loads(sys.stdin.read())
    signal.signal(signal.SIGALRM, _alarm)
    gold_cache = {}
    for i, item in enumerate(q["items"]):
        _State.out_of_memory = False
        signal.setitimer(signal.ITIMER_REAL, max(float(item.get("timeout") or 5.0), 0.01))
        try:
            res = grade(item, gold_cache)
            if _State.out_of_memory:
                res = {"timeout": "the comparison ran out of memory"}
        except SoftTimeout:
            res = {"timeout": "the comparison took too long"}
        except MemoryError:
            res = {"timeout": "the comparison ran out of memory"}
        except RecursionError:
            res = {"timeout": "the comparison recursed too deeply"}
        except Exception as e:  # a parser bug on odd input: the answer is not gradable as written
            res = {"ok": False, "why": f"comparison failed: {type(e).__name__}: {str(e)[:200]}"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.write(json.dumps(dict(res, i=i)) + "\n")
        sys.stdout.flush()
