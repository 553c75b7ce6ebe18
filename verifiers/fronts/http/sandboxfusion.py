"""``POST /run_code``: SandboxFusion's code-execution shape, run in our sandbox pool.

verl's SandboxFusion reward path (``sandbox_fusion_url: http://host:port/run_code``) and other
SandboxFusion clients post ``{"code", "language", "stdin", "compile_timeout", "run_timeout",
"memory_limit_MB", "files", "fetch_files"}`` and read::

    {"status": "Success" | "Failed" | "SandboxError", "message": str,
     "compile_result": CommandRunResult | null, "run_result": CommandRunResult | null,
     "executor_pod_name": null, "files": {}}
    CommandRunResult = {"status": "Finished" | "Error" | "TimeLimitExceeded", "execution_time": float | null,
                        "return_code": int | null, "stdout": str | null, "stderr": str | null}

Status rules as SandboxFusion's: a command with status ``Error`` (our sandbox failed) → ``SandboxError``
with its stderr as the message; a time limit or a non-zero return code → ``Failed``; else ``Success``.
A process killed by signal N returns ``-N``, as an asyncio subprocess reports it.

Languages: ``RUNNERS`` maps each served name to its runner. ``python``: one job through ``VerifierService.run_job``
(the service's one door), ``files`` written first into ``/tmp/job``. Every other name (the records'
``sandboxfusion``, languages/<name>.py; docs/verifiers.md, "Languages"): one job in the toolchain lane through the
same door, compiled once under ``compile_timeout`` and run once under ``run_timeout``. Where SandboxFusion's runner
shows a compile step (the record's ``shows_compile``) it is in ``compile_result``, and a failed compile is
``Finished`` with a non-zero ``return_code`` (a time-out: ``TimeLimitExceeded``), ``run_result`` null, status
``Failed``; the others' compile failure (TypeScript's transpile, C#'s ``mcs``, a Kotlin script's, Racket's) is
their run's failure, as SandboxFusion reports it.
``memory_limit_MB`` is the program's address-space limit; the JVM and V8 reserve more than they use, so
for them it is at least their default (languages.py). A program that passes the output cap is killed:
``Finished`` with ``return_code`` -9 and "output limit exceeded" in its stderr.
SandboxFusion's languages this server does not run (``languages.NOT_SERVED``: julia, swift, lean, cuda,
python_gpu) answer ``SandboxError`` saying why. Any other language answers SandboxFusion's error shape: ``status: "SandboxError"`` and a message naming
the languages served. ``fetch_files`` is not supported (a non-empty list gets the same error shape);
verl sends ``[]``.

Every answer is this JSON shape, even a run the server's shutdown cut short (past ``--grace-s``:
``SandboxError``, "the server is shutting down") or an internal failure (``SandboxError`` naming it);
a malformed request is a 400 with the ``{"error": ...}`` body.

Queueing: the wait for a free sandbox is bounded by the server's queue limit (``--max-queue-s``), never
by ``run_timeout`` (the program keeps all of it however long it queued); past the limit: SandboxError.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import posixpath
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

import languages as records
from languages.record import Language
from sandbox.backend import Job, Limits, Result
from verifiers.fronts.http.common import HttpError, run_blocking
from verifiers.kinds.code import languages, toolchains
from verifiers.shapes.limits import OUTPUT_LIMIT_DETAIL

log = logging.getLogger(__name__)
sandboxfusion_router = APIRouter(tags=["sandboxfusion"])
MAX_RUN_TIMEOUT_S = 120.0  # the service's per-item ceiling (service.MAX_TIMEOUT_S)
MAX_FILES_BYTES = 16 << 20


class RunCodeRequest(BaseModel):
    code: str = Field(..., description="the program")
    language: str = Field(
        ...,
        description="python, cpp, c, java, nodejs, typescript, go, rust, bash (others: "
        "SandboxError naming what this server runs)",
    )
    stdin: str | None = Field(None, description="given to the program on stdin")
    compile_timeout: float = Field(10, description="seconds, compiled languages")
    run_timeout: float = Field(10, description="seconds of wall time for the run")
    memory_limit_MB: int = Field(-1, description="address-space limit; -1: the sandbox default (1024)")
    files: dict[str, str | None] = Field({}, description="path (relative) → base64 content, written before the run")
    fetch_files: list[str] = Field([], description="not supported: must be empty")


class CommandRunResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = {}


RunJob = Callable[[Job], Result]


class Door(NamedTuple):
    """The service's one door into the sandbox (``VerifierService.run_job``) and the output cap it runs under."""

    run_job: RunJob
    output_cap: int


# language → runner(request, door) -> (compile_result, run_result)
Runner = Callable[[RunCodeRequest, Door], tuple[CommandRunResult | None, CommandRunResult | None]]


def command_result(res: Result) -> CommandRunResult:
    """A sandbox Result as SandboxFusion's CommandRunResult."""
    if res.sandbox_error:
        return CommandRunResult(status="Error", stderr=res.sandbox_error)
    if res.timed_out:
        return CommandRunResult(
            status="TimeLimitExceeded", execution_time=res.wall_s, stdout=res.stdout, stderr=res.stderr
        )
    code = -res.signal if res.signal is not None else res.exit_code
    return CommandRunResult(
        status="Finished", execution_time=res.wall_s, return_code=code, stdout=res.stdout, stderr=res.stderr
    )


def decoded_files(files: dict[str, str | None]) -> dict[str, bytes]:
    """Relative paths inside the job's directory → bytes. Raises HttpError (400) on a bad path or base64."""
    out, total = {}, 0
    for path, content in files.items():
        if content is None:  # SandboxFusion skips these too
            continue
        norm = posixpath.normpath(path)
        if not path or path.startswith("/") or norm == "." or norm.startswith("../") or norm == "..":
            raise HttpError(
                "INVALID_ARGUMENT", f"files: {path[:100]!r} must be a relative path inside the job's directory"
            )
        try:
            out[norm] = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise HttpError("INVALID_ARGUMENT", f"files[{path[:100]!r}] is not base64") from None
        total += len(out[norm])
        if total > MAX_FILES_BYTES:
            raise HttpError("RESOURCE_EXHAUSTED", f"files: more than {MAX_FILES_BYTES} bytes in all", 413)
    return out


def python_program(code: str, files: dict[str, bytes]) -> str:
    """The job's code: ``code`` itself, or a prelude writing ``files`` that then runs ``code`` as main.py
    (inside the sandbox: the untrusted code never runs in this process)."""
    if not files:
        return code
    return (
        "import os as _os\n"
        f"for _p, _b in {sorted(files.items())!r}:\n"
        "    _d = _os.path.dirname(_p)\n"
        "    _d and _os.makedirs(_d, exist_ok=True)\n"
        "    with open(_p, 'wb') as _f:\n"
        "        _f.write(_b)\n"
        "del _os, _p, _b, _d, _f\n"
        f"exec(compile({code!r}, 'main.py', 'exec'), {{'__name__': '__main__', '__builtins__': __builtins__}})\n"
    )


def run_python(req: RunCodeRequest, door: Door) -> tuple[None, CommandRunResult]:
    memory = req.memory_limit_MB if req.memory_limit_MB > 0 else Limits().memory_mb
    job = Job(
        code=python_program(req.code, decoded_files(req.files)),
        stdin=req.stdin or "",
        timeout_s=req.run_timeout,
        limits=Limits(memory_mb=memory),
    )
    return None, command_result(door.run_job(job))


# SandboxFusion's language name (and a few of ours) -> the code verifier's language (the records' ``sandboxfusion``)
TOOLCHAIN_NAMES = {name: lang for name, lang in records.SANDBOXFUSION.items() if lang != "python"}
# SandboxFusion reports a compile step for these (its runners' compile commands)
SHOWN_COMPILE = {r.name for r in records.RECORDS.values() if r.shows_compile}
SIGKILL = 9


def _code(exit_code: int | None, sig: int | None) -> int:
    return -sig if sig is not None else (exit_code if exit_code is not None else 1)


def compile_command_result(comp: dict) -> CommandRunResult:
    """The driver's compile report as a CommandRunResult (its message: the compiler's output tail)."""
    if comp.get("status") == "timeout":
        return CommandRunResult(
            status="TimeLimitExceeded", execution_time=comp["elapsed"], stdout="", stderr=comp["message"]
        )
    code = 0 if comp["ok"] else _code(comp.get("exit"), comp.get("signal"))
    return CommandRunResult(
        status="Finished", execution_time=comp["elapsed"], return_code=code, stdout="", stderr=comp["message"]
    )


def case_command_result(d: dict, cap: int) -> CommandRunResult:
    """One case the driver ran, as a CommandRunResult."""
    out = base64.b64decode(d.get("stdout") or "").decode("utf-8", "replace")
    err, elapsed = d.get("stderr") or "", d.get("elapsed")
    if d["status"] == "timeout":
        return CommandRunResult(status="TimeLimitExceeded", execution_time=elapsed, stdout=out, stderr=err)
    if d["status"] == "output":
        err += f"\n{OUTPUT_LIMIT_DETAIL}: more than {cap} bytes written to stdout and stderr"
        return CommandRunResult(status="Finished", execution_time=elapsed, return_code=-SIGKILL, stdout=out, stderr=err)
    code = 0 if d["status"] == "ok" else _code(d.get("exit"), d.get("signal"))
    return CommandRunResult(status="Finished", execution_time=elapsed, return_code=code, stdout=out, stderr=err)


def _run_as_mb(req: RunCodeRequest, lang: Language) -> int | None:
    if req.memory_limit_MB <= 0:
        return None  # the language's default
    vm = lang.run_as_mb > Limits().memory_mb  # the JVM, V8: address space reserved, not used
    return max(req.memory_limit_MB, lang.run_as_mb) if vm else req.memory_limit_MB


def run_toolchain(
    name: str, req: RunCodeRequest, door: Door
) -> tuple[CommandRunResult | None, CommandRunResult | None]:
    """A non-Python program: one job in the pool's toolchain lane, through the service's door."""
    lang = languages.for_source(languages.language(name), req.code)
    blobs = {p: base64.b64encode(b).decode() for p, b in decoded_files(req.files).items()}
    job, nonce = toolchains.driver_job(
        lang,
        req.code,
        [req.stdin or ""],
        case_timeout_s=req.run_timeout,
        compile_timeout_s=req.compile_timeout,
        run_as_mb=_run_as_mb(req, lang),
        blobs=blobs,
        output_cap=door.output_cap,
    )
    res = door.run_job(job)
    if res.sandbox_error:
        return None, CommandRunResult(status="Error", stderr=res.sandbox_error)
    lines = toolchains.driver_lines(res.stdout, nonce)
    comp = next((d["compile"] for d in lines if "compile" in d), None)
    step_shown = lang.compile is not None and name in SHOWN_COMPILE
    if comp is None:
        if res.timed_out:  # the job's time ran out before the compiler answered
            late = CommandRunResult(status="TimeLimitExceeded", execution_time=res.wall_s, stderr=res.stderr)
            return (late, None) if step_shown else (None, late)
        why = f"the toolchain driver reported nothing (exit {res.exit_code}): {res.stderr[-300:]}"
        return None, CommandRunResult(status="Error", stderr=why)
    shown = compile_command_result(comp) if step_shown else None
    if not comp["ok"]:  # typescript's transpile is part of its run, as SandboxFusion's tsx does it
        return (shown, None) if shown else (None, compile_command_result(comp))
    case = next((d for d in lines if d.get("case") == 0), None)
    if case is not None:
        return shown, case_command_result(case, door.output_cap)
    if res.output_limit_exceeded:
        return shown, case_command_result({"status": "output", "elapsed": res.wall_s}, door.output_cap)
    if res.timed_out:
        return shown, CommandRunResult(status="TimeLimitExceeded", execution_time=res.wall_s, stdout="", stderr="")
    return shown, CommandRunResult(status="Error", stderr=f"the toolchain driver died (exit {res.exit_code})")


def _toolchain_runner(name: str) -> Runner:
    def run(req: RunCodeRequest, door: Door) -> tuple[CommandRunResult | None, CommandRunResult | None]:
        return run_toolchain(name, req, door)

    return run


RUNNERS: dict[str, Runner] = {"python": run_python, **{k: _toolchain_runner(v) for k, v in TOOLCHAIN_NAMES.items()}}


def language_label(language: str) -> str:
    """The metrics label of a request's language: the code verifier's name, or "other"."""
    return "python" if language == "python" else TOOLCHAIN_NAMES.get(language, "other")


def overall_status(compile_result: CommandRunResult | None, run_result: CommandRunResult | None) -> tuple[str, str]:
    """SandboxFusion's (status, message) of a run: SandboxError / Failed / Success."""
    steps = [r for r in (compile_result, run_result) if r is not None]
    for r in steps:
        if r.status == "Error":
            return "SandboxError", r.stderr or ""
    if any(r.status == "TimeLimitExceeded" for r in steps):
        return "Failed", ""
    if any(r.return_code not in (None, 0) for r in steps):
        return "Failed", ""
    return "Success", ""


def check_request(req: RunCodeRequest) -> None:
    for name in ("run_timeout", "compile_timeout"):
        t = getattr(req, name)
        if not 0 < t <= MAX_RUN_TIMEOUT_S:
            raise HttpError("INVALID_ARGUMENT", f"{name} must be in (0, {MAX_RUN_TIMEOUT_S:g}] seconds, got {t:g}")


def run_code(req: RunCodeRequest, door: Door) -> RunCodeResponse:
    runner = RUNNERS.get(req.language)
    why = languages.not_served(req.language)
    if runner is None and why:  # one of SandboxFusion's languages that this server's image does not have
        return RunCodeResponse(
            status="SandboxError", message=f"language {req.language!r} is not available on this server: {why}"
        )
    if runner is None:
        served = ", ".join(sorted(RUNNERS))
        return RunCodeResponse(
            status="SandboxError",
            message=f"language {req.language[:60]!r} is not supported by this server (it runs: {served})",
        )
    if req.fetch_files:
        return RunCodeResponse(status="SandboxError", message="fetch_files is not supported by this server")
    check_request(req)
    compile_result, run_result = runner(req, door)
    status, message = overall_status(compile_result, run_result)
    return RunCodeResponse(status=status, message=message, compile_result=compile_result, run_result=run_result)


@sandboxfusion_router.post("/run_code", response_model=RunCodeResponse)
async def run_code_route(body: RunCodeRequest, request: Request) -> Any:
    """Run a program in the sandbox and answer in SandboxFusion's shape (verl's sandbox_fusion_url)."""
    service = request.app.state.service
    try:
        resp = await run_blocking(request, run_code, body, Door(service.run_job, service.limits.output_cap_bytes))
    except asyncio.CancelledError:  # the server stopped past its grace (the soak's one plain-text 500)
        resp = RunCodeResponse(
            status="SandboxError",
            message="the server is shutting down: the run was cut short; send it again (to another replica)",
        )
    except HttpError:
        raise  # the request's own mistake: answered as such by the app's handler
    except Exception as e:  # noqa: BLE001 - an answer in SandboxFusion's shape on every path, never a bare 500
        log.exception("/run_code failed")
        resp = RunCodeResponse(status="SandboxError", message=f"internal error: {type(e).__name__}: {e}"[:500])
    service.metrics.observe_run_code(language_label(body.language), resp.status)
    # already a RunCodeResponse: written as is (FastAPI would validate it again against response_model)
    return Response(resp.model_dump_json(), media_type="application/json")
