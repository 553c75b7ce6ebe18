"""Where rollouts come from: one interface, a backend per engine, picked by ``rollout_backend`` in the config.

- ``hf`` (default): the policy itself samples (``trainer.rollout.generate_rollout``: the lean decode
  loop or ``model.generate``), in the training process, on the policy's device.
- ``vllm`` (optional extra ``pip install .[vllm]``, a CUDA GPU): a colocated vLLM engine
  (``trainer/vllm_backend.py``) holds a copy of the weights, pushed from the policy after each update
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

from trainer.rollout import Example, Rollout, completion_mask_from_eos, generate_rollout


class BackendError(RuntimeError):
    """A rollout backend that cannot run here (missing package, no GPU, unsupported setting)."""


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
    from trainer.vllm_backend import VLLMBackend

    return VLLMBackend(model, tokenizer, **kw)


BACKENDS: dict[str, Callable[..., RolloutBackend]] = {"hf": HFBackend, "vllm": _vllm}


def make_backend(name: str, model, tokenizer, **kw: Any) -> RolloutBackend:
    """The backend registered as ``name`` (kw: backend options, e.g. vLLM's model path and memory share)."""
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise BackendError(f"rollout_backend must be one of {sorted(BACKENDS)}, got {name!r}") from None
    return factory(model, tokenizer, **kw)


def rollout_from_ids(
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    eos_ids: Sequence[int],
    device: torch.device | str = "cpu",
) -> Rollout:
    """A ``Rollout`` from token lists an engine returned: one prompt per example, G completions per
    prompt (rows g*G .. g*G+G-1); prompts left-padded, completions right-padded, masks up to the first EOS."""
    if len(completion_ids) != len(examples) * group_size or len(prompt_ids) != len(examples):
        raise BackendError(
            f"{len(completion_ids)} completions for {len(prompt_ids)} prompts of group {group_size} "
            f"({len(examples)} examples)"
        )
    pad = tokenizer.pad_token_id
    p_len = max(len(p) for p in prompt_ids)
    c_len = max(1, max(len(c) for c in completion_ids))
    p_rows = [[pad] * (p_len - len(p)) + list(p) for p in prompt_ids]
    p_mask = [[0] * (p_len - len(p)) + [1] * len(p) for p in prompt_ids]
    ids = torch.tensor(p_rows, device=device).repeat_interleave(group_size, dim=0)  # (N, P)
    attn = torch.tensor(p_mask, device=device).repeat_interleave(group_size, dim=0)  # (N, P)
    comp = torch.tensor([list(c) + [pad] * (c_len - len(c)) for c in completion_ids], device=device)  # (N, C)
    mask, truncated = completion_mask_from_eos(comp, eos_ids)
    lengths = torch.tensor([len(c) for c in completion_ids], device=device)
    mask = mask * (torch.arange(c_len, device=device)[None, :] < lengths[:, None])  # not past a row's own end
    comp = comp.masked_fill(mask == 0, pad)
    return Rollout(
        ids,
        attn,
        comp,
        mask,
        truncated,
        tokenizer.batch_decode(comp, skip_special_tokens=True),
        [e.prompt for e in examples for _ in range(group_size)],
        [e.reference for e in examples for _ in range(group_size)],
    )
