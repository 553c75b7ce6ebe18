"""Grade functions for the graders the canaries CLI can reach: our gRPC service, an HTTP endpoint (our
``/v1/verify_batch`` or OpenRLHF's ``/get_reward`` shape), and a Python function with verl's
``compute_score(data_source, solution_str, ground_truth, extra_info)`` or TRL's
``reward_func(prompts, completions, **columns)`` signature. Each returns a ``Grade`` for one canary kind.

A function target is the user's own code, imported and called in this process: the CLI is a client-side
tool the user runs on their grader, never part of the service.
"""

from __future__ import annotations

import importlib
import inspect
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.canaries import BATCH, CanaryError, Grade, Item
from verifiers.shapes.outcome import Outcome

TRL_REFERENCE_COLUMNS = ("answer", "solution", "ground_truth", "reference")  # the names TRL recipes use


class Unreachable(CanaryError):
    """Nothing answered the connection (refused, no route): nothing was sent, so trying again is safe."""


def http_grade(
    base_url: str,
    verifier: str,
    options: Mapping[str, str],
    *,
    openrlhf: bool = False,
    timeout_s: float = 300.0,
    wait_s: float = 0.0,
) -> Grade:
    """POST batches to ``{base_url}/v1/verify_batch`` (or ``/get_reward?verifier=...`` with ``openrlhf``); a
    server that cannot be reached is tried for ``wait_s`` seconds, then "cannot reach" (a CanaryError)."""
    base = base_url.rstrip("/")

    def post(chunk: list[Item]) -> list:
        if openrlhf:
            return _openrlhf(base, verifier, chunk, timeout_s)
        return _v1(base, verifier, options, chunk, timeout_s)

    def grade(items: list[Item]) -> list[tuple[float, str]]:
        out: list[tuple[float, str]] = []
        for start in range(0, len(items), BATCH):
            until = time.monotonic() + wait_s
            while True:
                try:
                    out += post(items[start : start + BATCH])
                    break
                except Unreachable:
                    if time.monotonic() >= until:
                        raise
                    time.sleep(min(0.5, max(0.0, until - time.monotonic())))
        return out

    return grade


def _post(url: str, body: dict, timeout_s: float) -> Any:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise CanaryError(f"POST {url}: HTTP {e.code}: {e.read()[:300]!r}") from e
    except urllib.error.URLError as e:
        if isinstance(e.reason, OSError) and not isinstance(e.reason, TimeoutError):  # refused, no route, no name
            raise Unreachable(f"cannot reach the grader at {url}: {e.reason}") from e
        raise CanaryError(f"POST {url}: {e}") from e
    except (OSError, ValueError) as e:
        raise CanaryError(f"POST {url}: {e}") from e


def _v1(base: str, verifier: str, options: Mapping[str, str], items: list[Item], timeout_s: float) -> list:
    body = {
        "items": [
            {"verifier": verifier, "completion": c, "reference": r, "prompt": p, "options": dict(options)}
            for c, r, p in items
        ]
    }
    got = _post(f"{base}/v1/verify_batch", body, timeout_s)
    results = got.get("results") if isinstance(got, dict) else None
    if not isinstance(results, list) or len(results) != len(items):
        raise CanaryError(f"{base}/v1/verify_batch: expected {{'results': [...]}} with {len(items)} entries")
    return [(float(r.get("reward", 0.0)), outcome_of_json(r.get("outcome", ""))) for r in results]


def outcome_of_json(name: object) -> str:
    """An outcome as /v1 JSON spells it (the proto enum's name) → its Outcome name; unknown → as given."""
    try:
        return Outcome.from_proto(pb.Outcome.Value(str(name))).value
    except ValueError:
        return str(name)


def _openrlhf(base: str, verifier: str, items: list[Item], timeout_s: float) -> list:
    body = {"query": [p + c for c, _, p in items], "prompts": [p for _, _, p in items],
            "labels": [r for _, r, _ in items]}  # fmt: skip
    query = f"?{urllib.parse.urlencode({'verifier': verifier})}" if verifier else ""
    got = _post(f"{base}/get_reward{query}", body, timeout_s)
    rewards = got.get("rewards") if isinstance(got, dict) else None
    if not isinstance(rewards, list) or len(rewards) != len(items):
        raise CanaryError(f"{base}/get_reward: expected {{'rewards': [...]}} with {len(items)} entries")
    return [(float(r), "") for r in rewards]


def load_function(spec: str) -> Callable[..., Any]:
    """``package.module:function`` -> the function (CanaryError naming what is missing)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CanaryError(f"function target {spec!r}: write it as module:function (e.g. my_rewards:compute_score)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise CanaryError(f"function target {spec!r}: cannot import {module_name!r} ({e})") from e
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise CanaryError(f"function target {spec!r}: {module_name} has no function {attr!r}")
    return fn


def signature_of(fn: Callable[..., Any]) -> str:
    """``verl`` (has solution_str), ``trl`` (has completions), else CanaryError asking for --signature."""
    params = inspect.signature(fn).parameters
    if "solution_str" in params:
        return "verl"
    if "completions" in params:
        return "trl"
    raise CanaryError(
        f"{fn.__qualname__}{inspect.signature(fn)} is neither verl's compute_score(data_source, "
        "solution_str, ground_truth, extra_info) nor a TRL reward function(prompts, completions, "
        "**kwargs): pass --signature verl|trl"
    )


def function_grade(fn: Callable[..., Any], signature: str, data_source: str) -> Grade:
    """A grade function over a Python reward function (``signature``: verl or trl)."""
    if signature == "verl":
        return lambda items: [_verl_score(_verl_call(fn, data_source, c, r, p)) for c, r, p in items]
    if signature == "trl":
        return lambda items: _trl_scores(fn, items)
    raise CanaryError(f"unknown signature {signature!r}: verl or trl")


def _verl_call(fn: Callable[..., Any], data_source: str, completion: str, reference: str, prompt: str) -> Any:
    try:
        return fn(data_source, completion, reference, {"prompt": prompt})
    except Exception as e:  # the user's code: reported (exit 2), never a traceback
        raise CanaryError(f"compute_score raised {type(e).__name__}: {e} (on {completion[:60]!r})") from e


def _verl_score(value: Any) -> tuple[float, str]:
    """verl's compute_score returns a number or a dict with ``score`` (and, from ours, ``outcome``)."""
    if isinstance(value, Mapping):
        if "score" not in value:
            raise CanaryError(f"compute_score returned a dict without 'score': {sorted(value)}")
        return _number(value["score"]), str(value.get("outcome", ""))
    return _number(value), ""


def _trl_scores(fn: Callable[..., Any], items: list[Item]) -> list[tuple[float, str]]:
    """TRL passes a function plain text, or, for a conversational dataset, messages (``[{"role": "user",
    "content": ...}]`` per prompt, ``[{"role": "assistant", "content": ...}]`` per completion). The plain
    form is tried first; a function that fails on it is given the conversational one. A function that fails
    on both is a CanaryError naming both errors (exit 2: not graded), never a traceback."""
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    refs = [r for _, r, _ in items]
    columns = {name: refs for name in TRL_REFERENCE_COLUMNS if takes_any or name in params}
    plain = ([p for _, _, p in items], [c for c, _, _ in items])
    chat = (
        [[{"role": "user", "content": p}] for _, _, p in items],
        [[{"role": "assistant", "content": c}] for c, _, _ in items],
    )
    errors = []
    for form, (prompts, completions) in (("plain text", plain), ("conversational", chat)):
        try:
            got = fn(prompts=prompts, completions=completions, **columns)
            got = list(got)
        except Exception as e:  # the user's code: any failure is reported, with the form it was given
            errors.append(f"{form}: {type(e).__name__}: {e}")
            continue
        if len(got) != len(items):
            raise CanaryError(f"the reward function returned {len(got)} rewards for {len(items)} completions")
        return [(0.0, "None (cannot grade)") if v is None else (_number(v), "") for v in got]
    raise CanaryError(
        f"the reward function {getattr(fn, '__qualname__', fn)!r} failed on TRL's plain-text and "
        f"conversational forms: {'; '.join(errors)}"
    )


def _number(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError) as e:
        raise CanaryError(f"the reward function returned {value!r}: a number is expected") from e
    return out
