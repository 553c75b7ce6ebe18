"""What the tool loop (trainer/rollout/tool_decode.py) needs from a generator, and the two that serve it.

A ``ToolEngine`` has two calls: ``decode(rows, sampling)`` makes every row still decoding sample until it pauses at
a call or ends (each token handed to ``RowState.push``, which decides), and ``append(spans)`` takes the tool output
spans of the rows that go on. The loop, the calls, the masks and the graded text are the same whoever generates:

- ``KVEngine`` (tool_decode.py, the hf path): all rows in one KV cache, continued after each span;
- ``ResubmitEngine`` (here): the contract of a serving engine such as vLLM, which keeps no state between requests
  (its prefix cache makes a resent prefix cheap): each round sends every decoding row's whole sequence (prompt,
  its tokens and the tool spans so far) with the call's stop marker as a stop string, and reads back the new
  tokens and their log-probs. ``generate`` is the engine's one function; the vLLM backend's is
  ``trainer.rollout.vllm.vllm_generate``, and ``hf_generate`` serves the same contract with the policy itself
  (the way tests/trainer/test_tool_engines.py checks the loop on a CPU: the same tokens as ``KVEngine``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from torch import Tensor

from trainer.rollout.sampling import next_tokens, picked_logprob

# (sequences to continue, max new tokens of each, sampling settings + "stop": stop strings)
#   -> per sequence: (new token ids, the log-prob of each under the distribution it was drawn from)
Generate = Callable[[list[list[int]], list[int], dict[str, Any]], list[tuple[list[int], list[float]]]]


class ToolEngine(Protocol):
    def decode(self, rows: Any, sampling: dict) -> None: ...

    def append(self, spans: dict[int, list[int]]) -> None: ...


def prompt_lists(ids: Tensor, attn: Tensor) -> list[list[int]]:
    """(N, P) left-padded prompts -> each row's own prompt tokens."""
    return [row[m.bool()].tolist() for row, m in zip(ids, attn, strict=True)]


class ResubmitEngine:
    """A stateless engine behind the tool loop: every round resends each decoding row's whole sequence."""

    def __init__(self, generate: Generate, prompts: Sequence[Sequence[int]], stop: str):
        self.generate, self.prompts, self.stop = generate, [list(p) for p in prompts], stop

    def decode(self, rows: Any, sampling: dict) -> None:
        while active := rows.decoding():
            seqs = [self.prompts[r] + rows.toks[r] for r in active]
            outs = self.generate(
                seqs, [rows.budget - len(rows.toks[r]) for r in active], {**sampling, "stop": [self.stop]}
            )
            for r, (toks, lps) in zip(active, outs, strict=True):
                for t, lp in zip(toks, lps, strict=True):
                    rows.push(r, t, lp)
                    if r not in rows.decoding():
                        break  # paused at a call or ended: what the engine sent past it is not the row's
                if not toks and r in rows.decoding():  # nothing came back: the row cannot go on
                    rows.state[r], rows.truncated[r] = 2, True

    def append(self, spans: dict[int, list[int]]) -> None:
        """Nothing to feed: the rows hold the spans, and the next request sends them."""


def hf_generate(model, tokenizer, eos_ids: Sequence[int]) -> Generate:
    """The ``Generate`` contract served by an HF model the way a serving engine serves it: each request encoded whole
    (no cache kept between requests), one token at a time, ending at EOS (kept), the token budget, or when a stop
    string appears in the request's new text (kept, as vLLM's ``include_stop_str_in_output``)."""

    def generate(
        seqs: list[list[int]], max_new: list[int], sampling: dict[str, Any]
    ) -> list[tuple[list[int], list[float]]]:
        stops, kw = sampling.get("stop", []), {k: v for k, v in sampling.items() if k != "stop"}
        out = []
        for seq, budget in zip(seqs, max_new, strict=True):
            ids, new, lps = list(seq), [], []
            while len(new) < budget:
                logits = model(input_ids=torch.tensor([ids], device=model.device)).logits[:, -1].float()
                nxt, scores = next_tokens(logits, **kw)
                new.append(int(nxt[0]))
                lps.append(float(picked_logprob(scores, nxt)[0]))
                ids.append(new[-1])
                if new[-1] in eos_ids or any(s in tokenizer.decode(new, skip_special_tokens=True) for s in stops):
                    break
            out.append((new, lps))
        return out

    return generate
