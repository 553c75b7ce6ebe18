"""Rewards through one small interface, ``RewardFn``. ``VerifierReward`` is the real one: one
``VerifyBatch`` call to the verifier service per step. ``PythonReward`` wraps a plain function for
benchmarks and tests of the loss (never for the service's own tests). ``grade`` turns scores into tensors.

Scoring overlapped with generation: each group goes to the verifier as soon as its completions exist.

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
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import Tensor

from trainer.errors import TrainerError, VerifierSetupError
from trainer.grading import grade_items
from trainer.rollout.decode import Rollout
from verifiers.client import UNGRADED, Outcome, VerifierClient, VerifyItem

SANDBOX_ERROR = Outcome.SANDBOX_ERROR
# UNGRADED (SANDBOX_ERROR, BAD_REFERENCE, from the proto enum via verifiers.client): not the model's fault,
# masked out of the loss


@dataclass
class Score:
    """One graded completion. ``components`` holds the per-verifier rewards of a composite."""

    reward: float
    outcome: str
    components: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    steps: list[tuple[float, int, int]] = field(default_factory=list)  # (reward, start, end) per step
    signals: list[str] = field(default_factory=list)  # exploit signals the verifier saw (trainer/alarm/)


class RewardFn(Protocol):
    """Grades a batch: completions[i] against references[i] (prompts[i] for context)."""

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]: ...


class VerifierReward:
    """Rewards from the verifier service: one ``VerifyBatch`` call per step, through the client only."""

    def __init__(self, verifier: str, target: str | None = None, *, client: VerifierClient | None = None, **kw):
        if client is None and target is None:
            raise ValueError("VerifierReward needs a target ('host:port') or a client")
        self.verifier = verifier
        self.client = client or VerifierClient(target, **kw)

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]:
        items = [
            VerifyItem(verifier=self.verifier, completion=c, reference=r, prompt=p, id=str(i))
            for i, (c, r, p) in enumerate(zip(completions, references, prompts, strict=True))
        ]
        results = grade_items(self.client, items)
        steps = [[(x["reward"], x["start"], x["end"]) for x in r.steps] for r in results]
        return [
            Score(r.reward, r.outcome, dict(r.components), r.elapsed_s, st, list(r.signals))
            for r, st in zip(results, steps, strict=True)
        ]

    def check(self, timeout_s: float = 15.0) -> None:
        """Fail early, with what to do, when the service is unreachable or does not know the verifier."""
        try:
            self.client.wait_ready(timeout_s)
        except Exception:  # grpc.FutureTimeoutError
            raise VerifierSetupError(
                f"verifier service not reachable at {self.client.target}: start it (`python -m verifiers.fronts.server`, "
                "or `make train`, which starts one) or set target (--target host:port) to where it runs"
            ) from None
        names = [v.name for v in self.client.list_verifiers()]
        if self.verifier not in names:
            raise VerifierSetupError(
                f"verifier {self.verifier!r} is not registered at {self.client.target}; known: {names}"
            )

    def close(self) -> None:
        self.client.close()


class PythonReward:
    """A plain ``fn(completion, reference) -> float | None`` (None: nothing gradable). Benchmarks only."""

    def __init__(self, fn: Callable[[str, str], float | None], name: str = "python"):
        self.fn, self.name = fn, name

    def __call__(self, completions: list[str], references: list[str], prompts: list[str]) -> list[Score]:
        out = []
        for c, r in zip(completions, references, strict=True):
            v = self.fn(c, r)
            outcome = Outcome.NO_ANSWER if v is None else (Outcome.CORRECT if v >= 1.0 else Outcome.INCORRECT)
            out.append(Score(float(v or 0.0), outcome, {self.name: float(v or 0.0)}))
        return out


def grade(
    reward_fn: RewardFn, rollout: Rollout, scorer: GroupScorer | None = None
) -> tuple[Tensor, Tensor, list[Score], float]:
    """Rewards of the rollout and the seconds the step waited for them (with ``scorer``: only what was
    still outstanding after decoding; the groups it already sent were graded meanwhile)."""
    t0 = time.perf_counter()
    if scorer is not None:
        scores, dt = scorer.finish(rollout.texts)
    else:
        scores = reward_fn(rollout.texts, rollout.references, rollout.prompts)
        dt = time.perf_counter() - t0
    if len(scores) != len(rollout):
        raise ScoringError(f"reward function returned {len(scores)} scores for {len(rollout)} completions")
    rewards = torch.tensor([s.reward for s in scores], dtype=torch.float32)
    valid = torch.tensor([s.outcome not in UNGRADED for s in scores])
    return rewards, valid, scores, dt


@dataclass
class Batch:
    """One step's training data: the rollout and its grades."""

    rollout: Rollout
    rewards: Tensor  # (N,) float32, SANDBOX_ERROR entries hold 0
    valid: Tensor  # (N,) bool: graded (not SANDBOX_ERROR / BAD_REFERENCE)
    scores: list[Score]
    verify_s: float
    rollouts: int  # how many generate calls built this batch (dynamic sampling refills)


def informative_groups(rewards: Tensor, valid: Tensor, g: int) -> Tensor:
    """(P,) bool: the group has >= 2 valid samples with different rewards."""
    r, v = rewards.view(-1, g), valid.view(-1, g)
    hi = torch.where(v, r, torch.full_like(r, -torch.inf)).amax(1)
    lo = torch.where(v, r, torch.full_like(r, torch.inf)).amin(1)
    return (v.sum(1) >= 2) & (hi > lo)


# -- scoring overlapped with generation ---------------------------------------------------------------------
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
