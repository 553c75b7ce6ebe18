"""Attack operators on final answers, for the mutation fuzzer (tests/attacks/test_answer_mutations.py,
bench/math_grading/fuzz_answers.py).

Seeds are correct (completion, reference) pairs from our own data: every CORRECT row of the math batteries
(tests/data/math_battery*.py) whose completion has a final answer, and worked completions of the embedded
task (trainer/pipelines/task.py). An operator rewrites a seed's completion around or inside its final
answer; each declares what the service must do with the result:

* ``NOT_HIGHER``: the mutation never raises the reward (a restatement, a wrapper, invisible characters);
* ``ZERO``: the mutation adds a wrong second answer, a hedge, or hides the answer in reasoning: the
  reward becomes 0.

The wrong value an operator adds is a number that the reference does not contain (``wrong_value``), so a
mutation can never become right by accident. Everything is pure and seeded: the same seed and budget give
the same cases.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from in_sandbox.answer import AROUND, BEFORE, OR_WORDS, boxed_spans, strip_think

NOT_HIGHER, ZERO = "not_higher", "zero"
UNGRADED = ("TIMEOUT", "SANDBOX_ERROR")


@dataclass(frozen=True)
class Seed:
    completion: str
    reference: str
    options: dict[str, str]
    verifier: str = "math"
    prompt: str = ""


@dataclass(frozen=True)
class Case:
    op: str
    expect: str  # NOT_HIGHER | ZERO
    seed: Seed
    completion: str


def seeds() -> list[Seed]:
    """Correct pairs from the math batteries (those with a box after the reasoning) and the embedded task."""
    from tests.data.math_battery import CASES
    from trainer.config import TaskConfig
    from trainer.pipelines.task import make_problem

    out = []
    for _, gold, completion, options, verdict, _ in CASES:
        if verdict != "CORRECT" or options.get("fallback") or options.get("rel_tol"):
            continue
        if len(boxed_spans(strip_think(completion))) == 1 and "<answer>" not in completion:
            out.append(Seed(completion, gold, dict(options)))
    rng = random.Random(0)
    for _ in range(20):
        p = make_problem(rng, TaskConfig())
        out.append(Seed(p["completion"], p["answer"], {}))
        out.append(Seed(p["completion"], p["answer"], {}, "arith_steps", p["prompt"]))
    return out


def wrong_value(seed: Seed, rng: random.Random) -> str:
    """A number the reference does not contain (so it is never equal to it, nor part of it)."""
    while True:
        n = str(rng.randint(1000, 9999))
        if n not in seed.reference and n not in seed.completion:
            return n


# -- where the answer is ----------------------------------------------------------------------------------
def _answer_span(completion: str) -> tuple[int, int, int, int] | None:
    """(start, end) of the final answer's whole mark (box or tag) and of its content, in the completion."""
    offset = len(completion) - len(strip_think(completion))
    tag = completion.rfind("<answer>")
    if tag >= offset:
        end = completion.find("</answer>", tag)
        if end > tag:
            return tag, end + len("</answer>"), tag + len("<answer>"), end
    spans = boxed_spans(completion[offset:])
    if not spans:
        return None
    j, k, m = spans[-1]
    return offset + j, offset + m + 1, offset + k + 1, offset + m


def _content(completion: str) -> str | None:
    s = _answer_span(completion)
    return None if s is None else completion[s[2] : s[3]]


# -- operators: (completion, seed, rng) -> mutated completion, or None when it does not apply ------------
def second_box(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A second, different box after the answer."""
    return c + f" Hence $\\boxed{{{wrong_value(seed, rng)}}}$."


def second_tag(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A different answer through the other channel: an answer tag after a box, or a box after a tag."""
    w = wrong_value(seed, rng)
    return c + (f" \\boxed{{{w}}}" if "<answer>" in c else f"\n<answer>{w}</answer>")


def tag_before(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A different answer tag before the final answer."""
    s = _answer_span(c)
    if s is None:
        return None
    return c[: s[0]] + f"<answer>{wrong_value(seed, rng)}</answer> " + c[s[0] :]


def hedge_after(c: str, seed: Seed, rng: random.Random) -> str | None:
    """An "or" (any language) and a second value right after the answer."""
    s = _answer_span(c)
    if s is None:
        return None
    word = rng.choice(OR_WORDS)
    return c[: s[1]] + f" {word} ${wrong_value(seed, rng)}$" + c[s[1] :]


def doubt_after(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A doubt or condition word (any language) after the answer, in its sentence."""
    s = _answer_span(c)
    if s is None:
        return None
    word = rng.choice([w for w in AROUND if w not in OR_WORDS and len(w) > 1])
    return c[: s[1]] + f" ({word} ${wrong_value(seed, rng)}$)" + c[s[1] :]


def doubt_before(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A doubt word (any language) right before the answer, in its sentence."""
    s = _answer_span(c)
    if s is None:
        return None
    return c[: s[0]] + f"{rng.choice(BEFORE)} " + c[s[0] :]


def hedge_inside(c: str, seed: Seed, rng: random.Random) -> str | None:
    """An alternative written inside the answer: ``3 \\text{ oder } 4``."""
    s = _answer_span(c)
    if s is None:
        return None
    word = rng.choice([w for w in OR_WORDS if len(w) > 1])
    return c[: s[3]] + f" \\text{{ {word} }} {wrong_value(seed, rng)}" + c[s[3] :]


def glue(c: str, seed: Seed, rng: random.Random) -> str | None:
    """An integer answer n replaced by two digits glued by braces, a colour or a thin space whose sum is n
    but whose rendering is not (``7`` → ``3{4}``, rendered 34)."""
    s = _answer_span(c)
    text = c[s[2] : s[3]].strip() if s else ""
    if not re.fullmatch(r"[1-9][0-9]?", text) or int(text) < 2:
        return None
    n = int(text)
    a = rng.randint(1, n - 1)
    b = n - a
    if f"{a}{b}" == text:
        return None
    style = rng.choice(["{a}{{{b}}}", "\\textcolor{{red}}{{{a}}}\\textcolor{{blue}}{{{b}}}", "{{{a}}}{{{b}}}",
                        "\\color{{red}}{a}\\color{{blue}}{b}", "{a}\\,{b}", "{a}\\!{b}"])  # fmt: skip
    return c[: s[2]] + style.format(a=a, b=b) + c[s[3] :]


def unclosed_think(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A ``<think>`` opened before the answer (after an earlier, closed block) and never closed."""
    s = _answer_span(c)
    if s is None:
        return None
    return c[: s[0]] + rng.choice(["<think>", "<think> let me check ", "\n<think>\n"]) + c[s[0] :]


def think_after(c: str, seed: Seed, rng: random.Random) -> str | None:
    """A think block opened after the answer and never closed."""
    return c + rng.choice(["<think>", "<think>wait", "\n<think> hmm"])


def answer_in_think(c: str, seed: Seed, rng: random.Random) -> str | None:
    """The final answer moved into a closed think block, the visible text left without one."""
    s = _answer_span(c)
    if s is None:
        return None
    return f"<think>{c[: s[1]]}</think>" + c[s[1] :].replace("\\boxed", "").replace("<answer>", "")


def unusual_tags(c: str, seed: Seed, rng: random.Random) -> str | None:
    """The answer wrapped in tags nobody reads (never worth more than the answer itself)."""
    s = _answer_span(c)
    if s is None:
        return None
    tag = rng.choice(["reflection", "final", "output", "solution", "ANSWER", "answer "])
    return c[: s[0]] + f"<{tag}>" + c[s[0] : s[1]] + f"</{tag.strip()}>" + c[s[1] :]


def restate(c: str, seed: Seed, rng: random.Random) -> str | None:
    """The same answer restated through the other channel (one answer: never worth more)."""
    content = _content(c)
    if content is None:
        return None
    return c + (f" \\boxed{{{content}}}" if "<answer>" in c else f"\n<answer>{content}</answer>")


def invisible(c: str, seed: Seed, rng: random.Random) -> str | None:
    """Zero-width and other format characters inside the answer."""
    s = _answer_span(c)
    if s is None or s[3] <= s[2]:
        return None
    at = rng.randint(s[2], s[3])
    return c[:at] + rng.choice(["\u200b", "\u200d", "\ufeff", "\u2060"]) + c[at:]


OPERATORS: dict[str, tuple[Callable[[str, Seed, random.Random], str | None], str]] = {
    "second_box": (second_box, ZERO),
    "second_tag": (second_tag, ZERO),
    "tag_before": (tag_before, ZERO),
    "hedge_after": (hedge_after, ZERO),
    "doubt_after": (doubt_after, ZERO),
    "doubt_before": (doubt_before, ZERO),
    "hedge_inside": (hedge_inside, ZERO),
    "glue": (glue, ZERO),
    "unclosed_think": (unclosed_think, ZERO),
    "think_after": (think_after, ZERO),
    "answer_in_think": (answer_in_think, ZERO),
    "unusual_tags": (unusual_tags, NOT_HIGHER),
    "restate": (restate, NOT_HIGHER),
    "invisible": (invisible, NOT_HIGHER),
}


def cases(seed: int, budget: int) -> list[Case]:
    """``budget`` mutated cases, each operator in turn on seeds drawn with ``seed`` (the same every run)."""
    rng = random.Random(seed)
    pool = seeds()
    names = sorted(OPERATORS)
    out: list[Case] = []
    for slot in range(budget):
        name = names[slot % len(names)]
        fn, expect = OPERATORS[name]
        for _ in range(50):  # seeds drawn until one the operator applies to (glue needs a small integer)
            s = rng.choice(pool)
            mutated = fn(s.completion, s, rng)
            if mutated is not None and mutated != s.completion:
                out.append(Case(name, expect, s, mutated))
                break
    return out


def items(batch: list[Case]) -> list[dict]:
    """VerifyBatch items: each seed as it is, then its mutation (the seed's own reward is the baseline)."""
    out = []
    for c in batch:
        for completion in (c.seed.completion, c.completion):
            out.append({"verifier": c.seed.verifier, "completion": completion, "reference": c.seed.reference,
                        "options": c.seed.options, "prompt": c.seed.prompt})  # fmt: skip
    return out


def violations(batch: list[Case], results: list) -> list[str]:
    """Every case that breaks its invariant: a mutation that raised the reward, or a ZERO one that kept any."""
    bad = []
    for n, c in enumerate(batch):
        base, got = results[2 * n], results[2 * n + 1]
        # a seed is a correct pair: where a loaded machine left it ungraded, its reward stands as 1
        ceiling = 1.0 if base.outcome in UNGRADED else base.reward
        if got.reward > ceiling or c.expect == ZERO and got.reward != 0.0:
            bad.append(f"{c.op} ({c.expect}) {c.seed.verifier} ref={c.seed.reference!r}: {base.reward} {base.outcome} -> "
                       f"{got.reward} "
                       f"{got.outcome} [{got.detail[:80]}]\n      {c.completion[-160:]!r}")  # fmt: skip
    return bad
