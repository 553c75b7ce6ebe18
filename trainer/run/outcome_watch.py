"""A run whose first steps all grade the same way is almost always a setup problem, not a training one:
every completion ``NO_ANSWER`` (the answer format, a tag lost in decoding, completions cut short),
every one ``INCORRECT`` (the reference column, the task), ``CORRECT`` (nothing left to learn). Each
group then has zero variance, every advantage is 0 and the loss moves only by the KL term, so the
curves look alive while nothing is learnt. ``OutcomeWatch`` reads the ``outcome/*`` counts of each
step's metrics and says so once, with the likely causes; ``make train`` puts it in the progress line
and on stderr (trainer/run/progress.py)."""

from __future__ import annotations

from typing import Any

from verifiers.client import Outcome

FIRST_STEPS = 3  # how many steps decide "the first steps"

CAUSES: dict[str, list[str]] = {  # by outcome (Outcome is a str enum: plain names look it up too)
    Outcome.NO_ANSWER: [
        "the prompts do not ask for the answer format the verifier reads (math: \\boxed{...} or "
        "<answer>...</answer>; think_format/r1: <think>...</think> first): read prompt.txt and completions.jsonl "
        "in the run folder",
        "completions cut at max_new_tokens before the answer (see completion/truncated_frac in metrics.jsonl)",
        "tags dropped when completions are decoded (special tokens): `python -m trainer.run.preflight MODEL_DIR`",
        "the chat template: a base model may need --grpo.use_chat_template false (or an instruct model true)",
    ],
    Outcome.INCORRECT: [
        "the references are not what the verifier compares against (the JSONL's 'answer' column: a final "
        "value such as 72, not a worked solution)",
        "the task is too hard for the model at this length: try easier data or a larger max_new_tokens",
    ],
    Outcome.CORRECT: ["the task is too easy for the model: every group has zero variance, nothing to learn"],
    Outcome.RUNTIME_ERROR: ["the programs crash in the sandbox: read completions.jsonl; check the tests' format"],
    Outcome.TIMEOUT: ["the programs or the verifier run out of time: raise the verifier's timeout or check the tests"],
    Outcome.SANDBOX_ERROR: ["the sandbox fails (not the model): read verifier.log in the run folder"],
    Outcome.BAD_REFERENCE: ["the references cannot be graded by this verifier: check the data's answer/tests column"],
}


def step_outcomes(record: dict[str, Any]) -> dict[str, int]:
    """``{"NO_ANSWER": 64, ...}`` from a metrics.jsonl record's ``outcome/*`` counts (non-zero only)."""
    return {k.split("/", 1)[1]: int(v) for k, v in record.items() if k.startswith("outcome/") and v}


class OutcomeWatch:
    """Feed it each step's metrics; ``update`` returns a warning once, when the first
    ``min(FIRST_STEPS, total_steps)`` steps all graded one outcome. ``flag`` is a short text for the
    progress line while later steps still grade only that outcome (None otherwise)."""

    def __init__(self, total_steps: int, verifier: str = "", first_steps: int = FIRST_STEPS):
        self.until = max(1, min(first_steps, total_steps))
        self.verifier = verifier
        self.counts: dict[str, int] = {}
        self.one: str | None = None  # the single outcome, once the first steps are in
        self.flag: str | None = None
        self.message: str | None = None

    def update(self, record: dict[str, Any]) -> str | None:
        step, outcomes = int(record.get("step", 0)), step_outcomes(record)
        if step < 1 or not outcomes:  # step 0: the evaluation before training; no grades: nothing to say
            return None
        if step <= self.until:
            for k, v in outcomes.items():
                self.counts[k] = self.counts.get(k, 0) + v
            if step < self.until:
                return None
            if len(self.counts) == 1:
                self.one = next(iter(self.counts))
                self.flag = f"ALL {self.one}"
                self.message = self._message(record)
                return self.message
            return None
        if self.flag is not None and set(outcomes) != {self.one}:
            self.flag = None
        return None

    def _message(self, record: dict[str, Any]) -> str:
        n, o = sum(self.counts.values()), self.one
        steps = "step 1" if self.until == 1 else f"steps 1-{self.until}"
        by = f" by {self.verifier!r}" if self.verifier else ""
        head = f"warning: {steps}: all {n} completions graded {o}{by}"
        if o != Outcome.CORRECT:
            head += " (every advantage is 0: the policy learns nothing from them)"
        trunc = record.get("completion/truncated_frac")
        causes = list(CAUSES.get(o, []))
        if o == Outcome.NO_ANSWER and trunc:
            causes[1] += f"; now {trunc:.0%} truncated"
        return head + ". Most likely:\n" + "\n".join(f"  - {c}" for c in causes)
