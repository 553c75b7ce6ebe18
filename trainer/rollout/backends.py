"""Where rollouts come from: one interface, a backend per engine, picked by ``rollout_backend`` in the config.

- ``hf`` (default): the policy itself samples (``trainer.rollout.generate_rollout``: the lean decode
  loop or ``model.generate``), in the training process, on the policy's device.
- ``vllm`` (optional extra ``pip install .[vllm]``, a CUDA GPU): a colocated vLLM engine
  (``trainer/rollout/vllm.py``) holds a copy of the weights, pushed from the policy after each update
  (``sync_weights``), and samples with the same settings as the ``hf`` path (temperature, top_p,
  top_k off, no penalties, max_new_tokens, stop at the model's EOS ids), so the log-prob ratio the
  loss computes stays exact up to kernel differences.

A backend is ``generate(examples, group_size, **sampling) -> Rollout`` (the ``generate_rollout`` keywords)
plus ``sync_weights(model)`` after each optimizer update and ``close()``. Adding one is a new module and
one line in ``BACKENDS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from trainer.data import Example
from trainer.errors import BackendError
from trainer.rollout.decode import Rollout, generate_rollout

__all__ = ["BACKENDS", "HFBackend", "RolloutBackend", "make_backend"]


class RolloutBackend(Protocol):
    name: str

    def generate(self, examples: Sequence[Example], group_size: int, **sampling: Any) -> Rollout: ...

    def sync_weights(self, model: torch.nn.Module) -> None: ...

    def close(self) -> None: ...


class HFBackend:
    """The policy samples its own rollouts (``generate_rollout``); nothing to synchronise."""

    name = "hf"

    def __init__(self, model, tokenizer, **_: Any):
        self.model, self.tokenizer = model, tokenizer

    def generate(self, examples: Sequence[Example], group_size: int, **sampling: Any) -> Rollout:
        return generate_rollout(self.model, self.tokenizer, examples, group_size, **sampling)

    def sync_weights(self, model: torch.nn.Module) -> None:
        """The weights are the policy's own."""

    def close(self) -> None: ...


def _vllm(model, tokenizer, **kw: Any) -> RolloutBackend:
    from trainer.rollout.vllm import VLLMBackend

    return VLLMBackend(model, tokenizer, **kw)


BACKENDS: dict[str, Callable[..., RolloutBackend]] = {"hf": HFBackend, "vllm": _vllm}


def make_backend(name: str, model, tokenizer, **kw: Any) -> RolloutBackend:
    """The backend registered as ``name`` (kw: backend options, e.g. vLLM's model path and memory share)."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise BackendError(f"rollout_backend must be one of {sorted(BACKENDS)}, got {name!r}") from None
    return factory(model, tokenizer, **kw)
