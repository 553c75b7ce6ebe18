"""The service's bounds on what callers send and what it keeps, beside ``verifiers/shapes/limits.py``:
the HTTP request head (size and header count), JSON nesting, the verdict cache's byte budget, the
longest verdict detail and the share of gRPC's RPC slots kept for calls that need no sandbox. One validated model; each field is a ``--flag`` of ``python -m verifiers.fronts.server``
(docs/security.md says what each one defends).

>>> ServiceBounds().max_headers
100
>>> ServiceBounds(cache_mb=0).cache_bytes() > 0
True
"""

from __future__ import annotations

import argparse
import os

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifiers.shapes.limits import LimitsError

MIN_CACHE_BYTES = 16 << 20


def machine_memory_bytes() -> int:
    """Physical memory of this machine (a cgroup's limit where one is lower), 4 GiB when unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 4 << 30
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            raw = f.read().strip()
        if raw.isdigit():
            total = min(total, int(raw))
    except OSError:
        pass
    return total


class ServiceBounds(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_header_bytes: int = Field(
        64 << 10,
        ge=1024,
        le=16 << 20,
        description="HTTP: bytes of one request's line and headers; past it 431, answered before more is read",
    )
    max_headers: int = Field(100, ge=8, le=10_000, description="HTTP: headers in one request; more get 431")
    max_json_depth: int = Field(
        32, ge=4, le=500, description="HTTP: deepest nesting of arrays and objects in a JSON body; deeper: 400"
    )
    cache_mb: int = Field(
        0, ge=0, le=1 << 20, description="byte budget of the verdict cache, MiB; 0: 1/64 of the machine's memory"
    )
    max_detail_chars: int = Field(
        4096,
        ge=256,
        le=1 << 20,
        description="longest verdict (and test case) detail returned and cached; longer ones are cut, saying so",
    )

    host_rpc_share: float = Field(
        0.25,
        ge=0,
        le=0.9,
        allow_inf_nan=False,
        description="gRPC: share of --max-concurrent-rpcs kept for calls that need no sandbox (think_format, …); "
        "calls that may wait for one hold the rest, and more of them get RESOURCE_EXHAUSTED at once",
    )

    def cache_bytes(self) -> int:
        return self.cache_mb << 20 if self.cache_mb else max(MIN_CACHE_BYTES, machine_memory_bytes() // 64)

    def sandbox_rpcs(self, max_concurrent_rpcs: int) -> int:
        """How many RPCs in progress may wait for a sandbox (``host_rpc_share`` of them kept for the others).

        >>> ServiceBounds().sandbox_rpcs(256), ServiceBounds().sandbox_rpcs(3), ServiceBounds(host_rpc_share=0).sandbox_rpcs(8)
        (192, 3, 8)
        """
        return max_concurrent_rpcs - int(max_concurrent_rpcs * self.host_rpc_share)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("bounds", "what callers may send and what the service keeps (docs/security.md)")
    for name, field in ServiceBounds.model_fields.items():
        group.add_argument(
            _flag(name),
            dest=f"bound_{name}",
            default=None,
            metavar=name.split("_")[-1].upper(),
            help=f"{field.description} (default: {field.default})",
        )


def from_args(args: argparse.Namespace) -> ServiceBounds:
    """The validated bounds; raises LimitsError naming each bad flag."""
    given = {name: v for name in ServiceBounds.model_fields if (v := getattr(args, f"bound_{name}", None)) is not None}
    try:
        return ServiceBounds(**given)
    except ValidationError as e:
        bad = [f"{_flag(str(err['loc'][0]))} {given.get(str(err['loc'][0]))!r}: {err['msg']}" for err in e.errors()]
        raise LimitsError("invalid bound" + ("s" if len(bad) > 1 else "") + ": " + "; ".join(bad)) from None
