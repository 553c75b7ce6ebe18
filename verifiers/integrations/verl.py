"""verl reward functions backed by the verifier service.

verl loads a custom reward function from ``custom_reward_function.path`` / ``.name`` and passes
``custom_reward_function.reward_kwargs`` to every call:

* ``reward_model.reward_manager=naive`` (also the experimental reward loop) calls
  ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)`` once per response;
* ``reward_model.reward_manager=batch`` calls ``compute_score_batch(data_sources=..., solution_strs=...,
  ground_truths=..., extra_infos=...)`` once per batch (verl/workers/reward_manager/batch.py).

Both return verl's dict form: ``{"score": reward, "acc": 1.0 if CORRECT else 0.0, "outcome": "...",
"graded": 1.0 | 0.0}``. verl takes ``score`` as the reward and collects the other keys as
``reward_extra_info`` (numbers become validation metrics, strings are kept in dumps). verl has no way to
skip a sample, so a SANDBOX_ERROR or BAD_REFERENCE item scores 0.0 with ``graded`` 0.0: watch that key.

Routing: ``data_source`` picks a ``Route`` (a verifier name, its options, and whether the ground truth
is verl's code-test JSON) from ``routes`` (default ``DEFAULT_ROUTES``; a key ending in ``*`` matches a
prefix); ``verifier=`` overrides the routing for every item (a ground truth in verl's code-test shape is
then still translated). The service is ``target=``, else
``$VERIFIER_TARGET``, else ``127.0.0.1:50051``. Adapters translate; the service grades.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifiers.client import Outcome, VerifyItem, VerifyResult
from verifiers.integrations import UNGRADED, client_for

__all__ = [
    "Route",
    "DEFAULT_ROUTES",
    "UnknownDataSource",
    "UnsupportedGroundTruth",
    "compute_score",
    "compute_score_batch",
    "route_for",
]


class UnknownDataSource(KeyError):
    """No route for a ``data_source``: say which verifier grades it (``routes=`` or ``verifier=``)."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0])


class UnsupportedGroundTruth(ValueError):
    """A ground truth the adapter cannot translate into a reference (say what to give instead)."""


@dataclass(frozen=True)
class Route:
    """Where items of one data source go. ``io_tests``: the ground truth may be verl's code-test JSON
    (``{"inputs": [...], "outputs": [...]}``), translated into the code verifier's stdin/stdout cases."""

    verifier: str
    options: Mapping[str, str] = field(default_factory=dict)
    io_tests: bool = False


_MATH = Route("math")
_MATH_ANYWHERE = Route("math", {"fallback": "full"})
_CODE = Route("code", io_tests=True)
# The data sources verl's own default_compute_score knows (verl/utils/reward_score/__init__.py), plus a few
# common hub names, each accepting at least what verl's grader for it accepts:
# - gsm8k: answers end with "#### 72" rather than \boxed{}: the last number is the answer;
# - lighteval/MATH (verl's math.py): the last \boxed{} only;
# - math_dapo, aime* (math_dapo.py): the last "Answer: ..." line; numina_* (prime_math): "the answer is
#   ...", or the whole response when it has no marker. Both: fallback "full" (the final-answer rule,
#   in_sandbox/answer.py: \boxed{} and <answer> first; a response that is one bare expression is its own
#   answer, read whole; other text is extracted from as Math-Verify does).
DEFAULT_ROUTES: dict[str, Route] = {
    "openai/gsm8k": Route("math", {"fallback": "last_number"}),
    "gsm8k": Route("math", {"fallback": "last_number"}),
    "lighteval/MATH": _MATH,
    "DigitalLearningGmbH/MATH-lighteval": _MATH,
    "HuggingFaceH4/MATH-500": _MATH,
    "math": _MATH,
    "math_dapo": _MATH_ANYWHERE,
    "math_dapo_reasoning": _MATH_ANYWHERE,
    "BytedTsinghua-SIA/DAPO-Math-17k": _MATH_ANYWHERE,
    "aime*": _MATH_ANYWHERE,
    "numina_*": _MATH_ANYWHERE,
    "codecontests": _CODE,
    "deepmind/code_contests": _CODE,
    "apps": _CODE,
    "codeparrot/apps": _CODE,
    "codeforces": _CODE,
    "taco": _CODE,
    "BAAI/TACO": _CODE,
    "livecodebench*": _CODE,
    "primeintellect": _CODE,
}


def _as_route(value: Route | str | Mapping[str, Any]) -> Route:
    if isinstance(value, Route):
        return value
    if isinstance(value, str):
        return Route(value)
    v = dict(value)  # a dict from Python, or an OmegaConf DictConfig from verl's YAML
    return Route(
        str(v["verifier"]),
        {str(k): str(x) for k, x in dict(v.get("options") or {}).items()},
        bool(v.get("io_tests", False)),
    )


def route_for(data_source: str, routes: Mapping[str, Any] | None = None, verifier: str | None = None) -> Route:
    """The route of ``data_source``: exact key, else the longest ``prefix*`` key, else ``UnknownDataSource``."""
    if verifier:  # the caller names the verifier: no routing, no route options
        return Route(str(verifier), {}, io_tests=True)
    table = DEFAULT_ROUTES if routes is None else routes
    source = str(data_source)
    if source in table:
        return _as_route(table[source])
    prefixes = [k for k in table if k.endswith("*") and source.startswith(k[:-1])]
    if prefixes:
        return _as_route(table[max(prefixes, key=len)])
    raise UnknownDataSource(
        f"verl data_source {source!r} has no verifier route: pass verifier='<name>' or "
        f"routes={{{source!r}: '<verifier name>'}} in custom_reward_function.reward_kwargs "
        f"(known: {', '.join(sorted(table))})"
    )


def io_cases(ground_truth: Any) -> str | None:
    """verl's ``{"inputs": [...], "outputs": [...]}`` (a dict or its JSON) as stdin/stdout cases JSON,
    or None when the ground truth is not in that shape (then it is passed as it is).

    >>> io_cases('{"inputs": ["1 2\\\\n"], "outputs": ["3\\\\n"]}')
    '[{"input": "1 2\\\\n", "output": "3\\\\n"}]'
    """
    gt = ground_truth
    if isinstance(gt, str):
        if not gt.lstrip().startswith("{"):
            return None
        try:
            gt = json.loads(gt)
        except ValueError:
            return None
    if not isinstance(gt, Mapping) or "inputs" not in gt or "outputs" not in gt:
        return None
    if gt.get("fn_name"):
        raise UnsupportedGroundTruth(
            "verl code ground truth with fn_name (call-based tests) is not translated: "
            "give the code verifier an assert-style reference instead (see docs/verifiers.md)"
        )
    ins, outs = list(gt["inputs"]), list(gt["outputs"])
    if len(ins) != len(outs):
        raise UnsupportedGroundTruth(f"verl code ground truth has {len(ins)} inputs but {len(outs)} outputs")
    return json.dumps([{"input": _text(i), "output": _text(o)} for i, o in zip(ins, outs, strict=True)])


def _text(x: Any) -> str:
    if isinstance(x, list):  # some datasets store a case's lines as a list
        return "\n".join(str(v) for v in x)
    return str(x)


def with_options(route: Route, options: Mapping[str, Any] | None) -> Route:
    """``route`` with the call's ``options`` on top of its own (done once per data source, not per item)."""
    if not options:
        return route
    return Route(route.verifier, {**route.options, **{str(k): str(v) for k, v in options.items()}}, route.io_tests)


def to_item(solution_str: str, ground_truth: Any, route: Route, timeout_s: float = 0.0) -> VerifyItem:
    """One verl sample as a ``VerifyItem`` (translation only)."""
    opts = route.options
    ref = io_cases(ground_truth) if route.io_tests else None
    if ref is not None:
        opts = {"mode": "stdio", **opts}
    elif ground_truth is None:
        ref = ""
    else:
        ref = ground_truth if isinstance(ground_truth, str) else _reference_json(ground_truth)
    return VerifyItem(route.verifier, str(solution_str), ref, "", opts, timeout_s, "")


def _reference_json(value: Any) -> str:
    if isinstance(value, int | float):
        return str(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars from verl's non_tensor_batch
        value = value.tolist()
    return value if isinstance(value, str) else json.dumps(value)


def as_score(r: VerifyResult) -> dict[str, Any]:
    """verl's dict form of one verdict (the same keys for every item: verl collects them as columns)."""
    graded = r.outcome not in UNGRADED
    return {
        "score": float(r.reward) if graded else 0.0,
        "acc": 1.0 if r.outcome == Outcome.CORRECT else 0.0,
        "outcome": r.outcome,
        "graded": 1.0 if graded else 0.0,
        "signals": ",".join(r.signals),  # exploit signals (docs/verifiers.md): kept in verl's dumps
    }


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    verifier: str | None = None,
    routes: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
    target: str | None = None,
    timeout_s: float = 0.0,
    deadline_s: float = 300.0,
    **kwargs: Any,
) -> dict[str, Any]:
    """Grade one verl response (naive reward manager / reward loop). Other verl keywords are ignored."""
    item = to_item(
        solution_str, ground_truth, with_options(route_for(data_source, routes, verifier), options), timeout_s
    )
    r = client_for(target).verify(
        item.verifier,
        item.completion,
        item.reference,
        options=item.options,
        timeout_s=item.timeout_s,
        deadline_s=deadline_s,
    )
    return as_score(r)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any]] | None = None,
    *,
    verifier: str | None = None,
    routes: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
    target: str | None = None,
    timeout_s: float = 0.0,
    deadline_s: float = 600.0,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Grade a whole verl batch (``reward_manager=batch``) in one ``VerifyBatch`` call."""
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise ValueError(f"{len(data_sources)} data_sources, {n} solution_strs, {len(ground_truths)} ground_truths")
    resolved: dict[str, Route] = {}  # one lookup per data source, not per item
    items = []
    for ds, sol, gt in zip(data_sources, solution_strs, ground_truths, strict=True):
        route = resolved.get(ds) or resolved.setdefault(ds, with_options(route_for(ds, routes, verifier), options))
        items.append(to_item(sol, gt, route, timeout_s))
    return [as_score(r) for r in client_for(target).verify_batch(items, deadline_s=deadline_s)]
