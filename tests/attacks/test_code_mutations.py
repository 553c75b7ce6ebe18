"""Generated attacks on the ``code`` verifier (issue 36): correct programs from our data, mutated by the
operators of tests/attacks/code_ops.py, graded through the real gRPC service. The invariant: a mutation
never raises the reward, and a mutation that breaks the function under test is paid 0.

CI runs a fixed seed and a bounded budget (``N_MUTANTS``); ``bench/code_grading/fuzz_code.py`` runs the same operators
longer and writes what it found to bench/results/fuzz_code.txt.
"""

from __future__ import annotations

import random

import pytest

from tests.attacks.code_ops import BREAKING, DISGUISING, battery_seeds, humaneval_seeds, mutants, mutate, violations

SEED = 36
N_MUTANTS = 60  # plus the seeds they came from: about 20 s through a 2-worker service on this machine


@pytest.mark.docker
def test_a_mutation_never_raises_the_reward(client):
    seeds = battery_seeds() + humaneval_seeds(limit=20)
    muts = mutants(seeds, N_MUTANTS, SEED)
    found, counts = violations(client.verify_batch, muts)
    assert not found, f"{len(found)} of {len(muts)} mutants broke the invariant:\n\n" + "\n\n".join(found)
    assert set(counts) >= {"raise", "always_equal", "exit", "return_none"}, counts  # the budget reaches every kind


def test_mutants_are_deterministic_and_reach_every_operator():
    seeds = battery_seeds()
    a, b = mutants(seeds, 200, SEED), mutants(seeds, 200, SEED)
    assert [m.program for m in a] == [m.program for m in b]
    kinds = {op.split(":")[0].split("_in_call")[0] for m in a for op in m.ops}
    want = set(BREAKING) | {"print_verdict", "shadow_const", "shadow_delegate", "patch", "atexit_exit0"}
    assert kinds >= want, want - kinds
    assert set(DISGUISING) == {"print_verdict", "shadow", "patch"}


def test_every_mutant_is_valid_python():
    seeds = battery_seeds()
    rng = random.Random(SEED)
    for _ in range(300):
        m = mutate(rng.choice(seeds), rng)
        compile(m.program, m.seed.id, "exec")
