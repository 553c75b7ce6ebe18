"""The next token from a decode step's logits: temperature, top_p (nucleus) or greedy, and the log-prob
of the drawn token under the distribution it was drawn from (trainer/rollout/decode.py's loop)."""

from __future__ import annotations

import torch
from torch import Tensor


def top_p_filter(scores: Tensor, top_p: float) -> Tensor:
    """Keep the smallest set of most likely tokens whose probability reaches ``top_p`` (at least one);
    the rest get -inf. (n, V) -> (n, V)."""
    probs, order = torch.softmax(scores, dim=-1).sort(dim=-1, descending=True)  # (n, V)
    mass_before = probs.cumsum(dim=-1) - probs  # (n, V): probability of the more likely tokens
    drop_sorted = mass_before >= top_p
    drop_sorted[:, 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, -torch.inf)


def next_tokens(logits: Tensor, do_sample: bool, temperature: float, top_p: float) -> tuple[Tensor, Tensor]:
    """(n, V) float32 logits of the last position -> (n,) the next token (sampled or greedy) and (n, V)
    the scores it was drawn from (logits / temperature, top_p applied; the raw logits when greedy)."""
    if not do_sample:
        return logits.argmax(dim=-1), logits
    scores = logits / temperature if temperature != 1.0 else logits
    if top_p < 1.0:
        scores = top_p_filter(scores, top_p)
    return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1), scores


def picked_logprob(scores: Tensor, tokens: Tensor) -> Tensor:
    """(n, V) scores, (n,) tokens -> (n,) log-prob of each token under softmax(scores)."""
    return torch.log_softmax(scores, dim=-1).gather(-1, tokens[:, None]).squeeze(-1)


def upcast_half(x: Tensor) -> Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def token_logprobs(logits: Tensor, targets: Tensor, temperature: float = 1.0) -> Tensor:
    """log pi(target) per position. logits: (N, T, V), targets: (N, T) -> (N, T), at least float32."""
    logits = upcast_half(logits) / temperature
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (N, T)
    return picked - torch.logsumexp(logits, dim=-1)


def token_entropy(logits: Tensor, temperature: float = 1.0) -> Tensor:
    """Entropy of the sampling distribution per position. logits: (N, T, V) -> (N, T)."""
    logp = torch.log_softmax(upcast_half(logits) / temperature, dim=-1)
    return -(logp.exp() * logp).sum(-1)
