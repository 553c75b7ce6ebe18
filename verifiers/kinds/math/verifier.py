"""``math``: is the model's final answer equivalent to the gold answer?

Host side (this module, linear time, nothing evaluated): extract the final answer(s) with plain string
scanning (``in_sandbox/answer.py``, the final-answer rule), decide the trivial case of two integer literals by comparing digit
strings, and hand everything else to the sandbox. Sandbox side (``in_sandbox/math/grader.py``, loaded
once per warm worker of the math lane by its warm-up): Math-Verify parsing and sympy comparison under a per-item
soft timeout and the job's hard kill. The lane starts on a service's first math request, before that request's
own budget starts (verifiers/service/core.py), so a service that grades no math never pays for the warm-up.

Throughput: forking the warm worker and its first parse cost far more here than a comparison (page
tables of a large interpreter, copy-on-write faults), so concurrent requests are *coalesced*: while every sandbox slot is busy,
new items queue, and the next free slot takes up to ``MAX_ITEMS`` of them as one job. Under light load a
job holds one item (lowest latency); under GRPO batches it holds many. The grader prints one line per
item as it finishes, so a job killed by a power tower still returns the items before it; the one
running gets ``TIMEOUT`` and the ones after it go on together in one fresh job.

Options: ``fallback`` = ``none`` (default) | ``last_number`` | ``full``; ``rel_tol`` = a relative
tolerance for numeric answers (default: exact for exact numbers, 6 decimals where a float is involved).
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass, field

from in_sandbox.answer import FALLBACKS, Extraction, extract
from in_sandbox.answer_signals import signals_of
from in_sandbox.jobs import MATH
from sandbox.backend import GRACE_S, Job, Limits, Result
from sandbox.deadline import Deadline
from verifiers.shapes.base import BadRequest, Builtin, Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

MAX_ITEMS = 32  # items per sandbox job
ITEM_RESERVE_S = 0.5  # of an item's time, kept so its own timer fires before the pool kills the job
ITEM_SHARE_S = 0.5  # a job's time beyond its longest item's, for each other item it carries

# The job: the grader (in_sandbox/math/grader.py, shipped in the image) is already imported in the warm worker.
JOB_CODE = MATH.entry  # in_sandbox/math/grader.py, reading in_sandbox/jobs.py MATH

# The math kind's declared warm-up (MathVerifier.warmup), run once in each worker of its lane before it forks
# jobs: in_sandbox/math/warm.py grades a corpus covering each answer shape, then fills the LaTeX parser's
# prediction tables for the common answer shapes, so every job inherits them warm.
MATH_WARMUP = "from in_sandbox.math import warm\nwarm.warm_up()\n"
LANE = "math"  # the pool's lane of workers holding that warm state (verifiers/kinds/table.py sandbox_lanes)


_INT = re.compile(r"[+-]?[0-9]{1,100}")  # ASCII digits only: others (``４２``) are the sandbox's to read


def int_literal(s: str) -> str | None:
    """Canonical digits of a plain integer literal (``$-007$`` → ``-7``), else None. No parsing."""
    s = s.strip()
    if len(s) > 2 and s[0] == s[-1] == "$":
        s = s.strip("$").strip()
    if not _INT.fullmatch(s):
        return None
    sign = "-" if s[0] == "-" else ""
    digits = s.lstrip("+-").lstrip("0") or "0"
    return digits if digits == "0" else sign + digits


def options(req: Request) -> tuple[str, float | None]:
    """(fallback, rel_tol) from the request's options; a bad value is the caller's mistake."""
    fallback = req.options.get("fallback", "none") or "none"
    if fallback not in FALLBACKS:
        raise BadRequest(f"math: options['fallback'] must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
    rel_tol = None
    if req.options.get("rel_tol", ""):
        try:
            rel_tol = float(req.options["rel_tol"])
        except ValueError:
            rel_tol = -1.0
        if not (math.isfinite(rel_tol) and 0 <= rel_tol < 1):
            raise BadRequest(f"math: options['rel_tol'] must be a number in [0, 1), got {req.options['rel_tol']!r}")
    return fallback, rel_tol


# -- the typed result of one item ------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """What grading one item gave: an outcome and why. ``compared``: the two answers were compared (the
    outcome is CORRECT or INCORRECT and ``detail`` the grader's reason), so the verdict names the source."""

    outcome: Outcome
    detail: str
    compared: bool = False

    @classmethod
    def from_line(cls, d: dict) -> Comparison:
        """The grader's JSON line (grader.main), read in this one place."""
        for key, outcome in _LINE_KEYS:
            if key in d:
                return cls(outcome, str(d[key]))
        return cls(Outcome.CORRECT if d.get("ok") else Outcome.INCORRECT, str(d.get("why", "")), compared=True)

    def verdict(self, ext: Extraction) -> Verdict:
        return Verdict.of(self.outcome, f"{ext.source}: {self.detail}" if self.compared else self.detail)


# a line's key -> its outcome, in precedence order; bad_reference is the dataset's fault, not the model's:
# masked from training like SANDBOX_ERROR
_LINE_KEYS = (("sandbox_error", Outcome.SANDBOX_ERROR), ("bad_reference", Outcome.BAD_REFERENCE),
              ("timeout", Outcome.TIMEOUT), ("no_answer", Outcome.NO_ANSWER))  # fmt: skip


def _infra(why: str) -> Comparison:
    return Comparison(Outcome.SANDBOX_ERROR, why)


# -- coalescing items into sandbox jobs ----------------------------------------------------------------
@dataclass
class PendingItem:
    payload: dict
    budget_s: float  # the comparison's own time (the request's timeout_s, else the default)
    deadline: Deadline  # the request's
    timeout_s: float = 0.0  # what it got when its job was sent: its budget, or less where the deadline is sooner
    result: Comparison | None = None
    done: bool = field(default=False)


class _Coalescer:
    """At most ``slots`` jobs in flight; items that arrive meanwhile ride in the next job together."""

    def __init__(self, slots: int):
        self.slots = max(1, slots)
        self._cond = threading.Condition()
        self._pending: list[PendingItem] = []
        self._inflight = 0
        self._inflight_items = 0

    def grade(self, item: PendingItem, run_job) -> Comparison:
        with self._cond:
            self._pending.append(item)
            while not item.done:
                if self._inflight < self.slots and self._pending:
                    # an even share of everything outstanding, so one slot does not keep a big batch while
                    # the other keeps taking single items
                    share = -(-(len(self._pending) + self._inflight_items) // self.slots)
                    n = max(1, min(MAX_ITEMS, share))
                    batch, self._pending = self._pending[:n], self._pending[n:]
                    self._inflight += 1
                    self._inflight_items += n
                    self._cond.release()
                    try:
                        results = run_items(batch, run_job)
                    except Exception as e:  # never leave a waiter hanging
                        results = [_infra(f"math job failed: {type(e).__name__}: {e}")] * len(batch)
                    finally:
                        self._cond.acquire()
                        self._inflight -= 1
                        self._inflight_items -= n
                    for it, r in zip(batch, results, strict=True):
                        it.result, it.done = r, True
                    self._cond.notify_all()
                else:
                    self._cond.wait()
        return item.result


def run_items(items: list[PendingItem], run_job) -> list[Comparison]:
    """Grade items in one sandbox job; when the job is killed, the item that was running gets its verdict
    (``_killed``) and the items after it go on together in one fresh job (never a job per item)."""
    live = [it for it in items if not it.deadline.expired()]
    out = {id(it): _infra("queued past its deadline") for it in items}
    if live:
        for it in live:  # "left" counts from the job's start, "timeout" from the item's (grader.main)
            it.payload["left"] = max(0.01, _comparison_by(it.deadline).remaining())
            it.payload["timeout"] = it.timeout_s = min(it.budget_s, it.payload["left"])
        res = _run_job(live, run_job)
        lines = _lines(res)
        rest = []
        for n, it in enumerate(live):
            if n in lines:
                out[id(it)] = Comparison.from_line(lines[n])
            elif res.sandbox_error:
                out[id(it)] = _infra(res.sandbox_error)
            elif n == len(lines):  # the item that was running when the job ended
                out[id(it)] = _killed(res, it.timeout_s)
            else:
                rest.append(it)
        for it, r in zip(rest, run_items(rest, run_job) if rest else [], strict=True):
            out[id(it)] = r
    return [out[id(it)] for it in items]


def _comparison_by(deadline: Deadline) -> Deadline:
    """When one item's comparison must stop by its own timer: before the pool kills the job (it keeps
    the worker's share, ``reserve(GRACE_S)``), so the job reports the item and goes on to the next."""
    return deadline.reserve(GRACE_S).reserve(ITEM_RESERVE_S)


def _run_job(items: list[PendingItem], run_job) -> Result:
    """One job for the items: the longest item's time plus ``ITEM_SHARE_S`` for each other item, by the
    latest of their deadlines (each item's own timer stops it by its own; the job's kill is the backstop for
    one that does not stop). Without the share, a job of 32 quick items on a loaded machine outlived the
    longest item's time and the item running then was reported TIMEOUT (found by bench/math_grading/fuzz_answers.py)."""
    stdin = MATH.dumps({"items": [it.payload for it in items]})
    timeout_s = max(it.timeout_s for it in items) + ITEM_SHARE_S * (len(items) - 1)
    job = Job(
        code=JOB_CODE,
        stdin=stdin,
        timeout_s=timeout_s,
        limits=Limits(memory_mb=1024),
        deadline=max((it.deadline for it in items), key=lambda d: d.at),
        lane=LANE,
    )
    return run_job(job)


def _lines(res: Result) -> dict[int, dict]:
    got: dict[int, dict] = {}
    for line in res.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and isinstance(d.get("i"), int):
            got[d["i"]] = d
    return got


def _killed(res: Result, timeout_s: float) -> Comparison:
    if res.timed_out:
        return Comparison(Outcome.TIMEOUT, f"comparison took longer than {timeout_s:.3g} s")
    if res.signal is not None:
        return Comparison(Outcome.TIMEOUT, f"comparison was killed by signal {res.signal} (memory limit)")
    why = f"comparison crashed (exit {res.exit_code}): {res.stderr.strip()[-300:]}"
    return Comparison(Outcome.INCORRECT, why, compared=True)


# -- the verifier ----------------------------------------------------------------------------------------
@dataclass
class MathVerifier(Builtin):
    name: str = "math"
    description: str = (
        "final answer (last \\boxed{}, else <answer>, else options fallback=none|last_number|full) "
        "equivalent to the reference (Math-Verify + sympy in the sandbox); options rel_tol"
    )
    version: int = 2
    options = {
        "fallback": "where the answer is when no \\boxed{} or <answer>: none (default), last_number, full",
        "rel_tol": "compare numbers relatively within this tolerance, in [0, 1)",
    }
    sandbox_entry = JOB_CODE
    warmup = MATH_WARMUP
    lane = LANE
    lane_preload = ("sympy", "math_verify", "latex2sympy2_extended")
    lane_lazy = True  # a service that grades no math never warms it (each worker's warm-up: 1.6 s of CPU)
    _coalescers: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self, req: Request) -> tuple[str, float | None]:
        """The request's own mistakes (bad options, no reference), found before grading: VerifyBatch calls
        this for every item up front, so a malformed item fails the call naming it. Returns options()."""
        opts = options(req)
        if not req.reference.strip():
            raise BadRequest("math: 'reference' must hold the gold answer, e.g. '\\frac{1}{2}' or '$x=3$'")
        return opts

    def verify(self, req: Request, ctx: Context) -> Verdict:
        """The verdict, with the ``answer.*`` exploit signals of the completion (they never change it)."""
        fallback, rel_tol = self.check(req)
        ext = extract(req.completion, fallback, req.reference)
        verdict = self._grade(req, ctx, ext, rel_tol, fallback)
        signals = signals_of(req.completion, ext, req.prompt, req.reference)
        if verdict.outcome is Outcome.CORRECT and ext is not None and ext.source == "boxed":
            # several boxes that together are the reference ((2, 3) as x = \boxed{2}, y = \boxed{3}) are one answer
            signals = [s for s in signals if s != "answer.several"]
        return verdict.signal(*signals)

    def _grade(
        self, req: Request, ctx: Context, ext: Extraction | None, rel_tol: float | None, fallback: str
    ) -> Verdict:
        if ext is None:
            where = "no \\boxed{} or <answer> found" + ("" if fallback == "none" else f" (fallback {fallback})")
            return Verdict.of(Outcome.NO_ANSWER, where + " after the reasoning")
        if ext.sprayed:
            return Verdict.of(Outcome.INCORRECT, f"answer spraying: {ext.sprayed} different answers")
        if ext.hedge:
            return Verdict.of(Outcome.INCORRECT, f"{ext.source}: the answer's sentence hedges ({ext.hedge!r})")
        fast = None if rel_tol is not None else _integers(req.reference, ext)
        if fast is not None:
            return fast
        budget = req.timeout_s or self.default_timeout_s
        mode = "full" if ext.source == "full" else "answer"
        payload = {"gold": req.reference, "preds": ext.answers, "mode": mode, "rel_tol": rel_tol,
                   "together": ext.together}  # fmt: skip
        item = PendingItem(payload, budget, ctx.deadline)  # its time is set when its job is sent (run_items)
        with self._lock:
            co = self._coalescers.get(ctx.run_job)
            if co is None:
                co = self._coalescers[ctx.run_job] = _Coalescer(ctx.parallelism)
        return co.grade(item, ctx.run_job).verdict(ext)


def _integers(reference: str, ext: Extraction) -> Verdict | None:
    """Both sides plain integer literals: compare digit strings on the host (no parsing at all)."""
    gold = int_literal(reference)
    if gold is None or ext.source == "full":
        return None
    preds = [int_literal(a) for a in ext.answers]
    if any(p is None for p in preds):
        return None
    ok = all(p == gold for p in preds)
    why = f"gold={gold} pred={','.join(preds)}" + (" (different answers)" if len(preds) > 1 else "")
    return Verdict.of(Outcome.CORRECT if ok else Outcome.INCORRECT, f"{ext.source}: {why}")
