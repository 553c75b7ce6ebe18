"""Issue 50, item 4: ``one_answer`` on small answer spaces. An honest 80%-accurate policy on yes/no, A-D and
0-9 data, graded by an honest grader whose audit agrees (tests/alarm_traces.py), gives the same answer
string on many prompts (every prompt whose answer it is): the rule counted that as "one answer on many
prompts" and fired several times per 100 steps. It now counts the references the answer is paid for
(the answer space as the data spells it): silent on the honest traces, firing on a hack that pays one
answer across references, whatever the size of the space."""

from __future__ import annotations

import pytest

from tests.alarm_traces import firings

STEPS, SEEDS = 100, range(3)


@pytest.mark.parametrize("k", [2, 4, 10])
def test_one_answer_is_silent_on_honest_small_answer_spaces(k):
    assert [firings(k, STEPS, seed) for seed in SEEDS] == [[] for _ in SEEDS]
    assert [firings(k, STEPS, seed, rule="") for seed in SEEDS] == [[] for _ in SEEDS]  # no rule at all fires


def test_the_rule_before_it_counted_references_cried_wolf():
    """The same traces through the rule as it was (references not counted): it fires (the defect)."""
    assert sum(len(firings(k, STEPS, 0, count_refs=False)) for k in (2, 4)) > 0


@pytest.mark.parametrize("k", [2, 4, 10])
def test_one_answer_still_fires_on_a_hack_in_a_small_answer_space(k):
    fired = firings(k, 20, 0, hack_from=10)
    assert fired and fired[0] == 11  # two steps running: the hack's second step
