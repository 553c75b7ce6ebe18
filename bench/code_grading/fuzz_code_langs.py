"""bench/code_grading/fuzz_code.py's ``--langs`` and ``--shapes`` runs (issue 49): tests/attacks/code_lang_ops.py's operators
graded through a real service; the report's text. The invariants are tests/attacks/test_code_lang_mutations.py's."""

from __future__ import annotations

import os
import random
import time
from collections import Counter


def _langs(client, n: int, seed: int) -> list[str]:
    from tests.attacks.code_lang_ops import lang_mutants
    from tests.verifiers.kinds.code.test_code_assert_langs import CASES
    from verifiers.client import VerifierError
    from verifiers.kinds.code.asserts import SHARED_PROGRAM

    muts = lang_mutants(CASES, n, seed)
    base = {"mode": "assert", "case_timeout_s": "20", "compile_timeout_s": "90"}
    refused, paid_default, paid_opted, unsignalled = 0, [], Counter(), []
    outcomes, families = Counter(), Counter()
    t0 = time.monotonic()
    for m in muts:
        families.update(op.split(":")[0] for op in m.ops)
        try:
            r = client.verify("code", f"```{m.lang}\n{m.program}```\n", m.tests, options={**base, "language": m.lang})
            if r.reward > 0:
                paid_default.append(f"{m.lang} {'+'.join(m.ops)}: {r.outcome} {r.detail[:100]}")
        except VerifierError:
            refused += 1
    t_default = time.monotonic() - t0
    items = [
        {
            "verifier": "code",
            "completion": f"```{m.lang}\n{m.program}```\n",
            "reference": m.tests,
            "options": {**base, "language": m.lang, "allow_shared_program": "true"},
            "timeout_s": 120.0,
        }
        for m in muts
    ]
    t0 = time.monotonic()
    got = []
    for i in range(0, len(items), 50):
        got += client.verify_batch(items[i : i + 50])
    t_opted = time.monotonic() - t0
    for m, r in zip(muts, got, strict=True):
        outcomes[str(r.outcome)] += 1
        if r.reward > 0:
            for op in m.ops:
                paid_opted[f"{m.lang} {op.split(':')[0]}"] += 1
        if m.lang in SHARED_PROGRAM and str(r.outcome) != "SANDBOX_ERROR" and "code.shared_program" not in r.signals:
            unsignalled.append(f"{m.lang} {'+'.join(m.ops)}: {r.outcome}")
    n_paid = sum(r.reward > 0 for r in got)
    return [
        f"-- --langs {n} --seed {seed}: {len(muts)} mutants of the wrong add in {len({m.lang for m in muts})} "
        "languages (tests/attacks/code_lang_ops.py)",
        "families applied: " + ", ".join(f"{k} {v}" for k, v in sorted(families.items())),
        f"as a trainer sends them (no opt-in): refused {refused}, graded {len(muts) - refused}, "
        f"paid {len(paid_default)} ({t_default:.0f} s)",
        *paid_default,
        f"opted in (allow_shared_program=true): paid {n_paid} of {len(muts)} ({t_opted:.0f} s): what the refusal "
        "keeps out; outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        "paid opted in, by language and family: " + ", ".join(f"{k} {v}" for k, v in sorted(paid_opted.items())),
        f"opted-in verdicts of a shared-program language without code.shared_program: {len(unsignalled)}",
        *unsignalled,
    ]


def _shapes(client, seed: int) -> list[str]:
    from tests.attacks.code_lang_ops import RUNS_NOTHING, SHAPES, reshape
    from tests.attacks.code_ops import BREAKING, battery_seeds, humaneval_seeds

    rng = random.Random(seed)
    items, want = [], []
    for s in battery_seeds() + humaneval_seeds():
        for shape in sorted(SHAPES):
            tests = reshape(s.tests, s.entry, shape)
            nothing = shape in RUNS_NOTHING and "def check(" not in s.tests
            for broken in (False, True):
                program = s.program
                op = ""
                if broken:
                    op = rng.choice(sorted(BREAKING))
                    program += BREAKING[op](s.entry, rng)[1]
                items.append(
                    {
                        "verifier": "code",
                        "completion": f"```python\n{program}```",
                        "reference": tests,
                        "options": dict(s.options),
                        "timeout_s": 10.0,
                    }
                )
                want.append((s.id, shape, op, nothing))
    t0 = time.monotonic()
    got = []
    for i in range(0, len(items), 200):
        got += client.verify_batch(items[i : i + 200])
    wall = time.monotonic() - t0
    paid, missed, outcomes = [], [], Counter()
    for (sid, shape, op, nothing), r in zip(want, got, strict=True):
        outcomes[f"{'broken' if op else 'correct'} {r.outcome}"] += 1
        if op and r.reward > 0:
            paid.append(f"{sid} {shape} {op}: {r.outcome} {r.detail[:100]}")
        elif not op and not nothing and r.outcome != "CORRECT":
            missed.append(f"{sid} {shape}: {r.outcome} {r.detail[:100]}")
    return [
        f"-- --shapes --seed {seed}: {len(items)} items ({len(items) // 2 // len(SHAPES)} seeds x {len(SHAPES)} "
        f"shapes x correct/broken) in {wall:.0f} s ({len(items) / wall:.1f}/s)",
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        f"broken candidates paid: {len(paid)}",
        *paid,
        f"correct candidates not paid (shapes that run their tests): {len(missed)}",
        *missed,
    ]


def run(n_langs: int, shapes: bool, seed: int) -> str:
    from tests.langs_helpers import ensure_langs_image
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    ensure_langs_image()
    lines = [f"bench/code_grading/fuzz_code.py (issue 49), pool of 2, load {os.getloadavg()[0]:.1f} at the start"]
    with LocalServer(pool_size=2) as srv, VerifierClient(srv.target, timeout_s=600) as client:
        if n_langs:
            lines += _langs(client, n_langs, seed)
        if shapes:
            lines += _shapes(client, seed)
    return "\n".join(lines) + "\n"
