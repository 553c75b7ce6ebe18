"""``reward_model`` verifiers: a local transformers sequence-classification model (``num_labels=1``) scores
(prompt, completion); the score is mapped to a reward in [0, 1].

Spec (proto ``RewardModelVerifier``): ``path`` = a directory ``save_pretrained`` wrote (model and
tokenizer); ``mapping`` = ``sigmoid`` (default: reward = 1 / (1 + e^-score), so a score of 0 is 0.5) or
``minmax`` (reward = (score - low) / (high - low) clipped to [0, 1]; needs finite ``high > low``);
``max_length`` = tokens per pair (0: the tokenizer's ``model_max_length``, at most 8192).

Text: with a chat template, the pair is the conversation ``[user: prompt, assistant: completion]``
rendered by it; without one, the tokenizer's text pair (prompt, completion). Longer inputs are cut
from the left, so the end of the completion (where a classifier reads its score) is kept. The model's
text is only tokenised; nothing in it is run. The outcome is CORRECT when the reward is >= 0.5, else
INCORRECT (the reward itself is the signal).

Loading: a model is loaded once per process (keyed by its resolved path and max_length) the first time
it is needed (at registration, which checks it loads, or on the first verification after a restart), on
the GPU when torch sees one, else the CPU. Loading a model from a path is the operator's decision, so
registration needs the admin token when the server has one, like every kind.

Batching: concurrent calls for one model (a ``VerifyBatch``'s items arrive together through the
service's fan-out) are gathered: the first caller runs a forward pass over everything waiting (up to
``MAX_BATCH``), callers arriving meanwhile are served by the next one, so a batch of N items costs a
few forward passes, not N. Each verdict's detail says how many items its pass held.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.shapes.base import BadRequest, Context, ServiceError, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

MAPPINGS = ("sigmoid", "minmax")
MAX_BATCH = 64
MAX_LENGTH = 8192
GATHER_S = 0.003  # the first caller waits this long for others before its forward pass


class ModelUnavailable(ServiceError):
    status = "FAILED_PRECONDITION"


def check_spec(spec: dict) -> None:
    """Shape checks that need no model (the store's rows are checked with these too)."""
    path, mapping = spec.get("path", ""), spec.get("mapping") or "sigmoid"
    if not path:
        raise BadRequest("reward_model.path is empty: give the directory save_pretrained wrote (model + tokenizer)")
    if mapping not in MAPPINGS:
        raise BadRequest(f"reward_model.mapping {mapping!r} is not one of {', '.join(MAPPINGS)}")
    low, high = spec.get("low", 0.0), spec.get("high", 0.0)
    if mapping == "minmax" and not (math.isfinite(low) and math.isfinite(high) and high > low):
        raise BadRequest(f"reward_model mapping 'minmax' needs finite low < high, got low={low!r} high={high!r}")
    max_length = spec.get("max_length", 0)
    if not isinstance(max_length, int) or not 0 <= max_length <= MAX_LENGTH:
        raise BadRequest(f"reward_model.max_length must be 0 (the model's limit) .. {MAX_LENGTH}, got {max_length!r}")


def to_reward(score: float, mapping: str, low: float, high: float) -> float:
    """The documented mapping of a score to a reward.

    >>> to_reward(0.0, "sigmoid", 0, 0), to_reward(3.0, "minmax", 1.0, 5.0), to_reward(9.0, "minmax", 1.0, 5.0)
    (0.5, 0.5, 1.0)
    """
    if mapping == "minmax":
        return min(1.0, max(0.0, (score - low) / (high - low)))
    return 1.0 / (1.0 + math.exp(-score)) if score >= 0 else math.exp(score) / (1.0 + math.exp(score))


@dataclass
class ScoreItem:
    prompt: str
    completion: str
    done: threading.Event = field(default_factory=threading.Event)
    score: float = math.nan
    batch: int = 0
    error: str = ""


class Scorer:
    """One loaded model and its gathering of concurrent calls into batched forward passes."""

    def __init__(self, path: Path, max_length: int):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.tok = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(self.device).eval()
        if self.model.config.num_labels != 1:
            raise ModelUnavailable(
                f"reward model {path} has num_labels={self.model.config.num_labels}: a reward "
                "model has one output (num_labels=1)"
            )
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        if self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = self.tok.pad_token_id
        self.tok.truncation_side = "left"
        self.max_length = min(max_length or self.tok.model_max_length or MAX_LENGTH, MAX_LENGTH)
        self.forward_passes = 0
        self._lock = threading.Lock()
        self._pending: list[ScoreItem] = []
        self._running = False

    def _texts(self, items: list[ScoreItem]) -> dict:
        if self.tok.chat_template:
            texts = [
                self.tok.apply_chat_template(
                    [{"role": "user", "content": it.prompt}, {"role": "assistant", "content": it.completion}],
                    tokenize=False,
                )
                for it in items
            ]
            return self.tok(
                texts,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
                add_special_tokens=False,
            )
        return self.tok(
            [it.prompt for it in items],
            [it.completion for it in items],
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )

    def forward(self, items: list[ScoreItem]) -> list[float]:
        import torch

        enc = self._texts(items).to(self.device)
        with torch.inference_mode():
            logits = self.model(**enc).logits  # (B, 1)
        self.forward_passes += 1
        return logits[:, 0].float().cpu().tolist()

    def score(self, prompt: str, completion: str, timeout_s: float) -> ScoreItem:
        item = ScoreItem(prompt, completion)
        with self._lock:
            self._pending.append(item)
            lead = not self._running
            self._running = self._running or lead
        if lead:
            self._drain()
        if not item.done.wait(timeout_s):
            item.error = f"no score within {timeout_s:.1f} s"
        return item

    def _drain(self) -> None:
        time.sleep(GATHER_S)
        while True:
            with self._lock:
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
                if not batch:
                    self._running = False
                    return
            try:
                scores = self.forward(batch)
            except Exception as e:  # noqa: BLE001 - reported on each item as an infrastructure failure
                scores, err = [math.nan] * len(batch), f"{type(e).__name__}: {e}"[:300]
            else:
                err = ""
            for it, s in zip(batch, scores, strict=True):
                it.score, it.batch, it.error = s, len(batch), err
                it.done.set()


_loaded: dict[tuple[str, int], Scorer] = {}
_load_lock = threading.Lock()


def load(path: str, max_length: int = 0) -> Scorer:
    """The scorer of the model at ``path``, loaded once per process. Raises ModelUnavailable saying why."""
    p = Path(path).expanduser().resolve()
    key = (str(p), max_length)
    with _load_lock:
        if key in _loaded:
            return _loaded[key]
        if not p.is_dir():
            raise ModelUnavailable(
                f"reward_model.path {path!r} is not a directory on the server: give the folder "
                "save_pretrained wrote (model + tokenizer)"
            )
        try:
            scorer = Scorer(p, max_length)
        except ServiceError:
            raise
        except Exception as e:  # noqa: BLE001 - a folder that is not a loadable model is the caller's to fix
            raise ModelUnavailable(
                f"reward model {path!r} could not be loaded as a transformers sequence-"
                f"classification model with its tokenizer: {type(e).__name__}: {e}"[:600]
            ) from None
        _loaded[key] = scorer
        return scorer


@dataclass
class RewardModelVerifier:
    name: str
    path: str
    mapping: str = "sigmoid"
    low: float = 0.0
    high: float = 0.0
    max_length: int = 0
    description: str = ""
    version: int = 1
    kind: str = "reward_model"
    default_timeout_s: float = 30.0

    @classmethod
    def build(cls, name: str, description: str, spec: dict, version: int = 1) -> RewardModelVerifier:
        check_spec(spec)
        return cls(
            name,
            spec["path"],
            spec.get("mapping") or "sigmoid",
            float(spec.get("low", 0.0)),
            float(spec.get("high", 0.0)),
            int(spec.get("max_length", 0)),
            description,
            version,
        )

    def spec(self) -> dict:
        return {"path": self.path, "mapping": self.mapping, "low": self.low, "high": self.high,
                "max_length": self.max_length}  # fmt: skip

    def warm_up(self) -> None:
        """Registration check: the model loads (and stays loaded). Raises ModelUnavailable."""
        load(self.path, self.max_length)

    def verify(self, req: Request, ctx: Context) -> Verdict:
        try:
            scorer = load(self.path, self.max_length)
        except ServiceError as e:
            return Verdict.of(Outcome.SANDBOX_ERROR, f"{self.name}: {e}")
        item = scorer.score(req.prompt, req.completion, max(ctx.time_left(), 0.1))
        if item.error or not math.isfinite(item.score):
            return Verdict.of(
                Outcome.SANDBOX_ERROR, f"{self.name}: {item.error or 'the model gave a non-finite score'}"
            )
        reward = to_reward(item.score, self.mapping, self.low, self.high)
        outcome = Outcome.CORRECT if reward >= 0.5 else Outcome.INCORRECT
        return Verdict(
            reward,
            outcome,
            f"score {item.score:.6g} -> reward {reward:.6g} ({self.mapping}); forward pass of {item.batch}",
        )
