"""The ``code`` kind's request options are parsed once (verifiers/kinds/code/options.py), and the toolchain
pool takes its limits from the service's ``ServiceLimits`` only (verifiers/kinds/code/toolchains.py).

No sandbox is started here: the parser is a pure function, and the toolchain pool's configuration is
read without starting the pool.
"""

from __future__ import annotations

import argparse

import pytest

from verifiers.kinds.code import toolchains
from verifiers.kinds.code.judges import DEFAULT_TOL
from verifiers.kinds.code.languages import COMPILE_TIMEOUT_S
from verifiers.kinds.code.options import CASE_TIMEOUT_S, CodeOptions
from verifiers.kinds.code.verifier import CodeVerifier
from verifiers.service import wiring
from verifiers.shapes.base import BadRequest
from verifiers.shapes.limits import LimitsError, ServiceLimits, add_arguments, from_args
from verifiers.shapes.request import Request

STDIO_REF = '[{"input": "1 2", "output": "3"}]'


# -- the parser -------------------------------------------------------------------------------------------
def test_an_empty_map_is_every_default():
    assert CodeOptions.parse({}) == CodeOptions(
        mode="assert",
        language="python",
        entry_point="",
        prelude="",
        case_timeout_s=CASE_TIMEOUT_S,
        compile_timeout_s=COMPILE_TIMEOUT_S,
        reward="all",
        judge="tokens",
        abs_tol=DEFAULT_TOL,
        rel_tol=DEFAULT_TOL,
    )
    assert CASE_TIMEOUT_S == 5.0 and COMPILE_TIMEOUT_S == 30.0
    assert CodeOptions.parse({}, case_timeout_s=7.0).case_timeout_s == 7.0  # the verifier's default


@pytest.mark.parametrize(
    "options,field,value",
    [
        ({"mode": ""}, "mode", "assert"),
        ({"mode": "stdio"}, "mode", "stdio"),
        ({"mode": "stdio", "language": " C++ "}, "language", "cpp"),
        ({"mode": "stdio", "language": "golang"}, "language", "go"),
        ({"language": "python3"}, "language", "python"),
        ({"entry_point": "add", "prelude": "import math"}, "entry_point", "add"),
        ({"entry_point": "add", "prelude": "import math"}, "prelude", "import math"),
        ({"case_timeout_s": "2.5"}, "case_timeout_s", 2.5),
        ({"case_timeout_s": "0"}, "case_timeout_s", CASE_TIMEOUT_S),
        ({"mode": "stdio", "language": "c", "compile_timeout_s": "12"}, "compile_timeout_s", 12.0),
        ({"mode": "stdio", "language": "c", "compile_timeout_s": "0"}, "compile_timeout_s", COMPILE_TIMEOUT_S),
        ({"reward": " Fraction "}, "reward", "fraction"),
        ({"reward": "partial"}, "reward", "fraction"),
        ({"partial": "true"}, "reward", "fraction"),
        ({"partial": "YES"}, "reward", "fraction"),
        ({"partial": "no"}, "reward", "all"),
        ({"partial": "true", "reward": "all"}, "reward", "all"),  # reward wins over the older spelling
        ({"mode": "stdio", "judge": "EXACT"}, "judge", "exact"),
        ({"mode": "stdio", "judge": "float", "abs_tol": "0.5"}, "abs_tol", 0.5),
        ({"mode": "stdio", "judge": "float", "rel_tol": "0"}, "rel_tol", 0.0),
    ],
)
def test_each_option_is_read_into_its_field(options, field, value):
    assert getattr(CodeOptions.parse(options), field) == value


@pytest.mark.parametrize(
    "options,message",
    [
        ({"mode": "bogus"}, "code: options['mode'] must be 'assert' or 'stdio', got 'bogus'"),
        (
            {"mode": "stdio", "language": "cobol"},
            "code: options['language'] must be one of python, c, cpp, java, javascript, go, rust",
        ),  # more languages may follow
        ({"language": "bash"}, "code: language 'bash' has no assert mode (assert mode: python, c, cpp, java, "),
        (
            {"language": "c", "compile_timeout_s": "-1", "allow_shared_program": "true"},
            "options['compile_timeout_s'] must be a number of seconds",
        ),
        ({"language": "java"}, "code: assert mode in java runs the tests inside the candidate's own program"),
        ({"language": "java", "allow_shared_program": "sure"}, "options['allow_shared_program'] must be true or false"),
        ({"reward": "half"}, "code: options['reward'] must be 'all' or 'fraction', got 'half'"),
        (
            {"case_timeout_s": "-3"},
            "code: options['case_timeout_s'] must be a number of seconds in (0, 3600), got '-3'",
        ),
        ({"case_timeout_s": "x"}, "code: options['case_timeout_s'] must be a number of seconds in (0, 3600), got 'x'"),
        ({"case_timeout_s": "3600"}, "options['case_timeout_s'] must be a number of seconds in (0, 3600)"),
        ({"case_timeout_s": "nan"}, "options['case_timeout_s'] must be a number of seconds in (0, 3600)"),
        (
            {"mode": "stdio", "language": "rust", "compile_timeout_s": "-1"},
            "code: options['compile_timeout_s'] must be a number of seconds in (0, 3600), got '-1'",
        ),
        (
            {"mode": "stdio", "judge": "regex"},
            "code: options['judge'] must be one of exact, tokens, float, checker, got 'regex'",
        ),
        (
            {"mode": "stdio", "judge": "float", "abs_tol": "-1"},
            "code: options['abs_tol'] must be a non-negative number, got '-1'",
        ),
        (
            {"mode": "stdio", "judge": "float", "rel_tol": "inf"},
            "code: options['rel_tol'] must be a non-negative number, got 'inf'",
        ),
    ],
)
def test_a_bad_option_is_a_bad_request_naming_it(options, message):
    with pytest.raises(BadRequest) as e:
        CodeOptions.parse(options)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "options",
    [
        {"judge": "regex", "abs_tol": "x", "compile_timeout_s": "-1"},  # assert mode reads none of them
        {"mode": "stdio", "judge": "tokens", "abs_tol": "x", "rel_tol": "-1"},  # tolerances: judge=float only
        {"mode": "stdio", "compile_timeout_s": "x"},  # the compiler's time: compiled languages only
    ],
)
def test_options_of_another_mode_are_not_read(options):
    opts = CodeOptions.parse(options)
    assert (opts.abs_tol, opts.rel_tol, opts.compile_timeout_s) == (DEFAULT_TOL, DEFAULT_TOL, COMPILE_TIMEOUT_S)


def test_the_verifiers_check_returns_the_parsed_options():
    v = CodeVerifier(case_timeout_s=4.0)
    opts = v.check(Request("code", "x", STDIO_REF, options={"mode": "stdio", "language": "js", "reward": "fraction"}))
    assert (opts.mode, opts.language, opts.reward, opts.case_timeout_s) == ("stdio", "javascript", "fraction", 4.0)
    with pytest.raises(BadRequest, match="'reference' must hold the tests"):
        v.check(Request("code", "x", "  ", options={}))
    with pytest.raises(BadRequest, match="with mode=stdio, reference must be a JSON list"):
        v.check(Request("code", "x", "not json", options={"mode": "stdio"}))
    assert set(v.options) == {f.name for f in CodeOptions.__dataclass_fields__.values()} | {"partial"}


# -- the toolchain lane's limits (verifiers/service/wiring.py) -----------------------------------------------
def test_the_toolchain_lane_takes_its_limits_from_the_service_limits(monkeypatch):
    monkeypatch.setenv("RLVR_LANGS_POOL_SIZE", "9")  # the old side channel: no longer read
    monkeypatch.setenv("RLVR_LANGS_MEMORY_MB", "9999")
    monkeypatch.setenv("RLVR_LANGS_IMAGE", "elsewhere:1")
    cfg = wiring.toolchain_config(
        ServiceLimits(
            langs_pool_size=3,
            langs_memory_mb=3000,
            langs_image="mine:1",
            cpus=0.5,
            pids=300,
            output_cap_bytes=70000,
            max_queue_s=12,
        )
    )
    assert (cfg.size, cfg.memory_mb, cfg.image) == (3, 3000, "mine:1")
    assert (cfg.cpus, cfg.pids, cfg.output_bytes, cfg.max_wait_s, cfg.tmpfs_exec) == (0.5, 300, 70000, 12, True)


def test_the_toolchain_lanes_defaults_follow_the_service_pool(monkeypatch):
    from sandbox.image import langs as image_langs

    monkeypatch.setenv("RLVR_LANGS_POOL_SIZE", "9")
    cfg = wiring.toolchain_config(ServiceLimits(pool_size=5, memory_mb=4096))
    assert (cfg.size, cfg.memory_mb, cfg.image, cfg.pids) == (5, 4096, image_langs.image_tag(), 256)
    assert wiring.toolchain_config(ServiceLimits(memory_mb=1024)).memory_mb == 2048  # compilers: at least 2048 MiB
    assert wiring.toolchain_config(ServiceLimits()).size >= 2  # 0: one per CPU core, at least 2


def test_the_service_pool_has_the_toolchain_lane_started_on_first_use():
    pool = wiring.build_pool(ServiceLimits(pool_size=1, langs_pool_size=3))
    assert toolchains.LANE in pool.lanes() and pool.own_slots(toolchains.LANE)
    assert pool.lane_config(toolchains.LANE).size == 3 and pool.lane_config(toolchains.LANE).tmpfs_exec


def test_the_toolchain_limits_are_server_flags():
    p = argparse.ArgumentParser()
    add_arguments(p)
    limits = from_args(p.parse_args(["--langs-pool-size", "4", "--langs-memory-mb", "2500", "--langs-image", "x:y"]))
    assert (limits.langs_pool_size, limits.langs_memory_mb, limits.langs_image) == (4, 2500, "x:y")
    assert from_args(p.parse_args([])).langs_pool_size == 0
    with pytest.raises(LimitsError, match="--langs-memory-mb '100': Value error, must be 0 .* or at least 128"):
        from_args(p.parse_args(["--langs-memory-mb", "100"]))
    with pytest.raises(LimitsError, match="--langs-pool-size '-1'"):
        from_args(p.parse_args(["--langs-pool-size", "-1"]))
