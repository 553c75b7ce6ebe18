"""Issue 54's embedded tool task and what it needs, without a service: the products task and its warm-start rows,
the warm start that never trains on tool output, the tiny tokenizer that loads as saved (newlines and spaces are
the tool spans' and the code's), the progress line's tool figures, and the one options object of both rollout
doors."""

from __future__ import annotations

import pytest
import torch

from trainer.config import TaskConfig
from trainer.pipelines import task, tiny, tool_task
from trainer.pipelines.warmstart import encode
from trainer.policy import load_tokenizer
from trainer.rollout.decode import SampleOptions
from trainer.rollout.tools import FORMATS
from trainer.run.progress import postfix


def test_products_splits_are_disjoint_and_mixed():
    cfg = TaskConfig(
        kind="products",
        min_value=10,
        max_value=199,
        worked_fraction=0.5,
        estimate_to=100,
        warmstart_size=400,
        train_size=100,
        heldout_size=50,
    )
    sp = task.make_splits(0, cfg.sizes(), cfg)
    prompts = [r["prompt"] for rows in sp.values() for r in rows]
    assert len(prompts) == len(set(prompts)) == 550
    for r in sp["warmstart"]:
        a, b = map(int, r["prompt"][:-2].split("*"))
        assert r["answer"] == str(a * b)
        if tool_task.calls_tool(r["completion"]):  # the call, its span as the loop appends it, the answer copied
            assert r["completion"] == f"```python\n{a}*{b}\n```\n<output>\n{a * b}\n</output>\n<answer>{a * b}</answer>"
        else:
            assert r["completion"] == f"<answer>{(a * b + 50) // 100 * 100}</answer>"
    called = sum(tool_task.calls_tool(r["completion"]) for r in sp["warmstart"])
    assert 150 < called < 250
    assert "completion" not in sp["train"][0] and "completion" not in sp["heldout"][0]


def test_warm_start_never_trains_on_tool_output():
    tok = tiny.build_tokenizer()
    row = {"prompt": "47*86=?", "completion": tool_task.call_completion(47, 86)}
    ids, attn, loss = encode(tok, [row], tool_format=FORMATS["python"])
    targets = tok.decode(ids[0][loss[0].bool()])
    assert targets == "```python\n47*86\n```<answer>4042</answer><|end|>"  # the span (and its 4042) is context
    _, _, plain = encode(tok, [row])
    assert plain.sum() > loss.sum()  # without the format every completion token is a target


def test_the_tiny_tokenizer_loads_as_saved(tmp_path):
    tok = tiny.build_tokenizer()
    tiny.build_model(tok).save_pretrained(tmp_path)  # a Qwen2 config beside it: AutoTokenizer picks Qwen2Tokenizer
    tok.save_pretrained(tmp_path)
    text = "```python\nprint(1, 2)\n```\n<output>\n1 2\n</output>\n"
    again = load_tokenizer(str(tmp_path))
    assert again(text, add_special_tokens=False)["input_ids"] == tok(text, add_special_tokens=False)["input_ids"]
    assert again.decode(again(text, add_special_tokens=False)["input_ids"]) == text


def test_progress_line_shows_the_tool_figures():
    m = {"reward/mean": 0.5, "tool/calls_per_completion": 0.75, "tool/error_rate": 0.1, "tool/output_share": 0.4,
         "perf/tool_s": 3.25}  # fmt: skip
    assert postfix(m) == {
        "reward": "0.500",
        "calls": "0.750",
        "tool_err": "0.100",
        "tool_share": "0.400",
        "tool_s": "3.250",
    }
    assert "calls" not in postfix({"reward/mean": 0.5})  # a run without tools shows none


def test_one_options_object_for_both_doors():
    o = SampleOptions(max_new_tokens=8, do_sample=False)
    assert SampleOptions.of(o, {"temperature": 0.5}) == SampleOptions(8, 0.5, do_sample=False)
    assert SampleOptions.of(None, {"max_new_tokens": 4}).max_new_tokens == 4
    with pytest.raises(TypeError, match="max_new_tokenz"):
        SampleOptions.of(None, {"max_new_tokenz": 4})  # an unknown keyword is refused, naming it
    model, tok = tiny.build_model(tiny.build_tokenizer()), tiny.build_tokenizer()
    from trainer.data import Example
    from trainer.rollout.decode import generate_rollout

    torch.manual_seed(0)
    a = generate_rollout(model, tok, [Example("1+2=?", "3")], 2, o)
    b = generate_rollout(model, tok, [Example("1+2=?", "3")], 2, max_new_tokens=8, do_sample=False)
    assert torch.equal(a.completion_ids, b.completion_ids)


def test_the_tool_signals_are_in_the_signal_table():
    from trainer.rollout.tools import tool_signals
    from verifiers.shapes.signals import SIGNALS

    every = tool_signals(["\\boxed{14}"], "14", ["print(open('f').read())", "print('\\\\boxed{14}')"], "")
    assert set(every) == {
        "tool.answer_marker",
        "tool.answer_only_in_output",
        "tool.printed_reference",
        "tool.read_files",
    }
    assert set(every) | {"tool.session_failed"} <= set(SIGNALS)


def test_make_train_task_tools_picks_its_config():
    import subprocess

    from verifiers.launch import ROOT

    dry = subprocess.run(["make", "-n", "train", "TASK=tools", "SEED=1"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0 and "make_train --config configs/tools.yaml" in dry.stdout and "--seed 1" in dry.stdout
    bad = subprocess.run(["make", "-n", "train", "TASK=tool"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "the embedded tasks are default tools" in bad.stderr
