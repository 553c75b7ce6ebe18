"""Canaries: known-bad completions replayed through a reward to find out whether it pays them.

The set ships as data (``data/{math,code,format}.jsonl``, regenerated from the project's adversarial
batteries by ``python -m tests.build_canaries``): every row a careful grader gives nothing, grouped by
family (``math.hedges_inside``, ``code.exits``, ``format.invisible``, ``<kind>.null``: empty, whitespace, the
prompt echoed, a lone ``{``, ``\\boxed{}``...), each with the kind it targets and a **control**, a plainly wrong
answer in the same format. A canary is **paid** when its reward exceeds its control's: a composite that
gives a well-formed wrong answer 0.1 for its format (``r1`` = 0.9 math + 0.1 format) pays that to every
control too, so only credit beyond it counts.

>>> from verifiers.client import VerifierClient                           # doctest: +SKIP
>>> with VerifierClient("127.0.0.1:50051") as c:                          # doctest: +SKIP
...     report = run_canaries(grade_with_client(c, "r1"), load_canaries(kinds={"math"}))
...     print(report.table()); report.paid                                # [] when nothing is paid

A grade function takes ``[(completion, reference, prompt), ...]`` and returns ``[(reward, outcome), ...]``
in the same order (outcome: the grader's word for it, ``""`` where it has none); any reward function fits
behind one (verifiers/canaries/targets.py wraps HTTP endpoints, verl's ``compute_score`` and TRL's reward
functions). ``python -m verifiers.canaries TARGET`` prints the report (docs/verifiers.md, "Canaries").

A reward that pays the control too (pays everything, the format alone, or length) pays no canary more than
its control: verifiers/canaries/probes.py adds pairs of right and plainly wrong completions, and ``gate``
(canaries and probes) is what the trainer's start gate and the CLI run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from verifiers.client import VerifierClient, VerifyItem
from verifiers.shapes.outcome import UNGRADED

KINDS = ("math", "code", "format")
DATA = Path(__file__).resolve().parent / "data"
BATCH = 128  # items per grade call to a service (a batch well under any service's bounds)

Item = tuple[str, str, str]  # (completion, reference, prompt)
Grade = Callable[[list[Item]], list[tuple[float, str]]]


class CanaryError(ValueError):
    """A canary set or a grade function that cannot be used (unknown kind, wrong number of results...)."""


@dataclass(frozen=True)
class Canary:
    """One known-bad completion: ``control`` is a plainly wrong answer in the same format."""

    family: str
    name: str
    kind: str  # math | code | format
    completion: str
    reference: str
    prompt: str
    control: str
    why: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


@dataclass(frozen=True)
class CanaryResult:
    canary: Canary
    reward: float
    outcome: str
    control_reward: float
    control_outcome: str

    @property
    def paid(self) -> bool:
        """Paid: more than the control earned (a NaN reward counts as paid: the grader cannot say 0)."""
        return math.isnan(self.reward) or self.reward > self.control_reward

    def versus(self) -> str:
        """What made it paid, in words (a probe says it its own way: verifiers/canaries/probes.py)."""
        return f"reward {self.reward:g} > control {self.control_reward:g}"

    def as_dict(self) -> dict:
        return {**asdict(self.canary), "id": self.canary.id, "reward": self.reward, "outcome": self.outcome,
                "control_reward": self.control_reward, "control_outcome": self.control_outcome, "paid": self.paid}  # fmt: skip


@dataclass
class CanaryReport:
    results: list[CanaryResult] = field(default_factory=list)

    @property
    def paid(self) -> list[CanaryResult]:
        return [r for r in self.results if r.paid]

    @property
    def ungraded(self) -> list[CanaryResult]:
        """Canaries whose verdict (or control's) was not the grader's (SANDBOX_ERROR, BAD_REFERENCE): unpaid
        but untested, so a broken sandbox does not read as a safe reward."""
        names = {str(o) for o in UNGRADED}
        return [r for r in self.results if r.outcome in names or r.control_outcome in names]

    def families(self) -> dict[str, tuple[int, int]]:
        """family -> (sent, paid), in the order the families first appear."""
        out: dict[str, tuple[int, int]] = {}
        for r in self.results:
            sent, paid = out.get(r.canary.family, (0, 0))
            out[r.canary.family] = (sent + 1, paid + r.paid)
        return out

    def families_paid(self) -> list[str]:
        return [f for f, (_, paid) in self.families().items() if paid]

    def table(self) -> str:
        """One line per family (sent, paid), then the totals and the families paid."""
        fams = self.families()
        width = max([len("family")] + [len(f) for f in fams])
        lines = [f"{'family':<{width}}  {'sent':>5}  {'paid':>5}"]
        lines += [f"{f:<{width}}  {sent:>5}  {paid:>5}" for f, (sent, paid) in fams.items()]
        paid = self.families_paid()
        lines.append(f"{'total':<{width}}  {len(self.results):>5}  {len(self.paid):>5}")
        lines.append(f"families paid: {len(paid)} of {len(fams)}" + (f" ({', '.join(paid)})" if paid else ""))
        if self.ungraded:
            lines.append(f"ungraded (not the grader's verdict, e.g. SANDBOX_ERROR): {len(self.ungraded)}")
        return "\n".join(lines)

    def __add__(self, other: CanaryReport) -> CanaryReport:
        return CanaryReport(self.results + other.results)


def load_canaries(kinds: Iterable[str] | None = None, families: Iterable[str] | None = None) -> list[Canary]:
    """The packaged set, for ``kinds`` (default all of KINDS) and, if given, only the named ``families``."""
    wanted = list(KINDS) if kinds is None else sorted(set(kinds))
    unknown = [k for k in wanted if k not in KINDS]
    if unknown:
        raise CanaryError(f"unknown canary kind(s) {unknown}: known are {list(KINDS)}")
    out = []
    for kind in wanted:
        lines = (DATA / f"{kind}.jsonl").read_text(encoding="utf-8").split("\n")  # not splitlines: U+2028 is data
        for n, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                out.append(Canary(**json.loads(line)))
            except (ValueError, TypeError) as e:
                raise CanaryError(f"{DATA / kind}.jsonl line {n}: not a canary ({e})") from e
    if families is not None:
        names = set(families)
        missing = names - {c.family for c in out}
        if missing:
            raise CanaryError(f"unknown canary families {sorted(missing)} for kinds {wanted}")
        out = [c for c in out if c.family in names]
    return out


def run_canaries(grade: Grade, canaries: Iterable[Canary]) -> CanaryReport:
    """Grade every canary and every distinct control through ``grade`` (one call) and compare them."""
    canaries = list(canaries)
    controls = list(dict.fromkeys((c.control, c.reference, c.prompt) for c in canaries))
    items = [(c.completion, c.reference, c.prompt) for c in canaries] + controls
    got = grade(items) if items else []
    if len(got) != len(items):
        raise CanaryError(f"the grade function returned {len(got)} results for {len(items)} items")
    scores = [(_reward(r), str(o)) for r, o in got]
    by_control = dict(zip(controls, scores[len(canaries) :], strict=True))
    results = []
    for c, (reward, outcome) in zip(canaries, scores, strict=False):
        control_reward, control_outcome = by_control[(c.control, c.reference, c.prompt)]
        results.append(CanaryResult(c, reward, outcome, control_reward, control_outcome))
    return CanaryReport(results)


def _reward(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CanaryError(f"the grade function returned {value!r} as a reward: a number is expected")
    return float(value)


def grade_with_client(
    client: VerifierClient, verifier: str = "r1", options: Mapping[str, str] | None = None, *, timeout_s: float = 0.0
) -> Grade:
    """A grade function that sends each item to ``verifier`` with ``options`` through ``client``
    (batches of BATCH); the outcome is the service's (``CORRECT``, ``INCORRECT``, ``SANDBOX_ERROR``...)."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}

    def grade(items: list[Item]) -> list[tuple[float, str]]:
        out: list[tuple[float, str]] = []
        for start in range(0, len(items), BATCH):
            batch = [VerifyItem(verifier, c, r, p, opts, timeout_s) for c, r, p in items[start : start + BATCH]]
            out += [(r.reward, str(r.outcome)) for r in client.verify_batch(batch)]
        return out

    return grade


__all__ = ["KINDS", "Canary", "CanaryError", "CanaryReport", "CanaryResult", "Grade", "grade_with_client",
           "load_canaries", "run_canaries"]  # fmt: skip
