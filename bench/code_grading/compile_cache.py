"""The compile cache (verifiers/kinds/code/compile_cache.py) against no cache, in one run, per compiled language.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.compile_cache [--rounds 3] [--langs c,cpp,java,go,rust]
    (any compiled language of tests/verifiers/kinds/code/test_code_langs{,_more}.py: kotlin, racket, ...)

Two parts, each alternating cache off / on (A B A B ...), fresh sources every round, medians printed:

* **phases** of one compiled job (one a+b program, 2 cases, nothing else running): wall time seen by
  the caller, split into the sandbox jobs' own wall time (``Result.wall_s``), the compiler (the
  driver's ``elapsed``), the cases, and the rest (ours: queue, frames, the driver's process starts,
  file copies, packing the artifact). Rows: ``before`` (cache off and the compile flags before this
  change: Go linked with its symbol table and DWARF, Rust with std's debuginfo), ``off`` (cache off,
  today's flags), ``miss`` (cache on, first time: one build job, the driver's job that also packs and
  sends back the artifact), ``hit`` (cache on, the same program again: a run job, no compiler);
* **batch**: 8 completions of one problem through VerifierService (4 hold one program, 4 others
  distinct), 2 x pool-size threads, then the same request again: compiles done and wall time.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import replace

from tests.verifiers.kinds.code.test_code_langs import PROGRAMS as FIRST
from tests.verifiers.kinds.code.test_code_langs_more import PROGRAMS as MORE
from verifiers.kinds.code import languages, toolchains

PROGRAMS = {**MORE, **FIRST}  # --langs kotlin,kotlin_script,racket,... too (issue 40's)
CASES = [("1 2\n", "3"), ("5 7\n", "12")]
OLD_FLAGS = {  # the compile argv before this change (bench-only: what "before" means)
    "go": ["go", "build", "-o", "main", "main.go"],
    "rust": ["rustc", "-O", "--edition", "2021", "-o", "main", "main.rs"],
}


def _source(lang: str, tag: str) -> str:
    return f"{PROGRAMS[lang][0]}{';' if lang == 'racket' else '//'} {tag}\n"


def phases(svc, lang: str, mode: str) -> dict:
    """One job of ``lang`` in ``mode`` (before/off/miss/hit): wall, sandbox, compile, cases, ours (s)."""
    svc.toolchains.cache.max_bytes = 0 if mode in ("before", "off") else 256 << 20
    src = _source(lang, f"phase {mode} {os.urandom(4).hex()}" if mode != "hit" else "phase hit")
    lang_ = languages.for_source(languages.language(lang), src)
    if mode == "before" and lang in OLD_FLAGS:
        lang_ = replace(lang_, compile=OLD_FLAGS[lang])
    if mode == "hit":  # the same program compiled once before: this one is answered from the cache
        job, _ = toolchains.driver_job(lang_, src, [i for i, _ in CASES], case_timeout_s=5, compile_timeout_s=30)
        svc.run_job(job)
    walls: list[float] = []

    def timed(job):  # the service's door, each sandbox job's wall time kept
        r = svc.door(job)
        walls.append(r.wall_s)
        return r

    job, nonce = toolchains.driver_job(lang_, src, [i for i, _ in CASES], case_timeout_s=5, compile_timeout_s=30)
    t0 = time.perf_counter()
    res = svc.toolchains.run(job, timed)
    wall = time.perf_counter() - t0
    lines = toolchains.driver_lines(res.stdout, nonce)
    comp = next(d["compile"] for d in lines if "compile" in d)
    compile_s = 0.0 if comp.get("cached") else comp["elapsed"]
    cases_s = sum(d["elapsed"] for d in lines if "case" in d)
    ok = sum(1 for d in lines if "case" in d and d["status"] == "ok")
    box = sum(walls)
    return {"wall": wall, "jobs": len(walls), "sandbox": box, "compile": compile_s, "cases": cases_s,
            "ours": wall - compile_s - cases_s, "ok": ok}  # fmt: skip


def batch(svc, lang: str, width: int, on: bool) -> dict:
    """8 completions (4 alike, 4 distinct), then the first one again: compiles and wall times."""
    from concurrent.futures import ThreadPoolExecutor

    from verifiers.shapes.request import Request

    svc.toolchains.cache.max_bytes = 256 << 20 if on else 0
    tag = os.urandom(4).hex()
    srcs = [_source(lang, f"alike {tag}")] * 4 + [_source(lang, f"distinct {tag} {i}") for i in range(4)]
    ref = json.dumps([{"input": i, "output": o} for i, o in CASES])
    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "5"}
    reqs = [
        Request("code", f"Attempt {i}:\n```{lang}\n{s}```", ref, options=opts, timeout_s=120)
        for i, s in enumerate(srcs)
    ]
    again = [Request("code", f"Again:\n```{lang}\n{srcs[0]}```", ref, options=opts, timeout_s=120)]  # new prose:
    out = {}  # past the service's verdict cache, as a later request for the same program
    for part, items in (("batch", reqs), ("repeat", again)):
        before = svc.toolchains.stats["compiles"]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(width) as ex:
            verdicts = list(ex.map(svc.verify, items))
        out[part] = time.perf_counter() - t0
        out[f"{part}_compiles"] = svc.toolchains.stats["compiles"] - before
        out[f"{part}_ok"] = sum(v.outcome == "CORRECT" for v in verdicts)
    return out


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def run(svc, langs: list[str], rounds: int, width: int) -> list[str]:
    out = [f"compile cache bench: {rounds} rounds (A B A B ...), {os.cpu_count()} CPUs, toolchain pool {width // 2}"]
    out.append("phases of one job (2 cases), medians, seconds; 'ours' = wall - compiler - cases")
    out.append(f"{'lang':<14}{'row':<8}{'wall':>7}{'jobs':>5}{'sandbox':>9}{'compiler':>9}{'cases':>7}{'ours':>7}  ok")
    print(*out, sep="\n", flush=True)
    for lang in langs:
        rows: dict[str, list[dict]] = {m: [] for m in ("before", "off", "miss", "hit")}
        phases(svc, lang, "off")  # warm-up: the compiler's files in the page cache, not timed
        for _ in range(rounds):
            for m in rows:
                rows[m].append(phases(svc, lang, m))
        for m, rs in rows.items():
            out.append(
                f"{lang:<14}{m:<8}{_med(rs, 'wall'):>7.3f}{rs[0]['jobs']:>5}{_med(rs, 'sandbox'):>9.3f}"
                f"{_med(rs, 'compile'):>9.3f}{_med(rs, 'cases'):>7.3f}{_med(rs, 'ours'):>7.3f}  {min(r['ok'] for r in rs)}/2"
            )
            print(out[-1], flush=True)
    out.append("batch: 8 completions (4 alike + 4 distinct) then the first again; medians; compiles per round")
    out.append(
        f"{'lang':<14}{'cache':<6}{'compiles':>9}{'batch s':>9}{'repeat':>8}{'compiles':>9}{'repeat s':>9}"
        f"{'ok':>6}{'batch off/on':>13}{'repeat off/on':>14}{'load':>6}"
    )
    print(*out[-2:], sep="\n", flush=True)
    for lang in langs:
        res: dict[bool, list[dict]] = {False: [], True: []}
        for _ in range(rounds):
            for on in (False, True):
                res[on].append(batch(svc, lang, width, on) | {"load": os.getloadavg()[0]})
        for on in (False, True):
            rs = res[on]
            ratio_b = statistics.median(a["batch"] / b["batch"] for a, b in zip(res[False], res[True], strict=True))
            ratio_r = statistics.median(a["repeat"] / b["repeat"] for a, b in zip(res[False], res[True], strict=True))
            ok = min(r["batch_ok"] + r["repeat_ok"] for r in rs)
            out.append(
                f"{lang:<14}{'on' if on else 'off':<6}{_med(rs, 'batch_compiles'):>9.0f}{_med(rs, 'batch'):>9.2f}"
                f"{'':>8}{_med(rs, 'repeat_compiles'):>9.0f}{_med(rs, 'repeat'):>9.2f}{ok:>4}/9"
                + (f"{ratio_b:>13.2f}{ratio_r:>14.2f}" if on else f"{'':>27}")
                + f"{_med(rs, 'load'):>6.1f}"
            )
            print(out[-1], flush=True)
    svc.toolchains.cache.max_bytes = 256 << 20
    return out


def main() -> None:
    import argparse
    import subprocess
    import tempfile

    from verifiers.kinds.code.toolchains import LANE
    from verifiers.service import wiring
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry
    from verifiers.shapes.limits import ServiceLimits

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--langs", default="c,cpp,java,go,rust")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "sandbox.image.langs"], check=True)
    limits = ServiceLimits(pool_size=2, langs_pool_size=args.pool_size)
    pool = wiring.build_pool(limits, burst=0).start()
    with tempfile.TemporaryDirectory() as d:
        svc = VerifierService(Registry(os.path.join(d, "reg.sqlite")), pool, limits=limits)
        try:
            pool.start_lane(LANE)
            print(f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
            run(svc, args.langs.split(","), args.rounds, 2 * args.pool_size)
            print(f"load average {os.getloadavg()[0]:.1f} at end", flush=True)
        finally:
            svc.close()
            pool.close()


if __name__ == "__main__":
    main()
