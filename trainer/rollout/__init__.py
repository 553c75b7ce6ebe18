"""Sampling and log-probs, behind two doors the algorithm calls without knowing which path runs:

- ``decode.generate_rollout(model, tokenizer, examples, group_size, ...) -> Rollout``: G completions per
  prompt (the lean CPU decode, or ``model.generate``);
- ``logprobs.completion_logprobs(model, rollout, ...)``: their log-probs under any model (a plain
  forward, the shared-prefix forward, or the replay of the decode's own products).

Behind them: ``lean_forward`` (the Qwen2/Llama forward for a CPU), ``sampling`` (the next token from
logits), ``replay``. Rollout backends (``backends.make_backend``: ``hf``, ``vllm``) produce the same
``Rollout`` elsewhere.
"""
