"""Prompts: examples from JSONL, their rendering (chat template or plain), and the seeded stream of them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Example:
    """One prompt and what grades it: the gold answer (math) or the tests (code)."""

    prompt: str
    reference: str


def load_examples(path: str | Path) -> list[Example]:
    """JSONL rows ``{"prompt", "answer"}`` (math) or ``{"prompt", "tests"}`` (code)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            ref = row.get("answer", row.get("tests"))
            if "prompt" not in row or ref is None:
                raise ValueError(f"{path}:{n}: each row needs 'prompt' and 'answer' (math) or 'tests' (code)")
            rows.append(Example(str(row["prompt"]), str(ref)))
    if not rows:
        raise ValueError(f"{path}: no examples")
    return rows


def render_prompt(tokenizer, prompt: str, use_chat_template: bool = True) -> str:
    """The prompt as the model sees it: inside the chat template when the tokenizer has one."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        msgs = [{"role": "user", "content": prompt}]
        return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    return prompt


class DataStream:
    """Endless, seeded pass over the examples; a new permutation each epoch. State: (epoch, position)."""

    def __init__(self, examples: list[Example], seed: int):
        self.examples, self.seed, self.epoch, self.pos = examples, seed, 0, 0
        self._order = self._perm()

    def _perm(self) -> list[int]:
        return np.random.default_rng([self.seed, self.epoch]).permutation(len(self.examples)).tolist()

    def take(self, n: int) -> list[Example]:
        out = []
        while len(out) < n:
            if self.pos == len(self._order):
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._perm()
            out.append(self.examples[self._order[self.pos]])
            self.pos += 1
        return out

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load(self, state: dict[str, int]) -> None:
        self.epoch, self.pos = state["epoch"], state["pos"]
        self._order = self._perm()


def write_jsonl(rows: Iterable[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[dict]:
    with Path(path).open() as f:
        return [json.loads(line) for line in f if line.strip()]
