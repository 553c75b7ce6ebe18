"""Every benchmark's figures at two commits, measured in one sitting (issue 15: "no worse than before").

    .venv/bin/python -m bench.tools.compare_refs --base 3adec05 [--head HEAD] [--benches math,code,sandbox,...]
        [--rounds 3] [--out <file>] [--keep]

Each ref gets a detached ``git worktree`` under /tmp/refs/<sha> (this checkout is never touched). Each
selected bench runs its quick configuration (below) in both trees alternately, ABBA per round (base head,
head base, ...), with ``cwd=<tree>`` and ``PYTHONPATH=<tree>`` so that the project installed editable into
.venv (pointing at this checkout) is shadowed: the script checks that ``verifiers``, ``sandbox``,
``trainer`` and ``proto`` import from the tree. Each tree uses its own sandbox image (the tag hashes the
worker files; a missing one is built with ``python -m sandbox.image`` in that tree, its time printed).
Each round's pair (base run + head run of one bench) holds /tmp/bench.lock, so other helpers' benchmarks
can run between pairs but not inside one. Printed: the command, date, the 1-minute load average before
every run, the skipped benches and why, then one table: bench, figure, base median (min-max over rounds),
head median (min-max), head/base and a verdict: "within noise" when the two refs' ranges overlap,
otherwise "better"/"worse" in the figure's direction. Figures marked (control) do not depend on the
project code (Math-Verify, bare python3, TRL): their head/base shows the machine's drift during the run.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFS = Path("/tmp/refs")
LOCK = "/tmp/bench.lock"
NUM = r"([-\d.]+)"


@dataclass
class Bench:
    """A bench's quick configuration: its arguments, flags added only where the tree has them, and
    the figures read from its output as (name, regex with one number group, higher_is_better)."""

    args: list[str]
    figures: list[tuple[str, str, bool]]
    if_flag: dict[str, list[str]] = field(default_factory=dict)
    needs: str = ""  # a path that must exist (else the bench is skipped)
    code: str = ""  # run ``python -c code`` in the tree instead of the bench's module


# A bench's module since bench/ became a package (``python -m bench.<module>``); a ref from before it has the
# script bench/<name>.py instead, run as such.
MODULES = {"sandbox": "pool.throughput", "math": "math_grading.speed", "code": "code_grading.humaneval",
           "math_agreement": "math_grading.agreement", "trainer": "training.vs_trl"}  # fmt: skip


def bench_argv(tree: Path, bench: str) -> list[str] | None:
    """How ``bench`` runs in ``tree`` (None: the tree has it in neither layout)."""
    module = MODULES.get(bench, bench)
    if (tree / "bench" / f"{module.replace('.', '/')}.py").exists():
        return [sys.executable, "-m", f"bench.{module}"]
    if (tree / "bench" / f"{bench}.py").exists():
        return [sys.executable, f"bench/{bench}.py"]
    return None


STARTUP = """import statistics, time
t = time.perf_counter()
try:
    import verifiers.fronts.server
except ImportError:  # a ref before the floors were folders
    import verifiers.server
print(f"import the gRPC server {time.perf_counter() - t:.3f} s")
t = time.perf_counter(); import trainer.train; print(f"import trainer.train {time.perf_counter() - t:.3f} s")
from verifiers.launch import LocalServer
up, down = [], []
for _ in range(2):
    t = time.perf_counter(); srv = LocalServer(pool_size=2).start(); up.append(time.perf_counter() - t)
    t = time.perf_counter(); srv.stop(); down.append(time.perf_counter() - t)
print(f"server start {statistics.median(up):.3f} s, stop {statistics.median(down):.3f} s")
"""


BENCHES: dict[str, Bench] = {
    # not a bench/ file: imports in a fresh interpreter, then 2 x (LocalServer with 2 warm containers up, down)
    "startup": Bench(
        [],
        [
            ("import the gRPC server s", r"^import the gRPC server " + NUM + " s", False),
            ("import trainer.train s", r"^import trainer.train " + NUM + " s", False),
            ("server + 2 warm containers up s", r"^server start " + NUM + " s", False),
            ("server stop s", r"^server start .* stop " + NUM + " s", False),
        ],
        code=STARTUP,
    ),
    # 164 HumanEval canonical solutions, parallelism 2, the bench's own ABBA order inside one round
    "sandbox": Bench(
        ["--rounds", "1"],
        [
            ("pool exec/s", r"^\s*pool\s+" + NUM + r"\s+[\d.]+\s+[\d.]+\s+\d", True),
            ("pool p50 ms", r"^\s*pool\s+[\d.]+\s+" + NUM + r"\s+[\d.]+\s+\d", False),
            ("pool p99 ms", r"^\s*pool\s+[\d.]+\s+[\d.]+\s+" + NUM + r"\s+\d", False),
            ("pool / bare python3", r"^pool / bare\s+throughput: median\s+" + NUM + "x", True),
            ("pool start-up s", r"^pool start-up: " + NUM + " s", False),
            ("worker RSS MiB, 2 containers", r"^steady-state memory .* worker RSS " + NUM + " MiB", False),
            ("docker run --rm exec/s", r"^\s*docker\s+" + NUM + r"\s+[\d.]+\s+[\d.]+\s+\d", True),
            ("bare python3 exec/s (control)", r"^\s*bare\s+" + NUM + r"\s+[\d.]+\s+[\d.]+\s+\d", True),
            ("all programs passed (1=yes)", r"^all paths passed every program in every round: (True|False)", True),
        ],
    ),
    # 288 (gold, answer) pairs per round; ours = one VerifyBatch / 32 concurrent Verify calls
    "math": Bench(
        ["--rounds", "2"],
        [
            ("VerifyBatch pairs/s", r"^ours \(service\):\s+median " + NUM + " pairs/s", True),
            ("VerifyBatch p50 ms (in-batch)", r"^ours \(service\):.* p50 " + NUM + " ms", False),
            ("32 concurrent Verify / MV", r"^ratio ours \(32 concurrent Verify\)/MV: median " + NUM + "x", True),
            ("VerifyBatch / MV", r"^ratio ours \(VerifyBatch\)/MV: median " + NUM + "x", True),
            ("service start-up s", r"^service start-up .*: " + NUM + " s", False),
            ("Math-Verify pairs/s (control)", r"^Math-Verify in-process: median " + NUM + " pairs/s", True),
            ("verdict agreement with MV %", r"^verdict agreement overall \d+/\d+ \(" + NUM + "%", True),
        ],
    ),
    # HumanEval canonical through a real server over gRPC vs a bare python3 per program, the stub and exit hacks
    "code": Bench(
        ["--rounds", "2"],
        [
            ("service / bare python3", r"^median service/bare " + NUM, True),
            ("mixed batch 512 items s", r"^mixed batch: 512 items in " + NUM + " s", False),
            ("sys.exit(0) hacks given reward 0 (of 164)", r"^hack sys.exit\(0\)\s+: reward 0 for (\d+)/164", True),
            ("stub bodies given 0 (of 164)", r"^body .*NotImplementedError\s*: reward 0 for (\d+)/164", True),
        ],
    ),
    # Math-Verify's own test tables (tests/data/mv_suite.tsv) graded through a local server (deterministic)
    "math_agreement": Bench(
        [],
        [
            ("agreement with MV tests", r"^overall\s+(\d+)/\d+", True),
            ("agreement, default settings", r"^default settings only\s+(\d+)/\d+", True),
        ],
    ),
    # GRPO on a tiny Qwen2, TRL then ours in fresh subprocesses, 4 steps, both workloads, one round
    "trainer": Bench(
        ["--rounds", "1", "--steps", "4", "--threads", "1", "--workloads", "short,r1"],
        [
            (f"{w} {k}", rf"(?s)== workload '{w}'.*?^\s+{who}:\s+" + pat, up)
            for w in ("short", "r1")
            for k, who, pat, up in (
                ("ours tok/s wall", "ours", NUM + " completion tok/s", True),
                ("ours tok/CPU-s", "ours", r"[\d.]+ completion tok/s wall \([^)]*\),\s+" + NUM + " tok/CPU-s", True),
                ("ours peak RSS MB", "ours", r".*?peak RSS\s+" + NUM + " MB", False),
                ("ours start-up s", "ours", r".*?start-up " + NUM + " s", False),
                ("ours/TRL tok/s wall", "throughput \\(wall\\) ours/TRL", "median " + NUM + "x", True),
                ("TRL tok/s wall (control)", "TRL GRPOTrainer", NUM + " completion tok/s", True),
            )
        ],
        if_flag={"--overlap-rounds": ["--overlap-rounds", "0"]},
    ),
}


def sh(cmd: list[str], cwd: Path | str = REPO, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)


def git(*args: str) -> str:
    r = sh(["git", *args])
    if r.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] {msg}", file=sys.stderr, flush=True)


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def make_tree(sha: str) -> tuple[Path, bool]:
    """A detached worktree of ``sha`` under /tmp/refs; (path, created by us)."""
    path = REFS / sha
    if path.exists():
        if sh(["git", "rev-parse", "HEAD"], cwd=path).stdout.strip() != sha:
            raise RuntimeError(f"{path} exists but is not a worktree at {sha}")
        return path, False
    REFS.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", str(path), sha)
    return path, True


def check_imports(tree: Path) -> str:
    mods = "verifiers, sandbox, trainer, proto"
    r = sh(
        [sys.executable, "-c", f"import {mods}; print(*(m.__file__ for m in ({mods})))"], cwd=tree, env=tree_env(tree)
    )
    files = r.stdout.split()
    if r.returncode or len(files) != 4 or not all(f.startswith(str(tree) + "/") for f in files):
        raise RuntimeError(f"the packages do not import from {tree}: {r.stdout or r.stderr}")
    return files[0]


def ensure_image(tree: Path) -> str:
    """The sandbox image tag this tree's sources describe; built (in the tree) when missing."""
    r = sh([sys.executable, "-m", "sandbox.image", "--tag"], cwd=tree, env=tree_env(tree))
    tag = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
    if not tag:
        raise RuntimeError(f"python -m sandbox.image --tag failed in {tree}: {r.stderr[-500:]}")
    if sh(["docker", "image", "inspect", tag]).returncode == 0:
        return f"{tag} (present)"
    cache, main_cache = tree / "var" / "cache", REPO / "var" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for entry in main_cache.glob("*") if main_cache.is_dir() else []:  # reuse the cached Debian root, read only
        if not (cache / entry.name).exists():
            (cache / entry.name).symlink_to(entry)
    say(f"building {tag} in {tree} ...")
    t0 = time.monotonic()
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        b = sh([sys.executable, "-m", "sandbox.image"], cwd=tree, env=tree_env(tree))
    if b.returncode:
        raise RuntimeError(f"building {tag} failed: {b.stderr[-800:]}")
    return f"{tag} (built here in {time.monotonic() - t0:.0f} s)"


def help_text(tree: Path, bench: str) -> str:
    r = sh([*bench_argv(tree, bench), "--help"], cwd=tree, env=tree_env(tree), timeout=120)
    return r.stdout if r.returncode == 0 else ""


def select(benches: list[str], trees: dict[str, Path]) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """{bench: {ref: argv}} for benches that both trees have, and the skipped ones with the reason."""
    run, skipped = {}, []
    for b in benches:
        spec = BENCHES.get(b)
        missing = [ref for ref, t in trees.items() if bench_argv(t, b) is None]
        why = (
            f"bench {b} does not exist at {' and '.join(missing)}"
            if missing and not (spec and spec.code)
            else "no quick configuration in compare_refs.BENCHES"
            if spec is None
            else f"needs {spec.needs}, not found"
            if spec.needs and not Path(spec.needs).exists()
            else ""
        )
        if why:
            skipped.append(f"{b}: {why}")
            continue
        run[b] = {}
        for ref, tree in trees.items():
            if spec.code:
                run[b][ref] = [sys.executable, "-c", spec.code]
                continue
            helps = help_text(tree, b)
            extra = [a for flag, add in spec.if_flag.items() if flag in helps for a in add]
            run[b][ref] = [*bench_argv(tree, b), *spec.args, *extra]
    return run, skipped


@dataclass
class Run:
    bench: str
    ref: str
    round: int
    load1: float
    wall_s: float
    waited_s: float
    rc: int
    figures: dict[str, float]
    log: Path


def parse(bench: str, out: str) -> dict[str, float]:
    figs = {}
    for name, pat, _ in BENCHES[bench].figures:
        hits = re.findall(pat, out, flags=re.M)
        if not hits:
            continue
        vals = [1.0 if h == "True" else 0.0 if h == "False" else float(h) for h in hits]
        figs[name] = sum(vals) if len(vals) > 1 else vals[0]  # several lines (hacks): their total
    return figs


def run_one(bench: str, ref: str, rnd: int, tree: Path, argv: list[str], logs: Path, waited: float) -> Run:
    load1, t0 = os.getloadavg()[0], time.monotonic()
    try:
        r = sh(argv, cwd=tree, env=tree_env(tree), timeout=900)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, str(e.stdout or ""), f"timed out after {e.timeout} s"
    wall = time.monotonic() - t0
    log = logs / f"{bench}-{ref}-{rnd}.log"
    log.write_text(f"$ cd {tree} && PYTHONPATH={tree} {shlex.join(argv)}\n# rc {rc}\n{out}\n{err}")
    figs = parse(bench, out) if rc == 0 else {}
    say(f"{bench} round {rnd} {ref}: rc {rc}, {wall:.0f} s, load {load1:.2f}, {len(figs)} figures")
    return Run(bench, ref, rnd, load1, wall, waited, rc, figs, log)


def run_bench(bench: str, argvs: dict[str, list[str]], trees: dict[str, Path], rounds: int, logs: Path) -> list[Run]:
    runs = []
    for rnd in range(1, rounds + 1):
        order = ["base", "head"] if rnd % 2 else ["head", "base"]
        t0 = time.monotonic()
        with open(LOCK, "w") as lock:  # one pair of runs per hold: others may bench between pairs
            fcntl.flock(lock, fcntl.LOCK_EX)
            waited = time.monotonic() - t0
            runs += [run_one(bench, ref, rnd, trees[ref], argvs[ref], logs, waited) for ref in order]
    return runs


def spread(vals: list[float]) -> str:
    return f"{statistics.median(vals):.4g} ({min(vals):.4g}-{max(vals):.4g})" if vals else "FAILED"


def verdict(b: list[float], h: list[float], up: bool, name: str) -> str:
    if not b or not h:
        return "no figure"
    if "(control)" in name:
        return "control, ranges overlap" if max(b) >= min(h) and max(h) >= min(b) else "control: machine drift"
    if min(b) == max(b) == min(h) == max(h):
        return "same"
    if max(b) >= min(h) and max(h) >= min(b):
        return "within noise"
    return "better" if (statistics.median(h) > statistics.median(b)) == up else "worse"


def table(runs: list[Run]) -> list[str]:
    rows = [("bench", "figure", "base median (min-max)", "head median (min-max)", "head/base", "verdict")]
    for bench in dict.fromkeys(r.bench for r in runs):
        for name, _, up in BENCHES[bench].figures:
            vals = {
                ref: [r.figures[name] for r in runs if r.bench == bench and r.ref == ref and name in r.figures]
                for ref in ("base", "head")
            }
            if not vals["base"] and not vals["head"]:
                continue
            mb = statistics.median(vals["base"]) if vals["base"] else 0
            ratio = f"{statistics.median(vals['head']) / mb:.3f}" if vals["head"] and mb else "-"
            cells = (spread(vals["base"]), spread(vals["head"]), ratio, verdict(vals["base"], vals["head"], up, name))
            rows.append((bench, f"{name} [{'higher' if up else 'lower'}=better]", *cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def report(
    args,
    shas: dict[str, str],
    trees: dict[str, Path],
    notes: dict[str, str],
    skipped: list[str],
    plan: dict[str, dict[str, list[str]]],
    runs: list[Run],
    partial: bool,
) -> str:
    subject = {
        ref: git("log", "-1", "--format=%h %cd %s", "--date=format:%Y-%m-%d %H:%M", sha)[:110]
        for ref, sha in shas.items()
    }
    lines = [f"# $ {shlex.join([os.path.relpath(sys.executable, REPO), *sys.argv])}   (in {REPO})"]
    lines += ["# PARTIAL: the run has not finished; benches so far below"] if partial else []
    lines += [f"# date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} (end); {os.cpu_count()} CPUs, shared"]
    lines += [f"# {ref}: {subject[ref]}" for ref in ("base", "head")]
    lines += [f"# {ref} tree: {trees[ref]} ({notes[ref]})" for ref in ("base", "head")]
    lines += [
        f"# {b} ({ref}): cd <{ref} tree> && PYTHONPATH=<{ref} tree> .venv/bin/python {shlex.join(argv[1:])}"
        for b, argvs in plan.items()
        for ref, argv in argvs.items()
        if not BENCHES[b].code
    ]
    lines += [f"# {b}: python -c <compare_refs.py's {b.upper()} snippet> in each tree" for b in plan if BENCHES[b].code]
    lines += [f"# skipped: {s}" for s in skipped] or ["# skipped: none"]
    lines += ["# runs (order, 1-min load average before each, wall time, exit status):"]
    lines += [f"#   {r.bench:<15} round {r.round} {r.ref}: load {r.load1:5.2f}, {r.wall_s:4.0f} s, rc {r.rc}"
              + (f", waited {r.waited_s:.0f} s for the lock" if r.waited_s >= 1 and r.round % 2 == (r.ref == "base") else "")
              + ("" if r.rc == 0 and r.figures else f"  (see {r.log})") for r in runs]  # fmt: skip
    loads = sorted(r.load1 for r in runs) or [0.0]
    lines += [
        f"# 1-min load before the runs: min {loads[0]:.2f}, median {statistics.median(loads):.2f}, max {loads[-1]:.2f}"
    ]
    lines += ["", *table(runs), "",
              "verdict: 'within noise' = the base and head ranges over the rounds overlap; 'better'/'worse' = they do not."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the 'before' ref (commit, tag, branch)")
    ap.add_argument("--head", default="HEAD", help="the 'after' ref (default HEAD of this checkout)")
    ap.add_argument(
        "--benches",
        default="all",
        help="comma-separated bench/<name>.py names; all (default): every bench/*.py at either ref",
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds per bench (each runs base and head once; min 2)")
    ap.add_argument("--out", type=Path, help="also write the report here (rewritten after each bench)")
    ap.add_argument("--keep", action="store_true", help="keep the worktrees this run created")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2")
    shas = {ref: git("rev-parse", "--verify", r + "^{commit}") for ref, r in (("base", args.base), ("head", args.head))}
    logs = REFS / "logs" / time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    logs.mkdir(parents=True, exist_ok=True)
    made, runs = [], []  # the worktrees this run created; the runs so far
    try:
        trees, notes = {}, {}
        for ref, sha in shas.items():
            trees[ref], created = make_tree(sha)
            made += [trees[ref]] if created else []
            notes[ref] = (
                f"imports from {Path(check_imports(trees[ref])).parent.parent}; image {ensure_image(trees[ref])}"
            )
        benches = [b for b in args.benches.split(",") if b]
        if benches == ["all"]:
            found = {p.stem for t in trees.values() for p in (t / "bench").glob("*.py")} - {"compare_refs", "__init__"}
            benches = [*(b for b in BENCHES if b in found or BENCHES[b].code), *sorted(found - set(BENCHES))]
        plan, skipped = select(benches, trees)
        say(f"benches: {', '.join(plan)}; skipped: {'; '.join(skipped) or 'none'}; logs in {logs}")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
        for bench in plan:
            runs += run_bench(bench, plan[bench], trees, args.rounds, logs)
            if args.out:
                args.out.write_text(report(args, shas, trees, notes, skipped, plan, runs, partial=True))
    finally:
        for tree in made if not args.keep else []:
            sh(["git", "worktree", "remove", "--force", str(tree)])
    text = report(args, shas, trees, notes, skipped, plan, runs, partial=False)
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0 if all(r.rc == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
