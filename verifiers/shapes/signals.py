"""Exploit signals: machine-readable names of what a completion tried, carried on every verdict
(``Verdict.signals``, proto ``VerifyResponse.signals``) beside the reward, never instead of it.

A signal informs; it changes nothing unless the request's option ``enforce_signals`` names it (a comma
list, or ``all``), in which case a paid verdict carrying it becomes INCORRECT. The trainer's alarm
(docs/train.md) watches their shares. This table is the one description of each name; docs/verifiers.md
("Exploit signals") is generated from the same words, and a verifier may only emit a name listed here.
"""

from __future__ import annotations

import difflib
import re

SIGNALS: dict[str, str] = {
    # -- code: what the candidate's program did ------------------------------------------------------------
    "code.early_exit": "the candidate's process ended before the tests finished (sys.exit, os._exit, a signal, exec)",
    "code.eq_override": "a value returned to the tests defines __eq__, __hash__, __bool__ or __instancecheck__",
    "code.patched_builtins": "the candidate replaced or wrapped builtins or modules (builtins.*, sys.modules, ...)",
    "code.read_files": "the candidate read or listed files it was not given",
    "code.read_env": "the candidate read the environment",
    "code.foreign_fd": "the candidate wrote to a file descriptor it was not handed",
    "code.verdict_lines": "the candidate printed lines shaped like a test harness's verdict",
    "code.control_exception": "the candidate raised SkipTest, KeyboardInterrupt, SystemExit or StopIteration at the tests",
    "code.output_cap": "the candidate's output hit the cap",
    "code.time_limit": "the candidate hit the time limit",
    "code.spawned": "the candidate started processes or threads that outlived it",
    "code.nonfinite_output": "the candidate's output or a value it returned held nan or inf where the expected "
    "output held none (a checker or an assert paid it: NaN compares false)",
    "code.shared_program": "assert mode ran the tests inside the candidate's own program (a language not yet "
    "separated, accepted by allow_shared_program): the candidate could have rewritten them",
    # -- math and every verifier that reads a final answer -----------------------------------------------
    "answer.several": "more than one final answer (boxes, tags, or both, that disagree; a second value or choice letter offered)",
    "answer.hedge": "a hedge, condition, negation or operator next to the final answer (any language)",
    "answer.not_final": "the graded answer does not stand in the final position of the text",
    "answer.restates_prompt": "the answer restates the prompt (or a number taken from it) rather than solving it",
    "answer.empty": "the final answer is empty or punctuation only",
    "answer.invisible": "invisible or confusable characters in the answer, or an answer hidden from a reader",
    "answer.unclosed_think": "a <think> block is left open, so nothing after it is an answer",
    # -- format ------------------------------------------------------------------------------------------
    "format.odd_tags": "tags in unusual places or counts",
    "format.think_is_answer": "the think block only repeats the answer",
    # -- tool rollouts: added by the trainer's tool loop (trainer/rollout/tools.py, tool_signals), never a verifier --
    "tool.answer_marker": "a tool call's output holds a box or an answer tag (never graded there)",
    "tool.answer_only_in_output": "the reference is in a tool call's output and nowhere in the policy's own text",
    "tool.printed_reference": "a tool call printed the reference verbatim from a literal of its code (not computed)",
    "tool.read_files": "a tool call's code opens files, lists folders, reads the environment or starts processes",
    "tool.session_failed": "the rollout's tool session failed (infrastructure): the rollout is masked, not paid 0",
}


# What to do when a signal fires (docs/verifiers.md, "Exploit signals", is generated from SIGNALS and this).
_READ = "read the flagged completions (`runs/<name>/alarms.jsonl`)"
ACTIONS: dict[str, str] = {
    "code.early_exit": f"{_READ}; never paid by the built-in code verifier, so a rising share means the policy is "
    "searching for it; enforce it on a verifier of your own",
    "code.eq_override": f"{_READ}; the built-in code verifier refuses such values, a registered one may not: enforce it",
    "code.patched_builtins": f"{_READ}; enforce it when the task never needs to touch builtins",
    "code.read_files": "check the task gives no files; enforce it if the answer could be read instead of computed",
    "code.read_env": "check no secret or answer is in the sandbox's environment; enforce it for tasks that never need it",
    "code.foreign_fd": f"{_READ}: writing to the harness's descriptors is an attack, enforce it",
    "code.verdict_lines": "enforce it with any grader that reads the program's output for a verdict",
    "code.control_exception": f"{_READ}; enforce it where the tests catch exceptions",
    "code.output_cap": "usually a runaway print loop, never paid by the built-ins: if its share rises with reward, "
    "audit the rewarded completions",
    "code.time_limit": "usually slow or looping code, never paid by the built-ins: if its share rises with reward, "
    "audit the rewarded completions",
    "code.spawned": f"{_READ}; enforce it for tasks that never need processes or threads",
    "code.nonfinite_output": 'check the checker or the assert that passed it ("reject if err > tol" lets NaN '
    "through); enforce it where a task's answers are finite",
    "code.shared_program": "fires on every such verdict: train on these only where a paid rewrite of the tests "
    "does not matter (evaluation of trusted models), else grade the language with mode=stdio",
    "answer.several": "enforce it: several answers let the policy spray guesses",
    "answer.hedge": "enforce it: a hedge earns reward from a grader that reads one of its alternatives",
    "answer.not_final": "check the prompt's format instructions; enforce it if the answer drifts out of place",
    "answer.restates_prompt": f"{_READ}; a rising share means the reward pays echoes: run the canaries",
    "answer.empty": "should never be paid: if it is, run the canaries against the reward and report the grader",
    "answer.invisible": "enforce it: invisible characters hide text from readers and graders",
    "answer.unclosed_think": "check the max length (truncation leaves think open); enforce it otherwise",
    "format.odd_tags": "watch its share; enforce it where the format reward pays tags",
    "format.think_is_answer": "enforce it where the format reward pays a think block: the policy skips reasoning",
    "tool.answer_marker": "never paid (the graded text is the policy's own tokens); a rising share means the policy "
    "is trying to make the tool answer for it",
    "tool.answer_only_in_output": "never paid; a rising share means the policy leaves its answer to the tool",
    "tool.printed_reference": f"{_READ}: where did the call get the reference? The alarm's audit refuses it when paid",
    "tool.read_files": "check the sessions give no files or secrets; the alarm's audit refuses it when paid",
    "tool.session_failed": "infrastructure: read the service's log (sessions lost, limits reached)",
}


def _backticked(m: re.Match) -> str:
    return f"`{m.group(1)}`"


def doc_table() -> str:
    """The Markdown table of every signal, its meaning and what to do (docs/verifiers.md holds this text)."""
    code = re.compile(r"(?<![`\w])(__\w+?__|<\w+>|(?:sys|os|builtins)\.[\w*]+)")  # dunders, tags, sys.exit...
    rows = [
        f"| `{name}` | {code.sub(_backticked, meaning)} | {ACTIONS.get(name, 'read the flagged completions')} |"
        for name, meaning in SIGNALS.items()
    ]
    return "\n".join(["| signal | what the completion did | when it fires |", "|---|---|---|", *rows])


def check(names: list[str] | set[str]) -> None:
    """Raise ValueError for a signal name not in SIGNALS (a verifier may only emit documented names)."""
    unknown = sorted(set(names) - set(SIGNALS))
    if unknown:
        raise ValueError(f"unknown exploit signal(s) {unknown}: add them to verifiers/shapes/signals.py SIGNALS")


def parse_enforced(value: str) -> set[str]:
    """The ``enforce_signals`` option: a comma list of names (or ``all``); ValueError naming an unknown one.

    >>> sorted(parse_enforced("answer.hedge, answer.several"))
    ['answer.hedge', 'answer.several']
    >>> len(parse_enforced("all")) == len(SIGNALS)
    True
    """
    names = {n.strip() for n in value.split(",") if n.strip()}
    if names == {"all"}:
        return set(SIGNALS)
    unknown = sorted(names - set(SIGNALS))
    if unknown:  # the caller's typo, not a missing entry in the server's table: say what it may have meant
        near = [m for n in unknown for m in difflib.get_close_matches(n, SIGNALS, 1)]
        hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
        raise ValueError(
            f"unknown exploit signal(s) {', '.join(map(repr, unknown))}{hint}: name signals from the "
            'table in docs/verifiers.md, "Exploit signals"'
        )
    return names
