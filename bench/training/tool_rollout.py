"""Benchmark: tool rollouts (trainer/rollout/tool_decode.py), in one run.

    .venv/bin/python -m bench.training.tool_rollout [--rounds 3] [--group 8] [--calls 3] [--threads 1] [--steps 3] [--service]

1. KV continuation against re-encoding: the same tool rollouts (greedy, the same model, prompts and scripted tool
   outputs, so the same tokens: checked) decoded twice per round, alternately, ``reencode=False`` (after a call's
   output, decoding goes on from the KV cache) and ``reencode=True`` (a fresh cache from the whole sequence after
   every output: what a loop of ``generate`` calls does), on the lean forward and on the HF forward. Printed:
   the median wall time of each, the median of the per-round ratios and their spread, the 1-minute load average.
2. A GRPO step's time split with tools (``trainer.train`` for ``--steps`` steps, sampled at T=1): decode, tools,
   grade, update, medians over the steps after the first. Without ``--service`` the tool calls go to a scripted
   runner that runs nothing (tools ~0 s) and the reward is a Python function; with ``--service`` (needs the
   sessions service) the calls run in sandbox sessions of a LocalServer and the math verifier grades.

The model: a tiny Qwen2 (tests/trainer/tool_helpers.py) trained here, in about a minute, to answer with ``--calls``
calls after a ~140-character preamble (the prompt a real run would carry), so the prefix is worth caching.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tests.trainer import tool_helpers as th
from trainer.config import GRPOConfig, ToolsConfig
from trainer.grpo.rewards import PythonReward
from trainer.rollout.tool_decode import generate_tool_rollout

PREAMBLE = (
    "You can run Python: a ```python block runs when it is closed, its output comes back between <output> and "
    "</output>. Box the final answer. Problem: "
)


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}"


def boxed(text: str, ref: str) -> float | None:
    import re

    found = re.findall(r"\\boxed\{([^{}]*)\}", text)
    return None if not found else float(found[-1].strip() == ref)


def continuation(model, tok, args) -> None:
    examples = th.examples("a", PREAMBLE)
    runner = th.runner(calls=args.calls)
    tools = ToolsConfig(max_calls=args.calls + 1)
    for path in ("lean", "hf"):
        times: dict[str, list[float]] = {"kv": [], "reencode": []}
        ratios, loads, ids = [], [], {}
        for rnd in range(args.rounds):
            loads.append(os.getloadavg()[0])
            order = ("kv", "reencode") if rnd % 2 == 0 else ("reencode", "kv")
            for mode in order:
                t0 = time.perf_counter()
                ro = generate_tool_rollout(
                    model,
                    tok,
                    examples,
                    args.group,
                    runner=runner,
                    tools=tools,
                    max_new_tokens=args.max_new_tokens,
                    do_sample=False,
                    fast_path=path == "lean",
                    reencode=mode == "reencode",
                )
                times[mode].append(time.perf_counter() - t0)
                ids.setdefault(mode, ro.completion_ids)
                calls = sum(ro.tool_trace.calls) / len(ro)
            ratios.append(times["reencode"][-1] / times["kv"][-1])
        same = torch.equal(ids["kv"], ids["reencode"])
        print(
            f"{path:>4}: kv {statistics.median(times['kv']):.3f} s ({spread(times['kv'])}), re-encode "
            f"{statistics.median(times['reencode']):.3f} s ({spread(times['reencode'])}); speed-up median "
            f"{statistics.median(ratios):.2f}x ({spread(ratios)}); same tokens: {same}; {calls:.1f} calls/rollout, "
            f"{len(ro)} rollouts, prompt {ro.prompt_ids.shape[1]} + completion {ro.completion_ids.shape[1]} tokens; "
            f"load {', '.join(f'{x:.2f}' for x in loads)}"
        )


def step_split(model, tok, args) -> None:
    from trainer.run.metrics import read_metrics
    from trainer.train import train

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "train.jsonl"
        rows = th.examples("a", PREAMBLE) * 4
        data.write_text("".join(json.dumps({"prompt": e.prompt, "answer": e.reference}) + "\n" for e in rows))
        cfg = GRPOConfig(
            data=str(data),
            group_size=args.group,
            prompts_per_step=2,
            max_new_tokens=args.max_new_tokens,
            steps=args.steps,
            beta=0.04,
            lr=1e-5,
            tools=ToolsConfig(max_calls=args.calls + 1),
            run_dir=str(Path(tmp) / "run"),
            report_to=[],
            log_completions_every=0,
            verifier="math",
        )
        srv = None
        if args.service:
            from trainer.grpo.rewards import VerifierReward
            from trainer.rollout.session_runner import SessionToolRunner
            from verifiers.client import VerifierClient
            from verifiers.launch import LocalServer

            srv = LocalServer(pool_size=2).__enter__()
            cfg = cfg.model_copy(update={"target": srv.target})
            reward, runner = VerifierReward("math", srv.target), SessionToolRunner(VerifierClient(srv.target))
        else:
            reward, runner = PythonReward(boxed), th.runner(calls=args.calls)
        try:
            train(cfg, copy.deepcopy(model), tok, reward_fn=reward, tools=runner)
        finally:
            if srv is not None:
                srv.__exit__(None, None, None)
        m = read_metrics(Path(tmp) / "run" / "metrics.jsonl")[1:] or read_metrics(Path(tmp) / "run" / "metrics.jsonl")
    med = {
        k: statistics.median(r[k] for r in m)
        for k in (
            "perf/rollout_s",
            "perf/tool_s",
            "verifier/batch_s",
            "perf/update_s",
            "perf/step_s",
            "tool/calls_per_completion",
            "tool/output_share",
        )
    }
    where = "sandbox sessions + math verifier" if args.service else "scripted runner (runs nothing) + Python reward"
    print(
        f"step ({where}, {args.group * 2} rollouts, medians of {len(m)} steps): decode "
        f"{med['perf/rollout_s'] - med['perf/tool_s']:.3f} s, tools {med['perf/tool_s']:.3f} s, grade "
        f"{med['verifier/batch_s']:.3f} s, update {med['perf/update_s']:.3f} s, step {med['perf/step_s']:.3f} s; "
        f"{med['tool/calls_per_completion']:.2f} calls/completion, tool output {med['tool/output_share']:.0%} "
        "of completion tokens"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-new-tokens", type=int, default=200)
    ap.add_argument("--train-steps", type=int, default=200)
    ap.add_argument("--service", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model, tok = th.caller(calls=args.calls, preamble=PREAMBLE, kinds="a", steps=args.train_steps)
    print(
        f"caller model trained in {time.perf_counter() - t0:.0f} s; threads {args.threads}, G={args.group}, "
        f"prompts {len(th.KS)}, max_new_tokens {args.max_new_tokens}"
    )
    continuation(model, tok, args)
    step_split(model, tok, args)


if __name__ == "__main__":
    main()
