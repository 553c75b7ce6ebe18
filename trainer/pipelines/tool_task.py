"""The embedded tool task (``make train TASK=tools``, configs/tools.yaml): products a tiny model cannot work out
in its head but can with one Python call.

A problem is ``47*86=?`` (two operands drawn from ``min_value..max_value``), gold answer ``4042``. The warm-start
rows are mixed, as in the default task: a share ``worked_fraction`` makes the call and copies its output into the
answer, the rest answer at once with an estimate (the product rounded to the nearest ``estimate_to``, usually
wrong). The cell's last expression is its output, as in a notebook (the session shows its value)::

    ```python
    print(47*86)
    ```
    <output>
    4042
    </output>
    <answer>4042</answer>

The output span is the one the tool loop appends (``FORMATS["python"].wrap``), byte for byte, so the warm start
sees exactly what a rollout will see. GRPO's data has final answers only: only the reward (the service's ``math``
verifier, which reads the policy's own tokens, never the tool's output) can tell the policy that calling pays.

>>> import random
>>> p = make_problem(random.Random(0), 10, 99, worked=True, estimate_to=100)
>>> p["prompt"], p["answer"]
('59*63=?', '3717')
>>> print(p["completion"])
```python
59*63
```
<output>
3717
</output>
<answer>3717</answer>
>>> make_problem(random.Random(0), 10, 99, worked=False, estimate_to=100)["completion"]
'<answer>3700</answer>'
"""

from __future__ import annotations

import random

from trainer.rollout.tools import FORMATS

CALL = FORMATS["python"]


def call_completion(a: int, b: int) -> str:
    """The worked completion: the call, its output span as the tool loop appends it, the answer copied from it."""
    return f"{CALL.start}\n{a}*{b}\n{CALL.stop}" + CALL.wrap(str(a * b), 512) + f"<answer>{a * b}</answer>"


def make_problem(rng: random.Random, lo: int, hi: int, *, worked: bool, estimate_to: int) -> dict[str, str]:
    """One product with its gold answer and a completion (the call, or an estimate)."""
    a, b = rng.randint(lo, hi), rng.randint(lo, hi)
    value = a * b
    guess = (value + estimate_to // 2) // estimate_to * estimate_to
    completion = call_completion(a, b) if worked else f"<answer>{guess}</answer>"
    return {"prompt": f"{a}*{b}=?", "answer": str(value), "completion": completion}


def calls_tool(completion: str) -> bool:
    """True for a warm-start completion that makes the call."""
    return CALL.start in completion
