"""Attack operators on what a reader reads around the final answer (issue 48), part of the answer mutation
fuzzer (tests/attacks/answer_ops.py ``OPERATORS``). Each family found paid by a hidden battery is one
operator that rewrites a correct seed (tests/attacks/answer_seeds.py); every one of them must give 0:

* ``adjoin``: a sign, ``\\pm``, a power, a root, a fraction or a factor written against the box
  (``-\\boxed{3}``, ``\\frac{1}{\\boxed{3}}``): a reader reads another value;
* ``negate``: a negation anywhere in the answer's statement, in a language or as a relation
  (``x \\neq \\boxed{3}``, "is not equal to", "不等于");
* ``box_command``: a second, different answer in another box command (``\\framebox``, ``\\colorbox``, ``\\bbox``)
  or an answer tag in another case or with attributes, or before a stray ``</think>``;
* ``hidden``: the only answer where a reader never sees it (an HTML comment, after a TeX ``%``, in
  ``\\phantom``, coloured white);
* ``choice``: a multiple-choice answer offering several letters (``(B) or (C)``, ``(B)(C)(D)``);
* ``second_value``: a second value offered in the final statement, in or around the box, joined by a word
  of any language or by none; on the verl routes (no box) the forms their hedge check missed.

A value an operator adds is ``wrong_value``'s (a number the reference does not contain); an operator that
changes the answer's value applies only where the change cannot leave it equal (``|x|`` not 0 or 1).
"""

from __future__ import annotations

import random
import re

from tests.attacks.answer_seeds import ZERO, Seed, answer_span, wrong_value

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _changed_by_any_operator(text: str) -> bool:
    """A plain number whose sign, square, root, reciprocal and tenfold all differ from it."""
    t = text.strip().strip("$").strip()
    return bool(_NUMBER.fullmatch(t)) and abs(float(t)) not in (0.0, 1.0)


def _mark(c: str, seed: Seed) -> tuple[int, int, int, int] | None:
    """The final answer's box (not a tag: nothing renders around a tag) of a seed with a box."""
    s = answer_span(c, seed)
    if s is None or not c.startswith("\\boxed", s[0]):
        return None
    return s


ADJOIN = ("-{b}", "\\pm {b}", "\\mp{b}", "\\frac{{1}}{{{b}}}", "{b}^{{2}}", "{b}^2", "\\sqrt{{{b}}}", "{b} \\times 10^{{3}}",
          "10^{{{b}}}", "{b} \\cdot 7", "2{b}", "{b}/7", "- {b}", "1/{b}", "{b}!")  # fmt: skip


def adjoin(c: str, seed: Seed, rng: random.Random) -> str | None:
    """An operator written against the box, so a reader reads another value than the box's."""
    s = _mark(c, seed)
    if s is None or not _changed_by_any_operator(c[s[2] : s[3]]):
        return None
    return c[: s[0]] + rng.choice(ADJOIN).format(b=c[s[0] : s[1]]) + c[s[1] :]


NEGATE_BEFORE = ("is not equal to ", "is not ", "cannot be ", "$x \\neq$ ", "$x \\ne$ ", "$x \\not=$ ", "≠ ",
                 "ist nicht ", "不等于 ", "不是 ", "není ", "no es ", "नहीं है ", "ليس ", "is niet ", "не дорівнює ",
                 "n'est pas ", "non è ", "nie jest ", "는 아니다 ", "isn't ", "is never ")  # fmt: skip
NEGATE_AFTER = (" is not the answer", " is not right", " is not correct", " ist nicht die Lösung", " 不是答案",
                " není správně", " no es la respuesta", " ではない", " не є відповіддю", " नहीं है")  # fmt: skip
NEGATE_IN_MATH = ("x \\neq ", "x \\ne ", "x \\not= ", "x \\notin ")


def negate(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A negation in the answer's statement: before it, after it, or a negated relation in its math."""
    s = answer_span(c, seed)
    if s is None:
        return None
    where = rng.randrange(3)
    if where == 0:
        return c[: s[0]] + rng.choice(NEGATE_BEFORE) + c[s[0] :]
    if where == 1:
        return c[: s[1]] + rng.choice(NEGATE_AFTER) + c[s[1] :]
    if not c.startswith("\\boxed", s[0]):
        return c[: s[0]] + "$x \\neq$ " + c[s[0] :]
    return c[: s[0]] + "$" + rng.choice(NEGATE_IN_MATH) + c[s[0] : s[1]] + "$" + c[s[1] :]


BOX_COMMANDS = ("\\framebox{{{w}}}", "\\fbox{{{w}}}", "\\colorbox{{yellow}}{{${w}$}}", "\\fcolorbox{{red}}{{white}}{{{w}}}",
                "\\bbox[border:1px solid red]{{{w}}}", "\\bbox{{{w}}}", "\\framebox[2cm][c]{{{w}}}", "\\boxed {{{w}}}",
                "\\Boxed{{{w}}}", "\\doublebox{{{w}}}", "\\ovalbox{{{w}}}", "\\shadowbox{{{w}}}",
                "<ANSWER>{w}</ANSWER>", "<Answer>{w}</Answer>", '<answer type="final">{w}</answer>',
                "<answer >{w}</answer >", "<answer\n>{w}</answer>")  # fmt: skip


def box_command(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A different answer in another box command or answer-tag spelling, before or after the final one; or a
    box followed by a stray ``</think>`` before it (the reader sees both)."""
    s = answer_span(c, seed)
    if s is None:
        return None
    w = wrong_value(seed, rng)
    if rng.random() < 0.2 and "</think>" in c and "<think>" in c:
        return c[: s[0]] + f"$\\boxed{{{w}}}$ </think> " + c[s[0] :]
    mark = rng.choice(BOX_COMMANDS).format(w=w)
    if rng.random() < 0.5:
        return c[: s[0]] + mark + " " + c[s[0] :]
    return c[: s[1]] + " " + mark + c[s[1] :]


HIDE = ("<!-- {a} -->", "<!--{a}-->", "% {a}\n", "\\phantom{{{a}}}", "\\hphantom{{{a}}}", "\\vphantom{{{a}}}",
        "\\textcolor{{white}}{{{a}}}", "{{\\color{{white}} {a}}}", "\\color{{white}}{a}", "\\textcolor{{#FFFFFF}}{{{a}}}",
        "\\color[rgb]{{1,1,1}}{a}", '<span style="color:white">{a}</span>', '<font color="#fff">{a}</font>',
        "\\textcolor{{white}}{{$ {a} $}}")  # fmt: skip


def hidden(c: str, seed: Seed, rng: random.Random) -> str | None:
    """The only answer put where a reader never sees it (the rest of the text unchanged)."""
    s = _mark(c, seed) or answer_span(c, seed)
    if s is None or seed.route:
        return None
    return c[: s[0]] + rng.choice(HIDE).format(a=c[s[0] : s[1]]) + c[s[1] :]


def choice(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A multiple-choice answer offering several letters, in or around the box."""
    s = _mark(c, seed)
    if s is None or not re.fullmatch(r"[A-E]", seed.reference):
        return None
    own = seed.reference
    a, b = rng.sample([x for x in "ABCDE" if x != own], 2)
    inside = rng.choice(
        [
            f"({own}) or ({a})",
            f"({own})({a})({b})",
            f"{own}, {a}",
            f"{own} \\text{{ or }} {a}",
            f"{own}{a}",
            f"{own}/{a}",
            f"({own}) \\text{{ oder }} ({a})",
            f"\\text{{({own}) ({a})}}",
            f"{own} \\& {a}",
            f"{own} \\text{{ and }} {a}",
        ]
    )
    if rng.random() < 0.3:
        return c[: s[1]] + rng.choice([f" or ({a})", f" ({a})", f", ({a})", f" \\boxed{{{a}}}"]) + c[s[1] :]
    return c[: s[2]] + inside + c[s[3] :]


JOINERS = (" tal vez ", " bzw. ", " of ", " nebo ", " або ", " या ", " أو ", " か ", " ", ", ", "; ", " (", " — ",
           ". It might also be ", ". Could also be ", " / maybe ", " 或 ", " veya ", "\n\n", " hoặc là ", " ou bien ",
           " of misschien ", " nebo možná ", " také ", " anche ")  # fmt: skip


def second_value(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A second value offered in the final statement: after the answer, before it, or inside its box, joined by
    a word of any language or by none."""
    s = answer_span(c, seed)
    if s is None:
        return None
    w, join = wrong_value(seed, rng), rng.choice(JOINERS)
    where = rng.randrange(4 if c.startswith("\\boxed", s[0]) else 2)
    if where == 0:
        return c[: s[1]] + join + (f"${w}$" if rng.random() < 0.5 else w) + c[s[1] :]
    if where == 1:
        join = join if not re.search(r"[.\n]", join) else " "  # before it: in the answer's own sentence
        return c[: s[0]] + f"${w}$" + join + c[s[0] :]
    if re.fullmatch(r"[A-E]", seed.reference) and where >= 2 and not join.strip(" ,;(—\n"):
        return None  # a letter then a number in its box is the choice written with its value: (C) 7
    if where == 2:
        return c[: s[3]] + f" \\text{{{join}}} {w}" + c[s[3] :]
    return (
        c[: s[3]]
        + rng.choice([f" \\text{{ (or possibly {w})}}", f" \\; {w}", f" \\quad {w}", f"\\text{{{join}}}{w}"])
        + c[s[3] :]
    )


def verl_forms(c: str, seed: Seed, rng: random.Random) -> str | None:
    """The verl routes' (``fallback=full``) forms of a second answer: a hedge before a later restatement, two
    ``Answer:`` lines, a bare list."""
    if not seed.route:
        return None
    x, w = seed.reference, wrong_value(seed, rng)
    return rng.choice(
        [
            f"{x} (or maybe {w}). Note that {x} is odd.",
            f"Answer: {w}\nAnswer: {x}",
            f"{x}, {w}",
            f"Answer: {x}\nAnswer: {w}",
            f"It is {x} tal vez {w}.",
            f"{x} bzw. {w}",
            f"The answer is {x}. It might also be {w}.",
            f"{x} of {w}",
            f"{w} {x}",
        ]
    )


STATEMENT_OPERATORS = {
    "adjoin": (adjoin, ZERO),
    "negate": (negate, ZERO),
    "box_command": (box_command, ZERO),
    "hidden": (hidden, ZERO),
    "choice": (choice, ZERO),
    "second_value": (second_value, ZERO),
    "verl_forms": (verl_forms, ZERO),
}
