"""Sessions under chaos: no sandbox and no process may be left behind (docs/sessions.md, "No leaks").

    flock /tmp/bench.lock .venv/bin/python -m bench.pool.sessions_chaos [--backend docker] [--sessions 1000]
        [--callers 4] [--life-s 6,14] [--caller-kill-s 2,6]

Rounds until ``--sessions`` were opened (opens and forks count): start the real service (its own process,
``--backend``), start ``--callers`` caller processes that open (python and bash), run cells (trivial ones, and
cells that leave processes running, flood their output, spin past their time, blow their memory), fork, abandon
(left to the idle TTL's reaper) and close sessions at random; kill -9 a random caller every few seconds (and
start another); after a random life, kill -9 the service and every caller, and start the next round. At the
end one more service starts (it reaps what the dead ones left) and stops, and the host is counted again.

Counted before and after, on the host: sandboxes of this run (Docker or Podman containers labelled with the
owner pid of one of this run's services; bubblewrap sandboxes: processes in the cgroup of one of them) and
processes of this run (its services, callers and every sandbox process). Printed: sessions opened, cells run,
services and callers killed, and the sandboxes and processes left, which must be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CELLS = {
    "python": [
        "x = 1",
        "x + 1",
        "import subprocess\np = subprocess.Popen(['sleep', '30'])",
        "print('y' * 100_000)",
        "while True: pass",
        "hog = bytearray(900 * 1024 * 1024)",
        "import os\nos._exit(1)",
    ],
    "bash": ["echo hi", "sleep 30 &", "cd /tmp && export A=1", "yes | head -c 200000", "while :; do :; done"],
}
# Docker's containers out of its /docker group, whose one CPU share a shared machine's containers divide (docs/sandbox.md)
WHERE = {"docker": ["--cgroup-parent", "/"]}
SERVER_ARGS = ["--max-sessions", "48", "--max-sessions-per-caller", "24", "--session-idle-ttl-s", "3",
               "--session-timeout-s", "2", "--session-memory-mb", "512", "--output-cap-bytes", "65536"]  # fmt: skip


# -- one caller (a child process: ``--caller``) -------------------------------------------------------
def caller(target: str, out: str, seed: int) -> None:
    """Random calls until the service is gone; one line per call to ``out`` (a kill -9 loses none)."""
    from verifiers.client import VerifierClient, VerifierError

    rng = random.Random(seed)
    log = open(out, "a", buffering=1)  # noqa: SIM115 - held for the process's life
    mine: list = []
    with VerifierClient(target, timeout_s=20, wait_s=2, client_id=f"chaos-{seed}") as c:
        while True:
            op = rng.choices(["open", "exec", "fork", "close", "abandon"], [3, 6, 1, 2, 1])[0]
            if op != "open" and not mine:
                op = "open"
            try:
                if op == "open":
                    mine.append(c.open_session(rng.choice(["python", "python", "bash"])))
                    log.write("open 1\n")
                elif op == "exec":
                    s = rng.choice(mine)
                    r = c.exec(s.id, rng.choice(CELLS[s.kind]), timeout_s=1)
                    log.write(f"exec {r.status}\n")
                    if r.ended:
                        mine.remove(s)
                elif op == "fork":
                    forks = c.fork_session(rng.choice(mine).id, rng.randint(1, 4))
                    mine += [f for f in forks]
                    log.write(f"open {len(forks)}\n")
                elif op == "close":
                    c.close_session(mine.pop(rng.randrange(len(mine))).id)
                    log.write("close 1\n")
                else:
                    mine.pop(rng.randrange(len(mine)))  # left open: the reaper's
                    log.write("abandon 1\n")
            except VerifierError as e:
                log.write(f"error {e.code.name}\n")
                if e.code.name == "UNAVAILABLE":
                    return
                if e.code.name in ("FAILED_PRECONDITION", "PERMISSION_DENIED", "NOT_FOUND") and mine and op != "open":
                    mine.pop(rng.randrange(len(mine)))
                if e.code.name == "RESOURCE_EXHAUSTED" and mine:
                    c.close_session(mine.pop(0).id) if rng.random() < 0.5 else mine.pop(0)


# -- counting what this run left on the host --------------------------------------------------------
def containers(backend: str, pids: set[int]) -> list[str]:
    if backend not in ("docker", "podman"):
        return []
    from sandbox.backends.docker import list_containers

    if backend == "podman":
        import sandbox.backends.podman  # noqa: F401 - registers the podman engine
    return [cid for cid, owner, _ in list_containers(engine=backend) if owner.rpartition(":")[2] in map(str, pids)]


def processes(pids: set[int]) -> list[int]:
    """Processes of this run: its services and callers, and every process in one of their sandboxes' cgroups
    (bubblewrap, named after the owner pid: ``rlvr-sbx-<pid>-``; containers' processes: counted as containers)."""
    names = tuple(f"rlvr-sbx-{p}-" for p in pids)
    found = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            cg = Path(f"/proc/{p}/cgroup").read_text()
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        ours = int(p) in pids and (b"sessions_chaos" in cmd or b"verifiers.fronts.server" in cmd)  # not a reused pid
        if ours or any(n in cg for n in names):
            found.append(int(p))
    return found


# -- the run ----------------------------------------------------------------------------------------
def start_server(backend: str, tmp: str, n: int):
    from verifiers.launch import LocalServer

    return LocalServer(
        pool_size=1,
        registry=os.path.join(tmp, "r.sqlite"),
        log_path=os.path.join(tmp, f"s{n}.log"),
        extra_args=[*SERVER_ARGS, "--backend", backend, *WHERE.get(backend, [])],
    ).start()


def spawn_caller(target: str, out: str, seed: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "bench.pool.sessions_chaos", "--caller", target, "--out", out, "--seed", str(seed)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    p.wait()


def tally(out_dir: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in Path(out_dir).glob("caller-*.log"):
        for line in f.read_text().splitlines():
            what, _, n = line.partition(" ")
            key = what if what in ("open", "close", "abandon") else f"{what} {n}"
            counts[key] = counts.get(key, 0) + (int(n) if what in ("open", "close", "abandon") else 1)
    return counts


def rounds(a, tmp: str, pids: set[int], rng: random.Random) -> dict[str, int]:
    killed = {"services": 0, "callers": 0}
    seed, n = 0, 0
    while tally(tmp).get("open", 0) < a.sessions:
        n += 1
        srv = start_server(a.backend, tmp, n)
        pids.add(srv.proc.pid)
        callers = []
        for _ in range(a.callers):
            seed += 1
            callers.append(spawn_caller(srv.target, os.path.join(tmp, f"caller-{seed}.log"), seed))
            pids.add(callers[-1].pid)
        end = time.monotonic() + rng.uniform(*a.life_s)
        while time.monotonic() < end:
            time.sleep(min(rng.uniform(*a.caller_kill_s), max(end - time.monotonic(), 0)))
            if time.monotonic() < end:
                i = rng.randrange(len(callers))
                kill(callers[i])
                killed["callers"] += 1
                seed += 1
                callers[i] = spawn_caller(srv.target, os.path.join(tmp, f"caller-{seed}.log"), seed)
                pids.add(callers[i].pid)
        alive = len(containers(a.backend, pids)) + len(processes(pids))  # what the count sees while they run
        srv.proc.send_signal(signal.SIGKILL)  # the service first: its sessions are open
        srv.proc.wait()
        killed["services"] += 1
        for p in callers:
            kill(p)
        killed["callers"] += len(callers)
        opened, load = tally(tmp).get("open", 0), os.getloadavg()[0]
        print(
            f"round {n}: {opened} sessions opened so far; {alive} containers and processes of the run counted"
            f" before its kill -9; load {load:.1f}",
            flush=True,
        )
    return killed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="docker", help="docker, podman or bwrap")
    p.add_argument("--sessions", type=int, default=1000, help="open at least this many (opens and forks)")
    p.add_argument("--callers", type=int, default=4)
    p.add_argument("--life-s", default="6,14", help="a service's life before its kill -9: min,max seconds")
    p.add_argument("--caller-kill-s", default="2,6", help="between two kill -9 of a random caller: min,max seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--caller", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.caller:
        return caller(a.caller, a.out, a.seed)
    a.life_s = tuple(float(x) for x in a.life_s.split(","))
    a.caller_kill_s = tuple(float(x) for x in a.caller_kill_s.split(","))
    rng, pids = random.Random(a.seed), set()
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        killed = rounds(a, tmp, pids, rng)
        last = start_server(a.backend, tmp, 0)  # the next start reaps what the dead services left
        pids.add(last.proc.pid)
        last.stop()
        end = time.monotonic() + 60  # a hang guard: containers being removed
        while (containers(a.backend, pids) or processes(pids)) and time.monotonic() < end:
            time.sleep(0.5)
        counts = tally(tmp)
    left_c, left_p = containers(a.backend, pids), processes(pids)
    cells = sum(v for k, v in counts.items() if k.startswith("exec"))
    print(
        json.dumps(
            {
                "backend": a.backend,
                "sessions_opened": counts.get("open", 0),
                "closed": counts.get("close", 0),
                "abandoned": counts.get("abandon", 0),
                "cells": cells,
                "services_killed": killed["services"],
                "callers_killed": killed["callers"],
                "sandboxes_left": len(left_c),
                "processes_left": len(left_p),
                "seconds": round(time.monotonic() - t0),
                "load_start": round(load0, 1),
                "load_end": round(os.getloadavg()[0], 1),
                "calls": {k: v for k, v in sorted(counts.items()) if " " in k},
            }
        )
    )
    if left_c or left_p:
        print(f"LEFT: containers {left_c}, processes {left_p}")
        sys.exit(1)


if __name__ == "__main__":
    main()
