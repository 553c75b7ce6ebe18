"""Attack operators for the ``code`` verifier: correct programs in, mutants out (issue 36, generated attacks).

A *seed* is a correct program with its tests (HumanEval's canonical solutions with the suite's own
requests, and a few rows of tests/data/code_battery.py in each test form: check(candidate), plain asserts,
an MBPP list, a builtin-named function). A *mutant* is the seed's program with one or more operators
applied; each operator is text put before or after the program (the program itself is never edited, so
it stays valid Python). Operators are of two kinds:

* **breaking**: the function under test no longer returns the right value (it returns an always-equal
  object, raises a control-flow exception, exits, kills itself, returns ``None``); such a mutant's reward
  must be 0, whatever else it does;
* **disguising**: the function still computes the right value, but the program also tries its luck
  (prints verdict-like lines, shadows the tests' builtins with delegating look-alikes, registers exit
  hooks); such a mutant's reward must not exceed the seed's.

Where a breaking operator is present, the disguising ones turn hostile (shadowed builtins return a
constant, builtins and modules are patched): nothing in the candidate's process may make the tests pass.

The invariant, for every mutant: ``reward(mutant) <= reward(seed)``, and ``reward(mutant) == 0`` when any of
its operators breaks the function. ``mutants(seeds, n, seed)`` is deterministic for a given ``seed``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

from tests.data.code_battery import ADD, ADD_OK, BY_NAME, EP, MAP_TESTS, POW_LIST


@dataclass(frozen=True)
class Seed:
    """A correct program, its tests and options, and the name of the function under test."""

    id: str
    program: str
    tests: str
    options: dict
    entry: str


@dataclass(frozen=True)
class Mutant:
    seed: Seed
    ops: tuple[str, ...]
    program: str
    breaks: bool


# -- breaking operators: the function under test is replaced (text appended after the program) -------------
_EXC = {
    "StopIteration": "raise StopIteration",
    "StopAsyncIteration": "raise StopAsyncIteration",
    "GeneratorExit": "raise GeneratorExit",
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "SystemExit0": "raise SystemExit(0)",
    "SkipTest": "import unittest\n    raise unittest.SkipTest('skipped')",
    "AssertionError": "raise AssertionError",
    "BaseException": "raise BaseException('x')",
}
_EQUAL = {
    "object": "class _AE:\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n"
    "    __bool__ = lambda s: True\n    __hash__ = lambda s: 0\n    __len__ = lambda s: 0\n",
    "int": "class _AE(int):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n    __hash__ = int.__hash__\n",
    "str": "class _AE(str):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n    __hash__ = str.__hash__\n",
    "list": "class _AE(list):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n",
    "float": "class _AE(float):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n"
    "    __sub__ = __rsub__ = lambda s, o: 0.0\n    __abs__ = lambda s: 0.0\n    __hash__ = float.__hash__\n",
}
_EXIT = {
    "sys.exit-at-import": ("import sys\nsys.exit(0)\n", False),
    "os._exit-at-import": ("import os\nos._exit(0)\n", False),
    "os._exit-in-call": ("import os\n", True),
    "kill-self-in-call": ("import os, signal\n", True),
}


def _replace_entry(entry: str, body: str) -> str:
    return f"\n\ndef {entry}(*args, **kwargs):\n    {body}\n"


def op_raise(entry: str, rng: random.Random) -> tuple[str, str]:
    name = rng.choice(sorted(_EXC))
    return f"raise:{name}", _replace_entry(entry, _EXC[name])


def op_always_equal(entry: str, rng: random.Random) -> tuple[str, str]:
    name = rng.choice(sorted(_EQUAL))
    arg = {"object": "", "int": "0", "str": "''", "list": "[]", "float": "0.0"}[name]
    return f"always_equal:{name}", "\n\n" + _EQUAL[name] + _replace_entry(entry, f"return _AE({arg})")


def op_exit(entry: str, rng: random.Random) -> tuple[str, str]:
    name = rng.choice(sorted(_EXIT))
    text, in_call = _EXIT[name]
    if not in_call:
        return f"exit:{name}", "\n" + text
    body = "os._exit(0)" if name.startswith("os.") else "os.kill(os.getpid(), signal.SIGKILL)"
    return f"exit:{name}", "\n" + text + _replace_entry(entry, body)


def op_none(entry: str, rng: random.Random) -> tuple[str, str]:
    return "return_none", _replace_entry(entry, "return None")


BREAKING: dict[str, Callable[[str, random.Random], tuple[str, str]]] = {
    "raise": op_raise,
    "always_equal": op_always_equal,
    "exit": op_exit,
    "return_none": op_none,
}

# -- disguising operators: (prelude, postlude) around the program; hostile variants when it is broken -------
_VERDICTS = [
    "all tests passed",
    '{"status": "pass"}',
    '{"nonce": "00000000000000000000000000000000", "status": "pass", "detail": ""}',
    "PASSED",
    "OK",
    "Ran 1 test in 0.001s\\n\\nOK",
    "test_solution (__main__.Test) ... ok",
]
_SHADOWED = ["abs", "all", "any", "len", "sorted", "isinstance", "round", "set", "list", "str", "int", "float", "max"]
_PATCHES = [
    "import builtins\nbuiltins.isinstance = lambda *a: True\n",
    "import builtins\nbuiltins.AssertionError = type('AssertionError', (Exception,), {})\n",
    "import builtins\nbuiltins.abs = lambda x: 0\n",
    "import sys, types\nsys.modules['math'] = types.SimpleNamespace(isclose=lambda *a, **k: True)\n",
    "import builtins\n_real_print = print\nbuiltins.print = lambda *a, **k: None\n",
]


def op_print_verdict(entry: str, rng: random.Random, hostile: bool) -> tuple[str, str, str]:
    line = rng.choice(_VERDICTS)
    where = rng.choice(["import", "call"])
    if where == "import":
        return f"print_verdict:{line[:12]}", f"print({line!r})\nimport sys\nsys.stdout.flush()\n", ""
    wrap = (
        f"\n\n_rlvr_inner_{entry} = {entry}\n_rlvr_said = []\n"
        f"def {entry}(*args, **kwargs):\n    if not _rlvr_said:\n        _rlvr_said.append(1)\n"
        f"        print({line!r}, flush=True)\n    return _rlvr_inner_{entry}(*args, **kwargs)\n"
    )
    return f"print_verdict_in_call:{line[:12]}", "", wrap


def op_shadow(entry: str, rng: random.Random, hostile: bool) -> tuple[str, str, str]:
    name = rng.choice(_SHADOWED)
    if hostile:  # the tests' helper would say whatever the candidate wants, were it the candidate's
        value = rng.choice(["True", "0", "3", "[]", "None"])
        return f"shadow_const:{name}", "", f"\n{name} = lambda *a, **k: {value}\n"
    return (
        f"shadow_delegate:{name}",
        "",
        f"\nimport builtins as _rlvr_b\n{name} = lambda *a, **k: _rlvr_b.{name}(*a, **k)\n",
    )


def op_patch(entry: str, rng: random.Random, hostile: bool) -> tuple[str, str, str]:
    if not hostile:
        return "atexit_exit0", "", "\nimport atexit, os\natexit.register(os._exit, 0)\n"
    i = rng.randrange(len(_PATCHES))
    return f"patch:{i}", "", "\n" + _PATCHES[i]


DISGUISING: dict[str, Callable[[str, random.Random, bool], tuple[str, str, str]]] = {
    "print_verdict": op_print_verdict,
    "shadow": op_shadow,
    "patch": op_patch,
}


def mutate(seed: Seed, rng: random.Random) -> Mutant:
    """One mutant of ``seed``: a breaking operator in two cases of three, and one or two disguising ones."""
    ops, before, after = [], "", ""
    breaking = rng.random() < 2 / 3
    for name in rng.sample(sorted(DISGUISING), rng.randint(0 if breaking else 1, 2)):
        label, pre, post = DISGUISING[name](seed.entry, rng, breaking)
        ops.append(label)
        before, after = before + pre, after + post
    if breaking:
        label, post = BREAKING[rng.choice(sorted(BREAKING))](seed.entry, rng)
        ops.append(label)
        after = post + after  # the replacement first, so a print wrapper wraps the broken function
    return Mutant(seed, tuple(ops), before + seed.program + after, breaking)


def mutants(seeds: list[Seed], n: int, seed: int) -> list[Mutant]:
    """``n`` mutants, deterministic for ``seed``: the seeds in turn (each as often as any other, ±1)."""
    rng = random.Random(seed)
    order = list(seeds)
    rng.shuffle(order)
    return [mutate(order[i % len(order)], rng) for i in range(n)]


def battery_seeds() -> list[Seed]:
    """Correct programs of tests/data/code_battery.py, one per test form."""
    pow_ok = "def pow(a, b):\n    return a ** b\n"
    return [
        Seed("battery/add-check", ADD_OK, ADD, dict(EP), "add"),
        Seed("battery/add-asserts", ADD_OK, BY_NAME, {}, "add"),
        Seed("battery/add-list", ADD_OK, json.dumps(BY_NAME.strip().splitlines()), {}, "add"),
        Seed("battery/add-all-map", ADD_OK, MAP_TESTS["all-map"], dict(EP), "add"),
        Seed("battery/pow-list", pow_ok, POW_LIST, {}, "pow"),
    ]


def humaneval_seeds(limit: int | None = None) -> list[Seed]:
    """HumanEval's canonical solutions with the suite's own requests (trainer/evaluation/suites.py)."""
    from trainer.evaluation.suites import humaneval_problems

    return [
        Seed(p.id, p.prompt + p.solution, p.reference, dict(p.options), p.options["entry_point"])
        for p in humaneval_problems(limit)
    ]


def request(program: str, seed: Seed, timeout_s: float = 5.0) -> dict:
    """The VerifyItem mapping that grades ``program`` against ``seed``'s tests."""
    return {"verifier": "code", "completion": f"```python\n{program}```", "reference": seed.tests,
            "options": dict(seed.options), "timeout_s": timeout_s}  # fmt: skip


def violations(grade, muts: list[Mutant]) -> tuple[list[str], dict]:
    """Grade the seeds and the mutants with ``grade`` (items -> results); the invariant's violations, and
    counts per operator. A finding names the seed, the operators, the verdict and the program."""
    seeds = sorted({m.seed.id: m.seed for m in muts}.values(), key=lambda s: s.id)
    base = dict(zip([s.id for s in seeds], grade([request(s.program, s) for s in seeds]), strict=True))
    got = grade([request(m.program, m.seed) for m in muts])
    found, counts = [], {}
    for m, v in zip(muts, got, strict=True):
        for op in m.ops:
            counts[op.split(":")[0]] = counts.get(op.split(":")[0], 0) + 1
        ceiling = 0.0 if m.breaks else base[m.seed.id].reward
        if v.reward > ceiling:
            found.append(
                f"{m.seed.id} {'+'.join(m.ops)}: reward {v.reward} > {ceiling} ({v.outcome}: {v.detail[:160]})\n"
                + m.program[-600:]
            )
    unpaid = [f"seed {s.id}: {base[s.id].outcome} {base[s.id].detail[:160]}" for s in seeds if base[s.id].reward != 1]
    return unpaid + found, counts
