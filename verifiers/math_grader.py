"""The sandbox half of the ``math`` verifier: parse with Math-Verify, compare with sympy.

This module never runs in the service process. ``math_verifier.WARMUP`` execs its source once in each
sandbox worker (as the module ``rlvr_math``), so every forked job finds the parsers, regexes and
antlr caches warm and only calls ``rlvr_math.main()``. It reads ``{"items": [...]}`` as JSON on stdin
and prints one JSON line per item, in order, flushed as each finishes, so that when the job is killed
the host knows which items were done and which one was running.

An item is ``{"gold", "preds": [answer, ...], "mode": "answer" | "full", "rel_tol", "timeout", "left"}``
(``timeout``: its own seconds; ``left``: what was left of its request's deadline when the job was sent):

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
import signal
import sys
import time

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2
from math_verify import grader
from math_verify import parse as mv_parse
from math_verify import verify as mv_verify
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, extract_expr, get_extraction_regexes

try:  # in the sandbox the host ships math_text.py as the module rlvr_math_text (math_verifier.WARMUP)
    import rlvr_math_text as _text
except ImportError:  # on the host
    from verifiers import math_text as _text
BadReference = _text.BadReference
DELIMITERS = _text.DELIMITERS
ONLY_WORDS = _text.ONLY_WORDS
OUTSIDE_OK = _text.OUTSIDE_OK
TEXT_UNWRAP = _text.TEXT_UNWRAP
clip = _text.clip
escape_dollars = _text.escape_dollars
fix_malformed = _text.fix_malformed
read_as_letters = _text.read_as_letters
sole_region = _text.sole_region
squash_space = _text.squash_space
text_key = _text.text_key
upright_constants = _text.upright_constants
words_of = _text.words_of

LATEX = (LatexExtractionConfig(boxed_match_priority=0),)
EXPR = (ExprExtractionConfig(),)
BOTH = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
FULL_TAIL = 10_000  # full mode reads the last this-many characters of the completion


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
def parse_whole(answer):
    """Parse a complete final answer, or return [] — never a piece of it."""
    s = fix_malformed(squash_space(answer))
    s = upright_constants(s)
    if not s:
        return []
    got = mv_parse("$" + escape_dollars(s) + "$", LATEX, fallback_mode="no_fallback",
                   extraction_mode="first_match", parsing_timeout=None)  # fmt: skip
    if got:
        return got + [s]
    return parse_plain_expr(s)


def parse_plain_expr(s):
    """Math-Verify's expression extractor, accepted only when what the match leaves outside it is words
    and punctuation (``5 apples`` → 5; ``4\\sqrt(2`` and ``2x +`` → nothing)."""
    regexes = get_extraction_regexes(EXPR)
    matches = sorted((m for pats, _ in regexes for p, _ in pats for m in p.finditer(s)),
                     key=lambda m: (m.end(), -m.start()), reverse=True)  # fmt: skip
    for m in matches:
        rest = s[: m.start()] + s[m.end() :]
        if not set(rest) <= OUTSIDE_OK:
            continue
        value, text = extract_expr(m)
        if value is not None:
            return [value, text]
    return []


def parse_gold(gold):
    """The reference parsed as a whole: a list like ``parse_whole``'s, or ``["text", key]`` for a reference
    made only of words. Raises BadReference rather than ever keeping a fragment of it."""
    g = squash_space(gold)
    inner = sole_region(g)
    g = inner if inner is not None else g
    plain = TEXT_UNWRAP.sub(r"\1", g)
    if ONLY_WORDS.fullmatch(plain) and words_of(plain):
        return ["text", text_key(plain)]
    if any(d in g for d in DELIMITERS):  # text around math regions: Math-Verify's extraction, LaTeX only
        got = mv_parse(g, LATEX, parsing_timeout=None)
        got = got if got and not isinstance(got[0], str) else []
    else:
        got = parse_whole(g)
    if not got:  # only the very same text can be graded against it
        return ["unparsed", squash_space(inner if inner is not None else gold)]
    if read_as_letters(g, got[0]):
        raise BadReference(f"reference {clip(gold)} mixes words and math (its words would be read as "
                           f"a product of letters: {_show(got)})")  # fmt: skip
    return got


def parse_full(text):
    return mv_parse(upright_constants(text[-FULL_TAIL:]), BOTH, parsing_timeout=None)


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
        return {"ok": True, "why": f"gold {clip(gold)} does not parse as math; the answer is the same text"}
    return {"bad_reference": f"reference {clip(gold)} does not parse as math as a whole (only the very "
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
    t0 = time.monotonic()
    for i, item in enumerate(q["items"]):
        _State.out_of_memory = False
        # "timeout": the item's own time, from its start; "left": what was left of its request's deadline
        # when the job was sent, from the job's start (an item that waited behind others spent that wait)
        own = float(item.get("timeout") or 5.0)
        left = float(item.get("left") or own) - (time.monotonic() - t0)
        signal.setitimer(signal.ITIMER_REAL, max(min(own, left), 0.01))
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
