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

from in_sandbox.hedges import AROUND, BEFORE, OR_WORDS
from tests.attacks.answer_seeds import NOT_HIGHER, ZERO, Case, Seed, _answer_span, _content, seeds, wrong_value
from tests.attacks.answer_statement_ops import STATEMENT_OPERATORS

UNGRADED = ("TIMEOUT", "SANDBOX_ERROR")


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
    style = rng.choice(
        [
            "{a}{{{b}}}",
            "\\textcolor{{red}}{{{a}}}\\textcolor{{blue}}{{{b}}}",
            "{{{a}}}{{{b}}}",
            "\\color{{red}}{a}\\color{{blue}}{b}",
            "{a}\\,{b}",
            "{a}\\!{b}",
        ]
    )
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
    **STATEMENT_OPERATORS,
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
        for _ in range(400):  # seeds drawn until one the operator applies to (glue needs a small integer)
            s = rng.choice(pool)
            mutated = fn(s.completion, s, rng)
            if mutated is not None and mutated != s.completion:
                out.append(Case(name, expect, s, mutated))
                break
    return out


READER_LABELS = ("math", "r1", "arith_steps", "answer_consistency", "verl")


def cases_by_reader(seed: int, per: int, ops: dict | None = None) -> list[Case]:
    """For every operator of ``ops`` (default: the statement families) and every answer reader (``math``,
    ``r1``, ``arith_steps``, ``answer_consistency``, the verl routes), ``per`` cases where it applies."""
    rng = random.Random(seed)
    pool = seeds()
    out: list[Case] = []
    for name, (fn, expect) in sorted((ops or STATEMENT_OPERATORS).items()):
        for label in READER_LABELS:
            mine = [s for s in pool if s.label.split(":")[0] == label]
            got = 0
            for _ in range(40 * per):
                s = rng.choice(mine)
                mutated = fn(s.completion, s, rng)
                if mutated is not None and mutated != s.completion:
                    out.append(Case(name, expect, s, mutated))
                    got += 1
                    if got == per:
                        break
    return out


def items(batch: list[Case]) -> list[dict]:
    """VerifyBatch items: each seed as it is, then its mutation (the seed's own reward is the baseline)."""
    out = []
    for c in batch:
        for completion in (c.seed.completion, c.completion):
            out.append(
                {
                    "verifier": c.seed.verifier,
                    "completion": completion,
                    "reference": c.seed.reference,
                    "options": c.seed.options,
                    "prompt": c.seed.prompt,
                }
            )
    return out


def _floor(seed: Seed) -> float:
    """What a mutation that must give 0 may still get: ``r1``'s format part (0.1) where the format holds."""
    return 0.1 + 1e-9 if seed.verifier == "r1" else 0.0


def violations(batch: list[Case], results: list) -> list[str]:
    """Every case that breaks its invariant: a mutation that raised the reward, or a ZERO one that kept any."""
    bad = []
    for n, c in enumerate(batch):
        base, got = results[2 * n], results[2 * n + 1]
        # a seed is a correct pair: where a loaded machine left it ungraded, its reward stands as 1
        ceiling = 1.0 if base.outcome in UNGRADED else base.reward
        if got.reward > ceiling or c.expect == ZERO and got.reward > _floor(c.seed):
            bad.append(f"{c.op} ({c.expect}) {c.seed.label} ref={c.seed.reference!r}: {base.reward} {base.outcome} -> "
                       f"{got.reward} "
                       f"{got.outcome} [{got.detail[:80]}]\n      {c.completion[-160:]!r}")  # fmt: skip
    return bad
