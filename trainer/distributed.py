"""Data-parallel GRPO on torch.distributed: ``torchrun --nproc_per_node N -m trainer.train ...``.

What each rank does, and why the update equals one process's update on the same global batch:

- ``prompts_per_step`` is the GLOBAL number of prompts. Every rank reads the same seeded data stream,
  takes the step's global prompt list and keeps its own contiguous share (``RankStream``), so a group
  (the G completions of one prompt) never spans ranks and group advantages need no communication.
- Each rank samples and grades its own groups (its own sampling seed, its own verifier client).
- Gradients are averaged across ranks by ``DistributedDataParallel`` (``parallel: ddp``) or reduce-
  scattered by FSDP2's ``fully_shard`` (``parallel: fsdp``, for models that do not fit one device).
  Averaging equal-size shards' gradients gives the global mean for the ``grpo`` loss (mean per
  completion, then over completions). For ``token_mean`` the local minibatch weight is rescaled by
  ``world * local_tokens / global_tokens`` (``global_token_scale``) so each token weighs 1/global
  tokens; ``dr_grpo``'s normaliser is the constant N * max_new_tokens, so equal shards need nothing.
  Ranks' completions may have different padded widths: no loss depends on the width.
- Metrics are averaged across ranks (``*_max`` keys: max; counts: summed); only rank 0 writes metrics,
  completions and checkpoints.

Not covered: ``scale_rewards: batch`` uses each rank's own batch std; with ``dynamic_sampling`` each
rank refills on its own.

Under ``fsdp`` the policy's parameters are sharded in place. Rollouts, scoring without gradients and
evaluation run inside ``gathered(model)``: every rank all-gathers the full weights once and keeps them
until the block ends (FSDP's reshard-after-forward off), so ranks may decode different numbers of
tokens without a collective per forward (a rank whose rows all ended early would otherwise stop
calling the all-gathers its peers wait on). The price is the full model on each rank while sampling,
as in other FSDP + HF-generate RL trainers. Checkpoints are gathered (``full_state``: every rank takes
part, rank 0 gets the unsharded model and optimizer state) and load with ``from_pretrained``.
Resuming an ``fsdp`` run is not supported yet (a clear error).
"""

from __future__ import annotations

import contextlib
import datetime
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from trainer.config.grpo import weighs_tokens
from trainer.data import DataStream, Example
from trainer.errors import TrainerError


class DistributedError(TrainerError, RuntimeError):
    """A torchrun launch the trainer cannot honour (e.g. a batch that does not split across ranks)."""


@dataclass(frozen=True)
class Dist:
    """This process's place in the job. ``world == 1``: a plain single process, nothing initialised."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def setup(device: torch.device, backend: str | None = None, timeout_s: float = 1800.0) -> Dist:
    """Join the process group torchrun describes (env:// rendezvous); a no-op for a single process.

    Backend: ``nccl`` on CUDA, ``gloo`` on the CPU (unless given). On CUDA each rank takes the device
    ``cuda:LOCAL_RANK``."""
    if not launched_by_torchrun():
        return Dist()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = backend or ("nccl" if device.type == "cuda" else "gloo")
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    return Dist(rank, world, local)


def rank_device(name: str, ctx: Dist) -> str:
    """The device string for this rank: 'auto'/'cuda' become cuda:LOCAL_RANK under torchrun with GPUs."""
    if ctx.active and name in ("auto", "cuda") and torch.cuda.is_available():
        torch.cuda.set_device(ctx.local_rank)
        return f"cuda:{ctx.local_rank}"
    return name


def teardown(ctx: Dist) -> None:
    if ctx.active and dist.is_initialized():
        dist.destroy_process_group()


def check_batch(prompts_per_step: int, ctx: Dist) -> int:
    """Prompts per rank; the global prompt count must split evenly (whole groups per rank)."""
    if prompts_per_step % ctx.world:
        raise DistributedError(
            f"prompts_per_step={prompts_per_step} does not split across {ctx.world} ranks: "
            "use a multiple of the number of processes (each rank samples whole groups)"
        )
    return prompts_per_step // ctx.world


class RankStream:
    """This rank's share of a ``DataStream``: take(n) reads n * world prompts, keeps slice [rank*n, rank*n+n).

    Every rank advances the underlying stream identically, so its state (saved by rank 0) is the job's."""

    def __init__(self, stream: DataStream, ctx: Dist):
        self.stream, self.ctx = stream, ctx

    def take(self, n: int) -> list[Example]:
        everyone = self.stream.take(n * self.ctx.world)
        return everyone[self.ctx.rank * n : (self.ctx.rank + 1) * n]

    def state(self) -> dict[str, int]:
        return self.stream.state()

    def load(self, state: dict[str, int]) -> None:
        self.stream.load(state)


# ---------------------------------------------------------------------------------------------
# the model: DDP or FSDP2
# ---------------------------------------------------------------------------------------------


class _DDP(torch.nn.parallel.DistributedDataParallel):
    """DDP that still answers the wrapped model's attributes (config, generation_config, ...)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


def wrap(model: torch.nn.Module, ctx: Dist, parallel: str = "ddp") -> torch.nn.Module:
    """The module the training forwards/backwards go through. ``model`` itself stays usable for sampling
    and scoring without gradients (DDP shares its parameters; FSDP2 shards them in place)."""
    if not ctx.active:
        return model
    if parallel == "ddp":
        dev = next(model.parameters()).device
        ids = [dev.index] if dev.type == "cuda" else None
        # broadcast_buffers off: the models have no running statistics; parameters start equal (rank 0's)
        return _DDP(model, device_ids=ids, broadcast_buffers=False)
    if parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard

        layers = _decoder_layers(model)
        for layer in layers:
            fully_shard(layer)
        fully_shard(model)
        return model
    raise DistributedError(f"parallel must be 'ddp' or 'fsdp', got {parallel!r}")


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether ``model`` was sharded by FSDP2 (``wrap(..., "fsdp")``)."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gathered(model: torch.nn.Module):
    """Full weights on every rank for the block (a no-op unless ``model`` is FSDP-sharded). Every rank
    must enter it (the all-gather is a collective); inside, forwards issue no collectives."""
    if not is_sharded(model):
        yield model
        return
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in model.modules() if isinstance(m, FSDPModule)]
    for m in units:
        m.set_reshard_after_forward(False)
        m.unshard()
    try:
        yield model
    finally:
        for m in units:
            m.set_reshard_after_forward(True)
            m.reshard()


def full_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """(model state dict, optimizer state dict) unsharded on CPU: on rank 0 the whole thing, on the
    other ranks empty dicts. A collective under FSDP (every rank calls it); otherwise the live dicts."""
    if not is_sharded(model):
        return model.state_dict(), optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_state_dict(model, optimizer, options=opts)


def full_model_state(model: torch.nn.Module) -> dict[str, Tensor]:
    """The unsharded weights on EVERY rank (e.g. to copy into the reference). A collective under FSDP."""
    if not is_sharded(model):
        return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))


def _decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks (each sharded on its own, FSDP's usual unit): the largest ModuleList."""
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]
    return list(max(lists, key=len)) if lists else []


def no_sync(model: torch.nn.Module, sync: bool):
    """Skip DDP's gradient all-reduce on micro-batches before the minibatch's last one."""
    if sync or not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return contextlib.nullcontext()
    return model.no_sync()


# ---------------------------------------------------------------------------------------------
# loss normalisation and metrics across ranks
# ---------------------------------------------------------------------------------------------


def global_token_scale(loss_type: str, mask_mb: Tensor, ctx: Dist) -> float:
    """Factor on a minibatch's local weight so the all-reduced (averaged) gradient is the global one.

    ``token_mean`` weighs each token 1/tokens of the GLOBAL minibatch: world * local / global."""
    if not ctx.active or not weighs_tokens(loss_type):
        return 1.0
    local = mask_mb.sum().to(torch.float64).cpu()
    total = local.clone()
    dist.all_reduce(total)
    return float(ctx.world * local / total.clamp(min=1.0))


_SUMMED = ("outcome/", "perf/tokens", "dynamic/rollouts")


def reduce_metrics(m: dict[str, float], ctx: Dist) -> dict[str, float]:
    """The job's metrics: counts summed, ``*_max`` maxed, everything else averaged over ranks."""
    if not ctx.active:
        return m
    keys = sorted(m)
    vals = torch.tensor([float(m[k]) for k in keys], dtype=torch.float64)
    summed, maxed = vals.clone(), vals.clone()
    dist.all_reduce(summed)
    dist.all_reduce(maxed, op=dist.ReduceOp.MAX)
    out = {}
    for i, k in enumerate(keys):
        if k.startswith(_SUMMED) or k == "perf/tokens_per_s":
            out[k] = float(summed[i])
        elif k.endswith("_max") or k.startswith("perf/peak_mem"):
            out[k] = float(maxed[i])
        else:
            out[k] = float(summed[i]) / ctx.world
    return out


def exists_on_main(path, ctx: Dist) -> bool:
    """Rank 0's answer to ``path.exists()``, on every rank (other hosts may not share rank 0's disk)."""
    flag = torch.tensor([1.0 if ctx.is_main and path.exists() else 0.0])
    if ctx.active:
        dist.broadcast(flag, src=0)
    return bool(flag.item())


def barrier(ctx: Dist) -> None:
    if ctx.active:
        dist.barrier()


class NullLogger:
    """What ranks other than 0 log to: nothing."""

    def log(self, *a: Any, **k: Any) -> None: ...

    def log_completions(self, *a: Any, **k: Any) -> None: ...

    def truncate_after(self, *a: Any, **k: Any) -> None: ...

    def close(self) -> None: ...
