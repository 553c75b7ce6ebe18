"""``make train``: data -> model -> warm start -> eval before -> GRPO -> eval after -> summary.json.

    python -m trainer.pipelines.make_train                                  # the embedded default (tiny model, CPU)
    python -m trainer.pipelines.make_train --model Qwen/Qwen2.5-0.5B-Instruct --data gsm8k.jsonl --verifier math \\
        --config configs/qwen05b.yaml                           # a real model: the same code path

The embedded default builds everything itself: the arithmetic task (``trainer.pipelines.task``), a character
tokenizer and a tiny Qwen2 (``trainer.pipelines.tiny``). The warm start is supervised on completions that show
their work only part of the time; GRPO's data has final answers only, so only the reward (from the
verifier service) can tell the policy what pays. Held-out accuracy is greedy, graded by the service's
``math`` verifier, before and after GRPO.

A run lives in ``runs/<name>/`` (``runs/latest`` points at it): ``config.yaml``, ``data/``,
``warmstart/`` (the model GRPO starts from), ``metrics.jsonl``, ``tb/``, ``curves.png``,
``completions.jsonl``, ``eval_before.jsonl``/``eval_after.jsonl``, ``checkpoints/`` and ``summary.json``.

The verifier service: ``--target host:port`` (or ``VERIFIER_TARGET``) uses a running one; otherwise a
local one is started on a free loopback port for the run and stopped afterwards.

With ``--model`` and no ``--config`` the settings come from configs/real_model.yaml; every run prints the
settings that matter and where each came from (trainer/pipelines/run_folder.py). Before the service starts, a
preflight (trainer/run/preflight.py) checks that the tags the verifiers read survive decoding and writes the
rendered prompt to ``prompt.txt``. ``--name`` of a run folder with a checkpoint resumes it in place;
Ctrl-C/SIGTERM during GRPO writes the step's checkpoint and prints the command that resumes it
(trainer/run/interrupt.py). ``--model`` may be a PEFT adapter folder (trainer/run/own_model.py).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainer import cli
from trainer.alarm.evidence import AlarmStopped
from trainer.config import GRPOConfig, PipelineConfig, load_config
from trainer.data import read_jsonl
from trainer.errors import Stopped, exit_on_error
from trainer.evaluation.heldout import evaluate_heldout, figure_lines
from trainer.pipelines import run_folder, task, tiny, tool_task
from trainer.pipelines.run_folder import make_run_dir, prepare_data, relink_latest
from trainer.pipelines.service import verifier_service
from trainer.pipelines.tools_baseline import run_without_tools
from trainer.pipelines.warmstart import warm_start
from trainer.rollout.tools import FORMATS
from trainer.run import interrupt, own_model, preflight
from trainer.run.outcome_watch import OutcomeWatch
from trainer.run.progress import MetricsBar

DEFAULT_CONFIG = run_folder.DEFAULT_CONFIG  # with --model and no --config: run_folder.REAL_MODEL_CONFIG
ALIASES = {"verifier": "grpo.verifier", "alarm": "grpo.alarm"}  # make train VERIFIER=...: the GRPO reward; --alarm true


# ---------------------------------------------------------------------------------------------
# configuration and the run folder
# ---------------------------------------------------------------------------------------------


def load(path: str | Path | None, over: dict[str, Any]) -> PipelineConfig:
    """A pipeline config file (optional) with ``over`` (a nested mapping) on top, validated once."""
    raw = cli.read_yaml(path) if path else {}
    return cli.build(PipelineConfig, cli.merge(raw, over), f" in {path}" if path else "")


def load_args(argv: list[str]) -> PipelineConfig:
    """``make train``'s command line: ``--config FILE`` (default configs/default.yaml, or
    configs/real_model.yaml with --model), then overrides; a run resumed in place reads its config.yaml."""
    return run_folder.load(PipelineConfig, argv, ALIASES).cfg


def say(msg: str) -> None:
    """A progress line on stderr (stdout holds the figures)."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# the run: a sequence of stages over one Run
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    """What the stages share: the config, the run folder, and what each stage produced."""

    cfg: PipelineConfig
    dir: Path
    t0: float
    paths: dict[str, Path | None] = field(default_factory=dict)
    grpo: GRPOConfig | None = None
    model: Any = None
    tok: Any = None
    target: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    resume: Path | None = None  # the checkpoint a run resumed in place continues from
    extra: dict[str, Any] = field(default_factory=dict)  # GRPO settings the model imposes (an adapter's lora)
    watch: OutcomeWatch | None = None

    @property
    def own_task(self) -> bool:
        """The embedded task (its wording: warm start, estimates, final answers only)."""
        return self.cfg.data is None

    def save_results(self) -> None:
        """The stage results a resumed run reuses (warm start, evaluation before)."""
        keep = {k: v for k, v in self.results.items() if k in ("warmstart", "eval_before")}
        (self.dir / "stages.json").write_text(json.dumps(keep, indent=2) + "\n")

    def mark(self, phase: str) -> None:
        """Seconds since the last mark go to ``phase`` (summary.json's phases_s)."""
        self.phases[phase] = time.time() - self.t0 - sum(self.phases.values())

    def grpo_config(self, **extra: Any) -> GRPOConfig:
        """The pipeline's ``grpo`` section pointed at this run (folder, data, seed, model, threads)."""
        raw = self.cfg.grpo.model_dump()
        raw.update(
            run_dir=str(self.dir),
            data=str(self.paths["train"]),
            eval_data=str(self.paths["heldout"]),
            seed=self.cfg.seed,
            resume=str(self.resume) if self.resume else None,
            **self.extra,
            **extra,
        )
        if self.cfg.threads and "threads" not in self.cfg.grpo.model_fields_set:
            raw["threads"] = self.cfg.threads
        return load_config(None, raw)


def start(loaded: run_folder.Loaded) -> Run:
    """Threads, the run folder (runs/latest points at it; an existing one when resumed in place), the data
    splits, and the settings printed with where each came from."""
    import torch

    t0, cfg = time.time(), loaded.cfg
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    for note in loaded.notes:
        say(note)
    if loaded.run_dir is not None:  # resumed in place: its data, its stage results, runs/latest -> it
        run_dir = loaded.run_dir
        relink_latest(Path(cfg.runs), run_dir)
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = cfg.name or f"{Path(cfg.model).name if cfg.model else 'default'}-s{cfg.seed}-{stamp}"
        run_dir = make_run_dir(Path(cfg.runs), name)
    say(f"run: {run_dir}  ({run_dir.parent / 'latest'} -> {run_dir.name})")
    for line in run_folder.settings_lines(cfg, loaded.sources):
        say(line)
    r = Run(cfg, run_dir, t0, resume=loaded.resume)
    if r.resume is not None:
        g = cfg.grpo
        r.paths = {"warmstart": None, "train": Path(g.data), "heldout": Path(g.eval_data)}
        r.results = json.loads((run_dir / "stages.json").read_text()) if (run_dir / "stages.json").exists() else {}
    else:
        r.paths = prepare_data(cfg, run_dir)
    return r


def load_model(r: Run) -> None:
    """The policy: the user's --model (a PEFT adapter folder: its base + the adapter, trained), or the tiny
    model built here. A model with nothing to train stops here, before anything starts."""
    from trainer.policy import load_policy

    model, tok, src = None, None, r.cfg.model
    if own_model.is_adapter(src):
        r.extra["lora"] = own_model.lora_section(own_model.adapter_info(src))
        model, tok = own_model.load_adapter(src)
        say(
            f"MODEL={src} is a LoRA adapter: training it on its base {model.peft_config['default'].base_model_name_or_path}"
        )
    path = src or str(tiny.build(r.dir / "init", r.cfg.tiny, seed=r.cfg.seed))
    r.grpo = r.grpo_config(model=path)
    r.model, r.tok = load_policy(r.grpo, model, tok)
    own_model.check_trainable(r.model, path)


def preflight_stage(r: Run) -> None:
    """Before the service starts: the verifiers' tags survive decoding, one prompt renders (prompt.txt)."""
    prompt = read_jsonl(r.paths["train"])[0]["prompt"]
    rep = preflight.check(
        r.tok,
        r.model,
        [r.grpo.verifier, r.cfg.eval.verifier],
        prompt,
        model_dir=r.cfg.model,
        use_chat_template=r.grpo.use_chat_template,
        max_new_tokens=r.grpo.max_new_tokens,
    )
    for w in rep.warnings:
        say(f"warning: {w}")
    preflight.raise_errors(rep)
    path = preflight.write_prompt(rep, r.dir, r.grpo.use_chat_template)
    names = " and ".join(dict.fromkeys([r.grpo.verifier, r.cfg.eval.verifier]))
    say(
        f"preflight: ok (the tags that {names} read survive decoding); the rendered prompt "
        f"({rep.prompt_tokens} tokens): {path}"
    )


def warm_start_stage(r: Run) -> None:
    """Supervised steps on the warm-start rows (worked solutions mixed with estimates); saved to warmstart/."""
    ws, rows_path = r.cfg.warmstart, r.paths.get("warmstart")
    if r.resume is not None:  # the checkpoint holds the weights
        r.results.setdefault("warmstart", {"steps": 0})
        return
    r.results["warmstart"] = {"steps": 0}
    if not rows_path or not ws.steps:
        return
    rows = read_jsonl(rows_path)
    if r.cfg.task.kind == "products":
        worked = sum(tool_task.calls_tool(x.get("completion", "")) for x in rows)
        what = f" ({worked} of {len(rows)} completions call Python; the rest answer with an estimate)"
    else:
        worked = sum(task.BARE_THINK not in x.get("completion", "") for x in rows)
        what = f" ({worked} of {len(rows)} completions show their work; the rest only estimate)"
    what = what if r.own_task else ""
    say(f"warm start: {ws.steps} supervised steps on {rows_path}{what}")
    from tqdm import tqdm

    bar = tqdm(total=ws.steps, desc="warm start", unit="step", dynamic_ncols=True)

    def on_step(step: int, m: dict[str, float]) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{m['loss']:.3f}", step_s=f"{m['step_s']:.2f}", refresh=False)

    fmt = FORMATS[r.grpo.tools.format] if r.grpo.tools is not None else None  # tool output: context, not target
    r.results["warmstart"] = warm_start(
        r.model,
        r.tok,
        rows,
        ws.model_copy(update={"seed": r.cfg.seed}),
        on_step=on_step,
        use_chat_template=r.grpo.use_chat_template,
        tool_format=fmt,
    )
    bar.close()
    r.model.save_pretrained(r.dir / "warmstart")
    r.tok.save_pretrained(r.dir / "warmstart")
    r.save_results()


def connect(r: Run) -> None:
    """GRPO's config gets the service's address; the whole config goes to config.yaml."""
    r.grpo = r.grpo_config(model=r.grpo.model, target=r.target)
    dump = {**r.cfg.model_dump(exclude={"grpo"}), "grpo": r.grpo.model_dump()}
    (r.dir / "config.yaml").write_text(yaml.safe_dump(dump, sort_keys=False))
    say(f"verifier service: {r.target}; GRPO reward: {r.grpo.verifier}; held-out grading: {r.cfg.eval.verifier}")


def _heldout(r: Run, model, out: str | Path, tools: Any = "run") -> dict[str, Any]:
    """Held-out figures of ``model``, with the run's tools (``grpo.tools``) unless ``tools`` says otherwise."""
    return evaluate_heldout(
        model,
        r.tok,
        r.paths["heldout"],
        r.cfg.eval,
        r.target,
        r.dir / out,
        seed=r.cfg.seed,
        use_chat_template=r.grpo.use_chat_template,
        tools=r.grpo.tools if tools == "run" else tools,
    )


def _with(r: Run) -> str:
    return ", with tools" if r.grpo.tools is not None else ""


def _start_name(r: Run) -> str:
    return "after warm start" if r.results.get("warmstart", {}).get("steps") else "before GRPO"


def eval_before(r: Run) -> None:
    if r.resume is not None and "eval_before" in r.results:  # resumed in place: evaluated when it began
        say(f"held-out accuracy {_start_name(r)}: {r.results['eval_before']['accuracy']:.3f} (from stages.json)")
        return
    before = r.results["eval_before"] = _heldout(r, r.model, "eval_before.jsonl")
    say(f"held-out accuracy {_start_name(r)}: {before['accuracy']:.3f} ({before['n']} problems, greedy{_with(r)})")
    with (r.dir / "metrics.jsonl").open("a") as f:  # step 0 of the eval curve in curves.png
        f.write(json.dumps({"step": 0, "eval/accuracy": before["accuracy"]}) + "\n")
    r.save_results()


def grpo(r: Run) -> None:
    from trainer.train import train

    g = r.grpo
    if g.alarm:
        by = g.audit_verifier or "the strict built-in"
        every = f" and every {g.canary_every} steps" if g.canary_every else ""
        say(f"alarm: on ({g.on_alarm}); audit {g.audit_share:.0%} of groups by {by}; canaries at start{every}")
    what = " (final answers only: no worked solutions)" if r.own_task else ""
    say(f"GRPO: {g.steps} steps x {g.prompts_per_step} prompts x G={g.group_size} on {r.paths['train']}{what}")
    r.watch = OutcomeWatch(g.steps, g.verifier)
    with MetricsBar(r.dir / "metrics.jsonl", g.steps, r.watch), interrupt.deferred():
        r.results["grpo"] = train(g, r.model, r.tok)


def eval_after(r: Run) -> None:
    r.results["eval_after"] = _heldout(r, r.results["grpo"]["model"], "eval_after.jsonl")


def without_tools(r: Run) -> None:
    """The control arm of a tool run (``without_tools: true``): trainer/pipelines/tools_baseline.py."""
    if r.cfg.without_tools and r.grpo.tools is not None:
        r.results["without_tools"] = run_without_tools(r, lambda m, t, out, tools: _heldout(r, m, out, tools), say)


def summarise(r: Run) -> dict[str, Any]:
    """summary.json, and the figures printed."""
    res, cfg = r.results, r.cfg
    checkpoint = res["grpo"]["checkpoint"]
    summary = {
        "eval_before": res["eval_before"],
        "eval_after": res["eval_after"],
        "steps": r.grpo.steps,
        "wall_s": round(time.time() - r.t0, 1),
        "phases_s": {k: round(v, 1) for k, v in r.phases.items()},
        "warmstart": res["warmstart"],
        "seed": cfg.seed,
        "model": cfg.model or "tiny (built by trainer.pipelines.tiny)",
        "data": str(Path(r.paths["train"]).resolve()),
        "heldout": str(Path(r.paths["heldout"]).resolve()),
        "verifier": r.grpo.verifier,
        "checkpoint": str(Path(checkpoint).resolve()),
        "run_dir": str(r.dir.resolve()),
        "warnings": [r.watch.message] if r.watch is not None and r.watch.message else [],
    }
    if "without_tools" in res:
        summary["tools"] = r.grpo.tools.model_dump()
        summary["without_tools"] = res["without_tools"]
    (r.dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for line in figure_lines(res["eval_before"], res["eval_after"], cfg.eval.verifier, _start_name(r)):
        print(line + _with(r))
    if "without_tools" in res:
        w = res["without_tools"]
        for line in figure_lines(w["eval_before"], w["eval_after"], cfg.eval.verifier, _start_name(r)):
            print(line + ", without tools (the same budget)")
    print(
        f"wall {summary['wall_s']:.0f} s; run: {r.dir} ({r.dir.parent / 'latest'}); curves: {r.dir / 'curves.png'}; "
        f"checkpoint: {checkpoint}"
    )
    return summary


Stage = Callable[[Run], None]
# (phase in summary.json's phases_s, stage); the second list runs while the verifier service is up
BEFORE_SERVICE: tuple[tuple[str, Stage], ...] = (
    ("setup_s", load_model),
    ("preflight_s", preflight_stage),
    ("warmstart_s", warm_start_stage),
)
WITH_SERVICE: tuple[tuple[str, Stage], ...] = (
    ("service_s", connect),
    ("eval_before_s", eval_before),
    ("grpo_s", grpo),
    ("eval_after_s", eval_after),
    ("without_tools_s", without_tools),
)


def resume_command(r: Run, args: str = "") -> str:
    """``make train NAME=...`` that resumes the run in place (and the python -m form); ``args``: extra flags."""
    runs = "" if Path(r.cfg.runs) == Path("runs") else f" RUNS={shlex.quote(str(r.cfg.runs))}"
    extra = f" ARGS={shlex.quote(args)}" if args else ""
    python = shlex.join(
        [
            ".venv/bin/python",
            "-m",
            "trainer.pipelines.make_train",
            "--name",
            r.dir.name,
            "--runs",
            str(r.cfg.runs),
            *shlex.split(args),
        ]
    )
    return f"make train NAME={shlex.quote(r.dir.name)}{runs}{extra}  (or: {python})"


def stopped_message(r: Run, e: AlarmStopped) -> str:
    """on_alarm stop: the alarm, the checkpoint, the evidence and the commands that go on (resumed in place)."""
    return (
        f"{str(e).split(chr(10))[0]}\ncheckpoint of step {e.step}: {e.checkpoint}; evidence: "
        f"{r.dir / 'alarms.jsonl'}; resume with: {resume_command(r)}; to train past the alarm: "
        f"{resume_command(r, '--grpo.on_alarm warn')}"
    )


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """``make train``: the stages in order; returns summary.json's contents. Ctrl-C or SIGTERM during GRPO
    writes a checkpoint of the step under way and raises Stopped saying how to resume."""
    r = start(run_folder.load(PipelineConfig, list(sys.argv[1:] if argv is None else argv), ALIASES))
    try:
        with interrupt.immediate():
            for phase, stage in BEFORE_SERVICE:
                stage(r)
                r.mark(phase)
            with verifier_service(r.cfg.target, r.dir / "verifier.log", r.cfg.grpo.tools is not None) as r.target:
                for phase, stage in WITH_SERVICE:
                    stage(r)
                    r.mark(phase)
    except interrupt.Interrupted as e:
        raise interrupt.Interrupted(
            e.step, e.checkpoint, f"interrupted at step {e.step}; resume with: {resume_command(r)}"
        ) from None
    except AlarmStopped as e:  # on_alarm stop: the message names the alarm; the run resumes in place
        raise Stopped(stopped_message(r, e)) from None
    except KeyboardInterrupt:
        from trainer.run.checkpoint import list_checkpoints

        done = list_checkpoints(r.dir)
        how = f"resume with: {resume_command(r)}" if done else "no checkpoint yet: the same command starts it again"
        raise Stopped(f"interrupted ({done[-1].name if done else 'before GRPO'}); {how}") from None
    return summarise(r)


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(PipelineConfig, __doc__, ALIASES))
        return
    try:
        run(argv)
    except interrupt.Interrupted as e:
        print(str(e), file=sys.stderr, flush=True)
        raise SystemExit(interrupt.exit_status()) from None


if __name__ == "__main__":
    main()
