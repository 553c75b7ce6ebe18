"""Data-parallel GRPO (trainer/distributed.py) on the CPU with the gloo backend, real processes.

The must-show: two processes, each holding half of the step's groups, take the same optimizer step
(to 1e-6) as one process holding the whole global batch. The batch is a real rollout of the tiny
model (trainer/pipelines/tiny.py) sampled once with a fixed seed; its rewards are a deterministic function of
the completion text; both runs feed it to ``trainer.grpo.update.optimize``. Ranks are real processes
(torch.multiprocessing, env:// rendezvous on a free loopback port), DDP all-reduces their gradients.

SGD is the optimizer here so the parameter difference *is* the gradient difference (Adam's first
step is ~lr*sign(g) and would turn float rounding in near-zero gradients into lr-sized differences).
Each rank's completions are cut to its own longest completion, as a real rank's rollout would be
(the ranks' widths differ): no loss may depend on the padded width.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from trainer import distributed
from trainer.config import GRPOConfig, TinyConfig
from trainer.data import Example
from trainer.grpo.loss import masked_group_advantages
from trainer.grpo.rewards import Batch, Score
from trainer.grpo.step import token_loss_mask
from trainer.grpo.update import Learner, UpdateBatch, optimize, score_logprobs
from trainer.pipelines import tiny
from trainer.policy import load_policy
from trainer.rollout.decode import generate_rollout

ROOT = Path(__file__).resolve().parents[2]
G, PROMPTS = 4, 4  # global batch: 4 groups of 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cfg(loss_type: str, micro: int | None) -> GRPOConfig:
    return GRPOConfig(
        group_size=G,
        prompts_per_step=PROMPTS,
        max_new_tokens=12,
        beta=0.04,
        loss_type=loss_type,
        micro_batch_size=micro,
        device="cpu",
        dtype="float32",
        lr=0.1,
    )


def _model_and_batch(cfg: GRPOConfig):
    """The same model and global batch in every process: seeded build, seeded sampling, text rewards."""
    torch.set_num_threads(1)
    tok = tiny.build_tokenizer()
    tiny_cfg = TinyConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=64)
    model, tok = load_policy(cfg, tiny.build_model(tok, tiny_cfg, seed=0), tok)
    examples = [Example(f"{a}+{a + 1}=", str(2 * a + 1)) for a in range(PROMPTS)]
    torch.manual_seed(1)
    ro = generate_rollout(model, tok, examples, G, max_new_tokens=cfg.max_new_tokens, use_chat_template=False)
    half = len(ro) // 2  # the second half's completions end early (as at an EOS): that rank's width is smaller
    ro.completion_mask[half:, 7:] = 0
    ro.completion_ids[half:, 7:] = tok.pad_token_id
    ro.truncated[half:] = False
    ro.texts[half:] = tok.batch_decode(ro.completion_ids[half:], skip_special_tokens=True)
    rewards = [(len(t) % 3) / 2 + (0.25 if any(c.isdigit() for c in t) else 0.0) for t in ro.texts]
    scores = [Score(r, "CORRECT" if r >= 1 else "INCORRECT") for r in rewards]
    ref = tiny.build_model(tok, tiny_cfg, seed=1)
    return model, tok, ref, Batch(ro, torch.tensor(rewards), torch.ones(len(ro), dtype=torch.bool), scores, 0.0, 1)


def _shard(batch: Batch, rank: int, world: int) -> Batch:
    """Rank's contiguous share of whole groups, completions cut to the shard's own longest one."""
    n = len(batch.rollout) // world
    rows = list(range(rank * n, (rank + 1) * n))
    ro = batch.rollout.select(rows)
    width = int(ro.completion_mask.sum(1).max())
    ro.completion_ids, ro.completion_mask = ro.completion_ids[:, :width], ro.completion_mask[:, :width]
    ro.sample_logprobs = None if ro.sample_logprobs is None else ro.sample_logprobs[:, :width]
    return Batch(ro, batch.rewards[rows], batch.valid[rows], batch.scores[rank * n : (rank + 1) * n], 0.0, 1)


def _update(cfg, model, tok, ref, batch: Batch, ctx: distributed.Dist) -> list[torch.Tensor]:
    train_model = distributed.wrap(model, ctx, "ddp")
    adv = masked_group_advantages(cfg, batch.rewards, batch.valid)
    ref_lp = score_logprobs(ref, batch.rollout, cfg)
    opt = torch.optim.SGD([p for p in train_model.parameters() if p.requires_grad], lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    optimize(
        cfg, Learner(train_model, opt, sched, ctx), UpdateBatch(batch, adv, token_loss_mask(cfg, batch), None, ref_lp)
    )
    return [p.detach().clone() for p in model.parameters()]


VARIANTS = [("grpo", None), ("grpo", 4), ("token_mean", 4), ("dr_grpo", None)]
METRICS = {"outcome/CORRECT": 3.0, "completion/length_max": 7.0, "reward/mean": 0.5, "perf/tokens": 30.0}


def _ranks_main(rank: int, world: int, port: int, out: str) -> None:
    """One rank: every variant's step on its shard, then a metrics reduction, in one process group (a spawn of two
    processes that import torch and transformers costs more than all the steps together)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    os.environ["LOCAL_RANK"] = str(rank)
    ctx = distributed.setup(torch.device("cpu"))
    try:
        for loss_type, micro in VARIANTS:
            cfg = _cfg(loss_type, micro)
            model, tok, ref, batch = _model_and_batch(cfg)
            params = _update(cfg, model, tok, ref, _shard(batch, rank, world), ctx)
            torch.save(params, Path(out) / f"rank{rank}-{loss_type}-{micro}.pt")
        m = {"outcome/CORRECT": 1.0 + rank, "completion/length_max": 5.0 + 2 * rank, "reward/mean": rank * 1.0}
        m["perf/tokens"] = 10.0 + 10 * rank
        got = distributed.reduce_metrics(m, ctx)
        if rank == 0:
            torch.save(got, Path(out) / "metrics.pt")
    finally:
        distributed.teardown(ctx)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    """The folder where two real rank processes left their parameters after each variant's step, and rank 0 the
    reduced metrics."""
    out = tmp_path_factory.mktemp("ranks")
    mp.spawn(_ranks_main, args=(2, free_port(), str(out)), nprocs=2, join=True)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("loss_type,micro", VARIANTS)
def test_two_ranks_take_the_same_step_as_one_process(two_ranks, loss_type, micro):
    cfg = _cfg(loss_type, micro)
    model, tok, ref, batch = _model_and_batch(cfg)
    before = [p.detach().clone() for p in model.parameters()]
    single = _update(cfg, model, tok, ref, batch, distributed.Dist())
    ranks = [torch.load(two_ranks / f"rank{r}-{loss_type}-{micro}.pt") for r in range(2)]
    moved = max(float((a - b).abs().max()) for a, b in zip(single, before, strict=True))
    assert moved > 1e-3, "the step must move the parameters for the comparison to mean anything"
    for params in ranks:
        worst = max(float((a - b).abs().max()) for a, b in zip(params, single, strict=True))
        assert worst < 1e-6, f"{loss_type}: 2 ranks differ from one process by {worst:.2e}"


def test_a_batch_that_does_not_split_across_ranks_is_a_clear_error():
    with pytest.raises(distributed.DistributedError, match="multiple of the number of processes"):
        distributed.check_batch(5, distributed.Dist(rank=0, world=2))


@pytest.mark.slow
def test_metrics_are_summed_maxed_or_averaged_across_ranks(two_ranks):
    assert torch.load(two_ranks / "metrics.pt") == METRICS


# ---------------------------------------------------------------------------------------------
# end to end: torchrun -m trainer.train, 2 ranks, a real verifier service
# ---------------------------------------------------------------------------------------------


def torchrun_train(tmp_path: Path, target: str, extra: list[str]) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """``torchrun --nproc_per_node 2 -m trainer.train`` for 2 steps on a tiny model: (process, run dir, init)."""
    init = tiny.build(tmp_path / "init", TinyConfig(hidden_size=32, num_hidden_layers=2, intermediate_size=64))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"prompt": "{i}+{i + 1}=", "answer": "{2 * i + 1}"}}\n' for i in range(16)))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port())]
    cmd += ["-m", "trainer.train", "--model", str(init), "--data", str(data), "--steps", "2", "--verifier"]
    cmd += ["tag_count", "--target", target, "--run_dir", str(run), "--group_size", "4"]
    cmd += ["--prompts_per_step", "4", "--max_new_tokens", "8", "--threads", "1", *extra]
    cmd = [c.replace("{data}", str(data)) for c in cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, run, init


@pytest.mark.slow
@pytest.mark.docker
def test_torchrun_two_ranks_train_and_only_rank_0_writes(tmp_path, verifier_server):
    proc, run, _ = torchrun_train(tmp_path, verifier_server.target, ["--log_completions_every", "1"])
    rows = [line for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert len(rows) == 2, "one metrics line per step: only rank 0 logs"
    last = json.loads(rows[-1])
    graded = sum(last[f"outcome/{o}"] for o in ("CORRECT", "INCORRECT", "NO_ANSWER", "SANDBOX_ERROR"))
    assert graded == 4 * 4, "outcome counts are summed over both ranks' groups (the global batch)"
    assert (run / "checkpoints" / "step-000002" / "model.safetensors").exists()
    assert proc.stdout.count("done: 2 steps") == 2
