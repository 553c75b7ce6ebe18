"""Evaluation arithmetic: the unbiased pass@k estimator and the report built from graded samples.

Pure functions over plain records (one dict per graded sample), so they are tested without a model
or a service. A record has at least ``id`` (the problem), ``sample`` (index within the problem),
``verifier``, ``reward``, ``outcome``, ``elapsed_s`` and ``components``.

pass@k follows Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1,
arxiv.org/abs/2107.03374): with n samples of which c are correct,
``pass@k = 1 - C(n-c, k) / C(n, k)``, averaged over problems. It is computed as a running product,
never with factorials, so n in the thousands does not overflow.

Infrastructure failures (``SANDBOX_ERROR``) are not the model's fault: they are counted on their own
and left out of every denominator (accuracy, pass@k's n, format rate). Where they left a problem with
fewer than k graded samples, that problem is left out of pass@k and the report says how many were.

>>> round(pass_at_k(10, 3, 1), 4), round(pass_at_k(10, 3, 5), 4), pass_at_k(5, 0, 1), pass_at_k(5, 5, 5)
(0.3, 0.9167, 0.0, 1.0)
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from verifiers.client import OUTCOMES, UNGRADED, Outcome  # the names come from the proto enum

INFRA = Outcome.SANDBOX_ERROR  # graded again on resume: the next try may work
# UNGRADED (SANDBOX_ERROR, BAD_REFERENCE): not the model's fault, out of every denominator
FORMAT_COMPONENTS = ("think_format", "tag_count")
INFRA_NOTE = (
    "SANDBOX_ERROR and BAD_REFERENCE samples (an infrastructure failure, a reference that cannot be graded: "
    "not the model's fault) are counted under outcomes "
    "and infra_errors and excluded from the denominators of accuracy, pass@k and format_rate."
)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k samples is correct) from n samples, c correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    prob_all_wrong = 1.0  # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
    for i in range(n - c + 1, n + 1):
        prob_all_wrong *= 1.0 - k / i
    return 1.0 - prob_all_wrong


def ks_for(n: int, extra: Iterable[int] = ()) -> list[int]:
    """The k to report for problems with up to n samples: 1, 5, 10, 20, 50, 100, 200, 500, ... up to n,
    plus n itself and any ``extra`` (pass@8 with K=8 is what people quote).

    >>> ks_for(1), ks_for(8), ks_for(10), ks_for(25, extra=[3])
    ([1], [1, 5, 8], [1, 5, 10], [1, 3, 5, 10, 20, 25])
    """
    ks, scale = {1}, 1
    while 5 * scale <= n:
        ks.update(k for k in (5 * scale, 10 * scale, 20 * scale) if k <= n)
        scale *= 10
    ks.add(max(n, 1))
    ks.update(k for k in extra if 1 <= k <= n)
    return sorted(ks)


def _quantile(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return 0.0
    i = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[i]


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _outcome_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = Counter(r["outcome"] for r in records)
    return {o: counts.get(o, 0) for o in OUTCOMES} | {o: c for o, c in counts.items() if o not in OUTCOMES}


def pass_at_k_table(records: Sequence[Mapping[str, Any]], extra_ks: Iterable[int] = ()) -> tuple[dict, dict]:
    """({k: mean pass@k}, {k: problems used}) over problems, counting only non-infra samples."""
    per_problem: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # id -> [n, c]
    for r in records:
        nc = per_problem[str(r["id"])]
        if r["outcome"] not in UNGRADED:
            nc[0] += 1
            nc[1] += r["outcome"] == Outcome.CORRECT
    most = max((n for n, _ in per_problem.values()), default=0)
    values, used = {}, {}
    for k in ks_for(most, extra_ks) if most else []:
        scores = [pass_at_k(n, c, k) for n, c in per_problem.values() if n >= k]
        values[k], used[k] = sum(scores) / len(scores), len(scores)
    return values, used


def _format_value(r: Mapping[str, Any]) -> float | None:
    """The sample's format grade: its own reward when its verifier is a format verifier (a think_format
    row), else the format component of its composite (r1's), else the separate format grade."""
    if r.get("verifier") in FORMAT_COMPONENTS:
        return float(r["reward"])
    comps = r.get("components") or {}
    for name in FORMAT_COMPONENTS:
        if name in comps:
            return float(comps[name])
    if r.get("format") is not None:
        return float(r["format"])
    return None


def graded_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """accuracy (share CORRECT) and reward mean over the graded samples; n, n_graded and ``ungraded``
    (SANDBOX_ERROR, BAD_REFERENCE: counted, out of the denominator). None where nothing was graded.
    The one definition of accuracy: ``make eval``'s report and training's evaluation both use it.

    >>> graded_figures([{"outcome": "CORRECT", "reward": 1.0}, {"outcome": "SANDBOX_ERROR", "reward": 0.0}])
    {'n': 2, 'n_graded': 1, 'ungraded': 1, 'accuracy': 1.0, 'reward_mean': 1.0}
    """
    graded = [r for r in records if r["outcome"] not in UNGRADED]
    n_ok = len(graded)
    return {
        "n": len(records),
        "n_graded": n_ok,
        "ungraded": len(records) - n_ok,
        "accuracy": _rate(sum(r["outcome"] == Outcome.CORRECT for r in graded), n_ok),
        "reward_mean": sum(float(r["reward"]) for r in graded) / n_ok if n_ok else None,
    }


def summarize(records: Sequence[Mapping[str, Any]], extra_ks: Iterable[int] = ()) -> dict[str, Any]:
    """The headline numbers for one set of records (the whole run, or one verifier's share of it)."""
    graded = [r for r in records if r["outcome"] not in UNGRADED]
    formats = [f for f in (_format_value(r) for r in graded) if f is not None]
    pk, used = pass_at_k_table(records, extra_ks)
    problems = {str(r["id"]) for r in records}
    fig = graded_figures(records)
    out: dict[str, Any] = {
        "n": fig["n"],
        "n_graded": fig["n_graded"],
        "problems": len(problems),
        "accuracy": fig["accuracy"],
        "reward_mean": fig["reward_mean"],
        "pass@k": {str(k): v for k, v in pk.items()},
        "outcomes": _outcome_counts(records),
        "infra_errors": fig["ungraded"],
        "format_rate": sum(f >= 1.0 for f in formats) / len(formats) if formats else None,
    }
    short = {str(k): used[k] for k in used if used[k] < len(problems)}
    if short:
        out["pass@k_problems"] = short  # problems with >= k graded samples, where fewer than all
    return out


def component_breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """For composites: each component's mean reward and share of samples where it scored 1."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r["outcome"] in UNGRADED:
            continue
        for name, v in (r.get("components") or {}).items():
            by[name].append(float(v))
    return {
        k: {"mean": sum(v) / len(v), "full_rate": sum(x >= 1.0 for x in v) / len(v), "n": len(v)}
        for k, v in sorted(by.items())
    }


def latency(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Grading time per sample as the service measured it (seconds), and how many were cache hits."""
    xs = [float(r.get("elapsed_s") or 0.0) for r in records]
    if not xs:
        return {}
    return {
        "mean_s": statistics.fmean(xs),
        "p50_s": _quantile(xs, 0.5),
        "p95_s": _quantile(xs, 0.95),
        "max_s": max(xs),
        "cached": sum(bool(r.get("cached")) for r in records),
    }


def build_report(records: Sequence[Mapping[str, Any]], extra_ks: Iterable[int] = (), **meta: Any) -> dict[str, Any]:
    """The full report: headline numbers, latency, per-verifier and per-component breakdowns, notes."""
    extra_ks = list(extra_ks)
    report = summarize(records, extra_ks)
    report["latency"] = latency(records)
    by_verifier: dict[str, list] = defaultdict(list)
    for r in records:
        by_verifier[r["verifier"]].append(r)
    report["verifiers"] = {
        name: summarize(rs, extra_ks) | {"components": component_breakdown(rs)}
        for name, rs in sorted(by_verifier.items())
    }
    report["notes"] = [INFRA_NOTE]
    report.update(meta)
    return report


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def to_markdown(report: Mapping[str, Any]) -> str:
    """A few small tables: headline, outcomes, and the per-verifier/component breakdown."""
    title = report.get("title") or "evaluation"
    lines = [f"### {title}", "", "| metric | value |", "|---|---|"]
    rows = [("samples (n)", report["n"]), ("problems", report["problems"]),
            ("accuracy", report["accuracy"]), ("reward mean", report["reward_mean"])]  # fmt: skip
    rows += [(f"pass@{k}", v) for k, v in report["pass@k"].items()]
    rows += [("format rate", report["format_rate"]), ("infrastructure errors (SANDBOX_ERROR)", report["infra_errors"])]
    lat = report.get("latency") or {}
    if lat:
        rows.append(("grading latency mean / p95 (s)", f"{lat['mean_s']:.3f} / {lat['p95_s']:.3f}"))
    trained = report.get("training_eval")
    if trained:
        where = trained.get("source") or f"eval/accuracy, step {trained.get('step')}"
        rows.append((f"accuracy training reported ({where})", trained["accuracy"]))
    lines += [f"| {k} | {_fmt(v)} |" for k, v in rows]
    outcomes = report["outcomes"]
    lines += ["", "| " + " | ".join(outcomes) + " |", "|" + "---|" * len(outcomes)]
    lines.append("| " + " | ".join(str(v) for v in outcomes.values()) + " |")
    verifiers = report.get("verifiers") or {}
    if len(verifiers) > 1 or any(v.get("components") for v in verifiers.values()):
        lines += ["", "| verifier / component | n | accuracy or mean | full score rate |", "|---|---|---|---|"]
        for name, v in verifiers.items():
            lines.append(f"| {name} | {v['n']} | {_fmt(v['accuracy'])} | |")
            for comp, c in v.get("components", {}).items():
                lines.append(f"| {name} › {comp} | {c['n']} | {_fmt(c['mean'])} | {_fmt(c['full_rate'])} |")
    short = report.get("pass@k_problems")
    if short:
        lines += [
            "",
            "pass@k over fewer problems (those with at least k graded samples): "
            + ", ".join(f"k={k}: {n}" for k, n in short.items()),
        ]
    lines += ["", f"_{INFRA_NOTE}_"]
    return "\n".join(lines) + "\n"
