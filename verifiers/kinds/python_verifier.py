"""``python`` verifiers: user source defining ``verify(completion, reference, options) -> float | bool``
(or, with per-step rewards, ``{"reward": r, "steps": [{"reward", "start", "end"}, …]}`` or ``(r, steps)``).

The source is untrusted code as far as the service is concerned: it is never compiled or run in the
server process. Registration and every verification run it in the sandbox (a fresh forked process
of a warm worker, with the same limits as the built-ins) through ``in_sandbox/python_verifier.py``, which compiles it,
calls the entrypoint and prints one result line.

Return values: a number or a bool is the reward, clamped to [0, 1] (1 → CORRECT, less → INCORRECT);
``None`` means "cannot grade" (NO_ANSWER, reward 0); ``raise BadReference("why")`` (a name the source
sees without importing it; any exception class named ``BadReference`` counts, so a module tested on
its own may define its own) means "this reference is unusable": BAD_REFERENCE, reward 0, which the
trainer masks out of the loss like a SANDBOX_ERROR (not the model's fault). Anything else, NaN,
another exception or an exit without a result is RUNTIME_ERROR, and so is writing more than the sandbox's output cap (its one
verdict: "output limit exceeded", reward 0, as for any program). The verifier's own prints go to stderr, and the result line
carries a per-job random prefix, so text the verifier prints cannot pose as its result.

Steps (process supervision): each step is ``{"reward": float, "start": int, "end": int}`` or a
``(reward, start, end)`` triple covering ``completion[start:end]``; spans inside the completion, in order,
not overlapping, rewards finite (``verifiers/steps.check_steps``). Steps that break a rule make the
verdict RUNTIME_ERROR saying which step and why (a BadRequest at registration's dry run).
"""

from __future__ import annotations

import json
import keyword
import secrets
from dataclasses import dataclass

from in_sandbox.jobs import PYTHON_VERIFIER
from sandbox.backend import Job, Limits, Result
from verifiers.kinds.steps import BadSteps, check_steps
from verifiers.shapes.base import BadRequest, Context, Unavailable, Verdict
from verifiers.shapes.limits import cut_short_verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

MAX_SOURCE_BYTES = 1 << 20
DEFAULT_TIMEOUT_S = 10.0
DRY_RUN_TIMEOUT_S = 5.0
LIMITS = Limits(memory_mb=1024)  # the same as the math verifier's jobs

# The job: in_sandbox/python_verifier.py (stdin: in_sandbox/jobs.py PYTHON_VERIFIER; one nonce-prefixed JSON line on
# stdout).
HARNESS = PYTHON_VERIFIER.entry


def check_spec(source: str, entrypoint: str) -> None:
    """Shape checks that need no sandbox."""
    if not source.strip():
        raise BadRequest("python.source is empty: give the code that defines verify(completion, reference, options)")
    if len(source.encode()) > MAX_SOURCE_BYTES:
        raise BadRequest(f"python.source is {len(source.encode())} bytes, over the limit of {MAX_SOURCE_BYTES}")
    if not entrypoint.isidentifier() or keyword.iskeyword(entrypoint):
        raise BadRequest(f"python.entrypoint {entrypoint!r} is not a Python function name")


def run(
    ctx: Context,
    source: str,
    entrypoint: str,
    completion: str,
    reference: str,
    options: dict[str, str],
    timeout_s: float,
    job_id: str = "",
) -> tuple[Result, dict | None]:
    """Run the harness once; returns the sandbox result and the parsed result line (None if absent)."""
    nonce = secrets.token_hex(16)
    payload = {"nonce": nonce, "source": source, "entrypoint": entrypoint, "completion": completion,
               "reference": reference, "options": options}  # fmt: skip
    job = Job(HARNESS, PYTHON_VERIFIER.dumps(payload), timeout_s, LIMITS, id=job_id, deadline=ctx.deadline)
    res = ctx.run_job(job)
    found = None
    for line in res.stdout.splitlines():
        if line.startswith(nonce):
            try:
                found = json.loads(line[len(nonce) :])
            except ValueError:
                found = None
    return res, found


def dry_run(
    ctx: Context, name: str, source: str, entrypoint: str, example_completion: str = "", example_reference: str = ""
) -> None:
    """Registration check: compiles, loads, and the entrypoint returns a reward for the example.
    Raises BadRequest saying what to fix, or Unavailable when the sandbox could not run it."""
    check_spec(source, entrypoint)
    res, out = run(
        ctx, source, entrypoint, example_completion, example_reference, {}, DRY_RUN_TIMEOUT_S, f"register:{name}"
    )
    where = f"python verifier {name!r}"
    if res.sandbox_error:
        raise Unavailable(f"{where}: the sandbox could not run the dry run ({res.sandbox_error}); try again")
    if res.output_limit_exceeded:
        raise BadRequest(
            f"{where}: the dry run wrote more than the output cap ({res.output_cap} bytes of stdout "
            "and stderr together): print less"
        )
    if res.timed_out:
        raise BadRequest(f"{where}: the dry run took longer than {res.time_limit_s or DRY_RUN_TIMEOUT_S:.3g} s")
    if out is None:
        raise BadRequest(f"{where}: the dry run exited ({res.exit_code}) without a result: {res.stderr.strip()[-300:]}")
    err = out.get("error")
    call = f"{entrypoint}({example_completion[:40]!r}, {example_reference[:40]!r}, {{}})"
    if err == "syntax":
        line = f"line {out['line']}" if out.get("line") else "the source"
        raise BadRequest(f"{where}: syntax error at {line}: {out['msg']}: {out.get('text', '')}".rstrip(": "))
    if err == "load":
        raise BadRequest(f"{where}: running the module's top level raised: {out['msg']}")
    if err == "entrypoint":
        raise BadRequest(f"{where}: {out['msg']}; name it in python.entrypoint if it is not 'verify'")
    if err == "raised":
        raise BadRequest(
            f"{where}: the dry run {call} raised: {out['msg']} (if it cannot grade empty input, "
            "give example_completion / example_reference)"
        )
    if err == "type":
        raise BadRequest(f"{where}: the dry run {call} {out['msg']}")
    if err == "bad_reference":  # it graded: the example's reference is one it refuses, which is its job
        return
    try:
        check_steps(out.get("steps") or [], example_completion, "returned steps")
    except BadSteps as e:
        raise BadRequest(f"{where}: the dry run {call} {e}") from None


@dataclass
class PythonVerifier:
    name: str
    source: str
    entrypoint: str = "verify"
    description: str = ""
    version: int = 1
    example_completion: str = ""
    example_reference: str = ""
    kind: str = "python"
    default_timeout_s: float = DEFAULT_TIMEOUT_S

    def spec(self) -> dict:
        return {"source": self.source, "entrypoint": self.entrypoint, "example_completion": self.example_completion,
                "example_reference": self.example_reference}  # fmt: skip

    def verify(self, req: Request, ctx: Context) -> Verdict:
        timeout = req.timeout_s or self.default_timeout_s  # the program's; the pool cuts it to the deadline
        res, out = run(ctx, self.source, self.entrypoint, req.completion, req.reference, req.options, timeout, req.id)
        cut = cut_short_verdict(res, f"{self.name} took longer than {res.time_limit_s or timeout:.3g} s")
        if cut is not None:
            return cut
        if out is None:
            why = res.stderr.strip()[-300:] or f"exit code {res.exit_code}"
            return Verdict.of(Outcome.RUNTIME_ERROR, f"{self.name} exited without a result: {why}")
        if out.get("error") == "bad_reference":
            return Verdict.of(
                Outcome.BAD_REFERENCE, f"{self.name}: bad reference: {out.get('msg') or '(no reason given)'}"
            )
        if "error" in out:
            msg = out.get("msg") or f"syntax error at line {out.get('line')}"
            return Verdict.of(Outcome.RUNTIME_ERROR, f"{self.name}: {msg}".strip())
        if out["reward"] is None:
            return Verdict.of(Outcome.NO_ANSWER, f"{self.name} returned None (cannot grade)")
        try:
            steps = check_steps(out.get("steps") or [], req.completion, "returned steps")
        except BadSteps as e:
            return Verdict.of(Outcome.RUNTIME_ERROR, f"{self.name} {e}")
        reward = min(1.0, max(0.0, out["reward"]))
        outcome = Outcome.CORRECT if reward >= 1.0 else Outcome.INCORRECT
        return Verdict(reward, outcome, f"{self.name} returned {out['reward']:g}", steps=steps)
