"""The default task: seeded, disjoint splits, gold answers that equal the expression, worked chains
that are correct step by step, and the JSONL schema a user's own data uses."""

from __future__ import annotations

import json

import pytest

from trainer.config import TaskConfig
from trainer.data import read_jsonl
from trainer.pipelines import task

SIZES = {"warmstart": 300, "train": 200, "heldout": 200}


def test_same_seed_same_data_other_seed_other_data():
    assert task.make_splits(3, SIZES) == task.make_splits(3, SIZES)
    assert task.make_splits(3, SIZES)["heldout"] != task.make_splits(4, SIZES)["heldout"]


def test_heldout_does_not_depend_on_other_sizes():
    a = task.make_splits(0, {"heldout": 50, "train": 10})["heldout"]
    b = task.make_splits(0, {"heldout": 50, "train": 500, "warmstart": 100})["heldout"]
    assert a == b


def test_splits_are_disjoint_by_prompt():
    s = task.make_splits(1, SIZES)
    prompts = [set(r["prompt"] for r in rows) for rows in s.values()]
    assert sum(map(len, prompts)) == len(set().union(*prompts)) == sum(SIZES.values())


@pytest.mark.parametrize("cfg", [TaskConfig(), TaskConfig(operands=3, min_value=10, max_value=99)])
def test_answers_and_worked_chains_are_right(cfg):
    rows = task.make_splits(2, {"warmstart": 200}, TaskConfig(**{**cfg.__dict__, "worked_fraction": 1.0}))
    for r in rows["warmstart"]:
        expr = r["prompt"].removesuffix("=?")
        assert task.evaluate_expression(expr) == int(r["answer"]) >= 0
        think = r["completion"].removeprefix("<think>").split("</think>")[0]
        lines = [expr] + think.split(", ")
        assert len(lines) == cfg.operands  # one rewrite per operation
        for prev, nxt in zip(lines, lines[1:], strict=False):
            assert task.evaluate_expression(prev) == task.evaluate_expression(nxt)  # each rewrite keeps the value
            assert nxt.count("+") + nxt.count("-") == prev.count("+") + prev.count("-") - 1
        assert lines[-1] == r["answer"]
        assert r["completion"].endswith(f"<answer>{r['answer']}</answer>")


def test_worked_fraction_is_respected():
    rows = task.make_splits(0, {"warmstart": 2000}, TaskConfig(worked_fraction=0.35))["warmstart"]
    worked = sum(task.BARE_THINK not in r["completion"] for r in rows) / len(rows)
    assert 0.31 < worked < 0.39
    bare = [r for r in rows if task.BARE_THINK in r["completion"]]
    for r in bare:
        value, shown = int(r["answer"]), int(r["completion"].split("<answer>")[1].split("</answer>")[0])
        assert r["completion"] == f"<think>{task.BARE_THINK}</think><answer>{shown}</answer>"
        assert shown % 10 == 0 and abs(shown - value) <= 5  # an estimate: the value to the nearest ten
    assert sum(int(r["answer"]) % 10 != 0 for r in bare) > 0.8 * len(bare)  # so mostly not the answer


def test_estimate_to_one_gives_exact_bare_answers():
    cfg = TaskConfig(worked_fraction=0.0, estimate_to=1)
    rows = task.make_splits(0, {"warmstart": 100}, cfg)["warmstart"]
    assert all(r["completion"].endswith(f"<answer>{r['answer']}</answer>") for r in rows)


def test_build_writes_jsonl_in_the_user_schema(tmp_path):
    paths = task.build(tmp_path, 0, {"warmstart": 5, "train": 5, "heldout": 5})
    for name, p in paths.items():
        rows = [json.loads(line) for line in p.read_text().splitlines()]
        assert len(rows) == 5
        keys = {"prompt", "answer", "completion"} if name == "warmstart" else {"prompt", "answer"}
        assert all(set(r) == keys for r in rows)
    assert read_jsonl(paths["train"]) == task.make_splits(0, {"warmstart": 5, "train": 5, "heldout": 5})["train"]
