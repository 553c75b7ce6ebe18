"""bench/training/vs_trl.py's baseline arm: TRL's GRPOTrainer (trl==1.16.0) on the shared inputs, called the
way its documentation recommends; run in its own process by bench/training/vs_trl.py (``--worker trl``)."""

from __future__ import annotations

import time
from pathlib import Path

from bench.training.inputs import (
    BETA,
    LR,
    PROMPTS,
    SEED,
    WORKLOADS,
    G,
    peak_rss_mb,
    reward,
    rows,
)


def run_trl(folder: Path, workload: str, steps: int, threads: int) -> dict:
    t0 = time.perf_counter()
    import torch

    try:
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
        from trl import GRPOConfig, GRPOTrainer
    except ImportError:
        return {"error": "trl is not installed: `.venv/bin/pip install trl==1.16.0` (benchmark only)"}

    torch.set_num_threads(threads)
    log: list[dict] = []
    clock: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_train_begin(self, *a, **k):
            clock["begin"], clock["cpu_begin"] = (
                time.perf_counter(),
                time.process_time(),
            )

        def on_train_end(self, *a, **k):
            clock["end"], clock["cpu_end"] = time.perf_counter(), time.process_time()

        def on_log(self, args, state, control, logs=None, **k):
            log.append(dict(logs or {}))

    def reward_fn(completions, answer, **_):
        return [reward(c, a) for c, a in zip(completions, answer, strict=True)]

    args = GRPOConfig(
        output_dir=str(folder / f"trl-run-{workload}"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=G * PROMPTS,
        num_generations=G,
        max_completion_length=WORKLOADS[workload]["max_new"],
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        beta=BETA,
        loss_type="grpo",
        learning_rate=LR,
        lr_scheduler_type="constant",
        max_grad_norm=1.0,
        gradient_checkpointing=False,
        disable_dropout=True,
        max_steps=steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=SEED,
        dataloader_num_workers=0,
    )
    model = AutoModelForCausalLM.from_pretrained(folder / "model")
    tok = AutoTokenizer.from_pretrained(folder / "model")
    data = Dataset.from_list(rows(workload))
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_fn,
        args=args,
        train_dataset=data,
        processing_class=tok,
        callbacks=[Clock()],
    )
    trainer.train()
    step_logs = [r for r in log if "completions/mean_length" in r]
    tokens = sum(r["completions/mean_length"] * G * PROMPTS for r in step_logs)
    loop_s = clock["end"] - clock["begin"]
    cpu_s = clock["cpu_end"] - clock["cpu_begin"]
    return {
        "cpu_s": cpu_s,
        "tokens_per_cpu_s": tokens / cpu_s,
        "startup_s": clock["begin"] - t0,
        "loop_s": loop_s,
        "tokens": tokens,
        "tokens_per_s": tokens / loop_s,
        "peak_rss_mb": peak_rss_mb(),
        "reward_mean": sum(r.get("reward", 0.0) for r in step_logs) / max(1, len(step_logs)),
        "steps": len(step_logs),
    }
