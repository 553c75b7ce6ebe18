"""The reward-hacking alarm's cost on step time (issue 37): `make train` with ``--grpo.alarm`` off and on, paired.

    flock /tmp/bench.lock .venv/bin/python -m bench.alarm_cost --from-run runs/<a default make train run> \\
        [--pairs 2] [--steps 40] [--skip 2] [--model DIR] [--work /tmp/alarm-cost] [--out bench/results/alarm_cost.txt]

Each run is ``python -m trainer.pipelines.make_train`` (configs/default.yaml: the embedded arithmetic task, the
tiny Qwen2, reward r1, 8 prompts x G=8, 2 threads), starting its own verifier service on loopback as make
train does, GRPO from ``--model`` (default: the run's warm start) on the run's data, seed 0, ``--steps``
steps; off (A) and on (B) alternate A B, B A, A B, ... Same seed and data: the alarm draws no torch random
numbers, so A and B sample the same completions. The run's warm start is reused (``--warmstart.steps 0``)
and its held-out evaluation cut to 32 problems: neither is inside the measured steps.

While a run trains, this process reads (it is not measured itself) at each new line of metrics.jsonl the
CPU seconds so far of the trainer process and of its service (/proc/<pid>/stat) and of the service's
sandbox containers (their cgroup's cpuacct.usage). Per run, over steps ``--skip``+1 .. ``--steps``:

- *CPU per step*, trainer + service + sandboxes: the work the step costs; a busy neighbour stretches
  it far less than wall time (but not to nothing: see the verdict below). The children run with OMP_WAIT_POLICY=PASSIVE so that
  torch's threads sleep rather than spin while they wait for a core (spinning under load is CPU time
  that is not work); that leaves less CPU per step to compare with, so the alarm's share reads higher
  (``--spin`` leaves the wait policy as make train has it);
- the median step wall time (metrics' perf/step_s), and the alarm's own wall and CPU inside each step
  (perf/alarm_s, perf/alarm_cpu_s: alarm.check, the only alarm code a step runs);
- start-up: the CPU from the "GRPO:" line to step 1's line (model load, the alarm's audit probe and its
  canaries, step 1); on minus off is the alarm's start-up, mostly the canaries (their seconds are also
  printed by the run). Canaries replay every ``canary_every`` steps: amortized over ``--horizon`` steps.

The verdict is the *attributed* figure: alarm.check's trainer CPU plus the service's and sandboxes' extra CPU
(on minus off), over the step's CPU with the alarm off. A step runs no other alarm code (trainer/grpo/step.py
calls alarm.check once) and the rest of the step is the same work on and off (the same tokens, rewards and
update, step for step); the trainer's CPU for that same work still moves by several percent between the
two runs of a pair on this loaded 2-vCPU machine, both ways (the rollout's wall, before alarm.check, moves
with it), so the whole-step CPU and wall ratios are printed as cross-checks, with their spread.

Results accumulate in WORK/runs.jsonl (several invocations of the same --work add pairs); the report reads
them all. ``--report-only`` rewrites the report from it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")
CGROUP_V1 = Path("/sys/fs/cgroup/cpuacct/docker")
DOCKER = Path("/var/lib/docker/containers")
CANARY_LINE = re.compile(r"alarm: canaries: (\d+) sent .*?\(([\d.]+) s\)")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, with waited-for children) of ``pid``; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / TICK


def proc_sys_faults(pid: int) -> tuple[float, int]:
    """System CPU seconds and minor page faults so far of ``pid`` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0, 0
    return int(fields[12]) / TICK, int(fields[7])


def child_pids(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return out


class Probe:
    """CPU so far of a make_train process, its verifier service and the service's sandbox containers."""

    def __init__(self, pid: int):
        self.pid, self.service = pid, 0
        self.names: dict[str, str] = {}  # container id -> name
        self.seen: dict[str, float] = {}  # container id -> its last CPU seconds (kept after it goes)

    def sample(self) -> dict[str, float]:
        if not self.service:
            found = [
                p for p in child_pids(self.pid) if b"verifiers.fronts.server" in Path(f"/proc/{p}/cmdline").read_bytes()
            ]
            self.service = found[0] if found else 0
        sys_s, faults = proc_sys_faults(self.pid)
        return {"t": time.perf_counter(), "trainer": proc_cpu(self.pid), "trainer_sys": sys_s, "trainer_faults": faults,
                "service": proc_cpu(self.service) if self.service else 0.0, "sandboxes": self._sandboxes()}  # fmt: skip

    def _sandboxes(self) -> float:
        if not self.service or not CGROUP_V1.is_dir():
            return float("nan")  # only Docker on cgroup v1 is read here; the report says "n/a"
        prefix = f"/rlvr-sbx-{self.service}-"
        for d in CGROUP_V1.iterdir():
            if not d.is_dir():
                continue
            if d.name not in self.names:
                try:
                    self.names[d.name] = json.loads((DOCKER / d.name / "config.v2.json").read_text())["Name"]
                except (OSError, ValueError, KeyError):
                    self.names[d.name] = ""
            if self.names[d.name].startswith(prefix):
                try:
                    self.seen[d.name] = int((d / "cpuacct.usage").read_text()) / 1e9
                except (OSError, ValueError):
                    pass
        return sum(self.seen.values())


def train_once(args, work: Path, name: str, on: bool) -> dict:
    """One make_train run, watched; its per-step figures."""
    src = Path(args.from_run)
    heldout = work / "heldout32.jsonl"
    heldout.write_text("".join((src / "data" / "heldout.jsonl").read_text().splitlines(True)[:32]))
    cmd = [sys.executable, "-m", "trainer.pipelines.make_train", "--config", "configs/default.yaml",
           "--model", str(args.model or src / "warmstart"), "--data", str(src / "data" / "train.jsonl"),
           "--eval-data", str(heldout), "--warmstart.steps", "0", "--eval.k", "0", "--seed", "0",
           "--grpo.steps", str(args.steps), "--grpo.eval_every", "0", "--grpo.alarm", str(on).lower(),
           "--runs", str(work / "runs"), "--name", name]  # fmt: skip
    env = dict(os.environ) if args.spin else {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
    metrics, err_path = work / "runs" / name / "metrics.jsonl", work / f"{name}.stderr"
    load0 = os.getloadavg()[0]
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
    probe, marks, pos = Probe(proc.pid), {}, 0
    while proc.poll() is None:
        if "grpo" not in marks and b"\nGRPO: " in err_path.read_bytes():
            marks["grpo"] = probe.sample()
        if metrics.exists():
            with metrics.open() as f:
                f.seek(pos)
                chunk = f.read()
            done, _, _ = chunk.rpartition("\n")
            pos += len(done) + 1 if done else 0
            for line in filter(None, done.splitlines()):
                row = json.loads(line)
                if "perf/step_s" in row:
                    marks.setdefault(row["step"], probe.sample())
        time.sleep(0.02)
    text = err_path.read_text(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"{name}: make_train exited {proc.returncode}; see {err_path}:\n{text[-2000:]}")
    rows = [json.loads(x) for x in metrics.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if "perf/step_s" in r and r["step"] > args.skip]
    a, b = marks[args.skip or 1], marks[args.steps]
    n = args.steps - (args.skip or 1)
    canary = CANARY_LINE.search(text)
    parts = ("trainer", "service", "sandboxes")
    per_step = [
        sum(marks[k][c] - marks[k - 1][c] for c in parts if not math.isnan(marks[k][c]))
        for k in range(args.skip + 1, args.steps + 1)
        if k - 1 in marks and k in marks
    ]
    return {"name": name, "alarm": on, "omp": "spin" if args.spin else "passive", "steps": args.steps, "skip": args.skip, "model": str(args.model or "warmstart"),
            "load": [load0, os.getloadavg()[0]], "step_s": [r["perf/step_s"] for r in rows],
            "rollout_s": [r["perf/rollout_s"] for r in rows],
            "alarm_s": [r.get("perf/alarm_s", 0.0) for r in rows], "alarm_cpu_s": [r.get("perf/alarm_cpu_s", 0.0) for r in rows],
            "cpu_per_step": per_step, "sys_per_step": (b["trainer_sys"] - a["trainer_sys"]) / n,
            "faults_per_step": (b["trainer_faults"] - a["trainer_faults"]) / n, "wall_per_step": (b["t"] - a["t"]) / n, **{f"cpu_{k}": (b[k] - a[k]) / n for k in ("trainer", "service", "sandboxes")},
            "startup_cpu": sum(marks[1][k] - marks["grpo"][k] for k in ("trainer", "service", "sandboxes")) if "grpo" in marks else None,
            "canaries": int(canary.group(1)) if canary else 0, "canary_s": float(canary.group(2)) if canary else 0.0}  # fmt: skip


def canary_replays(n: int = 3) -> list[dict]:
    """The canaries through r1 (trainer.alarm.canary, as the alarm sends them) on a fresh service as make train
    starts it: the first replay cold, the next ones as the service's verdict cache serves them."""
    from trainer.alarm.canary import CanaryCheck
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    out = []
    with LocalServer(pool_size=2) as srv, VerifierClient(srv.target) as client:
        probe, check = Probe(os.getpid()), CanaryCheck(client, "r1", "math")
        probe.service = srv.proc.pid
        for _ in range(n):
            a = probe.sample()
            check.run()
            b = probe.sample()
            out.append({"wall": b["t"] - a["t"], "cpu": sum(b[k] - a[k] for k in ("trainer", "service", "sandboxes"))})
    return out


def cpu(r: dict) -> float:
    sbx = r["cpu_sandboxes"]
    return r["cpu_trainer"] + r["cpu_service"] + (0.0 if math.isnan(sbx) else sbx)


def svc(r: dict) -> float:
    return cpu(r) - r["cpu_trainer"]


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} (min {min(xs):.3f}, max {max(xs):.3f}, {len(xs)} pairs)"


def report(runs: list[dict], horizon: int, every: int, replay: list[dict] | None = None) -> str:
    med = statistics.median
    out = [
        f"# bench/training/alarm_cost.py {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; "
        f"load now {os.getloadavg()[0]:.1f}; {len(runs)} runs; OpenMP wait policy "
        f"{'/'.join(sorted({r.get('omp', 'passive') for r in runs}))}"
    ]
    out.append("run                 load(start,end)  step p50  wall/step  CPU/step: trainer + service + sandboxes = total"
               "   alarm.check p50 wall, CPU   start-up CPU  canaries")  # fmt: skip
    for r in runs:
        sbx = "n/a" if math.isnan(r["cpu_sandboxes"]) else f"{r['cpu_sandboxes']:.3f}"
        su = "-" if r["startup_cpu"] is None else f"{r['startup_cpu']:.1f} s"
        out.append(f"{r['name']:<19} {r['load'][0]:5.1f},{r['load'][1]:5.1f}   {med(r['step_s']):6.3f} s  {r['wall_per_step']:6.3f} s  "
                   f"{r['cpu_trainer']:.3f} + {r['cpu_service']:.3f} + {sbx} = {cpu(r):.3f} s   "
                   f"{med(r['alarm_s']) * 1e3:5.1f} ms, {med(r['alarm_cpu_s']) * 1e3:5.1f} ms   {su:>8}  "
                   f"{r['canaries']} in {r['canary_s']:.1f} s"
                   + (f"; trainer sys {r['sys_per_step']:.3f} s, {r['faults_per_step']:.0f} page faults a step"
                      if "sys_per_step" in r else ""))  # fmt: skip
    pairs = {}
    for r in runs:
        pairs.setdefault(r["name"].rsplit("-", 1)[0], {})[r["alarm"]] = r
    pairs = [p for p in pairs.values() if len(p) == 2]
    if not pairs:
        return "\n".join(out) + "\n"
    steps_r = [
        med(a / b for a, b in zip(p[True]["cpu_per_step"], p[False]["cpu_per_step"], strict=True) if b > 0)
        for p in pairs
        if p[True].get("cpu_per_step")
    ]
    cpu_r = [cpu(p[True]) / cpu(p[False]) for p in pairs]
    svc_r = [svc(p[True]) / svc(p[False]) for p in pairs]
    step_r = [med(p[True]["step_s"]) / med(p[False]["step_s"]) for p in pairs]
    on = [p[True] for p in pairs]
    share_w = [med(a / s for a, s in zip(r["alarm_s"], r["step_s"], strict=True)) for r in on]
    share_c = [med(r["alarm_cpu_s"]) / cpu(r) for r in on]
    out.append("\nper pair, alarm on / off:")
    if steps_r:
        out.append(f"  CPU, trainer + service + sandboxes, step k on / step k off (the same completions, the same update), "
                   f"median over the steps: {spread(steps_r)}")  # fmt: skip
    out.append(f"  CPU per step, trainer + service + sandboxes, over the run: {spread(cpu_r)}")
    attr = [(statistics.mean(p[True]["alarm_cpu_s"]) + svc(p[True]) - svc(p[False])) / cpu(p[False]) for p in pairs]
    out.append(f"  attributed: alarm.check's trainer CPU (inside the step) + the service's and sandboxes' extra CPU, over "
               f"the step's CPU off: {spread([1 + a for a in attr])}   <- the verdict")  # fmt: skip
    out.append(f"  CPU per step, service + sandboxes only:      {spread(svc_r)}")
    out.append(f"  median step wall time:                       {spread(step_r)}")
    roll = [
        med(a / b for a, b in zip(p[True]["rollout_s"], p[False]["rollout_s"], strict=True))
        for p in pairs
        if "rollout_s" in p[True]
    ]
    if roll:
        out.append(f"  the rollout's wall, step k on / step k off (sampling, before alarm.check: the same work, so "
                   f"this is the load's doing): {spread(roll)}")  # fmt: skip
    out.append(
        f"inside the alarm-on steps: alarm.check wall / step wall {spread(share_w)}; alarm.check trainer CPU / "
        f"step CPU {spread(share_c)}"
    )
    su = [p[True]["startup_cpu"] - p[False]["startup_cpu"] for p in pairs if p[True]["startup_cpu"] is not None]
    can_s = [r["canary_s"] for r in on]
    replays = 1 + horizon // every if every else 1
    off_cpu, off_step = med(cpu(p[False]) for p in pairs), med(med(p[False]["step_s"]) for p in pairs)
    out.append(
        f"start-up, on - off: CPU {spread(su)} s; the canaries ({on[0]['canaries']} items) took "
        f"{med(can_s):.1f} s wall in the runs (min {min(can_s):.1f}, max {max(can_s):.1f})"
    )
    if replay:
        cold, warm = replay[0], replay[1:]
        w_cpu, w_wall = med(x["cpu"] for x in warm), med(x["wall"] for x in warm)
        out.append(
            f"canary replays on a fresh service (direct): cold {cold['wall']:.2f} s wall, {cold['cpu']:.2f} s CPU; "
            f"then (the service's verdict cache) {w_wall:.3f} s wall, {w_cpu:.3f} s CPU"
        )
        c_cpu = (med(su) + (replays - 1) * w_cpu) / (horizon * off_cpu)
        c_wall = (med(can_s) + (replays - 1) * w_wall) / (horizon * off_step)
        out.append(
            f"canaries amortized over a {horizon}-step run ({replays} replays: the start's as measured in the runs, "
            f"the {replays - 1} periodic ones as the cached replay): CPU {c_cpu:.2%} of the run's step CPU "
            f"(off: {off_cpu:.3f} s a step), wall {c_wall:.2%} of its step time (off: {off_step:.3f} s a step); "
            f"every replay priced as a cold start instead: CPU {replays * med(su) / (horizon * off_cpu):.2%}, wall "
            f"{replays * med(can_s) / (horizon * off_step):.2%}"
        )
        for what, per in (("paired step CPU", med(steps_r or cpu_r) - 1), ("attributed", med(attr))):
            out.append(
                f"total for a {horizon}-step run, CPU, {what}: per step {per:+.2%} + canaries {c_cpu:.2%} = "
                f"{per + c_cpu:+.2%} (target <= 5%)"
            )
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-run", help="a finished make train run folder of the default task (warmstart/, data/)")
    ap.add_argument("--model", default=None, help="GRPO's starting model (default: FROM_RUN/warmstart)")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--skip", type=int, default=2, help="steps left out at the start (model warm-up)")
    ap.add_argument("--horizon", type=int, default=500, help="run length the canaries are amortized over")
    ap.add_argument("--canary-every", type=int, default=100, help="as grpo.canary_every (the default)")
    ap.add_argument("--spin", action="store_true", help="leave OpenMP's wait policy as it is (make train's own)")
    ap.add_argument("--work", default="/tmp/alarm-cost")
    ap.add_argument("--out", default="bench/results/alarm_cost.txt")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "runs.jsonl"
    if not args.report_only:
        if not args.from_run or not (Path(args.from_run) / "warmstart").is_dir():
            raise SystemExit("--from-run: a make train run folder with warmstart/ and data/ (make train writes one)")
        done = log.read_text().splitlines() if log.exists() else []
        first = len({json.loads(x)["name"].rsplit("-", 1)[0] for x in done})
        for i in range(first, first + args.pairs):
            for on in (False, True) if i % 2 == 0 else (True, False):
                name = f"p{i + 1}-{'on' if on else 'off'}"
                try:
                    res = train_once(args, work, name, on)
                except RuntimeError as e:  # the shared tree changed under a run (another engineer's edit): once more
                    print(e, "\nretrying once", file=sys.stderr, flush=True)
                    shutil.rmtree(work / "runs" / name, ignore_errors=True)
                    res = train_once(args, work, name, on)
                with log.open("a") as f:
                    f.write(json.dumps(res) + "\n")
                print(report([res], args.horizon, args.canary_every).splitlines()[-1], flush=True)
    runs = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    replay_path = work / "canaries.json"
    if not replay_path.exists() and not args.report_only:
        replay_path.write_text(json.dumps(canary_replays()))
    replay = json.loads(replay_path.read_text()) if replay_path.exists() else None
    text = report(runs, args.horizon, args.canary_every, replay)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
