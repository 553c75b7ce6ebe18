"""Generation for ``make eval``: the model loaded for sampling, and K samples per problem made with the
trainer's evaluator loop (``trainer.evaluation.evaluator.generate_batches``, which training's evaluation uses too),
a batch of prompts at a time, each batch handed to the grader (grading of one batch overlaps generation
of the next)."""

from __future__ import annotations

from trainer.config import EvalArgs
from trainer.errors import ModelError
from trainer.evaluation.grade import Grader
from trainer.evaluation.plan import generation_settings
from trainer.evaluation.suites import Problem, Sample


def load_model(path: str, device: str):
    """Model + tokenizer for generation, in eval mode on ``device`` (bf16 on a GPU that has it)."""
    from transformers import AutoModelForCausalLM

    from trainer.policy import load_tokenizer, pick_device, pick_dtype

    dev = pick_device(device)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=pick_dtype("auto", dev))
        tok = load_tokenizer(path)
    except OSError as e:
        raise ModelError(
            f"cannot load model {path!r}: {e}\nGive --model a folder written by save_pretrained."
        ) from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model.to(dev).eval(), tok


def generate_into(
    grader: Grader, model, tok, todo: list[tuple[Problem, list[int]]], fps: dict, a: EvalArgs, source: str
) -> dict[str, float]:
    """Generate the missing samples of each problem, a batch of prompts at a time, and hand each batch
    to the grader (grading of one batch overlaps generation of the next). With ``a.tools``: what the tools did
    (``tool_figures``), else {}."""
    import torch

    from trainer.data import Example
    from trainer.evaluation.evaluator import generate_batches  # the generation loop training's evaluation uses too

    torch.manual_seed(a.seed)
    chat, max_new = generation_settings(a, source)
    per_call = max(1, (a.gen_batch or 64) // a.k)
    total, made = sum(len(missing) for _, missing in todo), 0
    grader.bar.set_postfix_str(f"generated {made}/{total}")
    wanted = [(Example(p.prompt, p.reference), len(missing)) for p, missing in todo]
    runner, traces = None, []
    if a.tools is not None:  # the calls run in sandbox sessions of the service that grades (trainer/rollout/)
        from trainer.rollout.session_runner import SessionToolRunner

        runner = SessionToolRunner(grader.client, workers=a.tools.workers)
    for i, g, ro in generate_batches(
        model,
        tok,
        wanted,
        per_call=per_call,
        max_new_tokens=max_new,
        use_chat_template=chat,
        do_sample=a.k > 1,
        temperature=a.temperature,
        top_p=a.top_p,
        tools=a.tools,
        runner=runner,
    ):
        if ro.tool_trace is not None:
            traces.append(ro.tool_trace)
        batch, lost = [], []
        for j, (p, missing) in enumerate(todo[i : i + per_call]):
            for n, idx in enumerate(missing):
                s = Sample(p.id, idx, p.compose(ro.texts[j * g + n]), p.reference, p.verifier, p.prompt, p.options)
                dead = ro.tool_trace is not None and ro.tool_trace.infra[j * g + n]
                (lost if dead else batch).append((s, fps[s.key]))
        made += len(batch) + len(lost)
        if lost:  # the tool session died mid-rollout: an infrastructure outcome, not the model's answer
            grader.record_infra(lost, "tool session failed during generation")
        grader.submit(batch)
        grader.drain()
        grader.bar.set_postfix_str(f"generated {made}/{total}")
    return tool_figures(traces)


def tool_figures(traces: list) -> dict[str, float]:
    """Calls per completion, the share of calls that failed (raised, timed out, malformed), the completions whose
    session failed, seconds in tools: the figures training logs under ``tool/`` (trainer/grpo/step.py)."""
    if not traces:
        return {}
    rows = sum(len(t.calls) for t in traces)
    calls = sum(sum(t.calls) for t in traces)
    return {"completions": rows, "calls_per_completion": calls / max(1, rows),
            "error_rate": sum(sum(t.errors) for t in traces) / max(1, calls),
            "sessions_failed": sum(sum(t.infra) for t in traces), "tool_s": round(sum(t.tool_s for t in traces), 2)}  # fmt: skip
