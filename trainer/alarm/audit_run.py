"""``make audit RUN=runs/<name>``: a finished run's saved completions re-graded offline, and the report.

    python -m trainer.alarm.audit_run runs/<name> [--target host:port] [--verifier NAME] [--audit-verifier NAME]

Only what a run saved is re-graded, by design: ``completions.jsonl`` (every completion of the steps
logged, every ``log_completions_every`` steps and the first and last) and ``alarms.jsonl`` (the completions
each alarm flagged); a run does not keep its other completions, and the report says how many of the run's
it covers. Each saved completion goes through the audit's independent verdict (the strict built-in of the
data's kind, or the run's ``audit_verifier``) and is compared with the training reward *as saved* (the reward
it was trained with: the training reward is not called again). The report gives, per step, how many the
training reward paid, how many of those the audit pays (agreement), the completions they disagree on, the
run's alarms, and the canary table of the training reward (canaries and probes, verifiers/canaries/probes.py)
where the service knows it and the run's config.yaml names it. Without ``--target`` a local service is
started for the audit and stopped after (a verifier the run registered itself is then unknown there).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from trainer.alarm.audit import data_kind, make_plan, run_audit
from trainer.alarm.canary import CanaryCheck
from trainer.alarm.evidence import read_alarms
from trainer.alarm.stats import PAID, Completion
from trainer.errors import DataError, exit_on_error
from verifiers.client import VerifierClient


def run_settings(run: Path) -> dict[str, Any]:
    """The run's GRPO settings (config.yaml's grpo section, as make train writes it)."""
    path = run / "config.yaml"
    if not path.exists():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    return raw.get("grpo", raw) if isinstance(raw, dict) else {}


def saved_completions(run: Path) -> list[dict[str, Any]]:
    """completions.jsonl rows, then the completions alarms.jsonl flagged (marked with their rule)."""
    rows = []
    path = run / "completions.jsonl"
    if path.exists():
        rows += [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
    for a in read_alarms(run):
        rows += [{**c, "step": a["step"], "alarm": a["rule"]} for c in a.get("completions", [])]
    if not rows:
        raise DataError(f"{run}: no completions.jsonl or alarms.jsonl with completions: nothing to audit")
    return rows


def coverage(cfg: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """What the audit covers: the saved completions, of how many the run graded (when config.yaml says)."""
    saved = sum("alarm" not in r for r in rows)
    flagged = len(rows) - saved
    what = f"re-grades only the saved completions: {saved} from completions.jsonl, {flagged} flagged in alarms.jsonl"
    try:
        total = int(cfg["steps"]) * int(cfg["prompts_per_step"]) * int(cfg["group_size"])
    except (KeyError, TypeError, ValueError):
        return f"{what} (the run's other completions were not saved)"
    every = cfg.get("log_completions_every", "?")
    return f"{what}, of {total:,} the run graded (completions.jsonl keeps the steps logged every {every}; the rest were not saved)"


def audit(run: Path, client: VerifierClient, verifier: str | None, audit_verifier: str | None) -> str:
    """Re-grade the run's saved completions; the report as text."""
    cfg = run_settings(run)
    verifier = verifier or cfg.get("verifier")
    rows = saved_completions(run)
    comps = [
        Completion(
            r["completion"],
            r["prompt"],
            str(r["reference"]),
            float(r["reward"]),
            str(r.get("outcome", "")),
            tuple(r.get("signals", ())),
        )
        for r in rows
    ]
    data = cfg.get("data") if cfg.get("data") and Path(cfg["data"]).exists() else None
    plan = make_plan(client, audit_verifier or cfg.get("audit_verifier"), data)
    verdicts = run_audit(client, plan, comps, list(range(len(comps))))
    out = [
        f"audit of {run}: {len(comps)} saved completions; training reward {verifier or '(unknown)'}; audit "
        f"{plan.verifier} {plan.options or ''}{' (' + plan.note + ')' if plan.note else ''}",
        coverage(cfg, rows),
    ]
    by_step: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_step[int(r["step"])].append(i)
    out.append("step  saved  paid  audit pays  agreement")
    for step, idx in sorted(by_step.items()):
        paid = [i for i in idx if comps[i].paid]
        agree = sum(verdicts[i][0] >= PAID for i in paid)
        out.append(f"{step:>4}  {len(idx):>5}  {len(paid):>4}  {agree:>10}  {agree / len(paid) if paid else 1:>9.0%}")
    bad = [i for i, c in enumerate(comps) if c.paid and verdicts[i][0] < PAID]
    out.append(f"paid by the training reward, refused by the audit: {len(bad)} of {sum(c.paid for c in comps)} paid")
    for i in bad[:10]:
        c, v = comps[i], verdicts[i]
        out.append(f"  step {rows[i]['step']}: {c.text[:80]!r} (reference {c.reference!r}): audit {v[1]} {v[2] or ''}")
    alarms = read_alarms(run)
    out.append(f"alarms in the run: {len(alarms)}")
    out += [f"  step {a['step']}: {a['rule']} [{a['action']}]: {a['message']}" for a in alarms]
    known = {v.name for v in client.list_verifiers()}
    if verifier is None:
        out.append(
            f"canaries: skipped: the run's training reward is unknown (no config.yaml in {run} names it); "
            "pass --verifier NAME (make audit ARGS='--verifier NAME')"
        )
    elif verifier in known:
        data = cfg.get("data")
        report = CanaryCheck(client, verifier, data_kind(data if data and Path(data).exists() else None)).run()
        out.append(f"canaries through {verifier!r}:\n{report.table()}")
    else:
        out.append(f"canaries: {verifier!r} is not registered on this service (pass --target where it is)")
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    """``python -m trainer.alarm.audit_run``'s command line (``make audit``)."""
    ap = argparse.ArgumentParser(prog="python -m trainer.alarm.audit_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run folder (runs/<name>, or runs/latest)")
    ap.add_argument("--target", default=None, help="host:port of a verifier service (default: start a local one)")
    ap.add_argument("--verifier", default=None, help="the training reward (default: the run's config.yaml)")
    ap.add_argument("--audit-verifier", default=None, help="the audit (default: the run's, else the strict built-in)")
    return ap


@exit_on_error
def main(argv: list[str] | None = None) -> str:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    run = Path(args.run)
    if not run.is_dir():
        raise DataError(f"{run}: not a run folder: pass one, as in `make audit RUN=runs/<name>`")
    if args.target:
        with VerifierClient(args.target) as c:
            text = audit(run, c, args.verifier, args.audit_verifier)
    else:
        from verifiers.launch import LocalServer

        print("starting a local verifier service for the audit ...", file=sys.stderr, flush=True)
        with LocalServer(pool_size=2, log_path=str(run / "audit_verifier.log")) as srv, VerifierClient(srv.target) as c:
            text = audit(run, c, args.verifier, args.audit_verifier)
    print(text)
    return text


if __name__ == "__main__":
    main()
