"""The same budget without tools: the control arm of a tool run (``make train TASK=tools``, configs/tools.yaml).

With ``without_tools: true`` and a ``grpo.tools`` section, ``make train`` trains a second policy after the first:
the same warm-start checkpoint, the same GRPO settings, seed, data and number of steps, but rollouts with no tool
(a call the policy writes is plain text; nothing runs it). Its held-out figures, before and after, are taken
without tools. It lives in ``<run>/without_tools/`` (``metrics.jsonl``, ``tb/``, ``checkpoints/``, ``eval_*.jsonl``)
and its figures go to summary.json under ``without_tools``. Tool use is then measured against what the same
budget buys without it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from trainer.config import load_config
from trainer.run.progress import MetricsBar

FOLDER = "without_tools"


def run_without_tools(r: Any, heldout, say) -> dict[str, Any]:
    """Train and evaluate the control arm of run ``r`` (trainer/pipelines/make_train.py's Run); its figures."""
    from trainer.policy import load_policy
    from trainer.train import train

    t0 = time.time()
    out = r.dir / FOLDER
    out.mkdir(exist_ok=True)
    start = Path(r.dir / "warmstart") if (r.dir / "warmstart" / "config.json").exists() else Path(r.grpo.model)
    raw = {**r.grpo.model_dump(), "tools": None, "run_dir": str(out), "model": str(start), "resume": None}
    cfg = load_config(None, raw)
    model, tok = load_policy(cfg)
    say(
        f"without tools: GRPO {cfg.steps} steps x {cfg.prompts_per_step} prompts x G={cfg.group_size} from {start}, "
        "the same settings with no tool (the control arm)"
    )
    before = heldout(model, tok, out / "eval_before.jsonl", None)
    say(f"held-out accuracy without tools, after warm start: {before['accuracy']:.3f} ({before['n']} problems, greedy)")
    with (out / "metrics.jsonl").open("a") as f:  # step 0 of its eval curve, as the tool arm's
        f.write(json.dumps({"step": 0, "eval/accuracy": before["accuracy"]}) + "\n")
    with MetricsBar(out / "metrics.jsonl", cfg.steps):
        res = train(cfg, model, tok)
    after = heldout(res["model"], tok, out / "eval_after.jsonl", None)
    return {"eval_before": before, "eval_after": after, "checkpoint": str(Path(res["checkpoint"]).resolve()),
            "run_dir": str(out.resolve()), "wall_s": round(time.time() - t0, 1)}  # fmt: skip
