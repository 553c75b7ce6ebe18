"""Consistency rewards (DeepSeek-R1 §2.3.3 added one against language mixing in the chain of thought),
built-in and meant for composites such as ``0.8 * math + 0.1 * think_format + 0.1 * language``.

``language``: the share of the chain of thought's letters written in the target script. The chain of
thought is the text of every ``<think>`` block (``in_sandbox/answer.py``: all of them, not only the first), else
the whole completion. Every character whose
Unicode category is a letter (``L*``) counts once; it is in a script when its Unicode name starts with
that script's word (``LATIN SMALL LETTER A``: latin; ``CJK UNIFIED IDEOGRAPH-4E00``, hiragana, katakana:
cjk; ``HANGUL …``: hangul …). Digits, punctuation, symbols and spaces are not letters and never count,
so ``1+8+8, 9+8`` is neither mixed nor foreign. Reward = letters in the script / letters; a chain of
thought without letters gets 1 (nothing in it is mixed). Options: ``script`` = one of ``SCRIPTS``, or
``language`` = an ISO 639-1 code from ``LANGUAGE_SCRIPT`` (``en`` → latin, ``zh``/``ja`` → cjk, ``ru`` →
cyrillic …); default ``script=latin``. This measures the script, not the language: French and English
are both latin (R1 counted target-language words; a word-level language detector is left out).

``answer_consistency``: the final answer (as the final-answer rule reads it, ``in_sandbox/answer.py``: two
different answers, a hedge or an unclosed think block are refused) equals, by the math verifier's own
equivalence, the last result the reasoning reached: the value after the last ``=`` in the ``<think>`` blocks (up to a comma, semicolon, line break or tag), else its
last number. The comparison is a call of ``math`` with that result as the reference, so it runs in the
sandbox exactly as math grading does (nothing is parsed or evaluated here). No ``<think>`` block, no
result in it, or no final answer: NO_ANSWER (reward 0).

>>> LanguageConsistency().grade("<think>我们 add</think>", "latin")[0]
0.6
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from in_sandbox.answer import Extraction, extract, reasoning, reasoning_spans
from in_sandbox.answer_signals import signals_of
from verifiers.shapes.base import BadRequest, Builtin, Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

SCRIPTS = {  # script → the first word(s) of its letters' Unicode names
    "latin": ("LATIN",),
    "cjk": ("CJK", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC"),
    "hangul": ("HANGUL",),
    "cyrillic": ("CYRILLIC",),
    "greek": ("GREEK",),
    "arabic": ("ARABIC",),
    "hebrew": ("HEBREW",),
    "devanagari": ("DEVANAGARI",),
    "thai": ("THAI",),
}
LANGUAGE_SCRIPT = {
    **dict.fromkeys(("en", "fr", "de", "es", "it", "pt", "nl", "sv", "pl", "tr", "vi", "id", "cs", "ro"), "latin"),
    **dict.fromkeys(("zh", "ja"), "cjk"),
    **dict.fromkeys(("ru", "uk", "bg", "sr", "kk"), "cyrillic"),
    "ko": "hangul", "el": "greek", "ar": "arabic", "fa": "arabic", "he": "hebrew", "hi": "devanagari",
    "th": "thai",
}  # fmt: skip
_LAST_EQ = re.compile(r"=\s*([^=,;\n<]+?)\s*(?=$|[,;\n<])")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def chain_of_thought(completion: str) -> str:
    """Every think block's text (in_sandbox/answer.py ``reasoning``), else the whole completion."""
    return reasoning(completion)


def target_script(options: dict[str, str]) -> str:
    """The script the options ask for; BadRequest naming the accepted values otherwise."""
    if "script" in options and "language" in options:
        raise BadRequest("language verifier: give either option 'script' or 'language', not both")
    if "language" in options:
        code = options["language"].strip().lower()
        if code not in LANGUAGE_SCRIPT:
            raise BadRequest(
                f"language verifier: option language={code[:20]!r} is not one of "
                f"{', '.join(sorted(LANGUAGE_SCRIPT))}; or give script=…"
            )
        return LANGUAGE_SCRIPT[code]
    script = options.get("script", "latin").strip().lower()
    if script not in SCRIPTS:
        raise BadRequest(f"language verifier: option script={script[:20]!r} is not one of {', '.join(SCRIPTS)}")
    return script


@dataclass
class LanguageConsistency(Builtin):
    name: str = "language"
    description: str = (
        "share of the chain of thought's letters in the target script (option script=latin|cjk|"
        "cyrillic|… or language=en|zh|ru|…; default latin)"
    )
    options = {"script": "latin (default), cjk, cyrillic, …", "language": "or a language code: en, zh, ru, …"}

    def check(self, req: Request) -> None:
        target_script(req.options)

    def verify(self, req: Request, ctx: Context) -> Verdict:
        reward, detail = self.grade(req.completion, target_script(req.options))
        return Verdict(reward, Outcome.CORRECT if reward >= 1.0 else Outcome.INCORRECT, detail)

    @staticmethod
    def grade(completion: str, script: str) -> tuple[float, str]:
        prefixes = SCRIPTS[script]
        letters = inside = 0
        for ch in chain_of_thought(completion):
            if unicodedata.category(ch).startswith("L"):
                letters += 1
                inside += unicodedata.name(ch, "").startswith(prefixes)
        if letters == 0:
            return 1.0, "no letters in the chain of thought"
        return inside / letters, f"{inside}/{letters} letters of the chain of thought are {script}"


def last_result(think: str) -> str | None:
    """The last ``= value`` of the reasoning, else its last number, else None."""
    eqs = _LAST_EQ.findall(think)
    if eqs:
        return eqs[-1]
    nums = _NUMBER.findall(think)
    return nums[-1] if nums else None


@dataclass
class AnswerConsistency(Builtin):
    name: str = "answer_consistency"
    description: str = (
        "1 if the final answer equals (by the math verifier) the last result the <think> block "
        "reached (its last '= value', else its last number)"
    )
    default_timeout_s: float = 10.0

    def verify(self, req: Request, ctx: Context) -> Verdict:
        """The verdict, with the ``answer.*`` exploit signals of the final answer (they never change it)."""
        ext = extract(req.completion)
        # the answer's reference is the reasoning's result: an answer equal to it restates nothing
        result = last_result(reasoning(req.completion)) if reasoning_spans(req.completion) else None
        return self._grade(req, ctx, ext).signal(*signals_of(req.completion, ext, req.prompt, result or ""))

    def _grade(self, req: Request, ctx: Context, ext: Extraction | None) -> Verdict:
        if not reasoning_spans(req.completion):
            return Verdict.of(Outcome.NO_ANSWER, "no <think>…</think> block: no reasoning to compare with")
        result = last_result(reasoning(req.completion))
        if result is None:
            return Verdict.of(Outcome.NO_ANSWER, "the <think> block reaches no result ('= value' or a number)")
        if ext is None:
            return Verdict.of(Outcome.NO_ANSWER, "no final answer (\\boxed{} or <answer>) after the reasoning")
        sub = Request("math", req.completion, result, req.prompt, {}, req.timeout_s, req.id)
        v = ctx.verify(sub) if ctx.verify is not None else ctx.lookup("math").verify(sub, ctx)
        if v.outcome in (Outcome.CORRECT, Outcome.INCORRECT):
            same = v.outcome is Outcome.CORRECT
            return Verdict.of(
                v.outcome,
                f"final answer {'=' if same else '!='} the reasoning's last result {result[:40]!r} ({v.detail})",
            )
        if v.outcome is Outcome.BAD_REFERENCE:
            return Verdict.of(Outcome.NO_ANSWER, f"the reasoning's last result {result[:40]!r} does not parse")
        return Verdict.of(v.outcome, f"math: {v.detail}")
