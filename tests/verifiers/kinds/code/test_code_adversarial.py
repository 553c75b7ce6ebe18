"""The ``code`` verifier's assert mode (and stdio checkers) against a policy that games its grader.

Each family is one table of ``(id, program, tests, options, outcome, why)``: the verdict a careful human
grader gives (or, for the hacks, the outcome we give instead of a reward) and a note on the attack. A
family is graded with one ``verify_batch`` through a real service on a real Docker pool, so the whole
battery costs a few seconds. Most hacks here got reward 1 before the tests ran in a process of their
own (harness.py); the correct programs next to them must keep reward 1 (no false negatives).
"""

from __future__ import annotations

import json

import pytest

from tests.data.code_battery import (
    BUILTIN_NAMED_FAMILY,
    CALLABLE_FAMILY,
    CHECK_FAMILY,
    CHECKER_FAMILY,
    CONTROL_FAMILY,
    EXIT_FAMILY,
    FRAME_FAMILY,
    NOT_SUPPORTED,
    OK,
    SHADOW_FAMILY,
    VALUES_FAMILY,
)
from verifiers.shapes.request import Request


# A family is one batch: its last items wait for the ones before them on a 2-container pool, and a request's
# budget covers its queueing (one deadline per request), so it grows with the family, not with a row's need.
def _budget(family) -> float:
    return max(8.0, 0.3 * len(family))


def _grade(svc, family):
    reqs = [
        Request("code", f"```python\n{prog}```", tests, options=dict(opts), timeout_s=_budget(family))
        for _, prog, tests, opts, _, _ in family
    ]
    got = svc.verify_batch(reqs)
    wrong = [
        f"{cid}: got {v.outcome} (reward {v.reward}), want {want}: {why} | {v.detail[:200]}"
        for (cid, _, _, _, want, why), v in zip(family, got, strict=True)
        if v.outcome != want or v.reward != (1.0 if want == OK else 0.0)
    ]
    assert not wrong, "\n".join(wrong)


def _grade_remote(client, family):
    """The same as ``_grade``, through the real gRPC service (tests/conftest.py's ``client``)."""
    items = [
        {
            "verifier": "code",
            "completion": f"```python\n{prog}```",
            "reference": tests,
            "options": dict(opts),
            "timeout_s": _budget(family),
        }
        for _, prog, tests, opts, _, _ in family
    ]
    got = client.verify_batch(items)
    wrong = [
        f"{cid}: got {v.outcome} (reward {v.reward}), want {want}: {why} | {v.detail[:200]}"
        for (cid, _, _, _, want, why), v in zip(family, got, strict=True)
        if v.outcome != want or v.reward != (1.0 if want == OK else 0.0)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from tests.security.conftest import make_pool
    from verifiers.kinds.table import sandbox_warmup
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry

    pool = make_pool("docker", size=2, warmup=sandbox_warmup()).start()
    reg = Registry(str(tmp_path_factory.mktemp("reg") / "registry.sqlite"))
    svc = VerifierService(reg, pool)
    yield svc
    svc.close()
    pool.close()
    reg.close()


@pytest.mark.slow
@pytest.mark.docker
def test_always_equal_objects_and_every_kind_of_callable(service):
    _grade(service, CALLABLE_FAMILY)


@pytest.mark.docker
def test_shadowed_builtins_modules_and_helpers(service):
    _grade(service, SHADOW_FAMILY)


@pytest.mark.docker
def test_frame_walking_harness_patching_and_verdict_forgery(service):
    _grade(service, FRAME_FAMILY)


@pytest.mark.docker
def test_exiting_before_the_tests_finish(service):
    _grade(service, EXIT_FAMILY)


@pytest.mark.docker
def test_plain_data_both_ways(service):
    _grade(service, VALUES_FAMILY)


@pytest.mark.docker
@pytest.mark.parametrize(
    "row",
    [pytest.param(r, id=r[0], marks=pytest.mark.xfail(strict=True, reason=r[5])) for r in NOT_SUPPORTED],
)
def test_not_supported_yet(service, row):
    """Correct programs the harness cannot grade yet (issue 41): each is a strict xfail with its reason, never
    the careful verdict; the day one passes, its xfail fails and the row moves to its family."""
    _grade(service, [row])


# -- issue 36: the harness never infers the tests' structure from text ----------------------------------------
@pytest.mark.docker
def test_check_runs_whatever_text_mentions_check(client):
    """A helper ``is_valid_check(``, an assert message, a comment or a string holding ``check(`` made the old
    harness believe the tests call ``check`` themselves, so it never ran and an empty body was paid."""
    _grade_remote(client, CHECK_FAMILY)


@pytest.mark.docker
def test_exceptions_from_the_candidate_are_failed_calls_never_control_flow(client):
    """StopIteration raised by the candidate used to reach the tests as StopIteration and end the ``map``
    inside ``all(...)`` quietly: every assert passed."""
    _grade_remote(client, CONTROL_FAMILY)


@pytest.mark.docker
def test_a_function_under_test_named_like_a_builtin_is_the_candidates(client):
    """MBPP's ``pow``/``max`` tasks: the tests' name is the candidate's function (``x = 0`` is not paid), while
    a candidate shadowing a builtin the tests use as a helper still changes nothing."""
    _grade_remote(client, BUILTIN_NAMED_FAMILY)


@pytest.mark.docker
def test_a_checker_that_crashes_on_the_output_rejects_it(service):
    reqs = [
        Request(
            "code",
            f"```python\n{prog}```",
            json.dumps({"cases": [{"input": "", "output": "3"}], "checker": chk}),
            options={"mode": "stdio", "judge": "checker"},
            timeout_s=30,
        )
        for _, prog, chk, _, _ in CHECKER_FAMILY
    ]
    got = service.verify_batch(reqs)
    wrong = [
        f"{cid}: got {v.outcome}, want {want}: {why} | {v.detail[:200]}"
        for (cid, _, _, want, why), v in zip(CHECKER_FAMILY, got, strict=True)
        if v.outcome != want
    ]
    assert not wrong, "\n".join(wrong)


# -- the wire between the two processes (in_sandbox/code/wire.py), on the host -----------------------------------
def _plain():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary()
    scalars = scalars | st.complex_numbers(allow_nan=False) | st.builds(range, st.integers(), st.integers())
    keys = st.none() | st.booleans() | st.integers() | st.text() | st.binary()
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner)
            | st.lists(inner).map(tuple)
            | st.dictionaries(keys, inner)
            | st.frozensets(keys)
            | st.sets(keys)
        ),
        max_leaves=20,
    )


def _types(v) -> str:
    """The value's types all the way down, as text (set members in sorted order)."""
    t = type(v).__name__
    if isinstance(v, (set, frozenset)):
        return t + "{" + ",".join(sorted(map(_types, v))) + "}"
    if isinstance(v, (list, tuple)):
        return t + "[" + ",".join(map(_types, v)) + "]"
    if isinstance(v, dict):
        return t + "{" + ",".join(sorted(_types(k) + ":" + _types(x) for k, x in v.items())) + "}"
    return t


def test_plain_data_round_trips_exactly():
    from hypothesis import given, settings

    from in_sandbox.code.wire import decode, encode

    @settings(max_examples=300, deadline=None, derandomize=True, database=None)  # the same 300 every run
    @given(_plain())
    def check(v):
        back = decode(encode(v))
        assert back == v and _types(back) == _types(v)  # same types all the way down (True is not 1, (1,) not [1])

    check()


class _Liar(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value",
    [_Liar(1), [1, _Liar(2)], {"k": object()}, lambda: 0, (i for i in range(2)), type, Exception("x"), bytearray(b"x")],
)
def test_what_is_not_plain_data_is_refused(value):
    from in_sandbox.code.wire import NotPlain, encode

    with pytest.raises(NotPlain):
        encode(value)


@pytest.mark.parametrize(
    "text",
    [
        '["x", 1]',
        "[1, 2]",
        '["s", [["l", []]]]',
        '["d", [1]]',
        "9" * 5000,
        '["r", ["l", []], 1, 1]',
        "nope",
        '["c", "1", 2]',
        '["b", "zz"]',
        '["l", [' * 300 + "]]" * 300,
        '{"a": 1}',
    ],
)
def test_a_hostile_answer_decodes_to_an_error_never_an_object(text):
    """Whatever the candidate's process writes, the tests' process gets plain data or NotPlain."""
    from in_sandbox.code.wire import NotPlain, decode

    with pytest.raises(NotPlain):
        decode(text)


@pytest.mark.slow
@pytest.mark.docker
def test_humaneval_through_the_suite_canonical_pass_stubs_and_poly_hack_fail(service):
    """All 164 canonical solutions with the suite's own requests (prelude = the prompt) get reward 1; the
    same problems with ``return None`` bodies get 0; HumanEval/32 with the candidate's own ``poly`` that
    always says 0 gets 0 (the tests' poly is the prompt's)."""
    from trainer.evaluation.suites import humaneval_problems

    problems = humaneval_problems()
    reqs = [
        Request("code", p.prompt + p.solution, p.reference, options=dict(p.options), timeout_s=20) for p in problems
    ]
    reqs += [Request("code", p.prompt + "    return None\n", p.reference, options=dict(p.options), timeout_s=20)
             for p in problems]  # fmt: skip
    p32 = next(p for p in problems if p.id == "HumanEval/32")
    hack = p32.prompt + "    return 0.0\n\n\ndef poly(xs, x):\n    return 0\n"
    reqs.append(Request("code", hack, p32.reference, options=dict(p32.options), timeout_s=20))
    got = service.verify_batch(reqs)
    n = len(problems)
    canon = [f"{p.id}: {v.outcome} {v.detail[:150]}" for p, v in zip(problems, got[:n], strict=True) if v.reward != 1.0]
    assert not canon, "\n".join(canon)
    assert sum(v.reward for v in got[n : 2 * n]) == 0
    assert got[-1].outcome == "INCORRECT", got[-1].detail
