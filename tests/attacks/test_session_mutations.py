"""Generated attacks on grading inside a session (issue 53): the code verifier's attack operators
(tests/attacks/code_ops.py) applied to correct programs, each mutant run in a python session as cells (cut at a
top-level statement chosen at random), then the session graded against the seed's hidden tests
(``GradeSession``) through the real gRPC service. The invariant, in a session's terms: a mutation never raises
the reward above the seed's, and one that breaks the function under test is paid 0 when every cell ran to its
end without an exception (so every operator took effect in the session's state). A cell that exited was rolled
back and a cell that raised stopped where it raised, in the session as in what is graded: there the function
the session holds may still be the seed's, and paying it is right.
"""

from __future__ import annotations

import ast
import random

import pytest

from tests.attacks.code_ops import battery_seeds, humaneval_seeds, mutants, request
from verifiers.client import VerifierClient

SEED = 53
N_MUTANTS = 24


def cells(program: str, rng: random.Random) -> list[str]:
    """``program`` cut in two at the start of a top-level statement (the first cell may be empty)."""
    starts = [node.lineno - 1 for node in ast.parse(program).body]
    cut = rng.choice(starts) if starts else 0
    lines = program.splitlines(keepends=True)
    return [c for c in ("".join(lines[:cut]), "".join(lines[cut:])) if c.strip()]


def grade_in_session(client: VerifierClient, item: dict, rng: random.Random) -> tuple[object, bool]:
    """(the verdict of ``item``'s program run as cells in a session, whether every cell ended ok without an
    exception)."""
    program = item["completion"].split("```python\n", 1)[1].rsplit("```", 1)[0]
    s = client.open_session("python", timeout_s=10)
    try:
        clean = True
        for cell in cells(program, rng):
            r = client.exec(s.id, cell)
            clean = clean and r.status == "ok" and not r.HasField("error")
        v = client.grade_session(s.id, "code", item["reference"], options=item["options"], timeout_s=item["timeout_s"])
        return v, clean
    finally:
        client.close_session(s.id)


def test_cells_are_cut_at_statements():
    rng = random.Random(SEED)
    program = "import math\n\ndef f(x):\n    return math.sqrt(x)\nprint(f(4))\n"
    for _ in range(20):
        assert "".join(cells(program, rng)).strip() == program.strip()
        compile(cells(program, rng)[-1], "cell", "exec")


@pytest.mark.slow
@pytest.mark.docker
def test_a_mutation_in_a_session_never_raises_the_reward(verifier_server):
    seeds = battery_seeds() + humaneval_seeds(limit=4)
    muts = mutants(seeds, N_MUTANTS, SEED)
    rng, found, counts, clean_breaks = random.Random(SEED), [], {}, 0
    with VerifierClient(verifier_server.target, timeout_s=120, client_id="session-mutations") as c:
        base = {
            s.id: grade_in_session(c, request(s.program, s), rng)[0] for s in {m.seed.id: m.seed for m in muts}.values()
        }
        assert all(v.reward == 1.0 for v in base.values()), {k: v.detail for k, v in base.items() if v.reward != 1}
        for m in muts:
            v, clean = grade_in_session(c, request(m.program, m.seed), rng)
            for op in m.ops:
                counts[op.split(":")[0]] = counts.get(op.split(":")[0], 0) + 1
            ceiling = 0.0 if m.breaks and clean else base[m.seed.id].reward
            clean_breaks += m.breaks and clean
            if v.reward > ceiling:
                found.append(
                    f"{m.seed.id} {'+'.join(m.ops)} (cells clean: {clean}): reward {v.reward} > {ceiling} "
                    f"({v.outcome}: {v.detail[:160]})\n{m.program[-600:]}"
                )
    assert not found, f"{len(found)} of {len(muts)} mutants broke the invariant:\n\n" + "\n\n".join(found)
    assert set(counts) >= {"raise", "always_equal", "exit"} and clean_breaks >= 5, (counts, clean_breaks)
