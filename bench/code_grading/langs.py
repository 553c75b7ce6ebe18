"""Per-language throughput of the ``code`` verifier (stdio mode) vs a bare host compile-and-run.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.langs [--programs 8] [--cases 5] [--out FILE]

(also run by bench/code_grading/humaneval.py). For each language, the same ``--programs`` distinct a+b programs (a
comment makes each unique, so no cache answers), each with ``--cases`` stdin cases:

* **full**: programs/s graded end to end through VerifierService (compile + every case + judging);
  host: compile in a temporary directory, run every case with ``subprocess``, compare tokens;
* **compile**: programs/s of compiling alone (sandbox: a job with no cases, so its job overhead is
  included; host: the compiler alone);
* **run**: median milliseconds per case (sandbox: measured by the in-sandbox driver around fork, exec
  and wait; host: around ``subprocess.run``).

Both sides get the same parallelism (2 x the toolchain pool's size threads). Host toolchains are used
where installed, /usr/bin first (apt: gcc g++ default-jdk-headless nodejs golang-go rustc: the sandbox's
Debian versions); a missing one is skipped with a note. Versions can still differ: both are printed.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from sandbox.deadline import Deadline
from tests.verifiers.kinds.code.test_code_langs import PROGRAMS
from verifiers.kinds.code import judges, languages, stdio
from verifiers.kinds.code.options import CodeOptions
from verifiers.shapes.base import Context

PY_SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
VERSION = {
    "c": ["gcc", "--version"],
    "cpp": ["g++", "--version"],
    "java": ["java", "-version"],
    "javascript": ["node", "--version"],
    "go": ["go", "version"],
    "rust": ["rustc", "--version"],
    "python": ["/usr/bin/python3", "--version"],
}


def sources(lang: str, n: int) -> list[str]:
    base = PY_SUM if lang == "python" else PROGRAMS[lang][0]
    mark = "#" if lang == "python" else "//"
    return [f"{base}{mark} variant {i} {os.urandom(4).hex()}\n" for i in range(n)]


def cases(k: int) -> list[tuple[str, str]]:
    return [(f"{i} {i * 7 + 1}\n", f"{i + i * 7 + 1}\n") for i in range(k)]


# -- sandbox ----------------------------------------------------------------------------------------------
def sandbox_lang(svc, lang: str, srcs: list[str], cs: list[tuple[str, str]], width: int) -> dict:
    from verifiers.shapes.request import Request

    ref = json.dumps([{"input": i, "output": o} for i, o in cs])
    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "5"}

    def full(src: str):
        return svc.verify(Request("code", f"```{lang}\n{src}```", ref, options=opts, timeout_s=120))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        verdicts = list(ex.map(full, srcs))
    full_s = time.perf_counter() - t0
    ok = sum(v.outcome == "CORRECT" for v in verdicts)
    run_ms = [c.elapsed_s * 1000 for v in verdicts for c in v.cases]
    out = {"full": len(srcs) / full_s, "ok": ok, "run_ms": statistics.median(run_ms) if run_ms else float("nan")}
    if lang == "python":
        out["compile"] = float("nan")
        return out
    copts = CodeOptions.parse({"mode": "stdio", "language": lang, "case_timeout_s": "5"})
    ctx = Context(run_job=svc.run_job, lookup=svc.registry.get, deadline=Deadline.after(600.0))  # the service's door
    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        list(
            ex.map(
                lambda s: stdio.run_compiled(s, [], copts, ctx, Deadline.after(120.0), ""), [s + "//c\n" for s in srcs]
            )
        )
    out["compile"] = len(srcs) / (time.perf_counter() - t0) if languages.language(lang).compile else float("nan")
    return out


# -- host -------------------------------------------------------------------------------------------------
def _host_argv(lang: str, src: str) -> tuple[str, list[str] | None, list[str], dict]:
    if lang == "python":
        return "main.py", None, ["/usr/bin/python3", "main.py"], {}
    spec = languages.for_source(languages.language(lang), src)
    env = {k: v.replace("/tmp/job", "{dir}") for k, v in spec.env.items()}
    return spec.source, _debian(spec.compile), _debian(spec.run), env


def _debian(argv: list[str] | None) -> list[str] | None:
    """Prefer the host's Debian toolchain (/usr/bin, the sandbox's versions) over one earlier on PATH."""
    if argv and not argv[0].startswith(".") and os.path.exists(f"/usr/bin/{argv[0]}"):
        return [f"/usr/bin/{argv[0]}", *argv[1:]]
    return argv


def host_one(lang: str, src: str, cs: list[tuple[str, str]] | None) -> tuple[bool, list[float]]:
    name, comp, run, env = _host_argv(lang, src)
    with tempfile.TemporaryDirectory(prefix="bench-host-") as d:
        env = dict(os.environ, **{k: v.format(dir=d) for k, v in env.items()})
        with open(os.path.join(d, name), "w") as f:
            f.write(src)
        if comp and subprocess.run(comp, cwd=d, env=env, capture_output=True).returncode != 0:
            return False, []
        ok, times = True, []
        for inp, exp in cs or []:
            t0 = time.perf_counter()
            r = subprocess.run(run, cwd=d, env=env, input=inp.encode(), capture_output=True, timeout=10)
            times.append((time.perf_counter() - t0) * 1000)
            ok = ok and r.returncode == 0 and judges.judge_tokens(exp, r.stdout.decode())[0]
        return ok, times


def host_lang(lang: str, srcs: list[str], cs: list[tuple[str, str]], width: int) -> dict:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        res = list(ex.map(lambda s: host_one(lang, s, cs), srcs))
    full_s = time.perf_counter() - t0
    out = {"full": len(srcs) / full_s, "ok": sum(ok for ok, _ in res)}
    out["run_ms"] = statistics.median([t for _, ts in res for t in ts])
    if lang == "python" or not languages.language(lang).compile:
        out["compile"] = float("nan")
        return out
    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        list(ex.map(lambda s: host_one(lang, s + "//c\n", None), srcs))
    out["compile"] = len(srcs) / (time.perf_counter() - t0)
    return out


def host_missing(lang: str) -> str:
    """The host tools this language lacks ('' when it can be benchmarked on the host)."""
    _, comp, run_argv, _ = _host_argv(lang, PY_SUM if lang == "python" else PROGRAMS[lang][0])
    tools = [a[0] for a in (comp, run_argv) if a and not a[0].startswith("./")]
    return ", ".join(t for t in tools if shutil.which(t) is None)


def version(lang: str, image: str | None) -> tuple[str, str]:
    def first(cmd: list[str]) -> str:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            return ((r.stdout or r.stderr).strip().splitlines() or ["?"])[0][:40]
        except (OSError, subprocess.TimeoutExpired):
            return "missing"

    box = first(["docker", "run", "--rm", "--network", "none", image, *VERSION[lang]]) if image else "?"
    return box, first(_debian(VERSION[lang]) or [])


def run(svc, langs: list[str], n: int, k: int, width: int, image: str) -> list[str]:
    cs = cases(k)
    lines = [
        f"code languages bench: {n} programs x {k} cases per language, {width} threads each side, "
        f"{os.cpu_count()} CPUs; sandbox = VerifierService (toolchain pool), host = bare compile + subprocess",
        f"{'lang':<11}{'full sbx/s':>11}{'host/s':>9}{'ratio':>7}{'compile sbx/s':>15}{'host/s':>9}"
        f"{'run sbx ms':>12}{'host ms':>9}  pass sbx/host  versions sandbox | host",
    ]
    print(*lines, sep="\n", flush=True)
    for lang in langs:
        box_v, host_v = version(lang, image)
        srcs = sources(lang, n)
        s = sandbox_lang(svc, lang, srcs, cs, width)
        missing = host_missing(lang)
        h = host_lang(lang, srcs, cs, width) if not missing else None
        if h is None:
            lines.append(
                f"{lang:<11}{s['full']:>11.2f}{'-':>9}{'-':>7}{s['compile']:>15.2f}{'-':>9}{s['run_ms']:>12.1f}"
                f"{'-':>9}  {s['ok']}/{n} / -   {box_v} | host lacks {missing}: skipped"
            )
        else:
            lines.append(
                f"{lang:<11}{s['full']:>11.2f}{h['full']:>9.2f}{s['full'] / h['full']:>7.2f}{s['compile']:>15.2f}"
                f"{h['compile']:>9.2f}{s['run_ms']:>12.1f}{h['run_ms']:>9.1f}  {s['ok']}/{n} / {h['ok']}/{n}"
                f"   {box_v} | {host_v}"
            )
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=8)
    ap.add_argument("--cases", type=int, default=5)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--langs", default="python,c,cpp,java,javascript,go,rust")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    lines = bench(args.langs.split(","), args.programs, args.cases, args.pool_size)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


def bench(langs: list[str], n: int, k: int, pool_size: int) -> list[str]:
    import tempfile as tf

    from sandbox.image import langs as image_langs
    from verifiers.kinds.code.toolchains import LANE
    from verifiers.service import wiring
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry
    from verifiers.shapes.limits import ServiceLimits

    subprocess.run([sys.executable, "-m", "sandbox.image.langs"], check=True)
    # the pool as the server builds it (verifiers/service/wiring.py): every lane, the toolchain lane started here
    limits = ServiceLimits(pool_size=pool_size, langs_pool_size=pool_size)
    pool = wiring.build_pool(limits, burst=0).start()
    with tf.TemporaryDirectory() as d:
        svc = VerifierService(Registry(os.path.join(d, "reg.sqlite")), pool, limits=limits)
        try:
            pool.start_lane(LANE)
            return run(svc, langs, n, k, 2 * pool_size, image_langs.image_tag())
        finally:
            svc.close()
            pool.close()


if __name__ == "__main__":
    main()
