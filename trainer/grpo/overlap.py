"""Scoring overlapped with generation: each group goes to the verifier as soon as its completions exist.

The decode loop samples all groups of a step as one batch, and rows stop at different lengths. A
group whose G rows have all produced EOS is final: ``generate_rollout`` hands its texts to
``GroupScorer.submit`` right away, which sends them to the reward function (one ``VerifyBatch`` per
submission) on a worker thread while decoding goes on for the other groups. After decoding,
``finish`` submits the groups that ran to the end and waits for every answer. The step only waits
for what is still outstanding then (``wait_s``), instead of for the whole batch's grading.

Nothing else changes: the same texts are graded (a finished row only gets padding afterwards), the
scores come back in row order, and a reward function's error is raised from ``finish``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from trainer.errors import TrainerError


class ScoringError(TrainerError, RuntimeError):
    """The reward function returned the wrong number of scores for a submission."""


class GroupScorer:
    """Grades whole groups on worker threads as they are submitted; ``finish`` returns all scores in order.

    ``reward_fn(completions, references, prompts) -> list[score]``; ``references``/``prompts`` hold one
    entry per row (group g is rows g*G .. g*G+G-1)."""

    def __init__(
        self,
        reward_fn: Callable[[list[str], list[str], list[str]], list[Any]],
        group_size: int,
        references: Sequence[str],
        prompts: Sequence[str],
        workers: int = 4,
    ):
        if len(references) % group_size or len(references) != len(prompts):
            raise ValueError(f"{len(references)} rows do not make whole groups of {group_size}")
        self.reward_fn, self.g = reward_fn, group_size
        self.references, self.prompts = list(references), list(prompts)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="score")
        self._parts: list[tuple[list[int], Future]] = []  # (rows, future of their scores)
        self._sent: set[int] = set()  # groups already submitted
        self.early_groups = 0  # groups submitted while decoding was still going on

    @property
    def groups(self) -> int:
        return len(self.references) // self.g

    def submit(self, groups: Sequence[int], texts: Sequence[str], *, early: bool = True) -> None:
        """Grade ``groups`` (their G texts each, in row order) on a worker thread."""
        groups = [gi for gi in groups if gi not in self._sent]
        if not groups:
            return
        if len(texts) != len(groups) * self.g:
            raise ValueError(f"{len(texts)} texts for {len(groups)} groups of {self.g}")
        rows = [gi * self.g + j for gi in groups for j in range(self.g)]
        fut = self._pool.submit(
            self.reward_fn, list(texts), [self.references[r] for r in rows], [self.prompts[r] for r in rows]
        )
        self._parts.append((rows, fut))
        self._sent.update(groups)
        self.early_groups += len(groups) if early else 0

    def finish(self, texts: Sequence[str]) -> tuple[list[Any], float]:
        """Submit the groups not sent yet (``texts``: every row's final text), wait for all; (scores, wait_s)."""
        rest = [gi for gi in range(self.groups) if gi not in self._sent]
        if rest:
            self.submit(rest, [texts[gi * self.g + j] for gi in rest for j in range(self.g)], early=False)
        t0 = time.perf_counter()
        out: list[Any] = [None] * len(self.references)
        try:
            for rows, fut in self._parts:
                scores = fut.result()
                if len(scores) != len(rows):
                    raise ScoringError(f"reward function returned {len(scores)} scores for {len(rows)} completions")
                for r, s in zip(rows, scores, strict=True):
                    out[r] = s
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
        return out, time.perf_counter() - t0
