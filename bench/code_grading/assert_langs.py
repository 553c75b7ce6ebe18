"""Assert mode in the toolchain languages (verifiers/kinds/code/asserts.py): what the keyed nonce buys.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.assert_langs [--rounds 3] [--langs c,java,rust,go] [--g 8]
    .venv/bin/python -m bench.code_grading.assert_langs --apart javascript [--rounds 3] [--g 8]   # the cost of separation

A batch of G completions holding one program (GRPO's common case), graded through a real VerifierService
(Docker, the toolchain pool of 2), in two variants alternated per round (A B A B ...), fresh sources each
round so no compile carries over:

* ``keyed``: as shipped: the sentinel's nonce is an HMAC of the program, so the G identical programs are one
  compile (the others join it or hit the artifact cache);
* ``per-request``: the same G programs, each test program made distinct by a comment, as a random nonce per
  request would make them: G compiles.

Each item has its own ``timeout_s`` (120 s, 119.5 s, ...), which the service's verdict cache keys on and the
sandbox job does not: no item is answered by the verdict cache, in either variant. Printed per language: compiles, wall time of the batch (median), the per-round ratio's median and spread,
rewards (all must be 1), and the 1-minute load average with each round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.langs_helpers import make_service
from tests.verifiers.kinds.code.test_code_assert_langs import CASES, OPTIONS
from verifiers.shapes.request import Request

COMMENT = {
    "c": "//",
    "cpp": "//",
    "java": "//",
    "rust": "//",
    "go": "//",
    "scala": "//",
    "csharp": "//",
    "d": "//",
    "kotlin": "//",
    "racket": ";",
    "javascript": "//",
    "typescript": "//",
    "php": "//",
    "ruby": "#",
    "perl": "#",
    "lua": "--",
    "r": "#",
}


CASE_TIMEOUT: dict[str, str] = {}  # --case-timeout: the run's own limit, where the test file's 20 s cuts it


class _Tmp:  # what make_service needs of pytest's tmp_path_factory
    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=name))


def batch(svc, lang: str, g: int, salt: str, distinct: bool) -> tuple[int, float, list[float]]:
    """(compiles, wall seconds, rewards) of G completions of one program."""
    tests, good, *_ = CASES[lang]
    c = COMMENT[lang]
    reqs = [
        Request(
            "code",
            f"```{lang}\n{good}{c} {salt}\n```\n",
            tests + (f"\n{c} item {i}\n" if distinct else ""),
            options={**OPTIONS, "language": lang, **CASE_TIMEOUT},
            timeout_s=120 - i / 2,
        )
        for i in range(g)
    ]
    before = svc.toolchains.stats["compiles"]
    t0 = time.perf_counter()
    verdicts = svc.verify_batch(reqs)
    return svc.toolchains.stats["compiles"] - before, time.perf_counter() - t0, [v.reward for v in verdicts]


def apart_vs_shared(svc, lang: str, g: int, rounds: int) -> None:
    """Issue 49's cost of running ``lang``'s tests apart: the same G programs through the separated path and the
    shared program it replaced (asserts_apart.SEPARATE without ``lang``), alternated per round."""
    import languages
    from verifiers.kinds.code import asserts_apart

    if languages.RECORDS[lang].asserts is None:
        print(f"{lang:10} no shared program: its record keeps none (its tests only run apart)")
        return
    rows: dict[str, list] = {"apart": [], "shared": []}
    ratios, loads = [], []
    for r in range(rounds):
        got = {}
        for name in ["apart", "shared"] if r % 2 == 0 else ["shared", "apart"]:
            saved = asserts_apart.SEPARATE.pop(lang) if name == "shared" else None
            try:
                got[name] = batch(svc, lang, g, f"{name} {r} {os.urandom(4).hex()}", True)
            finally:
                if saved is not None:
                    asserts_apart.SEPARATE[lang] = saved
            rows[name].append(got[name])
        ratios.append(got["apart"][1] / got["shared"][1])
        loads.append(os.getloadavg()[0])
    for name, rs in rows.items():
        wall = statistics.median(w for _, w, _ in rs)
        print(f"{lang:10} {name:7} wall {wall:6.2f} s for {g} (median, {wall / g * 1000:.0f} ms each)  rewards "
              f"{sum(sum(x) for _, _, x in rs):g}/{g * len(rs)}")  # fmt: skip
    print(
        f"{lang:10} apart / shared wall: median {statistics.median(ratios):.2f}x (spread {min(ratios):.2f}-"
        f"{max(ratios):.2f}); load {', '.join(f'{x:.1f}' for x in loads)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--langs", default="c,java,rust,go")
    ap.add_argument("--g", type=int, default=8)
    ap.add_argument("--apart", default="", help="languages whose separated path to time against the shared one")
    ap.add_argument("--case-timeout", default="", help="case_timeout_s of every program (default: the test file's)")
    args = ap.parse_args()
    if args.case_timeout:
        CASE_TIMEOUT["case_timeout_s"] = args.case_timeout
    svc, close = make_service(_Tmp())
    try:
        if args.apart:
            batch(svc, "javascript", 1, "warm-up", False)
            print(f"G={args.g} distinct programs, toolchain pool of 2, {args.rounds} rounds, order alternating")
            for lang in args.apart.split(","):
                apart_vs_shared(svc, lang, args.g, args.rounds)
            return
        batch(svc, "c", 1, "warm-up", False)  # the pool's first start is not part of any figure
        print(f"G={args.g}, toolchain pool of 2, {args.rounds} rounds, order alternating per round")
        for lang in args.langs.split(","):
            rows: dict[str, list] = {"keyed": [], "per-request": []}
            ratios, loads = [], []
            for r in range(args.rounds):
                order = ["keyed", "per-request"] if r % 2 == 0 else ["per-request", "keyed"]
                got = {}
                for name in order:
                    got[name] = batch(svc, lang, args.g, f"{name} {r} {os.urandom(4).hex()}", name == "per-request")
                    rows[name].append(got[name])
                ratios.append(got["per-request"][1] / got["keyed"][1])
                loads.append(os.getloadavg()[0])
            for name, rs in rows.items():
                compiles = sorted({c for c, _, _ in rs})
                wall = statistics.median(w for _, w, _ in rs)
                paid = sum(sum(x) for _, _, x in rs)
                print(f"{lang:6} {name:12} compiles {compiles} wall {wall:6.2f} s (median)  rewards {paid:g}/"
                      f"{args.g * len(rs)}")  # fmt: skip
            print(
                f"{lang:6} per-request / keyed wall: median {statistics.median(ratios):.2f}x "
                f"(spread {min(ratios):.2f}-{max(ratios):.2f}); load {', '.join(f'{x:.1f}' for x in loads)}"
            )
    finally:
        close()


if __name__ == "__main__":
    main()
