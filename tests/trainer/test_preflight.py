"""Issue 31, without Docker: the preflight's tag check on a tokenizer built like a practitioner's (byte-level
BPE from the ``tokenizers`` library, the R1 tags declared special, then normal), its fix, the warning for
runs whose first steps grade one outcome, completions logged on the first and last step, where a run
goes (resume in place or refuse) and which config a model of one's own gets."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from tests.own_model_helpers import TAGS, bpe_tokenizer
from trainer.config import GRPOConfig
from trainer.errors import CheckpointError, ConfigError
from trainer.pipelines import run_folder
from trainer.run import preflight
from trainer.run.outcome_watch import OutcomeWatch


def test_a_special_think_tag_is_an_error_naming_the_token_and_the_fix():
    tok = bpe_tokenizer(tags_special=True)
    text = "<think>4+8</think><answer>12</answer>"
    assert tok.decode(tok.encode(text), skip_special_tokens=True) == "4+812"  # what the trainer's decode hands on
    rep = preflight.check(tok, None, ["r1"], "What is 4+8?", model_dir="my-model")
    assert len(rep.errors) == 1
    err = rep.errors[0]
    assert "'<think>'" in err and "special token" in err and "NO_ANSWER" in err
    assert "python -m trainer.run.preflight my-model --fix-tags" in err
    with pytest.raises(preflight.PreflightError, match="<think>"):
        preflight.raise_errors(rep)
    # think_format needs the same tags; math only reads <answer> when there is no \boxed: a warning
    assert preflight.check(tok, None, ["think_format"], "q").errors
    math = preflight.check(tok, None, ["math"], "q")
    assert not math.errors and "<answer>" in math.warnings[0]
    assert preflight.check(tok, None, ["code"], "q").warnings == []


def test_tags_as_normal_tokens_pass_and_the_prompt_is_rendered(tmp_path):
    tok = bpe_tokenizer(tags_special=False)
    rep = preflight.check(tok, None, ["r1", "math"], "What is 4+8?", max_new_tokens=16)
    assert rep.errors == [] and rep.warnings == []
    assert rep.prompt == "<|im_start|>user\nWhat is 4+8?<|im_end|>\n<|im_start|>assistant\n"
    path = preflight.write_prompt(rep, tmp_path, True)
    assert path.read_text().endswith(rep.prompt + "\n") and "chat template" in path.read_text()
    plain = preflight.check(tok, None, ["r1"], "What is 4+8?", use_chat_template=False)
    assert plain.prompt == "What is 4+8?"


def test_fix_tags_rewrites_the_saved_tokenizer(tmp_path):
    bpe_tokenizer(tags_special=True).save_pretrained(tmp_path)
    assert preflight.main([str(tmp_path)]) == 1
    assert preflight.fix_tags(tmp_path) == TAGS
    assert (tmp_path / "tokenizer.json.orig").exists()
    tok = AutoTokenizer.from_pretrained(tmp_path)
    text = "<think>4+8</think><answer>12</answer>"
    assert tok.decode(tok.encode(text, add_special_tokens=False), skip_special_tokens=True) == text
    assert preflight.check(tok, None, ["r1"], "q").errors == []
    assert preflight.main([str(tmp_path)]) == 0


def _record(step: int, **outcomes: int) -> dict:
    return {"step": step, "completion/truncated_frac": 0.5, **{f"outcome/{k}": float(v) for k, v in outcomes.items()}}


def test_first_steps_all_no_answer_are_reported_once_with_causes():
    w = OutcomeWatch(total_steps=100, verifier="r1")
    assert w.update({"step": 0, "eval/accuracy": 0.0}) is None
    assert w.update(_record(1, NO_ANSWER=64)) is None
    assert w.update(_record(2, NO_ANSWER=64, CORRECT=0)) is None
    msg = w.update(_record(3, NO_ANSWER=64))
    assert msg and "steps 1-3: all 192 completions graded NO_ANSWER by 'r1'" in msg
    assert "special tokens" in msg and "max_new_tokens" in msg and "50% truncated" in msg
    assert w.flag == "ALL NO_ANSWER"
    assert w.update(_record(4, NO_ANSWER=64)) is None and w.flag == "ALL NO_ANSWER"  # said once
    w.update(_record(5, NO_ANSWER=60, CORRECT=4))
    assert w.flag is None
    mixed = OutcomeWatch(total_steps=100)
    assert [mixed.update(_record(s, NO_ANSWER=60, INCORRECT=4)) for s in (1, 2, 3)] == [None, None, None]
    short = OutcomeWatch(total_steps=1)  # a one-step run: decided at step 1
    assert "step 1: all 8 completions graded INCORRECT" in short.update(_record(1, INCORRECT=8))


def test_completions_are_logged_on_the_first_and_last_step():
    cfg = GRPOConfig(steps=25, log_completions_every=10)
    assert [s for s in range(1, 26) if cfg.logs_completions_at(s)] == [1, 10, 20, 25]
    assert not any(GRPOConfig(steps=5, log_completions_every=0).logs_completions_at(s) for s in range(1, 6))


def _run_with_checkpoint(runs, name, step, finished=False):
    ck = runs / name / "checkpoints" / f"step-{step:06d}"
    ck.mkdir(parents=True)
    (ck / "trainer_state.pt").write_bytes(b"")
    (runs / name / "config.yaml").write_text(f"name: {name}\nruns: {runs}\n")
    if finished:
        (runs / name / "summary.json").write_text("{}")
    return ck


def test_where_a_run_goes(tmp_path):
    runs = tmp_path / "runs"
    assert run_folder.place(runs, "new", None, 10)[:2] == (None, None)
    with pytest.raises(CheckpointError, match="no checkpoint in .* To start a new run, drop --grpo.resume"):
        run_folder.place(runs, "new", "auto", 10)  # never a silent fresh start
    ck = _run_with_checkpoint(runs, "t7", 3)
    assert run_folder.place(runs, "t7", None, 10)[:2] == (runs / "t7", ck)  # NAME= of an interrupted run
    assert run_folder.place(runs, "t7", "auto", 10)[1] == ck
    assert run_folder.place(runs, None, str(ck), 10)[:2] == (runs / "t7", ck)
    done = _run_with_checkpoint(runs, "done", 10, finished=True)
    with pytest.raises(ConfigError, match=r"finished run .*make train NAME=done-2 RUNS=.*--grpo.steps 20"):
        run_folder.refuse_finished(runs / "done", done, 10, runs)
    run_folder.refuse_finished(runs / "done", done, 11, runs)  # more steps: trained further, in place
    (runs / "empty").mkdir()
    where, resume, note = run_folder.place(runs, "empty", None, 10)
    assert where is None and resume is None and "no checkpoint" in note


def test_a_model_of_ones_own_gets_the_real_model_config_and_its_sources(tmp_path):
    from trainer.config import PipelineConfig
    from trainer.pipelines.make_train import ALIASES

    got = run_folder.load(PipelineConfig, ["--model", "m", "--grpo.lr", "2e-6", "--runs", str(tmp_path)], ALIASES)
    assert got.cfg.grpo.max_new_tokens == 512 and got.cfg.eval.k == 4 and got.cfg.warmstart.steps == 0
    assert got.sources["grpo.lr"] == "flag" and got.sources["grpo.beta"] == "configs/real_model.yaml"
    assert "configs/real_model.yaml" in got.notes[0]
    lines = "\n".join(run_folder.settings_lines(got.cfg, got.sources))
    assert "grpo.lr" in lines and "2e-06" in lines and "(flag)" in lines and "eval.k" in lines
    tiny = run_folder.load(PipelineConfig, ["--runs", str(tmp_path)], ALIASES)
    assert tiny.cfg.grpo.lr == 5e-5 and tiny.sources["grpo.lr"] == "configs/default.yaml"
    assert tiny.sources["grpo.clip_eps_low"] == "default"


def test_resuming_in_place_refuses_other_fixed_settings(tmp_path):
    from trainer.config import PipelineConfig
    from trainer.pipelines.make_train import ALIASES

    runs = tmp_path / "runs"
    _run_with_checkpoint(runs, "t7", 3)
    (runs / "t7" / "config.yaml").write_text(json.dumps({"name": "t7", "runs": str(runs), "seed": 0, "model": "a"}))
    got = run_folder.load(PipelineConfig, ["--name", "t7", "--runs", str(runs), "--grpo.steps", "9"], ALIASES)
    assert got.run_dir == runs / "t7" and got.cfg.model == "a" and got.cfg.grpo.steps == 9
    with pytest.raises(ConfigError, match="model: b .the run has a.*make train NAME=t7"):
        run_folder.load(PipelineConfig, ["--name", "t7", "--runs", str(runs), "--model", "b"], ALIASES)
    (runs / "t7" / "config.yaml").write_text(json.dumps({"name": "t7", "runs": str(runs), "grpo": {"steps": 3}}))
    (runs / "t7" / "summary.json").write_text("{}")  # finished at its own 3 steps: the same command again refuses
    with pytest.raises(ConfigError, match="is a finished run"):
        run_folder.load(PipelineConfig, ["--name", "t7", "--runs", str(runs)], ALIASES)  # default.yaml says 500


def test_python_m_trainer_train_runs_the_preflight_before_the_service(tmp_path):
    from tests.own_model_helpers import gsm8k_style, save_model_folder
    from trainer.train import train

    model_dir = save_model_folder(tmp_path / "m", tags_special=True)
    cfg = GRPOConfig(
        model=str(model_dir),
        data=str(gsm8k_style(tmp_path / "d.jsonl")),
        verifier="r1",
        target="127.0.0.1:1",
        run_dir=str(tmp_path / "run"),
        steps=1,
        report_to=[],
    )
    with pytest.raises(preflight.PreflightError, match="'<think>' is a special token"):
        train(cfg)  # no service at 127.0.0.1:1: the preflight stops it first
