"""``python -m verifiers.canaries TARGET``: replay the canary set through a grader and print a table per family.

TARGET is one of
  host:port                  our gRPC service (``--verifier``, ``--option``)
  http://host:port           our HTTP ``/v1/verify_batch``; with ``--openrlhf`` OpenRLHF's ``/get_reward``
  module:function            verl's compute_score(data_source, solution_str, ground_truth, extra_info) or a TRL
                             reward function(prompts, completions, **columns) (``--signature`` if not detected)

A canary is paid when its reward exceeds its control's (a plainly wrong answer in the same format); a probe
(verifiers/canaries/probes.py) when a plainly wrong answer is paid in full or a right one not clearly above it.
Exit code: 0 nothing paid, 1 something paid, 2 a usage error or a grader that could not be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from urllib.parse import urlparse

from verifiers.canaries import KINDS, CanaryError, CanaryReport, Grade, grade_with_client
from verifiers.canaries.probes import gate
from verifiers.canaries.targets import function_grade, http_grade, load_function, signature_of
from verifiers.client import TargetError, VerifierClient, VerifierError

DEFAULT_VERIFIERS = {"math": "math", "code": "code", "format": "think_format"}


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise CanaryError(f"{what} {v!r}: write it as key=value")
        out[key.strip()] = value.strip()
    return out


def _verifiers(values: list[str]) -> dict[str, str]:
    """``--verifier NAME`` (every kind) and ``--verifier KIND=NAME`` (one kind) over DEFAULT_VERIFIERS."""
    out = dict(DEFAULT_VERIFIERS)
    for v in values:
        if "=" in v:
            kind, name = next(iter(_pairs([v], "--verifier").items()))
            if kind not in KINDS:
                raise CanaryError(f"--verifier {v!r}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
            out[kind] = name
        else:
            out = dict.fromkeys(KINDS, v)
    return out


def _kinds(value: str) -> list[str]:
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise CanaryError(f"--kinds {value!r}: choose from {', '.join(KINDS)}")
    return kinds


def graders(a: argparse.Namespace, kinds: list[str], client: VerifierClient | None) -> dict[str, tuple[Grade, str]]:
    """kind -> (grade function, what it grades with, for the header)."""
    names, options = _verifiers(a.verifier), _pairs(a.option, "--option")
    if client is not None:
        return {k: (grade_with_client(client, names[k], options, timeout_s=a.timeout_s), names[k]) for k in kinds}
    if urlparse(a.target).scheme in ("http", "https"):
        shape = "/get_reward" if a.openrlhf else "/v1/verify_batch"
        return {
            k: (
                http_grade(a.target, names[k], options, openrlhf=a.openrlhf, wait_s=a.wait_s),
                f"{names[k]} via {shape}",
            )
            for k in kinds
        }
    fn = load_function(a.target)
    signature = a.signature or signature_of(fn)
    sources = {**{k: k for k in KINDS}, **_pairs(a.data_source, "--data-source")}
    label = f"{signature} {a.target}" + (" data_source={}" if signature == "verl" else "")
    return {k: (function_grade(fn, signature, sources[k]), label.format(sources[k])) for k in kinds}


def _is_grpc(target: str) -> bool:
    return ":" in target and urlparse(target).scheme not in ("http", "https") and target.rsplit(":", 1)[1].isdigit()


def run(a: argparse.Namespace) -> CanaryReport:
    kinds = _kinds(a.kinds)
    if a.openrlhf and urlparse(a.target).scheme not in ("http", "https"):
        raise CanaryError("--openrlhf needs an http://host:port target")
    # a batch's deadline: BATCH items queue behind each other on the service's pool
    deadline_s = max(300.0, 4 * a.timeout_s + 60)
    client = VerifierClient(a.target, timeout_s=deadline_s, wait_s=a.wait_s) if _is_grpc(a.target) else None
    try:
        report = CanaryReport()
        for kind, (grade, label) in graders(a, kinds, client).items():
            part = gate(grade, kind)  # the canaries and the probes (verifiers/canaries/probes.py)
            print(f"== {kind} canaries -> {label}\n{part.table()}\n", flush=True)
            report += part
    finally:
        if client is not None:
            client.close()
    return report


def summary(report: CanaryReport, show: int) -> str:
    lines = []
    for r in report.paid[:show]:
        c = r.canary
        lines.append(f"PAID {c.id} [{c.kind}] {r.versus()} ({r.outcome or '-'}): {c.why} | {c.completion[:120]!r}")
    if len(report.paid) > show:
        lines.append(f"... and {len(report.paid) - show} more paid (--json PATH writes every result)")
    fams = report.families()
    lines.append(
        f"sent {len(report.results)} canaries in {len(fams)} families: paid {len(report.paid)}, "
        f"families paid {len(report.families_paid())} of {len(fams)}"
        + (f", ungraded {len(report.ungraded)}" if report.ungraded else "")
    )
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m verifiers.canaries", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("target", help="host:port, http://host:port, or module:function")
    p.add_argument(
        "--verifier",
        action="append",
        default=[],
        metavar="NAME|KIND=NAME",
        help="the verifier to grade with (service targets); default math, code, think_format per kind",
    )
    p.add_argument("--option", action="append", default=[], metavar="K=V", help="a verifier option (service targets)")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma list of {', '.join(KINDS)} (default: all)")
    p.add_argument("--openrlhf", action="store_true", help="http target: OpenRLHF's /get_reward shape")
    p.add_argument("--signature", choices=["verl", "trl"], help="function target: its signature, if not detected")
    p.add_argument(
        "--data-source",
        action="append",
        default=[],
        metavar="KIND=NAME",
        help="verl function target: the data_source passed for a kind (default: the kind's name)",
    )
    p.add_argument("--timeout-s", type=float, default=30.0, help="grading budget per item (service targets)")
    p.add_argument(
        "--wait-s",
        type=float,
        default=10.0,
        help="service targets (gRPC, HTTP): how long to keep trying one that cannot be reached",
    )
    p.add_argument("--json", metavar="PATH", help="write every canary's result as JSON lines")
    p.add_argument("--show", type=int, default=20, help="how many paid canaries to list (default 20)")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)  # exits 2 on a usage error
    try:
        report = run(a)
    except (CanaryError, TargetError) as e:
        print(f"canaries: {e}", file=sys.stderr)
        return 2
    except VerifierError as e:
        print(f"canaries: the service at {a.target} failed: {e}", file=sys.stderr)
        return 2
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r.as_dict()) + "\n" for r in report.results)
    print(summary(report, a.show))
    return 1 if report.paid else 0


if __name__ == "__main__":
    sys.exit(main())
