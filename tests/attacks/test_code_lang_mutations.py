"""Generated attacks per family on assert mode beyond Python, and Python tests that never run (issue 49), through
the real gRPC service (session ``client``) at a fixed seed: 0 paid.

``bench/code_grading/fuzz_code.py --langs`` runs the same operators longer (and opted in, to count what the refusal keeps
out) and writes bench/results/fuzz_code.txt.
"""

from __future__ import annotations

import pytest

from tests.attacks.code_lang_ops import FAMILIES, RUNS_NOTHING, SHAPES, lang_mutants, reshape
from tests.attacks.code_ops import BREAKING, battery_seeds, humaneval_seeds
from tests.verifiers.kinds.code.test_code_assert_langs import CASES
from verifiers.kinds.code.asserts import SHARED_PROGRAM

SEED = 49
N_LANG = 60  # a shared-program language's refused up front; a separated one's graded (a few seconds each, idle)


@pytest.mark.slow
@pytest.mark.docker
# a hang guard, not a timing: 8 languages' mutants now run apart (ruby ... racket), not refused
@pytest.mark.timeout(1200)
def test_language_mutants_are_never_paid(client):
    """As a trainer sends them (no opt-in): every mutant of a shared-program language is refused, naming why;
    a separated language's mutants must fail."""
    from verifiers.client import VerifierError

    paid = []
    for m in lang_mutants(CASES, N_LANG, SEED):
        opts = {"mode": "assert", "language": m.lang, "case_timeout_s": "20", "compile_timeout_s": "90"}
        try:
            r = client.verify("code", f"```{m.lang}\n{m.program}```\n", m.tests, options=opts)
        except VerifierError as e:
            assert m.lang in SHARED_PROGRAM and "allow_shared_program" in str(e), str(e)
            continue
        if r.reward > 0:
            paid.append(f"{m.lang} {'+'.join(m.ops)}: {r.outcome} {r.detail[:120]}")
    assert not paid, "\n".join(paid)


def test_language_mutants_are_deterministic_and_reach_every_family():
    a, b = lang_mutants(CASES, 200, SEED), lang_mutants(CASES, 200, SEED)
    assert [m.program for m in a] == [m.program for m in b]
    assert {op.split(":")[0] for m in a for op in m.ops} == set(FAMILIES)
    assert {m.lang for m in a} == set(CASES)
    assert all(set(langs) <= set(CASES) for langs in FAMILIES.values())


@pytest.mark.docker
def test_tests_in_every_dataset_shape_never_pay_a_broken_candidate(client):
    """The tests_never_run family: each seed's tests in each shape, with the correct program (paid, unless the
    shape runs nothing: BAD_REFERENCE) and with a broken one (never paid)."""
    import random

    rng = random.Random(SEED)
    items, want = [], []
    for s in battery_seeds()[:2] + humaneval_seeds(limit=3):
        for shape in sorted(SHAPES):
            tests = reshape(s.tests, s.entry, shape)
            opts = dict(s.options)
            # check-style tests with an entry point are run by the harness's own check(candidate) call
            nothing = shape in RUNS_NOTHING and "def check(" not in s.tests
            for broken in (False, True):
                program = s.program
                if broken:
                    program += BREAKING[rng.choice(["raise", "always_equal", "return_none"])](s.entry, rng)[1]
                items.append(
                    {
                        "verifier": "code",
                        "completion": f"```python\n{program}```",
                        "reference": tests,
                        "options": opts,
                        "timeout_s": 10.0,
                    }
                )
                want.append((s.id, shape, broken, nothing))
    got = client.verify_batch(items)
    wrong = []
    for (sid, shape, broken, nothing), r in zip(want, got, strict=True):
        ok = r.reward == 0 if broken or nothing else r.outcome == "CORRECT"
        ok = ok and (not nothing or r.outcome == "BAD_REFERENCE")
        if not ok:
            wrong.append(f"{sid} {shape} broken={broken}: {r.outcome} {r.reward} {r.detail[:160]}")
    assert not wrong, "\n".join(wrong)
