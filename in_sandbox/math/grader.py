"""The sandbox half of the ``math`` verifier: parse with Math-Verify, compare with sympy.

This module never runs in the service process. The pool's warm-up (``verifiers.kinds.table.sandbox_warmup``) imports it once in
each sandbox worker and grades a corpus, so every forked job finds the parsers, regexes and antlr caches
warm and only calls ``grader.main()``. It reads ``{"items": [...]}`` as JSON on stdin
and prints one JSON line per item, in order, flushed as each finishes, so that when the job is killed
the host knows which items were done and which one was running.

An item is ``{"gold", "preds": [answer, ...], "mode": "answer" | "full", "rel_tol", "timeout", "left"}``
(``timeout``: its own seconds; ``left``: what was left of its request's deadline when the job was sent):

* ``answer``: each pred is a final answer the host already extracted (``in_sandbox/answer.py``: a
  ``\\boxed{}`` or ``<answer>`` content). It is parsed *as a whole* (LaTeX first, then a plain expression that must account for
  every digit), so malformed LaTeX is never truncated into a different number (``4\\sqrt(2)`` is not 4).
  With several preds (several different boxed answers) the item is correct only when every one of them,
  or all of them together as one list, equals the gold: spraying guesses never wins. ``together``: false
  where the answers came through different channels (a box and a tag): then every one must equal it.
* ``full``: the pred is the whole completion, extracted the way Math-Verify does (LaTeX + expression
  extractors, boxed first).

Where this departs from Math-Verify's ``verify``: the comparison rules of ``equal.py`` (exact
numbers compared exactly, ∞ equal only to the same ∞, an equation counts only as ``name = value``);
answers are read as written (``forms.py``: Unicode, ``1\\,000``, ``1.5e3``; ``7 0`` is no number);
an answer that hedges (``3 \\text{ (or possibly 4)}``) is INCORRECT, never stripped; a unit other than
the reference's is INCORRECT unless it converts to the same quantity; running out of memory reports a
timeout, not a wrong answer. Parsing is Math-Verify's: latex2sympy's tree, built by fastparse where it reads the
string, else by ANTLR with two-stage (SLL, then LL) prediction.
"""

import functools
import itertools
import json
import re
import signal
import sys
import time

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2
from math_verify import parse as mv_parse
from math_verify import verify as mv_verify
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, extract_expr, get_extraction_regexes

from in_sandbox import hedges, reader
from in_sandbox.jobs import MATH
from in_sandbox.math import equal, fastequal, fastparse, forms
from in_sandbox.math import text as text_rules

BadReference = text_rules.BadReference
DELIMITERS = text_rules.DELIMITERS
ONLY_WORDS = text_rules.ONLY_WORDS
OUTSIDE_OK = text_rules.OUTSIDE_OK
TEXT_UNWRAP = text_rules.TEXT_UNWRAP
clip = text_rules.clip
escape_dollars = text_rules.escape_dollars
fix_malformed = text_rules.fix_malformed
read_as_letters = text_rules.read_as_letters
sole_region = text_rules.sole_region
squash_space = text_rules.squash_space
text_key = text_rules.text_key
upright_constants = text_rules.upright_constants
choice_part = text_rules.choice_part
without_modulus = text_rules.without_modulus
words_of = text_rules.words_of

LATEX = (LatexExtractionConfig(boxed_match_priority=0),)
EXPR = (ExprExtractionConfig(),)
BOTH = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
FULL_TAIL = 10_000  # full mode reads the last this-many characters of the completion


class SoftTimeout(BaseException):
    """Raised by SIGALRM inside this sandbox job (never in a server thread) to end one item."""


# -- two-stage antlr parsing ---------------------------------------------------------------------------
# latex2sympy's grammar sends many decisions (sets, intervals, commas) to ANTLR's full-context LL
# prediction, which is never cached. The standard ANTLR remedy: parse with SLL prediction first (cached) and
# only when that fails, parse again with full LL; the results are identical (bench/results/docstring_figures.txt).
_l2s = latex2sympy2._Latex2Sympy
_create_parser, _parse_ll = _l2s.create_parser, _l2s.parse


def _create_parser_sll(self, latex_str):
    parser = _create_parser(self, latex_str)
    if getattr(self, "_sll", False):
        parser._interp.predictionMode = PredictionMode.SLL
    return parser


def parse_two_stage(self, latex_str):
    self._sll = True
    try:
        return _parse_ll(self, latex_str)
    except Exception:
        pass
    finally:
        self._sll = False
    return _parse_ll(self, latex_str)


def _parse_fast_first(self, latex_str):
    """fastparse's exact tree where it reads the string (most answers), else the two-stage ANTLR parse."""
    got = fastparse.parse(self, latex_str)
    return got if got is not None else parse_two_stage(self, latex_str)


_l2s.create_parser, _l2s.parse = _create_parser_sll, _parse_fast_first


# -- parsing -----------------------------------------------------------------------------------------
REALS = "(-\\infty, \\infty)"


@functools.lru_cache(maxsize=256)
def written(text):
    """The answer as the parser should read it: spacing squashed, Unicode and typesetting forms rewritten
    (forms.normalize), ``\\sqrt(x)`` repaired, 'all real numbers' as the interval. Remembered (a pure function
    of the text, asked for the same answer and reference several times an item)."""
    s = forms.normalize(upright_constants(fix_malformed(squash_space(text))))
    return REALS if forms.all_reals(s) else s


def parse_whole(answer):
    """Parse a complete final answer, or return [] — never a piece of it. Digits separated by a space
    outside a thousands group (``7 0``) are not a number: [] (never the product 7·0)."""
    s = written(answer)
    if not s or forms.spaced_digits(s):
        return []
    got = mv_parse(
        "$" + escape_dollars(s) + "$",
        LATEX,
        fallback_mode="no_fallback",
        extraction_mode="first_match",
        parsing_timeout=None,
    )
    if got:
        return got + [s]
    return parse_plain_expr(s)


def parse_plain_expr(s):
    """Math-Verify's expression extractor, accepted only when what the match leaves outside it is words
    and punctuation (``5 apples`` → 5; ``4\\sqrt(2`` and ``2x +`` → nothing)."""
    regexes = get_extraction_regexes(EXPR)
    matches = sorted(
        (m for pats, _ in regexes for p, _ in pats for m in p.finditer(s)),
        key=lambda m: (m.end(), -m.start()),
        reverse=True,
    )
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
    g = written(inner if inner is not None else g)
    plain = TEXT_UNWRAP.sub(r"\1", g)
    if ONLY_WORDS.fullmatch(plain) and words_of(plain):
        return ["text", text_key(plain)]
    if any(
        d in g.replace("\\$", "") for d in DELIMITERS
    ):  # text around math regions: Math-Verify's extraction, LaTeX only
        got = mv_parse(g, LATEX, parsing_timeout=None)
        got = got if got and not isinstance(got[0], str) else []
    else:
        got = parse_whole(g)
    if not got:  # only the very same text can be graded against it
        return ["unparsed", squash_space(inner if inner is not None else gold)]
    if read_as_letters(g, got[0]):
        raise BadReference(
            f"reference {clip(gold)} mixes words and math (its words would be read as "
            f"a product of letters: {_show(got)})"
        )
    return got


def full_text(text):
    """What ``full`` mode reads of a completion: its last FULL_TAIL characters, normalized (forms.normalize)."""
    return forms.normalize(upright_constants(text[-FULL_TAIL:]))


def parse_full(text, normalized=None):
    """Math-Verify's extraction from a completion (``normalized``: its ``full_text``, where already made)."""
    return mv_parse(normalized if normalized is not None else full_text(text), BOTH, parsing_timeout=None)


# -- comparison: equal.py's rules, patched into Math-Verify's grader ---------------------------
equal.install()


def equivalent(gold, pred):
    """Math-Verify's ``verify`` over every (reference, answer) reading, in its order; a pair whose verdict is
    certain without sympy's machinery (two rationals, two polynomials, two clearly different constants) is
    decided by fastequal."""
    return any(_equal_pair(g, p) for g, p in itertools.product(gold, pred))


def _equal_pair(g, p):
    fast = fastequal.decide(g, p, equal.State.rel_tol)
    if fast is not None:
        return fast
    return bool(mv_verify(g, p, float_rounding=6, timeout_seconds=None))


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
    equal.State.rel_tol = item.get("rel_tol")
    if gold[0] == "text":
        return _grade_text(gold[1], item)
    if gold[0] == "unparsed":
        return _grade_unparsed(gold[1], item)
    if item.get("mode") == "full":
        return _grade_full(gold, item)
    # a choice written with its value, a congruence's residue: the part the reference asks for (text.py)
    item = dict(item, preds=[without_modulus(choice_part(p, item["gold"]), item["gold"]) for p in item["preds"]])
    for p in item["preds"]:  # a doubt, condition or alternative in the answer: never stripped, never paid
        word = forms.hedge_inside(written(p), allowed=item["gold"])
        if word:
            return {"ok": False, "why": f"the answer {clip(p)} hedges ({word!r}): not one answer"}
    texts, why = _numerals(item["gold"], item["preds"])
    if texts is None:
        return {"ok": False, "why": why}
    # an answer that does not parse is kept as its exact text: it can only equal a gold spelled the same
    preds = [parse_whole(p) or [squash_space(p)] for p in texts]
    if len(preds) == 1:
        pred, why = _in_gold_units(item["gold"], item["preds"][0], preds[0])
        if pred is None:
            return {"ok": False, "why": why}
        if _set_against_interval(gold, item["gold"], pred, item["preds"][0]):
            return {"ok": False, "why": f"a finite set is never an interval: gold={_show(gold)} pred={_show(pred)}"}
        return {"ok": equivalent(gold, pred), "why": f"gold={_show(gold)} pred={_show(pred)}{why}"}
    every = all(equivalent(gold, p) for p in preds)
    # together: the boxes in the order written (answer.py lists them last-first), as one list or as a tuple
    # (x = \boxed{2}, y = \boxed{3} for (2, 3)); a set reference ignores the order anyway. Answers through
    # different channels (a box and an answer tag, two tags) are never read together (in_sandbox/answer.py).
    listed = ", ".join(reversed(item["preds"]))
    may = item.get("together", True)
    together = every or may and any(equivalent(gold, parse_whole(t) or []) for t in (listed, f"({listed})"))
    kind = "boxed answers" if may else "answers through different channels"
    why = f"{len(preds)} different {kind}, " + (
        "all equal to the gold"
        if every
        else "equal to the gold together"
        if together
        else "not all equal to the gold (several answers)"
    )
    return {"ok": every or together, "why": why + f"; gold={_show(gold)}"}


_SET_WRITTEN = re.compile(r"\\\{|\\lbrace|\\text\s*\{[^{}]*\bor\b[^{}]*\}|∅|\\emptyset|\\varnothing")


def _set_against_interval(gold, gold_text, pred, pred_text):
    """One side written as a finite set (``\\{2, 3\\}``, ``3 \\text{ or } 4``) and the other parsed as an interval
    (``(2, 3)``, ``[3, 4]``): two numbers are never every number between them, in whichever order."""

    def finite(parsed, text):
        if not (parsed and isinstance(parsed[0], sympy.FiniteSet) and _SET_WRITTEN.search(text)):
            return False  # conditions joined by "or" (x < 1 or x > 3) are the union they define, not a finite set
        return not any(isinstance(e, sympy.core.relational.Relational) for e in parsed[0].args)

    def interval(parsed):
        return bool(parsed) and (
            isinstance(parsed[0], sympy.Interval)
            or isinstance(parsed[0], sympy.Union)
            and any(isinstance(a, sympy.Interval) for a in parsed[0].args)
        )

    return finite(pred, pred_text) and interval(gold) or finite(gold, gold_text) and interval(pred)


def _numerals(gold_text, preds):
    """(answers, why): numerals in a base (``12_{4}``, whose subscript the parser drops) read as their
    decimal value against a decimal reference; against a reference in base b, only base b (compared as
    written, digits against digits); (None, why) where an answer's numeral is in another base or invalid."""
    gold_bases = forms.bases(gold_text)
    if gold_bases:
        other = set().union(*(forms.bases(p) for p in preds)) - gold_bases
        return (
            (None, f"the answer writes base {sorted(other)[0]}, the reference base {sorted(gold_bases)[0]}")
            if other
            else (preds, "")
        )
    texts = [forms.in_decimal(p) for p in preds]
    if None in texts:
        return None, f"the answer {clip(preds[texts.index(None)])} has a digit its base does not have"
    return texts, ""


def _grade_full(gold, item):
    """Fallback ``full``: Math-Verify's extraction from the whole text; an answer whose sentence offers
    another candidate or a condition (``It is either 3 or 4.``) is not one answer."""
    text = full_text(item["preds"][0])
    pred = parse_full(item["preds"][0], normalized=text)
    if not pred:
        return {"no_answer": "no math found in the completion"}
    found = pred[-1] if isinstance(pred[-1], str) else ""
    word = forms.hedge_inside(found, allowed=item["gold"]) or (found and statement_of(text, found))
    if word:
        return {"ok": False, "why": f"the answer {clip(found)} is hedged in its sentence ({word!r})"}
    return {"ok": equivalent(gold, pred), "why": f"gold={_show(gold)} pred={_show(pred)}"}


def statement_of(text, found):
    """Why the answer ``found`` is not one answer as a reader reads its final statement (the rule of
    in_sandbox/answer.py and reader.py, the same as for a box), else None. The statement starts where the answer
    is first written in its sentence or the one before (not only its last occurrence: "3 (or maybe 4). Note
    that 3 is odd.")."""
    last = text.rfind(found)
    if last < 0:
        return None
    end = last + len(found)
    why = (
        hedges.hedge_around(text, last, end)
        or reader.adjoined(text, last, end)
        or reader.negation_near(text, last, end)
        or reader.value_inside(found)
        or reader.labelled_twice(text, [found])
    )
    if why:
        return why
    ends = [m.end() for m in re.finditer(r"[.!?](?:\s|$)|\n", text[:last])]
    first = text.find(found, ends[-2] if len(ends) >= 2 else 0)  # its first place in its and the sentence before
    return reader.other_value(text, first, first + len(found), [found])


def _in_gold_units(gold_text, pred_text, pred):
    """(pred, note): the parsed answer, converted to the reference's unit where both carry units of one
    dimension (``0.1 \\text{ m}`` against ``10 \\text{ cm}``); (None, why) where their units differ."""
    inner = written(sole_region(squash_space(gold_text)) or gold_text)
    ga, pa = _angle_unit(inner), _angle_unit(written(pred_text))
    if ga and pa and ga != pa:
        return None, f"the answer is in {pa}, the reference in {ga}: an angle's number depends on its unit"
    gu, pu = forms.unit_of(inner), forms.unit_of(written(pred_text))
    several = forms.units_in(written(pred_text))
    if len(several) > 1 and several != forms.units_in(inner):
        return None, f"the answer names quantities in several units ({', '.join(sorted(several))})"
    if gu is None or pu is None or gu == pu:
        return pred, ""
    gf, pf = forms.unit_factor(gu), forms.unit_factor(pu)
    if gf is None or pf is None or gf[0] != pf[0] or not isinstance(pred[0], sympy.Expr):
        return None, f"the answer is in {pu!r}, the reference in {gu!r}"
    scaled = (
        pred[0]
        * sympy.Rational(pf[1].numerator, pf[1].denominator)
        / sympy.Rational(gf[1].numerator, gf[1].denominator)
    )
    return [scaled], f" (converted from {pu} to {gu})"


_DEGREES = re.compile(r"\^\s*\{?\s*\\circ|°|\\degree|\bdeg(?:rees?)?\b", re.I)
_RADIANS = re.compile(r"\brad(?:ians?)?\b", re.I)


def _angle_unit(text):
    """``degrees`` or ``radians`` where the text writes an angle's unit, else None."""
    deg, rad = _DEGREES.search(text), _RADIANS.search(text)
    return None if bool(deg) == bool(rad) else "degrees" if deg else "radians"


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
    return {
        "bad_reference": f"reference {clip(gold)} does not parse as math as a whole (only the very "
        "same text could be graded against it)"
    }


def _grade_text(key, item):
    """A words-only reference (``yes``, ``north-east``): the answer must say the same words."""
    keys = {text_key(p) for p in _answer_texts(item)}
    ok = keys == {key}
    return {"ok": ok, "why": f"gold text {key[:60]!r} pred text {sorted(keys)[0][:60]!r}"}


def _alarm(*_):
    raise SoftTimeout


def main():
    q = MATH.loads(sys.stdin.read())
    signal.signal(signal.SIGALRM, _alarm)
    gold_cache = {}
    t0 = time.monotonic()
    for i, item in enumerate(q["items"]):
        equal.State.out_of_memory = False
        # "timeout": the item's own time, from its start; "left": what was left of its request's deadline
        # when the job was sent, from the job's start (an item that waited behind others spent that wait)
        own = float(item.get("timeout") or 5.0)
        left = float(item.get("left") or own) - (time.monotonic() - t0)
        signal.setitimer(signal.ITIMER_REAL, max(min(own, left), 0.01))
        try:
            res = grade(item, gold_cache)
            if equal.State.out_of_memory:
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
