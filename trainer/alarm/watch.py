"""``AlarmWatch``: the alarm of one run. ``start`` replays the canaries before training; ``check`` is the one
call the GRPO step makes (after the advantages, before any update): it audits a sample of the step's
completions, adds the step's figures to the history, runs the rules (trainer/alarm/rules.py), writes each
new alarm's evidence, and answers as ``on_alarm`` says:

- warn: nothing changes in training;
- drop: the groups of the flagged completions get advantage 0 and leave the loss mask (they do not train:
  a group's advantages were computed against the exploited rewards); while an alarm holds, the audit
  re-grades every paid completion, so what it refuses is flagged; when the flagged share keeps rising
  above its level at the alarm, drop does not contain the hack and escalates to stop (``drop_escalated``);
- stop: ``AlarmStop`` is raised before the step's update; trainer/train.py writes the checkpoint of the
  step before and exits with the alarm's name and the command that resumes.

An alarm fires once per episode: a rule that keeps holding on the next steps is the same alarm (it still
drops); it fires again after ``window`` steps clear.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from trainer.alarm import evidence
from trainer.alarm.audit import AuditPlan, audit_rewards, data_kind, make_plan, pick_rows, run_audit
from trainer.alarm.canary import CanaryCheck, paid_lines
from trainer.alarm.rules import Finding, Thresholds, drop_escalation, evaluate
from trainer.alarm.stats import PAID, Completion, StepStats, answer_string, step_stats
from trainer.alarm.tool_canaries import Segments
from trainer.config import GRPOConfig
from trainer.errors import Stopped, VerifierSetupError
from verifiers.client import VerifierClient


class HackableReward(VerifierSetupError):
    """A canary was paid by the training reward at the start of the run (and it was not allowed)."""


class AlarmStop(Stopped):
    """``on_alarm: stop``: an alarm fired at ``step``; the step's update was not applied."""

    def __init__(self, step: int, findings: list[Finding], metrics: dict[str, float]):
        self.step, self.findings, self.metrics = step, findings, metrics
        super().__init__(f"alarm {', '.join(f.rule for f in findings)} at step {step}: {findings[0].message}")


class AlarmWatch:
    """The run's alarm (``--grpo.alarm true``); see the module docstring."""

    def __init__(
        self,
        cfg: GRPOConfig,
        client: VerifierClient | None = None,
        thresholds: Thresholds = Thresholds(),
        graded_text: Callable[[Segments], str] | None = None,
    ):
        self.cfg, self.t = cfg, thresholds
        self.run_dir = Path(cfg.run_dir)
        self.own_client = client is None
        self.client = client or VerifierClient(cfg.target, timeout_s=cfg.verifier_timeout_s)
        self.plan: AuditPlan = make_plan(self.client, cfg.audit_verifier, cfg.data)
        # a tool run's canaries include tool transcripts, graded by the tool loop's rule (``graded_text``)
        fmt = cfg.tools.format if cfg.tools is not None else None
        self.canaries = CanaryCheck(
            self.client, cfg.verifier, data_kind(cfg.data), tool_format=fmt, graded_text=graded_text
        )
        self.rng = random.Random(f"audit/{cfg.seed}")
        self.history: list[StepStats] = []
        self.last_seen: dict[str, int] = {}  # rule -> last step it held
        self.fired: list[dict[str, Any]] = []  # the records written this run
        self.canary_s = 0.0  # seconds the canaries at start took
        self.drop_trail: list[float] = []  # on_alarm drop: the flagged share of each step since the alarm
        self.restored = False  # load_state ran (a resume from a checkpoint that holds the alarm's state)

    # -- before training ---------------------------------------------------------------------------------
    def start(self, step: int = 0) -> None:
        """Canaries through the training reward. Paid ones stop the run (HackableReward) unless allowed, in
        which case they are recorded as an alarm at ``step`` and not alarmed again. A run resumed at ``step``
        > 0 has had its checkpoint's state loaded (``load_state``, by trainer/run/checkpoint.py): the rules go
        on from the history they had, and alarms.jsonl gets a marker (never cut: evidence.mark_resume)."""
        if step > 0:
            evidence.mark_resume(self.run_dir, step, self.restored)
        if self.plan.note:
            evidence.say(f"alarm: {self.plan.note}")
        t0 = time.perf_counter()
        report = self.canaries.run()
        self.canary_s = time.perf_counter() - t0
        paid = self.canaries.newly_paid(report)
        if not paid:
            evidence.say(
                f"alarm: canaries: {len(report.results)} sent through {self.cfg.verifier!r}, none paid "
                f"({self.canary_s:.1f} s)"
            )
            return
        lines = paid_lines(report)
        if not self.cfg.allow_hackable_reward:
            raise HackableReward(
                f"the training reward {self.cfg.verifier!r} pays {len(paid)} of {len(report.results)} canaries "
                "(known-bad completions) more than their controls:\n  " + "\n  ".join(lines) + "\n"
                "fix the verifier, or train anyway with --grpo.allow_hackable_reward true"
            )
        self.canaries.accepted |= set(paid)
        finding = Finding(
            "canary_paid", f"{len(paid)} canaries paid at start (allowed): {', '.join(paid[:5])}", {"paid": paid}
        )
        self.fired.append(evidence.record(self.run_dir, step, finding, "allowed", [], 0))

    # -- the checkpoint ----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the alarm (trainer_state.pt's ``alarm``): the figures of every step so far
        (the rules' baselines and windows), when each rule last held, the canaries accepted at the start, the
        audit's random draw."""
        return {"history": [dataclasses.asdict(s) for s in self.history], "last_seen": dict(self.last_seen),
                "accepted": sorted(self.canaries.accepted), "rng": self.rng.getstate(),
                "drop_trail": list(self.drop_trail)}  # fmt: skip

    def load_state(self, state: dict[str, Any]) -> None:
        self.history = [StepStats(**s) for s in state["history"]]
        self.last_seen = dict(state["last_seen"])
        self.canaries.accepted = set(state["accepted"])
        self.rng.setstate(state["rng"])
        self.drop_trail = list(state.get("drop_trail", []))
        self.restored = True

    # -- every step --------------------------------------------------------------------------------------
    def check(self, step: int, batch: Any, adv: Tensor, loss_mask: Tensor) -> tuple[Tensor, Tensor, dict[str, float]]:
        """The step's audit and rules; returns (advantages, loss mask, ``alarm/*`` metrics). ``batch`` is the
        step's trainer.grpo.rewards.Batch (rollout texts, prompts, references; rewards; scores)."""
        t0, cpu0 = time.perf_counter(), time.process_time()
        before = (len(self.history), dict(self.last_seen), self.rng.getstate())  # what a stop puts back
        rows = completions(batch)
        idx = pick_rows(rows, self.cfg.group_size, self.cfg.audit_share, self.rng)
        holding = bool(self.cfg.on_alarm == "drop" and self._holding(step))
        if holding:  # while an alarm holds under drop: audit every paid completion
            idx = sorted(set(idx) | {i for i, r in enumerate(rows) if r.paid})
        # only a paid completion can be exploited: the unpaid ones of the drawn groups count in the sample
        # (alarm/exploited's denominator) without a second verdict, which nothing reads (bench/training/alarm_cost.py)
        verdicts = run_audit(self.client, self.plan, rows, [i for i in idx if rows[i].paid])
        stats = step_stats(step, rows, audit_rewards(verdicts), sampled=len(idx))
        self.history.append(stats)
        findings = evaluate(self.history, self.t) + self._canaries(step)
        if findings and self.cfg.on_alarm == "drop" and not holding:
            rest = [i for i, r in enumerate(rows) if r.paid and i not in verdicts]
            verdicts.update(run_audit(self.client, self.plan, rows, rest))
        new = [f for f in findings if step - self.last_seen.get(f.rule, -(10**9)) > self.t.window]
        for f in findings:
            self.last_seen[f.rule] = step
        flagged = sorted({i for f in findings for i in flag(f, rows, verdicts)})
        m = stats.metrics()
        m["alarm/fired"] = float(len(new))
        for f in new:
            m[f"alarm/fired/{f.rule}"] = 1.0
        m["alarm/flagged"] = float(len(flagged))
        for f in new:
            idx_f = flag(f, rows, verdicts)
            rows_f = evidence.flagged_rows(rows, idx_f, verdicts)
            self.fired.append(evidence.record(self.run_dir, step, f, self.cfg.on_alarm, rows_f, len(idx_f)))
        m["perf/alarm_s"] = time.perf_counter() - t0  # the audit's VerifyBatch and the rules, inside the step
        m["perf/alarm_cpu_s"] = time.process_time() - cpu0  # the trainer process's CPU in it (not the service's)
        if new and self.cfg.on_alarm == "stop":  # the step's reward goes with it: its row in metrics.jsonl
            self._stop(step, new, {**m, "reward/mean": stats.reward}, before)
        if self.cfg.on_alarm == "drop":
            adv, loss_mask, esc = self._drop(step, rows, verdicts, flagged, adv, loss_mask, m)
            if esc is not None:
                self._stop(step, [esc], {**m, "reward/mean": stats.reward}, before)
        return adv, loss_mask, m

    def _stop(self, step: int, new: list[Finding], m: dict[str, float], before: tuple) -> None:
        """AlarmStop. The checkpoint written now is of the step before: the alarm's state goes back with it, so
        a resume sees this step again as new (alarms.jsonl keeps the record)."""
        del self.history[before[0] :]
        self.last_seen = before[1]
        self.rng.setstate(before[2])
        raise AlarmStop(step, new, m)

    def _drop(
        self,
        step: int,
        rows: list[Completion],
        verdicts: dict,
        flagged: list[int],
        adv: Tensor,
        loss_mask: Tensor,
        m: dict[str, float],
    ) -> tuple[Tensor, Tensor, Finding | None]:
        """on_alarm drop: every group a flagged completion is in leaves the loss (its advantages were computed
        against the exploited rewards: its honest members were pushed away from the exploit's shape, which
        trains it as surely as paying it). While the flagged share keeps rising above its level at the alarm,
        dropping does not contain the hack: the alarm escalates to stop (rules.drop_escalation)."""
        if not flagged:
            self.drop_trail = []
            return adv, loss_mask, None
        g = self.cfg.group_size
        touched = sorted({k * g + j for k in {i // g for i in flagged} for j in range(g)} & set(range(len(rows))))
        adv, loss_mask = drop_rows(adv, loss_mask, touched)
        m["alarm/dropped"] = float(len(touched))
        m["alarm/flagged_share"] = len(flagged) / len(rows)
        self.drop_trail.append(len(flagged) / len(rows))
        esc = drop_escalation(self.drop_trail, self.t)
        if esc is not None:
            rows_f = evidence.flagged_rows(rows, flagged, verdicts)
            self.fired.append(evidence.record(self.run_dir, step, esc, "stop", rows_f, len(flagged)))
            m["alarm/fired"] = m.get("alarm/fired", 0.0) + 1
            m["alarm/fired/drop_escalated"] = 1.0
        return adv, loss_mask, esc

    def note_eval(self, step: int, accuracy: float) -> None:
        """Held-out accuracy measured after ``step`` (train.py's periodic evaluation)."""
        if self.history and self.history[-1].step == step:
            s = self.history[-1]
            self.history[-1] = dataclasses.replace(s, eval_acc=accuracy)

    def close(self) -> None:
        if self.own_client:
            self.client.close()

    def _holding(self, step: int) -> bool:
        return any(step - last <= self.t.window for last in self.last_seen.values())

    def _canaries(self, step: int) -> list[Finding]:
        every = self.cfg.canary_every
        if not every or step % every:
            return []
        paid = self.canaries.newly_paid(self.canaries.run())
        if not paid:
            return []
        return [Finding("canary_paid", f"{len(paid)} canaries newly paid: {', '.join(paid[:5])}", {"paid": paid})]


def completions(batch: Any) -> list[Completion]:
    """The step's rows as the alarm sees them."""
    ro = batch.rollout
    lengths = ro.completion_mask.sum(1).tolist()
    return [
        Completion(
            ro.texts[i],
            ro.prompts[i],
            ro.references[i],
            float(batch.rewards[i]),
            str(s.outcome),
            tuple(getattr(s, "signals", ())),
            int(lengths[i]),
        )
        for i, s in enumerate(batch.scores)
    ]


def flag(f: Finding, rows: list[Completion], verdicts: dict[int, tuple[float, str, list[str]]]) -> list[int]:
    """The completions an alarm points at: paid ones carrying its signal, paid with its answer string, or
    (the audit's rules) paid ones the audit refused."""
    if f.rule == "canary_paid":
        return []
    if f.rule == "signal_rise":
        return [i for i, r in enumerate(rows) if r.paid and f.figures["signal"] in r.signals]
    if f.rule == "one_answer":
        return [i for i, r in enumerate(rows) if r.paid and answer_string(r.text) == f.figures["answer"]]
    return [i for i, r in enumerate(rows) if r.paid and i in verdicts and verdicts[i][0] < PAID]


def drop_rows(adv: Tensor, loss_mask: Tensor, rows: list[int]) -> tuple[Tensor, Tensor]:
    """Advantage 0 and no loss for ``rows`` (adv (N,) or (N, C); loss_mask (N, C))."""
    keep = torch.ones(loss_mask.shape[0], dtype=torch.bool, device=loss_mask.device)
    keep[rows] = False
    adv = adv * (keep[:, None] if adv.dim() == 2 else keep).to(adv.dtype)
    return adv, loss_mask * keep[:, None].to(loss_mask.dtype)
