"""Countdown (as in TinyZero): combine the given numbers with + - * / to reach the target.

Register it, then use it by name like any built-in:

    python -m verifiers.cli register countdown --python examples/countdown.py \\
        --description "Countdown: use each number once, reach the target"
    python -m verifiers.cli verify countdown --completion "<answer>(25 - 3) * 4 - 13</answer>" \\
        --reference '{"numbers": [3, 4, 13, 25], "target": 75}'

``reference`` is JSON ``{"numbers": [...], "target": N}``. The answer is the last
``<answer>…</answer>`` of the completion, else its last non-empty line after ``</think>``. Reward 1 when the expression
uses every given number exactly once (option ``use_all=false``: at most once) and equals the target
exactly (rational arithmetic, no float rounding); else 0, or ``format_score`` (option, default 0)
when the expression is well formed but wrong. ``None`` (NO_ANSWER) when there is no expression.

The expression is the model's text, so it is never handed to ``eval``: it is parsed with ``ast``
and only integer literals, + - * / and parentheses are accepted (no names, calls, powers or unary
minus), then evaluated by walking the tree. Like every python verifier this file runs inside the
sandbox, not in the server.

>>> verify("<answer>(25 - 3) * 4 - 13</answer>", '{"numbers": [3, 4, 13, 25], "target": 75}', {})
1.0
>>> verify("<answer>25 * 3</answer>", '{"numbers": [3, 4, 13, 25], "target": 75}', {})
0.0
>>> verify("<answer>25 * 3</answer>", '{"numbers": [3, 4, 13, 25], "target": 75}', {"use_all": "false"})
1.0
>>> verify("<answer>__import__('os').system('id')</answer>", '{"numbers": [1], "target": 1}', {})
0.0
>>> verify("<think>no idea</think>", '{"numbers": [1], "target": 1}', {}) is None
True
"""

import ast
import json
import re
from collections import Counter
from fractions import Fraction

MAX_EXPR_CHARS = 300
OPS = {ast.Add: Fraction.__add__, ast.Sub: Fraction.__sub__, ast.Mult: Fraction.__mul__, ast.Div: Fraction.__truediv__}


def _answer(completion):
    tags = re.findall(r"<answer>(.*?)</answer>", completion, flags=re.DOTALL)
    after_thinking = completion.split("</think>")[-1].splitlines()
    text = tags[-1] if tags else next((ln for ln in reversed(after_thinking) if ln.strip()), "")
    text = text.strip().split("=")[0].strip()  # "1 + 2 = 3" → "1 + 2"
    return text or None


def _evaluate(node, used):
    """Value of an accepted expression tree; ValueError for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        left, right = _evaluate(node.left, used), _evaluate(node.right, used)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ValueError("division by zero")
        return OPS[type(node.op)](left, right)
    raise ValueError(f"{type(node).__name__} is not allowed: only integers, + - * / and parentheses")


def verify(completion, reference, options):
    expr = _answer(completion)
    if expr is None:
        return None
    ref = json.loads(reference) if reference.strip() else None
    if not isinstance(ref, dict) or "numbers" not in ref or "target" not in ref:
        raise ValueError('reference must be JSON {"numbers": [...], "target": N}')
    format_score = float(options.get("format_score", 0))
    if len(expr) > MAX_EXPR_CHARS:
        return 0.0
    used = []
    try:
        value = _evaluate(ast.parse(expr, mode="eval").body, used)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 0.0
    given, got = Counter(int(n) for n in ref["numbers"]), Counter(used)
    if options.get("use_all", "true").lower() in ("0", "false", "no"):
        numbers_ok = not (got - given)  # each at most once
    else:
        numbers_ok = got == given
    return 1.0 if numbers_ok and value == Fraction(ref["target"]) else format_score
