"""The embedded default task: seeded multi-step arithmetic with verifiable answers.

A problem is a chain of additions and subtractions, ``3-2+8+8=?``, whose gold answer is the integer
``17``. Every intermediate value stays non-negative. A worked solution rewrites the chain one
operation at a time, the first two numbers replaced by their value and the rest copied:
``<think>1+8+8, 9+8, 17</think><answer>17</answer>`` (a scratchpad a small model learns quickly).

Three splits are generated from one seed and are disjoint by prompt:

- ``warmstart``: problems *with* completions, for the supervised phase (R1's cold start). The set is
  deliberately mixed, as scraped data is: a fraction ``worked_fraction`` carries the worked chain, the
  rest only a quick estimate (the value rounded to the nearest ``estimate_to``, usually not the
  answer) after ``<think>estimate</think>``. Supervised learning imitates the mix, so the greedy policy
  estimates; nothing in the data says which style gets the answer right. GRPO's reward does.
- ``train``: problems with final answers only (no solutions), for GRPO. Only the reward can tell the
  policy that working the chain out pays.
- ``heldout``: problems with final answers only, for greedy evaluation before and after GRPO.

Files are JSONL in the schema a user's own math data uses: ``{"prompt": ..., "answer": ...}`` (plus
``"completion"`` in the warm-start file).

>>> p = make_problem(random.Random(0), TaskConfig())
>>> sorted(p)
['answer', 'completion', 'prompt']
>>> evaluate_expression(p["prompt"]) == int(p["answer"])
True
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from trainer.config import TaskArgs, TaskConfig
from trainer.data import write_jsonl
from trainer.errors import exit_on_error
from trainer.pipelines import tool_task

BARE_THINK = "estimate"
_TOKEN = re.compile(r"\d+|[+-]")


def evaluate_expression(prompt: str) -> int:
    """Value of a left-to-right ``a+b-c`` chain in ``prompt`` (trusted, generated text only)."""
    tokens = _TOKEN.findall(prompt)
    value, op = int(tokens[0]), None
    for t in tokens[1:]:
        if t in "+-":
            op = t
        else:
            value = value + int(t) if op == "+" else value - int(t)
    return value


def worked_solution(numbers: list[int], ops: list[str]) -> str:
    """The think text of the chain, one rewrite per operation: ``1+8+8, 9+8, 17`` for ``3-2+8+8``."""
    lines, value = [], numbers[0]
    for i, (op, n) in enumerate(zip(ops, numbers[1:], strict=True)):
        value = value + n if op == "+" else value - n
        rest = "".join(f"{o}{m}" for o, m in zip(ops[i + 1 :], numbers[i + 2 :], strict=True))
        lines.append(f"{value}{rest}")
    return ", ".join(lines)


def format_completion(think: str, answer: str) -> str:
    """An R1-format completion."""
    return f"<think>{think}</think><answer>{answer}</answer>"


def make_problem(rng: random.Random, cfg: TaskConfig, *, worked: bool = True) -> dict[str, str]:
    """One problem with its gold answer and a completion (worked chain or bare answer; for ``kind: products``
    the call or an estimate, trainer/pipelines/tool_task.py)."""
    if cfg.kind == "products":
        return tool_task.make_problem(rng, cfg.min_value, cfg.max_value, worked=worked, estimate_to=cfg.estimate_to)
    numbers = [rng.randint(cfg.min_value, cfg.max_value)]
    ops: list[str] = []
    value = numbers[0]
    for _ in range(cfg.operands - 1):
        n = rng.randint(cfg.min_value, cfg.max_value)
        op = "-" if value - n >= 0 and rng.random() < 0.5 else "+"
        value = value + n if op == "+" else value - n
        numbers.append(n)
        ops.append(op)
    expr = str(numbers[0]) + "".join(f"{o}{n}" for o, n in zip(ops, numbers[1:], strict=True))
    if worked:
        completion = format_completion(worked_solution(numbers, ops), str(value))
    else:
        completion = format_completion(BARE_THINK, str(estimate(value, cfg.estimate_to)))
    return {"prompt": f"{expr}=?", "answer": str(value), "completion": completion}


def estimate(value: int, to: int) -> int:
    """``value`` rounded to the nearest multiple of ``to`` (halves up): 17 -> 20, 14 -> 10, 15 -> 20."""
    return (value + to // 2) // to * to


def make_splits(seed: int, sizes: dict[str, int], cfg: TaskConfig | None = None) -> dict[str, list[dict[str, str]]]:
    """Disjoint splits by prompt. ``sizes`` maps split name to count; ``warmstart`` keeps completions.

    The held-out split is drawn first from its own stream, so it does not depend on the other sizes.
    """
    cfg = cfg or TaskConfig()
    seen: set[str] = set()
    out: dict[str, list[dict[str, str]]] = {}
    order = sorted(sizes, key=lambda s: (s != "heldout", s))
    for name in order:
        rng = random.Random(f"{seed}/{name}")
        rows: list[dict[str, str]] = []
        misses = 0
        while len(rows) < sizes[name]:
            worked = rng.random() < cfg.worked_fraction
            p = make_problem(rng, cfg, worked=worked)
            if p["prompt"] in seen:
                misses += 1
                if misses > 20 * sizes[name] + 1000:
                    raise ValueError(
                        f"{name}: cannot draw {sizes[name]} new distinct problems; ask for fewer or widen {cfg}"
                    )
                continue
            seen.add(p["prompt"])
            if name != "warmstart":
                del p["completion"]
            rows.append(p)
        out[name] = rows
    return out


def build(out_dir: str | Path, seed: int, sizes: dict[str, int], cfg: TaskConfig | None = None) -> dict[str, Path]:
    """Write ``<split>.jsonl`` for each split under ``out_dir``; returns the paths."""
    splits = make_splits(seed, sizes, cfg)
    return {name: write_jsonl(rows, Path(out_dir) / f"{name}.jsonl") for name, rows in splits.items()}


@exit_on_error
def main(argv: list[str] | None = None) -> None:
    import sys

    from trainer import cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(TaskArgs, "Write the default task's splits as JSONL."))
        return
    args = cli.load(TaskArgs, argv)
    paths = build(args.out, args.seed, {"warmstart": args.warmstart, "train": args.train, "heldout": args.heldout})
    for name, p in paths.items():
        print(f"{name}: {p}")


if __name__ == "__main__":
    main()
