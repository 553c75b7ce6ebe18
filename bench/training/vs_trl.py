"""Benchmark: our GRPO trainer vs TRL's GRPOTrainer (trl==1.16.0) on the CPU, in one run.

    .venv/bin/pip install trl==1.16.0      # only for this benchmark; never a project dependency
    .venv/bin/python -m bench.training.vs_trl [--rounds 3] [--steps 8] [--threads 1] [--workloads short,r1]

Same work for both: the same saved tiny Qwen2 (built from a config, ~0.85M parameters, character
tokenizer), the same prompts (two-digit additions, plain text, no chat template), G=8, 4 prompts per
step (batch 32), the same max_new_tokens, temperature 1, top_p 1, top_k off, beta 0.04, the "grpo"
loss, one optimizer step per rollout, AdamW (betas 0.9/0.999, constant lr 1e-5), grad clip 1.0, no
gradient checkpointing (TRL turns it on by default; it is off here because it trades speed for
memory), dropout off, the same pure-Python reward, the same seed and torch thread count.

Two workloads, because our main saving (each prompt encoded once per group, its KV cache shared by
the G completions, in generation and in the log-prob forwards) grows with the prompt's share of the
sequence:
- ``short``: bare ``a+b=`` prompts (~6 tokens), 32 new tokens: almost no prompt to share;
- ``r1``: the same questions inside the DeepSeek-R1-Zero template (~430 characters = tokens here),
  64 new tokens: the usual RLVR prompt, where the prompt dominates the sequence.

Overlap (``--overlap-rounds``, on by default): ours alone, rewards from a real verifier service
(``verifiers.launch.LocalServer``, a Python verifier with the same reward run in the Docker sandbox),
``overlap_scoring`` off then on, alternated; printed: the verifier wait per step (seconds the step is
blocked on grading after decoding), step time, tokens/s. The model there has a dozen extra EOS
characters so that completions end at different lengths (with none, every group ends at the last
token and there is nothing to overlap).

Files: this one (our arm, the driver, the report, the overlap section), bench/training/trl_arm.py (TRL's
arm), bench/training/inputs.py (the shared model, prompts, reward and settings).

Each trainer runs in its own fresh subprocess (so peak RSS is its own), TRL then ours, for
``--rounds`` rounds. Per run: start-up (imports + model load) apart, then the training loop's
completion tokens per second of wall time and of process CPU time (less sensitive to other load on
a shared machine), and peak RSS. Printed: medians, the median of per-round ratios with their
spread, and the 1-minute load average before each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.training.inputs import (
    BETA,
    LR,
    OVERLAP_MAX_NEW,
    OVERLAP_STOPS,
    OVERLAP_VERIFIER,
    PROMPTS,
    SEED,
    VERIFIER_SOURCE,
    WORKLOADS,
    G,
    build_inputs,
    peak_rss_mb,
    reward,
)

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------
# our arm (each run in its own process; the TRL arm is bench/training/trl_arm.py, the inputs bench/training/inputs.py)
# ---------------------------------------------------------------------------------------------


def run_ours(
    folder: Path,
    workload: str,
    steps: int,
    threads: int,
    target: str = "",
    overlap: bool = True,
) -> dict:
    """Ours on ``workload``; with ``target``: rewards from the verifier service there (overlap section)."""
    t0 = time.perf_counter()
    import torch

    from trainer.config import GRPOConfig
    from trainer.grpo.rewards import PythonReward, VerifierReward
    from trainer.run.metrics import read_metrics
    from trainer.train import train

    torch.set_num_threads(threads)
    reward_fn = VerifierReward(OVERLAP_VERIFIER, target, retries=0) if target else PythonReward(reward)
    cfg = GRPOConfig(
        model=str(folder / ("model-stops" if target else "model")),
        overlap_scoring=overlap,
        data=str(folder / f"data-{workload}.jsonl"),
        use_chat_template=False,
        group_size=G,
        prompts_per_step=PROMPTS,
        max_new_tokens=OVERLAP_MAX_NEW if target else WORKLOADS[workload]["max_new"],
        temperature=1.0,
        top_p=1.0,
        beta=BETA,
        loss_type="grpo",
        lr=LR,
        adam_betas=(0.9, 0.999),
        grad_clip=1.0,
        steps=steps,
        seed=SEED,
        device="cpu",
        run_dir=str(folder / f"ours-run-{workload}{'-svc' if target else ''}"),
        log_completions_every=0,
        threads=threads,
    )
    try:
        out = train(cfg, reward_fn=reward_fn)
    finally:
        reward_fn.close() if target else None
    m = read_metrics(Path(cfg.run_dir) / "metrics.jsonl")
    tokens = sum(r["perf/tokens"] for r in m)
    loop_s = m[-1]["perf/elapsed_s"]  # first step's start to last step's metrics written, as TRL's clock
    cpu_s = m[-1]["perf/elapsed_cpu_s"]
    return {
        "cpu_s": cpu_s,
        "tokens_per_cpu_s": tokens / cpu_s,
        "startup_s": time.perf_counter() - t0 - loop_s,
        "loop_s": loop_s,
        "tokens": tokens,
        "tokens_per_s": tokens / loop_s,
        "peak_rss_mb": peak_rss_mb(),
        "reward_mean": sum(r["reward/mean"] for r in m) / len(m),
        "steps": len(m),
        "checkpoint": str(out["checkpoint"]),
        "verify_wait_s": statistics.median(r["verifier/batch_s"] for r in m),
        "step_s": statistics.median(r["perf/step_s"] for r in m),
        "length_mean": statistics.median(r["completion/length_mean"] for r in m),
    }


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------


def spawn(
    which: str,
    folder: Path,
    workload: str,
    steps: int,
    threads: int,
    extra: list[str] | None = None,
) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        which,
        "--dir",
        str(folder),
        "--workload",
        workload,
    ]
    cmd += ["--steps", str(steps), "--threads", str(threads), *(extra or [])]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"error": f"{which} worker failed ({proc.returncode}): {proc.stderr[-2000:]}"}
    return json.loads(lines[-1][len("RESULT ") :])


def spread(xs: list[float]) -> str:
    return f"min {min(xs):.3g}, max {max(xs):.3g}"


def fmt(r: dict) -> str:
    return (
        f"{r['tokens_per_s']:7.1f} tok/s wall, {r['tokens_per_cpu_s']:7.1f} tok/CPU-s, "
        f"{r['loop_s']:5.1f} s loop, {r['peak_rss_mb']:6.1f} MB"
    )


def report(workload: str, trl: list[dict], ours: list[dict], loads: list[float]) -> None:
    print(f"\n== workload {workload!r}: per round (load = 1-min load average before the round)")
    for i, (a, b) in enumerate(zip(trl, ours, strict=True)):
        ratio = b["tokens_per_s"] / a["tokens_per_s"]
        print(f"  round {i + 1}: load {loads[i]:.2f} | TRL {fmt(a)} | ours {fmt(b)} | speed-up {ratio:.2f}x")
    for name, runs in (("TRL GRPOTrainer", trl), ("ours", ours)):
        tps = [r["tokens_per_s"] for r in runs]
        cps = [r["tokens_per_cpu_s"] for r in runs]
        rss = [r["peak_rss_mb"] for r in runs]
        print(
            f"  {name:>15}: {statistics.median(tps):7.1f} completion tok/s wall ({spread(tps)}), "
            f"{statistics.median(cps):7.1f} tok/CPU-s, peak RSS {statistics.median(rss):6.1f} MB ({spread(rss)}), "
            f"start-up {statistics.median(r['startup_s'] for r in runs):.1f} s, "
            f"reward mean {statistics.median(r['reward_mean'] for r in runs):.3f}"
        )
    for label, key in (
        ("throughput (wall)", "tokens_per_s"),
        ("throughput (CPU)", "tokens_per_cpu_s"),
    ):
        ratios = [b[key] / a[key] for a, b in zip(trl, ours, strict=True)]
        print(f"  {label} ours/TRL: median {statistics.median(ratios):.2f}x ({spread(ratios)})")
    mem = [b["peak_rss_mb"] / a["peak_rss_mb"] for a, b in zip(trl, ours, strict=True)]
    print(f"  peak RSS ours/TRL: median {statistics.median(mem):.2f}x ({spread(mem)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help="comma-separated: " + ", ".join(WORKLOADS),
    )
    ap.add_argument(
        "--overlap-rounds",
        type=int,
        default=2,
        help="rounds of the overlap section (0: skip it)",
    )
    ap.add_argument("--worker", choices=["ours", "trl"], help=argparse.SUPPRESS)
    ap.add_argument("--target", default="", help=argparse.SUPPRESS)
    ap.add_argument("--overlap", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--workload", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        if a.worker == "ours":
            res = run_ours(Path(a.dir), a.workload, a.steps, a.threads, a.target, bool(a.overlap))
        else:
            from bench.training.trl_arm import run_trl

            res = run_trl(Path(a.dir), a.workload, a.steps, a.threads)
        print("RESULT " + json.dumps(res), flush=True)
        return
    try:
        import trl  # noqa: F401
    except ImportError:
        raise SystemExit(
            "trl is not installed: `.venv/bin/pip install trl==1.16.0` (benchmark only, not a dependency)"
        ) from None
    workloads = [w for w in a.workloads.split(",") if w]  # --workloads "": the overlap section only
    print(
        f"GRPO on CPU: tiny Qwen2 (hidden 128, 4 layers, ~0.85M params), char tokenizer, G={G}, {PROMPTS} prompts/step "
        f"(batch {G * PROMPTS}), beta={BETA}, {a.steps} steps, {a.threads} thread(s), {a.rounds} rounds TRL/ours "
        f"alternating; workloads: " + "; ".join(f"{w} (max_new_tokens={WORKLOADS[w]['max_new']})" for w in workloads)
    )
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as d:
        folder = build_inputs(Path(d))
        for w in workloads:
            trl_runs, our_runs, loads = [], [], []
            for i in range(a.rounds):
                loads.append(os.getloadavg()[0])
                for which, bucket in (("trl", trl_runs), ("ours", our_runs)):
                    r = spawn(which, folder, w, a.steps, a.threads)
                    if "error" in r:
                        raise SystemExit(r["error"])
                    bucket.append(r)
                    print(f"{w} round {i + 1} {which:>4}: {fmt(r)}", flush=True)
            report(w, trl_runs, our_runs, loads)
        if a.overlap_rounds:
            overlap_section(folder, a.overlap_rounds, a.steps, a.threads)


def overlap_section(folder: Path, rounds: int, steps: int, threads: int) -> None:
    """Ours with rewards from a real verifier service, overlap_scoring off vs on, alternated."""
    from proto.verifier.v1 import verifier_pb2 as pb
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    print(
        f"\n== overlap: ours, short prompts, max_new_tokens={OVERLAP_MAX_NEW}, extra EOS characters "
        f"{OVERLAP_STOPS!r}, rewards from a local verifier service (Python verifier {OVERLAP_VERIFIER!r} in the "
        f"Docker sandbox, pool of 2), {steps} steps, {rounds} rounds off/on alternating"
    )
    with LocalServer(pool_size=2) as srv:
        client = VerifierClient(srv.target, retries=0)
        spec = pb.PythonVerifier(source=VERIFIER_SOURCE, example_completion="1", example_reference="1")
        runs: dict[bool, list[dict]] = {False: [], True: []}
        for i in range(rounds):
            load = os.getloadavg()[0]
            for on in (False, True):
                # both runs sample the same completions (same seed): registering again gives the verifier a
                # new version, so no run is answered from the service's verdict cache filled by the other
                client.register(pb.RegisterVerifierRequest(name=OVERLAP_VERIFIER, python=spec, replace=True))
                r = spawn(
                    "ours",
                    folder,
                    "short",
                    steps,
                    threads,
                    ["--target", srv.target, "--overlap", str(int(on))],
                )
                if "error" in r:
                    raise SystemExit(r["error"])
                runs[on].append(r)
                print(
                    f"  round {i + 1} (load {load:.2f}) overlap {'on ' if on else 'off'}: verifier wait "
                    f"{r['verify_wait_s'] * 1000:6.1f} ms/step, step {r['step_s'] * 1000:6.1f} ms, "
                    f"{r['tokens_per_s']:7.1f} tok/s, completion length {r['length_mean']:.1f}",
                    flush=True,
                )
        client.close()
    med = {on: statistics.median(r["verify_wait_s"] for r in runs[on]) for on in runs}
    step = {on: statistics.median(r["step_s"] for r in runs[on]) for on in runs}
    print(
        f"  verifier wait per step (median): before (overlap off) {med[False] * 1000:.1f} ms, "
        f"after (overlap on) {med[True] * 1000:.1f} ms; step time {step[False] * 1000:.1f} -> {step[True] * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
