"""FSDP2 (``parallel: fsdp``, trainer/distributed.py) on the CPU with the gloo backend, real processes.

- Two ranks with the policy sharded take the same optimizer step (to 1e-6) as one process on the same
  global batch (the batch and its rewards are built as in tests/trainer/test_distributed.py).
- ``gathered``: inside it, ranks may run different numbers of forwards (as ranks whose rollouts end at
  different lengths do) without a collective mismatch, and the logits equal the unsharded model's.
- The gathered checkpoint (``full_state`` + ``save_checkpoint``) loads with ``from_pretrained`` and holds
  exactly the trained weights.
- End to end: ``torchrun -m trainer.train --parallel fsdp``, 2 ranks, a real verifier service.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from transformers import AutoModelForCausalLM

from tests.trainer.test_distributed import _cfg, _model_and_batch, _shard, free_port, torchrun_train
from trainer import distributed
from trainer.grpo.loss import masked_group_advantages
from trainer.grpo.step import token_loss_mask
from trainer.grpo.update import Learner, UpdateBatch, optimize, score_logprobs
from trainer.run.checkpoint import save_checkpoint


def _step(cfg, model, ref, batch, ctx, parallel: str):
    train_model = distributed.wrap(model, ctx, parallel)
    adv = masked_group_advantages(cfg, batch.rewards, batch.valid)
    ref_lp = score_logprobs(ref, batch.rollout, cfg)
    opt = torch.optim.SGD([p for p in train_model.parameters() if p.requires_grad], lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    optimize(
        cfg, Learner(train_model, opt, sched, ctx), UpdateBatch(batch, adv, token_loss_mask(cfg, batch), None, ref_lp)
    )
    return train_model, opt, sched


def _rank_main(rank: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2")
    os.environ["LOCAL_RANK"] = str(rank)
    cfg = _cfg("grpo", None)
    model, tok, ref, batch = _model_and_batch(cfg)
    ctx = distributed.setup(torch.device("cpu"))
    try:
        train_model, opt, sched = _step(cfg, model, ref, _shard(batch, rank, 2), ctx, "fsdp")
        assert distributed.is_sharded(train_model)
        x = batch.rollout.prompt_ids[:2]
        with torch.no_grad(), distributed.gathered(model):
            for _ in range(2 + 3 * rank):  # rank 1 runs 3 more forwards than rank 0: no collective inside
                logits = model(input_ids=x).logits
        weights = distributed.full_model_state(model)  # a collective: every rank
        model_sd, optim_sd = distributed.full_state(model, opt)
        if rank == 0:
            torch.save({"weights": weights, "logits": logits, "x": x}, Path(out) / "rank0.pt")
            save_checkpoint(out, 1, model, tok, opt, sched, state_dict=model_sd, optimizer_state=optim_sd)
    finally:
        distributed.teardown(ctx)


@pytest.mark.slow
def test_fsdp_two_ranks_take_the_one_process_step_and_save_a_full_checkpoint(tmp_path):
    cfg = _cfg("grpo", None)
    model, tok, ref, batch = _model_and_batch(cfg)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    _step(cfg, model, ref, batch, distributed.Dist(), "fsdp")
    single = {k: v.detach() for k, v in model.named_parameters()}
    mp.spawn(_rank_main, args=(free_port(), str(tmp_path)), nprocs=2, join=True)
    got = torch.load(tmp_path / "rank0.pt")
    moved = max(float((single[k] - before[k]).abs().max()) for k in single)
    assert moved > 1e-3, "the step must move the parameters for the comparison to mean anything"
    worst = max(float((got["weights"][k] - single[k]).abs().max()) for k in single)
    assert worst < 1e-6, f"2 FSDP ranks differ from one process by {worst:.2e}"
    with torch.no_grad():
        assert torch.allclose(got["logits"], model(input_ids=got["x"]).logits, atol=1e-5)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "checkpoints" / "step-000001")
    for k, v in loaded.named_parameters():
        assert torch.equal(v, got["weights"][k]), f"checkpoint {k} is not the ranks' trained weight (sharded?)"
    state = torch.load(tmp_path / "checkpoints" / "step-000001" / "trainer_state.pt", weights_only=False)
    assert state["optimizer"]["param_groups"], "the gathered optimizer state is saved"


@pytest.mark.slow
@pytest.mark.docker
def test_torchrun_fsdp_two_ranks_train_and_save_a_loadable_checkpoint(tmp_path, verifier_server):
    extra = [
        "--parallel",
        "fsdp",
        "--save_every",
        "1",
        "--eval_every",
        "1",
        "--eval_data",
        "{data}",
        "--eval_limit",
        "4",
    ]
    _, run, init = torchrun_train(tmp_path, verifier_server.target, extra)
    ckpt = run / "checkpoints" / "step-000002"
    trained = AutoModelForCausalLM.from_pretrained(ckpt)
    start = AutoModelForCausalLM.from_pretrained(init)
    moved = max(
        float((a - b).detach().abs().max()) for a, b in zip(trained.parameters(), start.parameters(), strict=True)
    )
    assert moved > 0, "the checkpoint holds the trained (gathered) weights"
    assert (run / "checkpoints" / "step-000001" / "model.safetensors").exists()
