"""The seeds of the answer mutation fuzzer (tests/attacks/answer_ops.py): correct (completion, reference) pairs
for every verifier that reads a final answer, and where a seed's final answer stands.

* the math batteries' CORRECT rows (tests/data/math_battery*.py) whose completion has one box after the
  reasoning (``math``);
* the embedded task's worked completions (trainer/pipelines/task.py), with their answer tag and with a box
  instead, for ``math``, ``r1``, ``arith_steps`` and ``answer_consistency``;
* multiple-choice answers (a letter, ``(B)``, ``\\text{(B)}``) for ``math``;
* the verl routes' answers without a box or tag (``fallback=full``, as ``math_dapo`` / ``aime*`` / ``numina_*``
  send them: verifiers/integrations/verl.py): "Answer: 5", a sentence, a bare value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from in_sandbox.answer import boxed_spans, strip_think

NOT_HIGHER, ZERO = "not_higher", "zero"


@dataclass(frozen=True)
class Seed:
    completion: str
    reference: str
    options: dict[str, str]
    verifier: str = "math"
    prompt: str = ""
    route: str = ""  # the verl data source whose route the seed's verifier and options are (verl seeds)

    @property
    def label(self) -> str:
        return f"verl:{self.route}" if self.route else self.verifier


@dataclass(frozen=True)
class Case:
    op: str
    expect: str  # NOT_HIGHER | ZERO
    seed: Seed
    completion: str


READERS = ("math", "r1", "arith_steps", "answer_consistency")  # the verifiers of the embedded task's seeds
VERL_SOURCES = ("math_dapo", "aime2024", "numina_olympiads")  # routes with fallback=full (verl.DEFAULT_ROUTES)


def seeds() -> list[Seed]:
    """Correct pairs: the batteries' (those with one box after the reasoning), the embedded task's for every
    answer reader, multiple choice, and the verl routes' answers without a mark."""
    from tests.data.math_battery import CASES

    out = []
    for _, gold, completion, options, verdict, _ in CASES:
        if verdict != "CORRECT" or options.get("fallback") or options.get("rel_tol"):
            continue
        if len(boxed_spans(strip_think(completion))) == 1 and "<answer>" not in completion:
            out.append(Seed(completion, gold, dict(options)))
    return out + task_seeds() + choice_seeds() + verl_seeds()


def _task_problems(n: int = 20) -> list[dict]:
    from trainer.config import TaskConfig
    from trainer.pipelines.task import make_problem

    rng = random.Random(0)
    return [make_problem(rng, TaskConfig()) for _ in range(n)]


def task_seeds() -> list[Seed]:
    """The embedded task's worked completions, with their answer tag and with a box, for every reader."""
    out = []
    for p in _task_problems():
        boxed = p["completion"].replace("<answer>", "The answer is $\\boxed{").replace("</answer>", "}$.")
        for completion in (p["completion"], boxed):
            for verifier in READERS:
                ref = "" if verifier == "answer_consistency" else p["answer"]
                out.append(Seed(completion, ref, {}, verifier, p["prompt"]))
    return out


def choice_seeds() -> list[Seed]:
    """A multiple-choice answer: the letter, in a box, written three ways."""
    out = []
    for letter in "ABCDE":
        for written in (letter, f"({letter})", f"\\text{{({letter})}}"):
            completion = f"<think>Checking each option in turn.</think>The answer is $\\boxed{{{written}}}$."
            out.append(Seed(completion, letter, {}))
    return out


def verl_seeds() -> list[Seed]:
    """The verl routes' answers with no box or tag (``fallback=full``): a final line, a sentence, a bare value."""
    from verifiers.integrations.verl import route_for

    out = []
    for n, p in enumerate(_task_problems(12)):
        source = VERL_SOURCES[n % len(VERL_SOURCES)]
        route = route_for(source)
        x = p["answer"]
        for completion in (f"<think>{p['prompt']}</think>Answer: {x}", f"So the result is {x}.", x):
            out.append(Seed(completion, x, dict(route.options), route.verifier, p["prompt"], source))
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


def answer_span(completion: str, seed: Seed) -> tuple[int, int, int, int] | None:
    """``_answer_span``, or for an answer with no mark (the verl routes' seeds) the last place its value is
    written after the reasoning."""
    s = _answer_span(completion)
    if s is not None or not seed.route:
        return s
    at = completion.rfind(seed.reference)
    if at < len(completion) - len(strip_think(completion)):
        return None
    return at, at + len(seed.reference), at, at + len(seed.reference)
