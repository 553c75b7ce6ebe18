"""Exploit signals: machine-readable names of what a completion tried, carried on every verdict
(``Verdict.signals``, proto ``VerifyResponse.signals``) beside the reward, never instead of it.

A signal informs; it changes nothing unless the request's option ``enforce_signals`` names it (a comma
list, or ``all``), in which case a paid verdict carrying it becomes INCORRECT. The trainer's alarm
(docs/train.md) watches their shares. This table is the one description of each name; docs/verifiers.md
("Exploit signals") is generated from the same words, and a verifier may only emit a name listed here.
"""

from __future__ import annotations

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
    # -- math and every verifier that reads a final answer -----------------------------------------------
    "answer.several": "more than one final answer (boxes, tags, or both, that disagree)",
    "answer.hedge": "a hedge or condition next to the final answer (any language)",
    "answer.not_final": "the graded answer does not stand in the final position of the text",
    "answer.restates_prompt": "the answer restates the prompt (or a number taken from it) rather than solving it",
    "answer.empty": "the final answer is empty or punctuation only",
    "answer.invisible": "invisible or confusable characters in or around the answer",
    "answer.unclosed_think": "a <think> block is left open, so nothing after it is an answer",
    # -- format ------------------------------------------------------------------------------------------
    "format.odd_tags": "tags in unusual places or counts",
    "format.think_is_answer": "the think block only repeats the answer",
}


def check(names: list[str] | set[str]) -> None:
    """Raise ValueError for a signal name not in SIGNALS (a verifier may only emit documented names)."""
    unknown = sorted(set(names) - set(SIGNALS))
    if unknown:
        raise ValueError(f"unknown exploit signal(s) {unknown}: add them to verifiers/signals.py SIGNALS")


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
    check(names)
    return names
