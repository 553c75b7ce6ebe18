"""Grading for ``make eval``: the service to talk to (``--target`` or one started here), the check that
every verifier the run needs is registered, and the Grader that sends samples in VerifyBatch calls
(``trainer.grading.grade_items``, the one grading call), ``workers`` at a time, and logs each result as it
comes back."""

from __future__ import annotations

import sys
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from trainer.config import EvalArgs
from trainer.errors import VerifierSetupError
from trainer.evaluation.log import SampleLog
from trainer.evaluation.suites import Sample, verifier_flag
from trainer.grading import grade_items
from verifiers.client import UNGRADED, Outcome, VerifierClient, VerifierError, VerifyItem

DETAIL_CHARS = 400


class Grader:
    """Sends samples to the service in VerifyBatch calls, ``workers`` at a time; logs each result."""

    def __init__(self, client: VerifierClient, log: SampleLog, bar, args: EvalArgs):
        self.client, self.log, self.bar, self.args = client, log, bar, args
        self.workers = max(1, args.workers)
        self.pool = ThreadPoolExecutor(self.workers)
        self.pending: set[Future] = set()
        self.records: dict[str, dict[str, Any]] = {}

    def format_verifier(self, s: Sample) -> str | None:
        return format_verifier_for(self.args.format_verifier, s.verifier)

    def _grade(self, batch: list[tuple[Sample, str]]) -> list[dict[str, Any]]:
        a = self.args
        items = [
            VerifyItem(s.verifier, s.completion, s.reference, s.prompt, s.options, a.timeout_s, s.key) for s, _ in batch
        ]
        fmt = [(i, self.format_verifier(s)) for i, (s, _) in enumerate(batch)]
        fmt = [(i, name) for i, name in fmt if name and name != batch[i][0].verifier]
        items += [VerifyItem(name, batch[i][0].completion, "", batch[i][0].prompt, {}, 0.0, "fmt") for i, name in fmt]
        results = grade_items(self.client, items, deadline_s=a.deadline_s)  # the one grading call
        fmt_of = {i: results[len(batch) + j] for j, (i, _) in enumerate(fmt)}
        out = []
        for i, ((s, fp), r) in enumerate(zip(batch, results, strict=False)):
            f = fmt_of.get(i)
            out.append(
                {
                    "key": s.key,
                    "id": s.id,
                    "sample": s.sample,
                    "fp": fp,
                    "verifier": s.verifier,
                    "reward": r.reward,
                    "outcome": r.outcome,
                    "detail": r.detail[:DETAIL_CHARS],
                    "elapsed_s": r.elapsed_s,
                    "components": r.components,
                    "cached": r.cached,
                    "format": None if f is None or f.outcome in UNGRADED else f.reward,
                    "completion": s.completion,
                    "reference": s.reference,
                    "prompt": s.prompt,
                    "options": s.options,
                }
            )
        return out

    def record_infra(self, batch: list[tuple[Sample, str]], why: str) -> None:
        """Samples whose generation the infrastructure broke (a tool session that died mid-rollout): logged as
        SANDBOX_ERROR, ungraded (not the model's fault), never sent to the verifier as if the model had stopped."""
        recs = [
            {
                "key": s.key,
                "id": s.id,
                "sample": s.sample,
                "fp": fp,
                "verifier": s.verifier,
                "reward": 0.0,
                "outcome": Outcome.SANDBOX_ERROR.name,
                "detail": why,
                "elapsed_s": 0.0,
                "components": {},
                "cached": False,
                "format": None,
                "completion": s.completion,
                "reference": s.reference,
                "prompt": s.prompt,
                "options": s.options,
            }
            for s, fp in batch
        ]
        self.log.append(recs)
        self.records.update((r["key"], r) for r in recs)
        self.bar.update(len(recs))

    def submit(self, batch: list[tuple[Sample, str]]) -> None:
        for i in range(0, len(batch), self.args.batch_size):
            while len(self.pending) >= self.workers:
                self.drain(block=True)
            self.pending.add(self.pool.submit(self._grade, batch[i : i + self.args.batch_size]))

    def drain(self, block: bool = False) -> None:
        """Collect finished calls (wait for at least one when ``block``); a failed call raises."""
        done, _ = wait(self.pending, timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for fut in done:
            self._take(fut)

    def _take(self, fut: Future) -> None:
        recs = fut.result()
        # out of pending before the log line is written: a SIGTERM (KeyboardInterrupt) landing between the
        # two must not make close() log the batch a second time (a batch it interrupts is graded again)
        self.pending.discard(fut)
        self.log.append(recs)
        self.records.update((r["key"], r) for r in recs)
        self.bar.update(len(recs))

    def finish(self) -> None:
        while self.pending:
            self.drain(block=True)

    def close(self) -> None:
        """Stop: calls not started are cancelled; calls under way are waited for and still logged."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        for fut in list(self.pending):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._take(fut)


def format_verifier_for(fv: str, verifier: str) -> str | None:
    """The verifier that grades a sample's format rate (``--format-verifier``; auto: none for code)."""
    if fv == "none" or (fv == "auto" and verifier == "code"):
        return None
    return "think_format" if fv == "auto" else fv


class Stamps:
    """What the serving registry says decides a verifier's grades: its name, version, definition digest and
    the service's grader version (VerifierInfo; verifiers/service/digest.py), with the same for the sample's
    format verifier. Part of every sample's resume fingerprint (trainer/evaluation/plan.py)."""

    def __init__(self, infos: dict[str, Any], format_verifier: str):  # name -> VerifierInfo
        self.infos, self.fv = infos, format_verifier

    def _one(self, name: str | None) -> list | None:
        info = self.infos.get(name or "")
        return None if info is None else [info.name, int(info.version), info.digest, info.grader_version]

    def __call__(self, verifier: str) -> list:
        fmt = format_verifier_for(self.fv, verifier)
        return [self._one(verifier), self._one(fmt) if fmt != verifier else None]


def check_verifiers(client: VerifierClient, wanted: set[str], a: EvalArgs) -> Stamps:
    """Fail before any work if a verifier is missing; drop the format verifier if it is the one missing.
    Returns the Stamps of the registry that will grade."""
    try:
        infos = {v.name: v for v in client.list_verifiers()}
    except VerifierError as e:
        raise VerifierSetupError(e.message if e.code.name == "UNAVAILABLE" else str(e)) from None
    have = set(infos)
    missing = sorted(wanted - have)
    if missing:
        raise VerifierSetupError(
            f"verifier(s) {', '.join(missing)} not registered on {client.target}; available: "
            f"{', '.join(sorted(have))}. Register it (python -m verifiers.cli register, "
            f"docs/registry.md) or choose another: {verifier_flag()}."
        )
    if a.format_verifier not in ("auto", "none") and a.format_verifier not in have:
        raise VerifierSetupError(f"--format-verifier {a.format_verifier} is not registered on {client.target}")
    if a.format_verifier == "auto" and "think_format" not in have:
        a.format_verifier = "none"
    if any(not infos[n].digest for n in wanted):
        print(
            f"warning: the service at {client.target} does not report verifier digests (a server older than "
            "this client): resuming relies on each verifier's name and version only",
            file=sys.stderr,
        )
    return Stamps(infos, a.format_verifier)


class LocalService:
    """The service to talk to: --target, or a LocalServer started for the run and stopped after it."""

    def __init__(self, a: EvalArgs, log_path: Path):
        self.a, self.log_path, self.server = a, log_path, None

    def __enter__(self) -> str:
        if self.a.target:
            return self.a.target
        from verifiers.launch import LocalServer

        print(f"starting a verifier service ({self.a.pool_size} sandboxes; log {self.log_path}) ...", file=sys.stderr)
        self.server = LocalServer(pool_size=self.a.pool_size, log_path=str(self.log_path))
        try:
            self.server.start()
        except BaseException:  # interrupted while it starts: do not leave it running
            self.server.stop()
            raise
        return self.server.target

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()
