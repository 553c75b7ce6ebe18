"""The training loop. End-to-end tests talk to a real verifier service (LocalServer: a child process
serving gRPC; the math verifier runs in Docker), never to a mock of it.

- the entry point (`python -m trainer.train --config FILE --key value`) trains a tiny model 3 steps,
  its parameters change, and its checkpoint loads with AutoModelForCausalLM.from_pretrained;
- a reward that favours the R1 tag tokens (the service's `tag_count`) makes their probability rise;
- a run interrupted after a checkpoint and resumed logs the same metrics as an uninterrupted run;
- masks: padding, truncated and SANDBOX_ERROR rows have no effect on the update.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM

from tests.trainer.test_rollout import R1_TAGS, tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig, load_config
from trainer.data import Example
from trainer.errors import ConfigError, VerifierSetupError
from trainer.evaluation.evaluator import evaluate_accuracy
from trainer.grpo.loss import masked_group_advantages
from trainer.grpo.rewards import Batch, Score, VerifierReward
from trainer.grpo.step import token_loss_mask
from trainer.grpo.update import Learner, UpdateBatch, optimize, score_logprobs
from trainer.policy import load_policy, make_optimizer
from trainer.rollout.decode import generate_rollout
from trainer.run.metrics import read_metrics
from trainer.train import train

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)


def write_data(path: Path, n: int = 16) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"prompt": f"{i}+{i + 1}=", "answer": str(2 * i + 1)}) + "\n")
    return path


def small_cfg(tmp_path: Path, target: str, **kw) -> GRPOConfig:
    base = dict(
        data=str(write_data(tmp_path / "train.jsonl")),
        verifier="tag_count",
        target=target,
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=8,
        lr=3e-3,
        beta=0.04,
        steps=3,
        run_dir=str(tmp_path / "run"),
        threads=1,
        log_completions_every=1,
    )
    return GRPOConfig(**{**base, **kw})


# ---------------------------------------------------------------------------------------------
# end to end, real service
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
def test_entry_point_trains_three_steps_and_saves_a_loadable_model(tmp_path, verifier_server):
    tok = tiny_tokenizer()
    init = tmp_path / "init"
    tiny_model(tok).save_pretrained(init)
    tok.save_pretrained(init)
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(yaml.safe_dump({"model": str(init), "data": str(write_data(tmp_path / "d.jsonl")), "steps": 10}))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "trainer.train", "--config", str(cfg), "--steps", "3", "--verifier", "tag_count"]
    cmd += ["--target", verifier_server.target, "--run_dir", str(run), "--group_size", "4", "--prompts_per_step", "2"]
    cmd += ["--max_new_tokens", "8", "--lr", "1e-3", "--threads", "1", "--log_completions_every", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]

    rows = read_metrics(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in ("reward/mean", "loss/kl", "loss/clip_ratio/high", "policy/entropy", "completion/length_mean"):
        assert key in rows[0]
    assert sum(r[f"outcome/{o}"] for r in rows for o in ("CORRECT", "INCORRECT", "NO_ANSWER")) == 3 * 8
    assert (run / "curves.png").exists() and (run / "completions.jsonl").exists() and any((run / "tb").iterdir())

    before = AutoModelForCausalLM.from_pretrained(init)
    after = AutoModelForCausalLM.from_pretrained(run / "checkpoints" / "step-000003")
    changed = [k for k, v in before.state_dict().items() if not torch.equal(v, after.state_dict()[k])]
    assert len(changed) > 0.5 * len(before.state_dict())


def tag_probability(model, tok) -> float:
    """Mean probability of the four R1 tag tokens as the first completion token, over a few prompts."""
    ids = tok([f"{i}+{i + 1}=" for i in range(8)], return_tensors="pt", padding=True)
    pos = (ids["attention_mask"].cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(**ids, position_ids=pos).logits[:, -1]
    tags = tok.convert_tokens_to_ids(R1_TAGS)
    return torch.softmax(logits.float(), -1)[:, tags].sum(-1).mean().item()


@pytest.mark.docker
def test_reward_that_favours_tag_tokens_raises_their_probability(tmp_path, verifier_server):
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=1)
    before = tag_probability(model, tok)
    cfg = small_cfg(tmp_path, verifier_server.target, steps=8, group_size=8, prompts_per_step=4, lr=1e-2, beta=0.0)
    out = train(cfg, model, tok)
    after = tag_probability(out["model"], tok)
    rewards = [r["reward/mean"] for r in read_metrics(Path(cfg.run_dir) / "metrics.jsonl")]
    assert after > before + 0.05, (before, after, rewards)


PERF = "perf/"


@pytest.mark.docker
def test_resume_gives_the_same_metrics_as_an_uninterrupted_run(tmp_path, verifier_server):
    tok = tiny_tokenizer()
    cfg = small_cfg(
        tmp_path,
        verifier_server.target,
        steps=4,
        save_every=2,
        mu=2,
        minibatches=2,
        lr_schedule="cosine",
        ref_reset_every=3,
    )
    train(cfg, tiny_model(tok), tok)
    full = read_metrics(Path(cfg.run_dir) / "metrics.jsonl")

    # the "interrupted" run: the same folder as it was right after step 2's checkpoint was written
    cut = tmp_path / "cut"
    shutil.copytree(cfg.run_dir, cut)
    shutil.rmtree(cut / "checkpoints" / "step-000004")
    resumed_cfg = cfg.model_copy(update={"run_dir": str(cut), "resume": "auto"})
    train(resumed_cfg, tiny_model(tok, seed=123), tok)  # weights come from the checkpoint, not from here
    again = read_metrics(cut / "metrics.jsonl")

    assert [r["step"] for r in again] == [1, 2, 3, 4]
    for a, b in zip(full, again, strict=True):
        a = {k: v for k, v in a.items() if not k.startswith(PERF) and not k.startswith("verifier/")}
        b = {k: v for k, v in b.items() if not k.startswith(PERF) and not k.startswith("verifier/")}
        assert a == pytest.approx(b, abs=1e-6, rel=1e-6)
    completions = [json.loads(x) for x in (cut / "completions.jsonl").read_text().splitlines()]
    assert [c["step"] for c in completions] == sorted(c["step"] for c in completions)


@pytest.mark.docker
def test_greedy_accuracy_through_the_service(tmp_path, verifier_server):
    tok = tiny_tokenizer()
    data = write_data(tmp_path / "eval.jsonl", n=6)
    a = evaluate_accuracy(tiny_model(tok), tok, data, verifier="math", target=verifier_server.target, max_new_tokens=6)
    b = evaluate_accuracy(
        tiny_model(tok), tok, str(data), verifier="math", target=verifier_server.target, max_new_tokens=6
    )
    assert a["n"] == 6 and 0.0 <= a["accuracy"] <= 1.0 and sum(a["outcomes"].values()) == 6
    assert a["completions"] == b["completions"]  # greedy: deterministic


@pytest.mark.docker
def test_unknown_verifier_fails_early_with_a_message(verifier_server):
    with pytest.raises(VerifierSetupError, match="not registered"):
        VerifierReward("no_such_verifier", verifier_server.target).check()


def test_unreachable_service_fails_early_with_a_message():
    with pytest.raises(VerifierSetupError, match="not reachable"):
        VerifierReward("math", "127.0.0.1:9").check(timeout_s=1.0)


# ---------------------------------------------------------------------------------------------
# masks (no service: the batch is built by hand)
# ---------------------------------------------------------------------------------------------


def _batch(tok, model, outcomes: list[str], rewards: list[float]) -> Batch:
    torch.manual_seed(0)
    ro = generate_rollout(model, tok, [Example("1+2=", "3"), Example("4+4=", "8")], 4, max_new_tokens=6)
    scores = [Score(r, o) for r, o in zip(rewards, outcomes, strict=True)]
    valid = torch.tensor([o != "SANDBOX_ERROR" for o in outcomes])
    return Batch(ro, torch.tensor(rewards), valid, scores, 0.0, 1)


@pytest.mark.parametrize("mask_truncated", [False, True])
def test_masked_rows_and_padding_do_not_change_the_update(mask_truncated):
    """Changing the tokens of a SANDBOX_ERROR row, of truncated rows (when masked) and of padding leaves the
    updated parameters bit-identical."""
    tok = tiny_tokenizer()
    outcomes = ["CORRECT", "SANDBOX_ERROR", "INCORRECT", "CORRECT", "INCORRECT", "CORRECT", "CORRECT", "INCORRECT"]
    rewards = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    cfg = GRPOConfig(group_size=4, prompts_per_step=2, lr=1e-2, mask_truncated=mask_truncated, beta=0.04)

    def update(scramble: bool) -> list[torch.Tensor]:
        model = tiny_model(tok)
        batch = _batch(tok, model, outcomes, rewards)
        ro = batch.rollout
        ro.truncated[3] = True  # pretend row 3 hit the length limit
        if scramble:
            gen = torch.Generator().manual_seed(7)
            noise = torch.randint(3, len(tok), ro.completion_ids.shape, generator=gen)
            dead = token_loss_mask(cfg, batch) == 0
            ro.completion_ids[:] = torch.where(dead, noise, ro.completion_ids)
        adv = masked_group_advantages(cfg, batch.rewards, batch.valid)
        opt, sched = make_optimizer(cfg, model)
        ref_lp = score_logprobs(tiny_model(tok), ro, cfg)
        optimize(cfg, Learner(model, opt, sched), UpdateBatch(batch, adv, token_loss_mask(cfg, batch), None, ref_lp))
        return [p.detach().clone() for p in model.parameters()]

    a, b = update(False), update(True)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_config_validation_and_overrides(tmp_path):
    with pytest.raises(ConfigError, match="group_size"):
        load_config(None, ["--group_size", "1"])
    with pytest.raises(ConfigError, match="divisible"):
        load_config(None, ["--group_size", "4", "--prompts_per_step", "3", "--minibatches", "5"])
    with pytest.raises(ConfigError, match="extra"):
        load_config(None, ["--no_such_field", "1"])
    p = tmp_path / "c.yaml"
    p.write_text("beta: 0.1\nlora: {r: 4}\n")
    cfg = load_config(p, ["--beta", "0", "--lora.alpha", "8"])
    assert cfg.beta == 0 and cfg.lora.r == 4 and cfg.lora.alpha == 8


@pytest.mark.docker
def test_lora_trains_only_the_adapters_and_resumes(tmp_path, verifier_server):
    pytest.importorskip("peft")
    tok = tiny_tokenizer()
    base = tiny_model(tok)
    frozen = {k: v.clone() for k, v in base.state_dict().items()}
    cfg = small_cfg(tmp_path, verifier_server.target, steps=2, save_every=1, lora={"r": 4, "alpha": 8}, lr=1e-2)
    out = train(cfg, base, tok)
    names = [n for n, p in out["model"].named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    ckpt = Path(cfg.run_dir) / "checkpoints" / "step-000002"
    assert (ckpt / "adapter_model.safetensors").exists()
    # the base weights did not move; with adapters off the model is the reference
    now = out["model"].get_base_model().state_dict()
    for k, v in frozen.items():
        k2 = k if k in now else k.rsplit(".", 1)[0] + ".base_layer." + k.rsplit(".", 1)[1]
        assert torch.equal(v, now[k2]), k
    again = train(cfg.model_copy(update={"steps": 3, "resume": "auto"}), tiny_model(tok), tok)
    assert [r["step"] for r in read_metrics(Path(cfg.run_dir) / "metrics.jsonl")] == [1, 2, 3]
    assert again["checkpoint"].name == "step-000003"


def test_gradient_checkpointing_and_shared_prefix_give_the_same_update():
    """Three ways to compute the same step: plain, prompt shared per group, activations recomputed."""
    tok = tiny_tokenizer()
    outcomes = ["CORRECT", "INCORRECT"] * 4
    rewards = [1.0, 0.0] * 4
    results = []
    for extra in ({"share_prefix": False}, {"share_prefix": True}, {"gradient_checkpointing": True}):
        cfg = GRPOConfig(group_size=4, prompts_per_step=2, lr=1e-2, mu=2, micro_batch_size=4, **extra)
        model, _ = load_policy(cfg, tiny_model(tok), tok)
        batch = _batch(tok, model, outcomes, rewards)
        adv = masked_group_advantages(cfg, batch.rewards, batch.valid)
        ref_lp = score_logprobs(tiny_model(tok), batch.rollout, cfg)
        # pi_old = the starting weights, scored by one implementation for all three (a checkpointed model's
        # hooks send its own passes to the HF forward, the others to the lean one: rounding Adam amplifies)
        old_lp = score_logprobs(load_policy(GRPOConfig(), tiny_model(tok), tok)[0], batch.rollout, cfg)
        opt, sched = make_optimizer(cfg, model)
        optimize(cfg, Learner(model, opt, sched), UpdateBatch(batch, adv, token_loss_mask(cfg, batch), old_lp, ref_lp))
        results.append([p.detach().clone() for p in model.parameters()])
    plain, shared, recomputed = results
    # Adam divides by sqrt(v): float32 rounding in near-zero gradients (the shared prefix sums the prompt's
    # terms in another order) shows up at 1e-5..2e-4 after 2 steps of lr 1e-2, depending on the CPU's kernels;
    # a wrong shared-prefix gradient moves weights by the step size itself, 1e-2
    assert all(torch.allclose(x, y, atol=1e-3) for x, y in zip(plain, shared, strict=True))
    assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(plain, recomputed, strict=True))
