"""Shared by the code-language tests: a real VerifierService over a real Python pool and the real
toolchain pool (both Docker; the toolchain image is built here if its tag is missing), and a
``grade`` helper."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from verifiers.shapes.base import Verdict
from verifiers.shapes.request import Request

SUM_CASES = json.dumps([{"input": "1 2\n", "output": "3\n"}, {"input": "5 7", "output": "12"}])


def ensure_langs_image() -> None:
    from sandbox.image import langs as image_langs
    from sandbox.image.python import image_exists

    if not image_exists(image_langs.image_tag()):
        r = subprocess.run([sys.executable, "-m", "sandbox.image.langs"], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"could not build the toolchain image (`make image LANGS=all`): {r.stderr[-2000:]}")


def make_service(tmp_path_factory, langs_pool_size: int = 2):
    """(service, close): a real service over the one pool as the server builds it (verifiers/service/wiring.py),
    2 sandboxes of its own and each lane, the toolchain lane (``langs_pool_size``) started here."""
    from tests.security.conftest import ensure_image, require
    from verifiers.kinds.code.toolchains import LANE
    from verifiers.service import wiring
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry
    from verifiers.shapes.limits import ServiceLimits

    require("docker")
    ensure_image()
    ensure_langs_image()
    limits = ServiceLimits(pool_size=2, langs_pool_size=langs_pool_size)
    pool = wiring.build_pool(limits, burst=0).start()
    pool.start_lane(LANE)
    reg = Registry(str(tmp_path_factory.mktemp("reg") / "registry.sqlite"))
    svc = VerifierService(reg, pool, limits=limits)

    def close() -> None:
        svc.close()
        pool.close()
        reg.close()

    return svc, close


def grade(
    svc, lang: str, source: str, reference: str = SUM_CASES, timeout_s: float = 60, fresh: bool = False, **options
) -> Verdict:
    """``source`` in a fenced block, graded in stdio mode; ``fresh``: new prose before it each call, so the
    service's verdict cache never answers."""
    # a generous case limit: these tests judge verdicts, not speed (a JVM under CI's load took over 2 s to scan);
    # a test that wants a time-out names its own limit
    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "10", **options}
    prose = f"Attempt {os.urandom(4).hex()}:\n" if fresh else ""
    return svc.verify(Request("code", f"{prose}```{lang}\n{source}```\n", reference, options=opts, timeout_s=timeout_s))


def stats_delta(svc, before: dict) -> dict:
    """What the service's toolchain counters (``svc.toolchains.stats``: compiles, cached, ...) gained since ``before``."""
    return {k: v - before.get(k, 0) for k, v in svc.toolchains.stats.items() if v != before.get(k, 0)}
