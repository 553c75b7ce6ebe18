"""Kotlin, Kotlin scripts and Racket in the code verifier (issue 40), beyond the correct/wrong pair of
tests/verifiers/kinds/code/test_code_langs_more.py: the compile cache covers them (a Kotlin compile
starts a JVM: seconds), the default compile budget lets kotlinc finish, the class holding Kotlin's
``main`` is found, a compile error is ``COMPILE_ERROR``, and Kotlin's ``assert`` is on (``java -ea``, as
for Java). Real toolchain image, real Docker."""

from __future__ import annotations

import doctest
import json
from functools import partial

import pytest

import languages.parse
from languages.parse import kotlin_main
from tests import langs_helpers
from tests.langs_helpers import stats_delta
from tests.verifiers.kinds.code.test_code_langs_more import PROGRAMS

NEW = ["kotlin", "kotlin_script", "racket"]
READ_SUM = 'val (a, b) = readLine()!!.trim().split(" ").map { it.toLong() }'
BROKEN = {
    "kotlin": 'fun main() { val x: Int = "s" }\n',
    "kotlin_script": 'val x: Int = "s"\n',
    "racket": "#lang racket\n(define (f x) (+ x 1)\n",  # unbalanced
}


def test_the_class_holding_kotlins_main_is_read_from_the_source():
    assert doctest.testmod(languages.parse).failed == 0
    assert kotlin_main("// object Nope { @JvmStatic fun main() {} }\nfun main() {}\n") == "MainKt"
    assert kotlin_main("class A\nobject B {\n  @JvmStatic\n  fun main(args: Array<String>) {}\n}\n") == "B"


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


# new prose each time, so the service's verdict cache never answers; generous budgets for a loaded machine,
# except where a test leaves the default
grade = partial(langs_helpers.grade, fresh=True, timeout_s=120, case_timeout_s="20")


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", NEW)
def test_a_second_request_with_the_same_program_is_not_compiled_again(service, lang):
    service.toolchains.cache.clear()
    before = dict(service.toolchains.stats)
    first = grade(service, lang, PROGRAMS[lang][0])  # the default compile budget (30 s)
    assert first.outcome == "CORRECT", first.detail
    assert stats_delta(service, before) == {"compiles": 1}, stats_delta(service, before)
    before = dict(service.toolchains.stats)
    again = grade(service, lang, PROGRAMS[lang][0])
    assert again.outcome == "CORRECT", again.detail
    assert stats_delta(service, before) == {"cached": 1}, stats_delta(
        service, before
    )  # the artifact fit in the output cap


@pytest.mark.docker
@pytest.mark.parametrize("lang", NEW)
def test_a_compile_error_is_a_compile_error(service, lang):
    v = grade(service, lang, BROKEN[lang], compile_timeout_s="90")
    assert v.outcome == "COMPILE_ERROR" and v.reward == 0.0, v.detail


@pytest.mark.docker
@pytest.mark.parametrize(
    "source",
    [
        f"object Solution {{\n    @JvmStatic fun main(args: Array<String>) {{ {READ_SUM}; println(a + b) }}\n}}\n",
        f"package contest.a\n\nfun main() {{ {READ_SUM}; println(a + b) }}\n",
        f"class App {{ companion object {{ @JvmStatic fun main(x: Array<String>) {{ {READ_SUM}; println(a + b) }} }} }}\n",
    ],
    ids=["object", "package", "companion"],
)
def test_kotlins_main_runs_wherever_it_is_declared(service, source):
    v = grade(service, "kotlin", source, compile_timeout_s="90")
    assert v.outcome == "CORRECT", v.detail


@pytest.mark.docker
@pytest.mark.parametrize("lang", ["kotlin", "kotlin_script"])
def test_kotlins_assert_is_on(service, lang):
    body = 'println(3)\nassert(1 + 1 == 3) { "ea-on" }\n'
    source = f"fun main() {{\n{body}}}\n" if lang == "kotlin" else body
    v = grade(service, lang, source, json.dumps([{"input": "", "output": "3\n"}]), compile_timeout_s="90")
    assert v.outcome == "RUNTIME_ERROR" and "ea-on" in v.detail, v.detail
