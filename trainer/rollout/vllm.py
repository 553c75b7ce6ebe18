"""Rollouts from a colocated vLLM engine (``rollout_backend: vllm``; ``pip install .[vllm]``, a CUDA GPU).

The engine lives in the training process, on the same GPU as the policy, with a share of its memory
(``vllm_gpu_memory_utilization``). It is built from the policy's folder (``model:``) and, from then
on, its weights are the policy's: ``sync_weights`` pushes every parameter through vLLM's own
``load_weights`` after each optimizer update (and once at start), then drops the prefix cache.

Sampling matches the ``hf`` path exactly, so the ratio pi_theta / pi_old the loss computes stays exact
up to kernel differences: the same rendered prompt token ids (``render_prompt`` + the tokenizer, no
special tokens added), G samples per prompt, temperature, top_p, top_k off, min_p 0, no repetition/
presence/frequency penalties, ``max_new_tokens``, stop at the model's EOS ids (kept in the completion,
as the hf path keeps them), greedy when ``do_sample`` is False. The engine runs in the training forward's
precision (``rollout_dtype``: bf16 where training autocasts) and reports each sampled token's log-prob
under the distribution it was drawn from (``logprobs_mode="processed_logprobs"``: after temperature and
top_p, as the hf decode records it), which the mismatch metrics and truncated importance sampling use.

Tool rollouts (``tools``): the tool loop of trainer/rollout/tool_decode.py drives this engine through
``ResubmitEngine`` (trainer/rollout/tool_engines.py): each round resends a row's sequence with the call's stop
marker as a stop string (``tool_sampling_kwargs``); the prefix cache keeps the resent prefix cheap.

Not covered: LoRA policies (the adapters would have to be merged before each push), tensor parallel
engines, streaming groups to the verifier before the whole batch is sampled (``overlap_scoring``
still grades the batch on worker threads; every group is submitted when generation returns).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from typing import Any

import torch

from trainer.data import Example, render_prompt
from trainer.errors import BackendError
from trainer.rollout.decode import Rollout
from trainer.rollout.decode_loop import completion_mask_from_eos, eos_token_ids


def rollout_from_ids(
    tokenizer,
    examples: Sequence[Example],
    group_size: int,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    eos_ids: Sequence[int],
    device: torch.device | str = "cpu",
    sample_logprobs: Sequence[Sequence[float]] | None = None,
) -> Rollout:
    """A ``Rollout`` from token lists an engine returned: one prompt per example, G completions per
    prompt (rows g*G .. g*G+G-1); prompts left-padded, completions right-padded, masks up to the first EOS.
    ``sample_logprobs``: the engine's log-prob of each completion token (NaN: not reported), 0 past the mask."""
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
    lps = None
    if sample_logprobs is not None:
        rows = [list(x)[:c_len] + [0.0] * (c_len - len(x)) for x in sample_logprobs]
        lps = torch.tensor(rows, dtype=torch.float32, device=device).masked_fill(mask == 0, 0.0)  # (N, C)
    return Rollout(
        ids,
        attn,
        comp,
        mask,
        truncated,
        tokenizer.batch_decode(comp, skip_special_tokens=True),
        [e.prompt for e in examples for _ in range(group_size)],
        [e.reference for e in examples for _ in range(group_size)],
        lps,
    )


def unavailable_reason() -> str | None:
    """Why the vLLM backend cannot run here, or None when it can."""
    if importlib.util.find_spec("vllm") is None:
        return "the vllm backend needs the vllm package: pip install '.[vllm]'"
    if not torch.cuda.is_available():
        return "the vllm backend needs a CUDA GPU (none is visible to torch)"
    return None


def sampling_kwargs(
    group_size: int,
    *,
    max_new_tokens: int,
    eos_ids: Sequence[int],
    temperature: float = 1.0,
    top_p: float = 1.0,
    do_sample: bool = True,
) -> dict[str, Any]:
    """vLLM ``SamplingParams`` keywords for the hf path's settings (a plain dict: testable without vLLM)."""
    return {
        "n": group_size,
        "temperature": temperature if do_sample else 0.0,
        "top_p": top_p if do_sample else 1.0,
        "top_k": 0,  # off, as the hf path (top_k=0)
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": max_new_tokens,
        "stop_token_ids": list(eos_ids),
        "ignore_eos": False,
        "skip_special_tokens": True,
        "detokenize": False,  # the texts come from the trainer's tokenizer, as on the hf path
        "logprobs": 0,  # the sampled token's own log-prob only
    }


def tool_sampling_kwargs(
    max_tokens: int,
    stop: Sequence[str],
    *,
    eos_ids: Sequence[int],
    temperature: float = 1.0,
    top_p: float = 1.0,
    do_sample: bool = True,
) -> dict[str, Any]:
    """``SamplingParams`` keywords of one tool-loop request (``ResubmitEngine``, trainer/rollout/tool_engines.py): the
    hf path's settings, one sample, ending at the call's stop marker (kept in the output, as the loop reads it)."""
    kw = sampling_kwargs(
        1, max_new_tokens=max_tokens, eos_ids=eos_ids, temperature=temperature, top_p=top_p, do_sample=do_sample
    )
    return {**kw, "stop": list(stop), "include_stop_str_in_output": True, "detokenize": True}  # stop strings need text


def vllm_generate(llm: Any, eos_ids: Sequence[int]):
    """The tool loop's ``Generate`` (trainer/rollout/tool_engines.py) on a vLLM engine: each sequence continued from
    its token ids (the prefix cache holds what was sent before), the sampled tokens and their log-probs back."""

    def generate(
        seqs: list[list[int]], max_new: list[int], sampling: dict[str, Any]
    ) -> list[tuple[list[int], list[float]]]:
        from vllm import SamplingParams

        stop, kw = sampling.get("stop", []), {k: v for k, v in sampling.items() if k != "stop"}
        params = [SamplingParams(**tool_sampling_kwargs(m, stop, eos_ids=eos_ids, **kw)) for m in max_new]
        outs = llm.generate([{"prompt_token_ids": s} for s in seqs], params, use_tqdm=False)
        return [
            (list(o.outputs[0].token_ids), sampled_logprobs(o.outputs[0].token_ids, o.outputs[0].logprobs))
            for o in outs
        ]

    return generate


def sampled_logprobs(token_ids: Sequence[int], logprobs: Sequence[dict[int, Any]] | None) -> list[float]:
    """The log-prob vLLM reported for each sampled token (its ``CompletionOutput.logprobs``: per position a
    dict token id -> ``Logprob``); NaN where it reported none."""
    if logprobs is None:
        return [math.nan] * len(token_ids)
    out = []
    for tok, at in zip(token_ids, logprobs, strict=False):
        lp = None if at is None else at.get(tok)
        out.append(math.nan if lp is None else float(getattr(lp, "logprob", lp)))
    return out + [math.nan] * (len(token_ids) - len(out))


class VLLMBackend:
    """A colocated vLLM engine that samples with the hf path's settings and takes the policy's weights."""

    name = "vllm"

    def __init__(
        self,
        model,
        tokenizer,
        *,
        model_path: str | None = None,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        seed: int = 0,
        dtype: torch.dtype | None = None,
        **_: Any,
    ):
        reason = unavailable_reason()
        if reason:
            raise BackendError(reason)
        if hasattr(model, "peft_config"):
            raise BackendError("the vllm backend does not push LoRA adapters yet: use rollout_backend: hf with lora")
        if model_path is None:
            raise BackendError("the vllm backend builds its engine from the policy's folder: set `model:`")
        from vllm import LLM

        self.model, self.tokenizer = model, tokenizer  # the model: the tool loop's prompt encoding and EOS ids
        self.eos = eos_token_ids(model, tokenizer)
        dtype = dtype or next(model.parameters()).dtype  # train.py passes the training forward's (rollout_dtype)
        self.llm = LLM(
            model=model_path,
            tokenizer=model_path,
            dtype=str(dtype).removeprefix("torch."),
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            seed=seed,
            enable_prefix_caching=True,  # the G samples of a prompt share its KV blocks, as share_prefix does
            logprobs_mode="processed_logprobs",  # log-probs after temperature/top_p: the distribution sampled
        )
        self.sync_weights(model)

    def generate(
        self,
        examples: Sequence[Example],
        group_size: int,
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        do_sample: bool = True,
        use_chat_template: bool = True,
        tools: Any = None,
        runner: Any = None,
        **_: Any,
    ) -> Rollout:
        """The hf path's rollout; with ``tools`` (and the sessions' ``runner``) the tool loop of
        trainer/rollout/tool_decode.py, driving this engine through ``ResubmitEngine``."""
        if tools is not None:
            return self._tool_rollout(
                examples,
                group_size,
                tools,
                runner,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                do_sample=do_sample,
                use_chat_template=use_chat_template,
            )
        from vllm import SamplingParams

        texts = [render_prompt(self.tokenizer, e.prompt, use_chat_template) for e in examples]
        prompt_ids = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        params = SamplingParams(
            **sampling_kwargs(
                group_size,
                max_new_tokens=max_new_tokens,
                eos_ids=self.eos,
                temperature=temperature,
                top_p=top_p,
                do_sample=do_sample,
            )
        )
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompt_ids], params, use_tqdm=False)
        completions: list[list[int]] = []
        logprobs: list[list[float]] = []
        for out in outs:
            for c in out.outputs:
                ids = list(c.token_ids)
                logprobs.append(sampled_logprobs(ids, c.logprobs))
                if c.finish_reason == "stop" and (not ids or ids[-1] not in self.eos):
                    ids.append(self.eos[0])  # stopped at EOS: keep it, as the hf path does
                    logprobs[-1].append(math.nan)  # not sampled by the engine: no log-prob (TIS weight 1)
                completions.append(ids)
        return rollout_from_ids(
            self.tokenizer, examples, group_size, prompt_ids, completions, self.eos, "cuda", sample_logprobs=logprobs
        )

    def _tool_rollout(
        self, examples: Sequence[Example], group_size: int, tools: Any, runner: Any, **opts: Any
    ) -> Rollout:
        from trainer.rollout.tool_decode import generate_tool_rollout
        from trainer.rollout.tool_engines import ResubmitEngine, prompt_lists
        from trainer.rollout.tools import FORMATS

        stop, gen = FORMATS[tools.format].stop, vllm_generate(self.llm, self.eos)
        return generate_tool_rollout(
            self.model,
            self.tokenizer,
            examples,
            group_size,
            runner=runner,
            tools=tools,
            engine=lambda ids, attn, rows: ResubmitEngine(gen, prompt_lists(ids, attn), stop),
            **opts,
        )

    @torch.no_grad()
    def sync_weights(self, model: torch.nn.Module) -> None:
        """Push the policy's parameters into the engine (vLLM's own load_weights), then drop cached prefixes."""
        module = getattr(model, "module", model)  # DDP
        engine_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        engine_model.load_weights((name, p.detach()) for name, p in module.state_dict().items())
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        del self.llm
        torch.cuda.empty_cache()
