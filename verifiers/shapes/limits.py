"""Every limit of the service in one validated model: the sandbox's (backend, pool size, memory, CPUs,
pids, output cap), the toolchain lane's (its size, memory, image and compile cache) and the requests' (message size,
batch size, completion length, timeout ceiling, concurrent requests). The pool and every lane read their limits from
this object (verifiers/service/wiring.py builds them), never from the environment.

The model is the CLI: ``add_arguments`` turns each field into a ``--flag`` of
``python -m verifiers.fronts.server`` (help text and default from the field), ``from_args`` validates them
once at start-up and raises ``LimitsError`` naming every bad flag, so a typo stops the server before it
starts a sandbox. The Makefile's ``serve`` target passes its variables to the same flags.

>>> ServiceLimits().output_cap_bytes
1048576
>>> ServiceLimits(cpus=0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: ...
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sandbox.backend import MAX_OUTPUT_CAP, OUTPUT_CAP, Result, SandboxConfig
from sandbox.backends.table import BACKENDS
from verifiers.shapes.base import Verdict
from verifiers.shapes.outcome import Outcome

OUTPUT_LIMIT_DETAIL = "output limit exceeded"
MIN_OUTPUT_CAP = 64 * 1024  # the math verifier's batched replies must fit


class LimitsError(ValueError):
    """One or more limits given at start-up are invalid; the message names each flag and why."""


class ServiceLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # -- the sandbox --------------------------------------------------------------------------------
    backend: str = Field(
        "docker",
        description="sandbox backend (docs/sandbox.md compares them): "
        + "; ".join(f"{name}: {entry.about}" for name, entry in BACKENDS.items()),
    )
    pool_size: int = Field(0, ge=0, le=512, description="sandboxes kept warm; 0: one per CPU core")
    memory_mb: int = Field(1536, ge=128, le=1 << 20, description="memory limit of each sandbox, MiB (no swap)")
    cpus: float = Field(1.0, gt=0, le=256, description="CPU quota of each sandbox, in cores (docker backend)")
    cgroup_parent: str = Field(
        "",
        max_length=200,
        pattern=r"^[A-Za-z0-9_./-]*$",
        description="docker: the sandbox containers' parent cgroup; '/' on a shared host, where Docker's own"
        " /docker group competes for CPU as one task against every host process ('': Docker's default)",
    )
    pids: int = Field(128, ge=16, le=1 << 16, description="process limit of each sandbox")
    output_cap_bytes: int = Field(
        OUTPUT_CAP,
        ge=MIN_OUTPUT_CAP,
        le=MAX_OUTPUT_CAP,
        description="bytes a program may write to stdout and stderr together; past it the program is killed and "
        f"graded RUNTIME_ERROR '{OUTPUT_LIMIT_DETAIL}', reward 0",
    )
    # -- the toolchain pool (non-Python code: verifiers/kinds/code/toolchains.py) ------------------------------
    langs_pool_size: int = Field(
        0,
        ge=0,
        le=512,
        description="toolchain sandboxes (non-Python code) kept warm; 0: --pool-size, else one per"
        " CPU core (at least 2)",
    )
    langs_memory_mb: int = Field(
        0, ge=0, le=1 << 20, description="memory limit of each toolchain sandbox, MiB; 0: --memory-mb, at least 2048"
    )
    langs_image: str = Field(
        "",
        max_length=256,
        description="image of the toolchain pool; empty: the tag the sources describe (built"
        " by `make image LANGS=all`)",
    )
    compile_cache_mb: int = Field(
        256,
        ge=0,
        le=1 << 20,
        description="MiB of compiled programs the service keeps, to run the same source again without compiling"
        " it (verifiers/kinds/code/compile_cache.py; least recently used dropped past it); 0 turns the cache off",
    )
    # -- requests -----------------------------------------------------------------------------------
    max_timeout_s: float = Field(
        120.0, gt=0, le=3600, description="wall-time ceiling: the largest timeout_s a request may ask for"
    )
    max_queue_s: float = Field(
        300.0,
        gt=0,
        le=3600,
        description="longest a job without a request deadline (SandboxFusion's /run_code) waits"
        " for a free sandbox; past it: SandboxError. A program's own time limit never bounds (nor pays for) the wait",
    )
    max_message_mb: int = Field(
        64, ge=1, le=2047, description="largest gRPC message, MiB (bigger requests: RESOURCE_EXHAUSTED)"
    )
    max_batch: int = Field(8192, ge=1, le=1_000_000, description="most items in one VerifyBatch")
    max_completion_chars: int = Field(
        1 << 20, ge=1, le=1 << 30, description="longest completion accepted, in characters (INVALID_ARGUMENT beyond)"
    )
    max_concurrent_rpcs: int = Field(
        256, ge=1, le=100_000, description="RPCs in progress at once; more get RESOURCE_EXHAUSTED at once"
    )

    # -- sessions (docs/sessions.md) -------------------------------------------------------------------
    max_sessions: int = Field(64, ge=0, le=100_000, description="sessions open at once, in all (forks count); 0: none")
    max_sessions_per_caller: int = Field(16, ge=1, le=100_000, description="sessions one caller may hold open")
    session_idle_ttl_s: float = Field(
        600.0, gt=0, le=7 * 86400, description="longest a session may sit idle (a caller may ask for less)"
    )
    session_max_life_s: float = Field(3600.0, gt=0, le=30 * 86400, description="longest a session may live")
    session_timeout_s: float = Field(600.0, gt=0, le=86400, description="most wall time one cell may ask for")
    session_cpu_s: int = Field(600, ge=1, le=86400, description="most CPU seconds one cell may ask for")
    session_memory_mb: int = Field(
        1024, ge=64, le=1 << 20, description="most memory (address space per process) a session may ask for, MiB"
    )

    @field_validator("backend")
    @classmethod
    def _a_backend_of_the_table(cls, v: str) -> str:
        if v not in BACKENDS:
            raise ValueError(f"must be one of {', '.join(BACKENDS)} (sandbox/pool.py's backend table)")
        return v

    @field_validator("langs_memory_mb")
    @classmethod
    def _zero_or_a_real_limit(cls, v: int) -> int:
        if 0 < v < 128:
            raise ValueError("must be 0 (the default) or at least 128")
        return v

    def sandbox_config(self, **extra) -> SandboxConfig:
        """The pool's configuration (``extra``: warm-up code and other non-limit settings)."""
        import os

        return SandboxConfig(
            backend=self.backend,
            size=self.pool_size or (os.cpu_count() or 1),
            memory_mb=self.memory_mb,
            cpus=self.cpus,
            pids=self.pids,
            output_bytes=self.output_cap_bytes,
            max_wait_s=self.max_queue_s,
            cgroup_parent=self.cgroup_parent,
            **extra,
        )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--flag`` per limit; values stay strings here and are validated by ``from_args``."""
    group = parser.add_argument_group("limits", "validated at start-up; see docs/serve.md, Limits")
    for name, field in ServiceLimits.model_fields.items():
        choices = list(BACKENDS) if name == "backend" else None
        group.add_argument(
            _flag(name),
            dest=f"limit_{name}",
            default=None,
            metavar=name.split("_")[-1].upper(),
            choices=choices,
            help=f"{field.description} (default: {field.default})",
        )


def from_args(args: argparse.Namespace) -> ServiceLimits:
    """The validated limits; raises LimitsError naming each bad flag and what it must be."""
    given = {name: v for name in ServiceLimits.model_fields if (v := getattr(args, f"limit_{name}", None)) is not None}
    try:
        return ServiceLimits(**given)
    except ValidationError as e:
        bad = []
        for err in e.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            bad.append(f"{_flag(name)} {given.get(name)!r}: {err['msg']}")
        raise LimitsError("invalid limit" + ("s" if len(bad) > 1 else "") + ": " + "; ".join(bad)) from None


def output_limit_verdict(res: Result) -> Verdict | None:
    """The one verdict for a program that wrote more than the output cap (None when it did not)."""
    if not res.output_limit_exceeded:
        return None
    cap = f"{res.output_cap} bytes" if res.output_cap else "the cap"
    return Verdict.of(Outcome.RUNTIME_ERROR, f"{OUTPUT_LIMIT_DETAIL}: more than {cap} written to stdout and stderr")


def cut_short_verdict(res: Result, timeout_detail: str) -> Verdict | None:
    """The verdict for a sandbox run that was cut short before its program could answer: the sandbox
    failed, the output cap was passed or the time ran out (None when the run went to its end)."""
    if res.sandbox_error:
        return Verdict.of(Outcome.SANDBOX_ERROR, res.sandbox_error)
    if res.output_limit_exceeded:
        return output_limit_verdict(res)
    if res.timed_out:
        return Verdict.of(Outcome.TIMEOUT, timeout_detail)
    return None
