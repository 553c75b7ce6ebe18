"""The reward-hacking alarm, measured (issue 37): a hack learned and caught, and what the alarm costs.

    .venv/bin/python -m bench.alarm [--steps 60] [--warm-steps 400] [--cost-rounds 3] [--out bench/results/alarm.txt]

1. **Caught**: the embedded task's tiny policy, warm-started on a mix with a few sprayed answers
   (tests/alarm_demo.py), trains with the hackable ``contains_reference`` reward. Run A audits every paid
   completion (``audit 1``, on_alarm warn): its curves (training reward, the audit's agreement, held-out
   accuracy) show the onset of the hack. Run B is the same seed with the alarm's defaults and
   ``on_alarm stop``: the step it stops at. Same seed, same samples: the audit and canaries draw no torch
   random numbers, so B follows A until it stops.
2. **Cost**: the same policy with the honest reward ``r1``, the alarm off vs on (defaults: 5% audit, the
   canaries at start and every ``canary_every`` steps), A B A B ..., median step time of each and the
   median of the per-round ratios, with the 1-minute load average of each round (BENCHMARKS.md).
3. **Single signals vs combinations**: the rules replayed over the recorded per-step figures of the honest
   runs given with ``--honest runs/a runs/b ...`` (metrics.jsonl of runs trained with the alarm on), each
   rule with and without its guard: how many alarms each would have raised.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tests.alarm_demo import HACKABLE, curves, demo_data, onset, register_hackable
from trainer.alarm.evidence import AlarmStopped, read_alarms
from trainer.alarm.rules import RULES, Thresholds, length_ratio, reward_rise
from trainer.alarm.stats import StepStats
from trainer.config import GRPOConfig, TinyConfig, WarmStartConfig
from trainer.data import read_jsonl
from trainer.pipelines import tiny
from trainer.pipelines.warmstart import warm_start
from trainer.run.metrics import read_metrics
from trainer.train import train
from verifiers.client import VerifierClient
from verifiers.launch import LocalServer

LR = 5e-4  # the demonstration's (make train's default is 5e-5: the same hack, learned more slowly)
SIZES = {"warmstart": 4000, "train": 2000, "heldout": 64}
TINY = TinyConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=192)


def warm(out: Path, seed: int, steps: int):
    """Data, the tiny model, its warm start (saved to out/warm; kept there from an earlier run of the same
    ``--work`` folder)."""
    paths = demo_data(out / "data", seed, SIZES)
    if (out / "warm" / "config.json").exists():
        return paths
    tok = tiny.build_tokenizer()
    model = tiny.build_model(tok, TINY, seed=seed)
    rows = read_jsonl(paths["warmstart"])
    warm_start(model, tok, rows, WarmStartConfig(steps=steps, batch_size=64, lr=3e-3, warmup_steps=20, seed=seed))
    model.save_pretrained(out / "warm")
    tok.save_pretrained(out / "warm")
    return paths


def grpo_cfg(out: Path, paths, run: str, target: str, verifier: str, steps: int, **kw) -> GRPOConfig:
    base = dict(
        model=str(out / "warm"),
        data=str(paths["train"]),
        eval_data=str(paths["heldout"]),
        eval_every=10,
        verifier=verifier,
        target=target,
        group_size=8,
        prompts_per_step=8,
        max_new_tokens=48,
        lr=LR,
        beta=0.04,
        steps=steps,
        run_dir=str(out / run),
        report_to=[],
        threads=2,
        log_completions_every=10,
        seed=0,
    )
    base.update(kw)
    return GRPOConfig(**base)


def caught(out: Path, paths, target: str, steps: int) -> dict:
    """Run A (audit everything, warn) and run B (defaults, stop)."""
    a = grpo_cfg(out, paths, "watch", target, HACKABLE, steps, alarm=True, audit=1.0, allow_hackable_reward=True)
    train(a)
    b = grpo_cfg(out, paths, "stop", target, HACKABLE, steps, alarm=True, on_alarm="stop", allow_hackable_reward=True)
    stopped, message = None, ""
    try:
        train(b)
    except AlarmStopped as e:
        stopped, message = e.step + 1, str(e)
    return collect(out, stopped, message)


def collect(out: Path, stopped: int | None = None, message: str = "") -> dict:
    """Run A's curves and onsets, run B's stop, from the work folder."""
    rows_a = read_metrics(out / "watch" / "metrics.jsonl")
    alarms_b = read_alarms(out / "stop")
    if stopped is None:
        stopped = next((a["step"] for a in alarms_b if a["action"] == "stop"), None)
    return {"rows": rows_a, "onset": onset(rows_a), "onset_exploited": onset(rows_a, "alarm/exploited"),
            "alarms_a": read_alarms(out / "watch"), "stopped": stopped, "message": message, "alarms_b": alarms_b}  # fmt: skip


def cost(out: Path, paths, target: str, steps: int, rounds: int) -> list[dict]:
    """Honest reward r1, alarm off vs on, alternated; median step time per run."""
    res = []
    for i in range(rounds):
        for on in (False, True):
            cfg = grpo_cfg(out, paths, f"cost-{i}-{int(on)}", target, "r1", steps, alarm=on, eval_every=0)
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            train(cfg)
            wall = time.perf_counter() - t0
            rows = [r for r in read_metrics(Path(cfg.run_dir) / "metrics.jsonl") if r.get("step", 0) >= 1]
            res.append(
                {
                    "round": i + 1,
                    "alarm": on,
                    "load": load,
                    "wall_s": wall,
                    "step_s": statistics.median(r["perf/step_s"] for r in rows),
                    "alarm_s": statistics.median(r.get("perf/alarm_s", 0.0) for r in rows),
                    "alarm_share": statistics.median(r.get("perf/alarm_s", 0.0) / r["perf/step_s"] for r in rows),
                    "alarms": len([a for a in read_alarms(cfg.run_dir) if a["action"] != "allowed"]),
                }
            )
    return res


def heldout_math(work: Path, target: str) -> dict[str, float]:
    """Greedy held-out accuracy under the honest ``math`` verifier: the warm start, and run A's last checkpoint
    (train.py's periodic eval grades with the training reward, which the hack fools too)."""
    from transformers import AutoModelForCausalLM

    from trainer.data import load_examples
    from trainer.evaluation.evaluator import evaluate
    from trainer.grpo.rewards import VerifierReward
    from trainer.run.checkpoint import list_checkpoints

    examples = load_examples(work / "data" / "heldout.jsonl")
    out, reward = {}, VerifierReward("math", target)
    try:
        tok = tiny.build_tokenizer()
        for name, path in (("warm start", work / "warm"), ("after run A", list_checkpoints(work / "watch")[-1])):
            model = AutoModelForCausalLM.from_pretrained(path)
            out[name] = evaluate(model, tok, examples, reward, max_new_tokens=48)["accuracy"]
    finally:
        reward.close()
    return out


def cost_of(work: Path, i: int, on: bool) -> dict | None:
    """A finished cost run's figures (median step time; the run's wall from its first to last step)."""
    run = work / f"cost-{i}-{int(on)}"
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r.get("step", 0) >= 1]
    if not rows:
        return None
    return {"round": i + 1, "alarm": on, "load": float("nan"), "wall_s": rows[-1]["perf/elapsed_s"],
            "step_s": statistics.median(r["perf/step_s"] for r in rows),
            "alarm_s": statistics.median(r.get("perf/alarm_s", 0.0) for r in rows),
            "alarm_share": statistics.median(r.get("perf/alarm_s", 0.0) / r["perf/step_s"] for r in rows),
            "alarms": len([a for a in read_alarms(run) if a["action"] != "allowed"])}  # fmt: skip


def replay(metrics_rows: list[dict], t: Thresholds) -> dict[str, int]:
    """How many alarms each rule (and its unguarded single signal) raises over a run's recorded figures."""
    hist: list[StepStats] = []
    fired = {name: 0 for name in RULES} | {f"{n} (single signal)": 0 for n in SINGLE}
    last: dict[str, int] = {}
    for r in metrics_rows:
        if r.get("step", 0) < 1 or "alarm/paid" not in r:
            if r.get("eval/accuracy") is not None and hist:
                hist[-1] = dataclasses.replace(hist[-1], eval_acc=r["eval/accuracy"])
            continue
        hist.append(stats_of(r))
        checks = {**{n: RULES[n] for n in RULES}, **{f"{n} (single signal)": f for n, f in SINGLE.items()}}
        for name, rule in checks.items():
            if rule(hist, t) is not None:
                if r["step"] - last.get(name, -(10**9)) > t.window:
                    fired[name] += 1
                last[name] = r["step"]
    return fired


def stats_of(r: dict) -> StepStats:
    paid = int(r["alarm/paid"])
    sig = {k.split("/", 2)[2]: round(v * paid) for k, v in r.items() if k.startswith("alarm/signal/")}
    return StepStats(
        step=r["step"],
        reward=r["reward/mean"],
        paid=paid,
        audited=int(r["alarm/audited"]),
        agreed=int(r["alarm/audit_agreed"]),
        sampled=int(r.get("alarm/audit_sampled", r["alarm/audited"])),
        signals=sig,
        top_answer=str(r.get("alarm/top_answer_id")),
        top_answer_prompts=int(r["alarm/top_answer_prompts"]),
        paid_prompts=int(r["alarm/paid_prompts"]),
        len_paid=r.get("alarm/length_paid"),
        len_unpaid=r.get("alarm/length_unpaid"),
        eval_acc=r.get("eval/accuracy"),
    )


def _reward_rising(hist, t):  # the single signal behind every guard: the training reward rose
    return True if reward_rise(hist, t) >= t.reward_rise else None


def _length_moved(hist, t):
    if len(hist) < t.baseline + 1:
        return None
    a, b = length_ratio(hist[: t.baseline]), length_ratio(hist[-t.window :])
    return True if a and b and max(a / b, b / a) >= t.length_factor else None


def _heldout_flat(hist, t):
    ev = [s.eval_acc for s in hist if s.eval_acc is not None]
    return True if len(ev) >= 2 and ev[-1] - ev[-2] <= t.heldout_flat else None


SINGLE = {"reward rising": _reward_rising, "length ratio moved": _length_moved, "held-out flat": _heldout_flat}


def fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def report(args, got: dict, costs: list[dict], honest: dict[str, dict[str, int]]) -> str:
    out = [
        f"# bench/training/alarm.py {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; "
        f"tiny Qwen2 {TINY.hidden_size}x{TINY.num_hidden_layers}, warm start {args.warm_steps} steps, "
        f"GRPO 8 prompts x G=8, lr {LR}, seed 0; load {os.getloadavg()[0]:.1f} at the end"
    ]
    if got:
        out.append("\n## 1. A hack learned and caught (reward: contains_reference; audit: math, fallback none)")
        out.append(
            "run A (audit 1, warn): per-step curves (heldout: train.py's periodic greedy eval, graded by the "
            "training reward, which the hack fools too; the math-graded figures are below)"
        )
        out.append("step  reward  paid  audited  agreed  agreement  exploited  heldout  alarm")
        for r in curves(got["rows"]):
            out.append(f"{r['step']:>4}  {fmt(r['reward/mean']):>6}  {fmt(r['alarm/paid']):>4}  {fmt(r['alarm/audited']):>7}  "
                       f"{fmt(r['alarm/audit_agreed']):>6}  {fmt(r['alarm/audit_agreement']):>9}  {fmt(r['alarm/exploited']):>9}  "
                       f"{fmt(r['eval/accuracy']):>7}  {'ALARM' if r['alarm/fired'] else ''}")  # fmt: skip
        first_a = [a for a in got["alarms_a"] if a["action"] != "allowed"]
        out.append(
            f"onset, training reward (its 5-step mean stays >= +0.10 above the first 5 steps'): step {got['onset']}"
        )
        out.append(f"onset, exploited share (the same rule on alarm/exploited): step {got['onset_exploited']}")
        if got.get("heldout_math"):
            out.append(
                "held-out accuracy, greedy, graded by math (64 problems): "
                + ", ".join(f"{k} {v:.3f}" for k, v in got["heldout_math"].items())
            )
        out.append("run A alarms: " + ", ".join(f"step {a['step']} {a['rule']}" for a in first_a))
        b = [a for a in got["alarms_b"] if a["action"] == "stop"]
        out.append(
            f"run B (defaults: audit 5%, on_alarm stop): stopped at step {got['stopped']}"
            + (f" by {b[0]['rule']}: {b[0]['message']}" if b else "")
        )
        if got["message"]:
            out.append("run B message: " + got["message"].replace("\n", "\n  "))
    if costs:
        out.append("\n## 2. Cost on step time (honest reward r1; alarm off vs on, alternated)")
        for c in costs:
            share = f", alarm.check {c['alarm_s']:.3f} s = {c['alarm_share']:.1%} of the step" if c["alarm"] else ""
            out.append(
                f"round {c['round']} alarm {'on ' if c['alarm'] else 'off'}: median step {c['step_s']:.3f} s{share}, "
                f"run {c['wall_s']:.1f} s, load {c['load']:.2f}, alarms {c['alarms']}"
            )
        off = [c for c in costs if not c["alarm"]]
        on = [c for c in costs if c["alarm"]]
        ratios = [b["wall_s"] / a["wall_s"] for a, b in zip(off, on, strict=True)]
        sratios = [b["step_s"] / a["step_s"] for a, b in zip(off, on, strict=True)]
        out.append(
            f"median step: off {statistics.median(c['step_s'] for c in off):.3f} s, on "
            f"{statistics.median(c['step_s'] for c in on):.3f} s; per-round on/off: step {statistics.median(sratios):.3f} "
            f"(min {min(sratios):.3f}, max {max(sratios):.3f}), run wall {statistics.median(ratios):.3f} "
            f"(min {min(ratios):.3f}, max {max(ratios):.3f})"
        )
    if honest:
        out.append("\n## 3. Honest runs (make train, alarm on): alarms each rule raised, replayed from metrics.jsonl")
        names = list(next(iter(honest.values())))
        for run, fired in honest.items():
            out.append(f"{run}: " + ", ".join(f"{n} {fired[n]}" for n in names))
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warm-steps", type=int, default=400)
    ap.add_argument("--cost-rounds", type=int, default=3)
    ap.add_argument("--cost-steps", type=int, default=20)
    ap.add_argument("--skip-caught", action="store_true")
    ap.add_argument("--honest", nargs="*", default=[], help="run folders of honest runs trained with the alarm on")
    ap.add_argument("--out", default="bench/results/alarm.txt")
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from --work's finished runs")
    ap.add_argument("--cost-work", default=None, help="--report-only: the cost runs' folder (default: --work)")
    args = ap.parse_args()
    if args.report_only:
        work = Path(args.work)
        cw = Path(args.cost_work or work)
        costs = [c for c in (cost_of(cw, i, on) for i in range(args.cost_rounds) for on in (False, True)) if c]
        honest = {d: replay(read_metrics(Path(d) / "metrics.jsonl"), Thresholds()) for d in args.honest}
        got = collect(work) if (work / "watch").exists() else {}
        if got:
            with LocalServer(pool_size=2, log_path=str(work / "server2.log")) as srv:
                got["heldout_math"] = heldout_math(work, srv.target)
        text = report(args, got, costs, honest)
        Path(args.out).write_text(text)
        print(text)
        return
    torch.set_num_threads(2)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-alarm-"))
    work.mkdir(parents=True, exist_ok=True)
    got, costs = {}, []
    with LocalServer(pool_size=2, log_path=str(work / "server.log")) as srv:
        with VerifierClient(srv.target) as c:
            register_hackable(c)
        paths = warm(work, 0, args.warm_steps)
        if not args.skip_caught:
            got = caught(work, paths, srv.target, args.steps)
        if args.cost_rounds:
            costs = cost(work, paths, srv.target, args.cost_steps, args.cost_rounds)
    honest = {d: replay(read_metrics(Path(d) / "metrics.jsonl"), Thresholds()) for d in args.honest}
    text = report(args, got, costs, honest)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
