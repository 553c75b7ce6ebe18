"""A TRL reward function backed by the verifier service.

    from trl import GRPOTrainer
    from verifiers.integrations.trl import reward_function

    trainer = GRPOTrainer(model=..., reward_funcs=[reward_function("math", target="127.0.0.1:50051")],
                          train_dataset=dataset_with_an_answer_column, ...)

TRL's contract (``GRPOTrainer._calculate_rewards``, trl 1.16): the function is called with keyword
arguments ``prompts``, ``completions``, ``completion_ids`` and every dataset column (one value per
completion), plus ``trainer_state``, ``log_extra`` and ``log_metric``; it returns one ``float | None`` per
completion. ``None`` means "no reward": TRL turns it into NaN, leaves it out of the group's mean and
std and gives that completion zero advantage. We return ``None`` for SANDBOX_ERROR and BAD_REFERENCE
(not the model's fault), never a fake 0.

One invocation is one ``VerifyBatch`` call with all of TRL's completions (B*G of them). Completions
are plain strings, or, for conversational datasets, lists of message dicts: the text graded is the
content of the last assistant message. The reward is logged by TRL under ``rewards/<__name__>/…``
(``__name__`` defaults to ``verifier``); the fraction of each outcome goes to ``log_metric`` as
``<__name__>/outcome/<OUTCOME>`` (every outcome, zeros included) and each completion's outcome to the completions table.

``async_reward_function`` returns the same thing with an ``async __call__``: TRL (``is_async_callable``)
then runs it on its event loop, concurrently with other async reward functions; the gRPC call itself
runs in a worker thread so the loop stays free.

>>> f = reward_function("think_format", answer_column=None, name="fmt")   # no connection yet
>>> f.__name__
'fmt'
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from verifiers.client import VerifyItem, VerifyResult
from verifiers.integrations import OUTCOMES, UNGRADED, client_for

__all__ = ["RewardFunction", "AsyncRewardFunction", "reward_function", "async_reward_function", "completion_text"]


def completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    """The text to grade: the string itself, or the last assistant message's content.

    >>> completion_text([{"role": "assistant", "content": "<think>a</think>1"}])
    '<think>a</think>1'
    >>> completion_text([{"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}])
    'xy'
    """
    if isinstance(completion, str):
        return completion
    for msg in reversed(list(completion)):
        if isinstance(msg, Mapping) and msg.get("role", "assistant") == "assistant":
            return _content_text(msg.get("content"))
    return ""


def prompt_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    """The prompt as text: the string itself, or the last user message's content."""
    if isinstance(prompt, str):
        return prompt
    for msg in reversed(list(prompt)):
        if isinstance(msg, Mapping) and msg.get("role") == "user":
            return _content_text(msg.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # multimodal content blocks: [{"type": "text", "text": ...}, {"type": "image", ...}]
    return "".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")


def as_reference(value: Any) -> str:
    """A dataset cell as the service's ``reference``: strings as they are, anything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


class RewardFunction:
    """Callable with TRL's reward-function contract; see the module docstring."""

    def __init__(
        self,
        verifier: str,
        *,
        target: str | None = None,
        answer_column: str | None = "answer",
        options: Mapping[str, str] | None = None,
        option_columns: Sequence[str] = (),
        timeout_s: float = 0.0,
        deadline_s: float = 600.0,
        name: str | None = None,
    ):
        self.verifier = verifier
        self.target = target
        self.answer_column = answer_column
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        self.option_columns = tuple(option_columns)
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.__name__ = name or verifier

    def items(self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]) -> list[VerifyItem]:
        """One ``VerifyItem`` per completion (the translation; no grading here)."""
        n = len(completions)
        refs = self._column(self.answer_column, columns, n) if self.answer_column else [""] * n
        per_row = {c: self._column(c, columns, n) for c in self.option_columns}
        out = []
        name, options, timeout_s = self.verifier, self.options, self.timeout_s
        for i, c in enumerate(completions):
            opts = {**options, **{k: str(v[i]) for k, v in per_row.items() if v[i] is not None}} if per_row else options
            p, ref = prompts[i] if prompts else "", refs[i]
            # plain strings (the usual case) taken as they are, without a call per field
            out.append(
                VerifyItem(
                    name,
                    c if type(c) is str else completion_text(c),
                    ref if type(ref) is str else as_reference(ref),
                    p if type(p) is str else prompt_text(p),
                    opts,
                    timeout_s,
                )
            )
        return out

    def _column(self, name: str, columns: Mapping[str, Any], n: int) -> list[Any]:
        if name not in columns:
            have = sorted(k for k in columns if k not in ("trainer_state", "log_extra", "log_metric", "completion_ids"))
            raise KeyError(
                f"reward function {self.__name__!r}: the dataset has no column {name!r} "
                f"(columns passed by TRL: {have}); set answer_column=/option_columns= to the right names"
            )
        values = list(columns[name])
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
        return values

    def rewards(self, results: Sequence[VerifyResult]) -> list[float | None]:
        return [None if r.outcome in UNGRADED else r.reward for r in results]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        items = self.items(prompts, completions, columns)
        results = client_for(self.target).verify_batch(items, deadline_s=self.deadline_s)
        self._report(results, columns)
        return self.rewards(results)

    def _report(self, results: Sequence[VerifyResult], columns: Mapping[str, Any]) -> None:
        """Outcome fractions to TRL's ``log_metric``, outcomes to its completions table (when TRL passes them)."""
        log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
        outcomes = [r.outcome for r in results]
        if callable(log_metric) and results:
            # every outcome every call, zeros included: TRL averages each name over the calls that logged it
            counts = Counter(outcomes)
            for outcome in (*OUTCOMES, *(o for o in counts if o not in OUTCOMES)):
                log_metric(f"{self.__name__}/outcome/{outcome}", counts[outcome] / len(results))
        if callable(log_extra):
            log_extra(f"{self.__name__}_outcome", outcomes)
            log_extra(f"{self.__name__}_signals", [",".join(r.signals) for r in results])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.verifier!r}, target={self.target!r}, answer_column={self.answer_column!r})"


_threads: ThreadPoolExecutor | None = None
_threads_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The async variant's worker threads, started on first use (shared by every AsyncRewardFunction)."""
    global _threads
    with _threads_lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(8, thread_name_prefix="trl-reward")
        return _threads


class AsyncRewardFunction(RewardFunction):
    """The same reward with an ``async __call__`` (TRL runs it on its event loop)."""

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float | None]:
        # the blocking call on a worker thread (the loop stays free); run_in_executor on our own threads
        # rather than asyncio.to_thread, which also copies the context and goes through the default executor
        call = functools.partial(RewardFunction.__call__, self, prompts, completions, **columns)
        return await asyncio.get_running_loop().run_in_executor(_executor(), call)


def reward_function(
    verifier: str,
    *,
    target: str | None = None,
    answer_column: str | None = "answer",
    options: Mapping[str, str] | None = None,
    **kw: Any,
) -> RewardFunction:
    """A TRL reward function grading with the service's verifier ``verifier``.

    ``target``: the service (default ``$VERIFIER_TARGET``, else ``127.0.0.1:50051``); ``answer_column``:
    the dataset column holding the reference (None: no reference, e.g. ``think_format``); ``options``:
    the verifier's options for every item; ``option_columns``: dataset columns passed per row as options
    of the same name (e.g. ``entry_point`` for HumanEval-style code); ``timeout_s``: grading budget per
    item (0: the verifier's default); ``deadline_s``: the whole call's deadline; ``name``: ``__name__``.
    """
    return RewardFunction(verifier, target=target, answer_column=answer_column, options=options, **kw)


def async_reward_function(
    verifier: str,
    *,
    target: str | None = None,
    answer_column: str | None = "answer",
    options: Mapping[str, str] | None = None,
    **kw: Any,
) -> AsyncRewardFunction:
    """``reward_function`` for TRL's async reward functions (same arguments)."""
    return AsyncRewardFunction(verifier, target=target, answer_column=answer_column, options=options, **kw)
