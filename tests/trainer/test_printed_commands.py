"""Issue 50, item 2: every command the trainer prints is one it accepts. The messages are produced by the
code that prints them (an alarm's stop under ``python -m trainer.train`` and under ``make train``, an
interruption, a finished run, a resumed run given other settings, a run folder without config.yaml, the
preflight's fix, the service that cannot be reached, ``make audit`` on a wrong folder); each command in
them is taken out and parsed by the real parser of what it runs: ``make ...`` through ``make -n`` (the
Makefile's own expansion), then the Python entry point's parser (trainer.cli for the trainer's config
models, argparse for the others, ``--help`` for a module of another room). Placeholders a message names
as such (FILE, MODEL_DIR, <name>) are filled in. The old stop message suggested ``--grpo.on_alarm warn`` to
``python -m trainer.train``, which only takes ``--on_alarm``."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainer import cli
from trainer.alarm import audit_run
from trainer.alarm.evidence import AlarmStopped
from trainer.alarm.rules import Finding
from trainer.alarm.watch import AlarmStop
from trainer.config import GRPOConfig, PipelineConfig, load_config
from trainer.errors import TrainerError
from trainer.pipelines import make_train, run_folder
from trainer.run import preflight
from trainer.run.outcome_watch import CAUSES

ROOT = Path(__file__).resolve().parents[2]
TARGETS = re.search(r"^\.PHONY: (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()  # make's targets
# a command: after a backtick, ": " or "(or: ", up to a backtick, ";", "  (", ")" or the end of the line
COMMAND = re.compile(
    rf"(?:`|: |\(or: )((?:make (?:{'|'.join(TARGETS)})\b|python -m )[^`;\n]*?)\s*(?=`|;|\s\s\(|\)|\n|$)"
)


def commands(text: str) -> list[str]:
    return COMMAND.findall(text)


def python_argv(cmd: str) -> list[str]:
    """``make X ...`` -> the python command line the Makefile runs (make -n); ``python -m ...`` as it is."""
    argv = shlex.split(cmd)
    if argv[0] != "make":
        return argv
    out = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if " -m trainer." in ln][-1]
    return ["python", *shlex.split(line)[1:]]


def accept(cmd: str) -> None:
    """Parse ``cmd`` with the real parser of what it runs (a ConfigError or SystemExit fails the test)."""
    argv = python_argv(cmd)
    assert argv[:2] == ["python", "-m"], cmd
    module, args = argv[2], argv[3:]
    if module == "trainer.train":
        path, over = cli.parse_argv(GRPOConfig, args)
        load_config(path, over)
    elif module == "trainer.pipelines.make_train":
        run_folder.load(PipelineConfig, args, make_train.ALIASES)
    elif module == "trainer.alarm.audit_run":
        audit_run.parser().parse_args(args)
    elif module == "trainer.run.preflight":
        preflight.parser().parse_args(args)
    else:  # another room's entry point: it must exist and take --help
        got = subprocess.run(
            [sys.executable, "-m", module, *args, "--help"], cwd=ROOT, capture_output=True, timeout=120
        )
        assert got.returncode == 0, (cmd, got.stderr[-2000:])


def fill(text: str, tmp_path: Path) -> str:
    grpo = tmp_path / "grpo.yaml"
    grpo.write_text(f"steps: 4\nrun_dir: {tmp_path / 'train-run'}\n")
    return text.replace("FILE", str(grpo)).replace("MODEL_DIR", str(tmp_path)).replace("<name>", "x")


def messages(tmp_path: Path) -> dict[str, str]:
    """What the trainer prints, produced by its own code."""
    out: dict[str, str] = {}
    runs = tmp_path / "runs"
    for name in ("x", "y"):  # x as make train leaves a run folder; y lost its config.yaml
        ck = runs / name / "checkpoints" / "step-000003"
        ck.mkdir(parents=True)
        (ck / "trainer_state.pt").write_bytes(b"")
    saved = PipelineConfig(runs=str(runs), name="x").model_dump(mode="json")
    (runs / "x" / "config.yaml").write_text(yaml.safe_dump(saved))
    ck = runs / "x" / "checkpoints" / "step-000003"
    stop = AlarmStop(4, [Finding("audit_disagreement", "the audit pays 0%")], {})
    cfg = GRPOConfig(run_dir=str(runs / "x"), alarm=True, on_alarm="stop")
    from trainer.train import alarm_stopped, resume_commands

    e = alarm_stopped(stop, 4, ck, cfg)
    again, past = resume_commands(["--config", "FILE", "--alarm", "true", "--on_alarm", "stop"], ck)
    out["trainer.train alarm stop"] = f"{e}\nresume with: {again}\nto train past the alarm: {past}"
    r = make_train.Run(PipelineConfig(runs=str(runs)), runs / "x", 0.0)
    out["make train alarm stop"] = make_train.stopped_message(r, AlarmStopped(str(stop), 3, ck))
    out["make train interrupted"] = f"interrupted at step 3; resume with: {make_train.resume_command(r)}"
    (runs / "x" / "summary.json").write_text("{}")
    for name, call in {
        "finished run": lambda: run_folder.refuse_finished(runs / "x", ck, 3, runs),
        "settings of a resumed run": lambda: run_folder.check_fixed({"seed": 0}, {"seed": 1}, runs / "x"),
        "no config.yaml": lambda: run_folder.load(PipelineConfig, ["--runs", str(runs), "--name", "y"], {}),
        "audit of a wrong folder": lambda: audit_run.main([str(tmp_path / "nothing")]),  # an exit, said on stderr
    }.items():
        said = io.StringIO()
        with pytest.raises((TrainerError, SystemExit)) as err, contextlib.redirect_stderr(said):
            call()
        out[name] = f"{err.value}\n{said.getvalue()}"
    out["preflight"] = preflight.fix_hint(None, ["<think>"])
    out["outcome watch"] = "\n".join(c for cs in CAUSES.values() for c in cs)
    from trainer.grpo.rewards import VerifierReward

    with pytest.raises(TrainerError) as err:
        VerifierReward("math", "127.0.0.1:1").check(timeout_s=0.2)
    out["service down"] = str(err.value)
    return out


def test_every_printed_command_is_accepted(tmp_path):
    found = {name: commands(fill(text, tmp_path)) for name, text in messages(tmp_path).items()}
    missing = [name for name, cmds in found.items() if not cmds]
    assert not missing, f"no command found in: {missing}"
    for name, cmds in found.items():
        for cmd in cmds:
            try:
                accept(cmd)
            except (TrainerError, SystemExit) as e:
                raise AssertionError(f"{name}: the printed command `{cmd}` is refused: {e}") from None
    stop = found["trainer.train alarm stop"]
    assert any("--on_alarm warn" in c for c in stop) and not any("--grpo." in c for c in stop)
    assert any("ARGS='--grpo.on_alarm warn'" in c for c in found["make train alarm stop"])


def test_the_library_message_names_flags_trainer_train_takes(tmp_path):
    """``train()``'s own AlarmStopped message (no command line known) names flags: they parse too."""
    from trainer.train import alarm_stopped

    stop = AlarmStop(4, [Finding("audit_disagreement", "m")], {})
    msg = str(alarm_stopped(stop, 4, tmp_path / "ck", GRPOConfig(run_dir=str(tmp_path))))
    flags = re.findall(r"(--[a-z_.]+) (\S+?)[\s)]", msg)
    assert ("--on_alarm", "warn") in flags
    for flag, value in flags:
        cli.parse_argv(GRPOConfig, [flag, value])
        load_config(None, [flag, value] if flag != "--resume" else [])
