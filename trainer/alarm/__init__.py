"""The reward-hacking alarm (``--grpo.alarm true``; docs/train.md, "The reward-hacking alarm").

- ``stats``: one step's figures (``StepStats``) from its completions and the audit's verdicts;
- ``rules``: the dynamics alarms as pure functions of the figures so far;
- ``audit``: the independent verdict on a sample of each step's completions;
- ``canary``: known-bad completions through the training reward (verifiers/canaries/);
- ``evidence``: alarms.jsonl and the stderr line;
- ``watch``: ``AlarmWatch``, the one object the trainer holds (``start``, then ``check`` every step);
- ``audit_run``: ``make audit RUN=runs/<name>``, a finished run's saved completions re-graded offline.
"""

from trainer.alarm.rules import Finding, Thresholds
from trainer.alarm.stats import Completion, StepStats
from trainer.alarm.watch import AlarmStop, AlarmWatch, HackableReward

__all__ = ["AlarmStop", "AlarmWatch", "Completion", "Finding", "HackableReward", "StepStats", "Thresholds"]
