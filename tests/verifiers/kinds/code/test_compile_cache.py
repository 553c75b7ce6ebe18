"""The compile cache (verifiers/kinds/code/compile_cache.py, artifact.py): compiled artifacts reused across jobs
and requests only by a job with the same key, bounded, and out of a hostile program's reach.

The unit tests call the sandbox half's pure functions on the host (stdlib only, no program runs); the
rest grades through a real VerifierService over the real toolchain pool, one sandbox, so a hostile job
and its victim share it."""

from __future__ import annotations

import base64
import json
import os
import zlib
from dataclasses import replace
from functools import partial

import pytest

from in_sandbox.code import artifact
from tests import langs_helpers
from tests.langs_helpers import SUM_CASES, make_service, stats_delta
from tests.verifiers.kinds.code.test_code_langs import PROGRAMS
from verifiers.kinds.code import compile_cache, languages, toolchains
from verifiers.shapes.request import Request

ONE = json.dumps([{"input": "1 2\n", "output": "3\n"}])
POISON = "#!/bin/sh\\necho 3\\n"  # what an attacker wants the next job's binary to be: the expected answer


# -- the pure parts -------------------------------------------------------------------------------------
def _blob(*files: tuple[str, int, bytes]) -> bytes:
    parts = [artifact.HEAD.pack(len(n.encode()), m, len(b)) + n.encode() + b for n, m, b in files]
    return zlib.compress(b"".join(parts))


def test_an_artifact_path_that_leaves_the_scratch_directory_is_refused():
    ok = artifact.entries(_blob(("main", 0o755, b"\x7fELF"), ("pkg/Main.class", 0o644, b"cafe")))
    assert ok == [("main", 0o755, b"\x7fELF"), ("pkg/Main.class", 0o644, b"cafe")]
    for bad in ("../main", "/tmp/main", ".gocache/x", "a//b", "a/./b", "a/../../b", ""):
        with pytest.raises(ValueError):
            artifact.entries(_blob((bad, 0o755, b"x")))
    with pytest.raises(ValueError):
        artifact.entries(zlib.compress(artifact.HEAD.pack(4, 0o755, 10) + b"main" + b"short"))
    assert artifact.entries(_blob(("main", 0o7777, b"x")))[0][1] == 0o755  # no setuid, no sticky, no group write


def test_pack_takes_what_the_compile_wrote_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.c").write_text("int main(){}")
    before = artifact.scan()
    (tmp_path / "main").write_bytes(b"binary")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "A.class").write_bytes(b"class")
    (tmp_path / ".gocache").mkdir()
    (tmp_path / ".gocache" / "junk").write_bytes(b"cache")
    blob, why = artifact.pack(before, artifact.scan(), 1 << 20)
    names = [n for n, _, _ in artifact.entries(base64.b64decode(blob))]
    assert (names, why) == (["main", "pkg/A.class"], "")
    assert artifact.pack(before, artifact.scan(), 10)[0] is None  # over the limit: not taken
    os.symlink("/etc/passwd", tmp_path / "link")
    blob, why = artifact.pack(before, artifact.scan(), 1 << 20)
    assert blob is None and "link" in why


def _entry(elapsed: float, size: int) -> compile_cache.Entry:
    return compile_cache.Entry(
        {"ok": True, "elapsed": elapsed, "message": ""}, _blob(("main", 0o755, os.urandom(size))), None
    )


def test_the_cache_is_bounded_least_recently_used_first():
    c = compile_cache.ArtifactCache(max_bytes=40_000)
    for k in "abc":
        c.put(k, _entry(0.5, 9000))
    assert c.get("a", 30) is not None  # a is now the most recent: b goes first
    c.put("d", _entry(0.5, 9000))
    c.put("e", _entry(0.5, 9000))
    assert [k for k in "abcde" if c.get(k, 30)] == ["a", "c", "d", "e"]
    assert c.bytes <= 40_000 and c.evicted == 1
    c.put("huge", _entry(0.5, 30_000))  # over a quarter of the cache: not kept
    assert c.get("huge", 30) is None
    assert c.get("a", 0.1) is None  # compiled in 0.5 s: not an answer for a 0.1 s budget
    with pytest.raises(ValueError):
        c.put("bad", compile_cache.Entry({"elapsed": 0}, _blob(("../x", 0o755, b"x")), None))


def test_the_key_is_what_decides_the_compilers_output():
    lang = languages.language("c")
    job, _ = toolchains.driver_job(lang, "int main(){}", ["1\n"], case_timeout_s=2, compile_timeout_s=30)
    q = json.loads(job.stdin)
    k = compile_cache.key(q, job, "img")
    same = dict(q, nonce="other", inputs=["2\n"], case_timeout=9, compile_timeout=1, run=["x"])
    assert compile_cache.key(same, job, "img") == k
    for other in (
        dict(q, compile=[*q["compile"], "-DX"]),
        dict(q, files={"main.c": "int main(){ }"}),
        dict(q, blobs={"data.txt": "eA=="}),
        dict(q, env={"CC_FLAG": "1"}),
        dict(q, compile_as_mb=1),
    ):
        assert compile_cache.key(other, job, "img") != k
    assert compile_cache.key(q, job, "img2") != k
    assert compile_cache.key(q, replace(job, limits=replace(job.limits, memory_mb=1)), "img") != k


# -- through the service --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc, close = make_service(tmp_path_factory, langs_pool_size=1)  # one sandbox: attacker and victim share it
    yield svc
    close()


# new prose each time: the service's verdict cache never answers
grade = partial(langs_helpers.grade, fresh=True)


@pytest.mark.docker
@pytest.mark.parametrize("lang", ["c", "go", "rust", "java"])
def test_a_batch_compiles_each_distinct_program_once_and_a_later_request_none(service, lang):
    service.toolchains.cache.clear()
    src = PROGRAMS[lang][0]
    distinct = [f"{src}// variant {i}\n" for i in range(4)]
    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "5"}
    batch = [
        Request("code", f"```{lang}\n{s}```", SUM_CASES, options=opts, timeout_s=120) for s in [src] * 4 + distinct
    ]
    before = dict(service.toolchains.stats)
    verdicts = service.verify_batch(batch)
    assert [v.outcome for v in verdicts] == ["CORRECT"] * 8, [v.detail for v in verdicts]
    assert stats_delta(service, before).get("compiles") == 5, stats_delta(service, before)
    before = dict(service.toolchains.stats)
    again = [replace(r, completion=f"Again:\n{r.completion}") for r in (batch[0], batch[5])]  # past the verdict cache
    again = service.verify_batch(again)
    assert [v.outcome for v in again] == ["CORRECT"] * 2
    assert stats_delta(service, before) == {"cached": 2}


@pytest.mark.docker
def test_a_cached_compile_error_reads_as_the_first_one(service):
    service.toolchains.cache.clear()
    before = dict(service.toolchains.stats)
    first, second = (grade(service, "cpp", PROGRAMS["cpp"][4]) for _ in range(2))
    assert stats_delta(service, before) == {"compiles": 1, "cached": 1}
    assert first.outcome == second.outcome == "COMPILE_ERROR"
    assert first.detail == second.detail and "error" in first.detail


@pytest.mark.docker
def test_a_cached_compile_slower_than_the_budget_is_compiled_again(service):
    slow = "#include <bits/stdc++.h>\nint main(){ std::cout << 5; }\n"  # ~1 s of header parsing
    ok = grade(service, "cpp", slow, reference=json.dumps([{"input": "", "output": "5"}]))
    assert ok.outcome == "CORRECT", ok.detail
    late = grade(service, "cpp", slow, reference=json.dumps([{"input": "", "output": "5"}]), compile_timeout_s="0.2")
    assert late.outcome == "COMPILE_ERROR" and "did not finish" in late.detail, late.detail


@pytest.mark.docker
def test_compiler_flags_are_part_of_the_key(service):
    """The same source with another -D: each its own binary (a key of the source alone would share it)."""
    lang = languages.language("c")
    src = '#include <stdio.h>\nint main(){ printf("%d\\n", ANSWER); return 0; }\n'
    outs, before = [], dict(service.toolchains.stats)
    for answer in ("1", "2", "1"):
        flagged = replace(lang, compile=[*lang.compile[:-1], f"-DANSWER={answer}", lang.compile[-1]])
        job, nonce = toolchains.driver_job(flagged, src, [""], case_timeout_s=2, compile_timeout_s=30)
        lines = toolchains.driver_lines(service.run_job(job).stdout, nonce)
        outs += [base64.b64decode(d["stdout"]).decode().strip() for d in lines if "case" in d]
    assert outs == ["1", "2", "1"]
    assert stats_delta(service, before) == {"compiles": 2, "cached": 1}


@pytest.mark.docker
def test_a_program_that_rewrites_its_binary_changes_no_later_job(service):
    """It replaces ./main with a script that prints the expected answer; the next request for the same
    program gets the compiler's binary from the cache, not the rewritten one."""
    service.toolchains.cache.clear()
    src = (
        "#include <stdio.h>\n#include <unistd.h>\n#include <sys/stat.h>\n"
        'int main(){ unlink("main"); FILE *f = fopen("main", "w"); fputs("' + POISON + '", f); fclose(f);'
        ' chmod("main", 0755); puts("-1"); return 0; }\n'
    )
    before = dict(service.toolchains.stats)
    verdicts = [grade(service, "c", src, reference=ONE) for _ in range(3)]
    assert [v.outcome for v in verdicts] == ["INCORRECT"] * 3, [v.detail for v in verdicts]
    assert stats_delta(service, before) == {"compiles": 1, "cached": 2}


LEFTOVER = (  # a daemon that outlives its job if it can, and rewrites what the next compile writes
    "#include <stdio.h>\n#include <unistd.h>\n#include <sys/stat.h>\n#include <time.h>\n"
    "int main(){ if (fork() == 0) { setsid(); if (fork() == 0) { close(1); close(2); time_t end = time(0) + 20;"
    ' const char *fs[] = {"/tmp/job/main", "/tmp/job/Main.class"};'
    ' while (time(0) < end) for (int i = 0; i < 2; i++) { unlink(fs[i]); FILE *f = fopen(fs[i], "w");'
    ' if (f) { fputs("' + POISON + '", f); fclose(f); chmod(fs[i], 0755); } } } _exit(0); }'
    ' puts("0"); return 0; }\n'
)


@pytest.mark.docker
@pytest.mark.parametrize("lang", ["c", "go"])
def test_a_leftover_process_cannot_write_into_the_next_compile(service, lang):
    """A daemon started by one job rewrites, for 20 s, every binary a compile writes into the scratch
    directory with a script that prints the expected answer; the next program (a wrong one) is compiled
    and cached in the same sandbox right after, and graded twice: never CORRECT."""
    service.toolchains.cache.clear()
    assert grade(service, "c", LEFTOVER, reference=ONE).outcome == "INCORRECT"
    verdicts = [grade(service, lang, PROGRAMS[lang][1], reference=ONE) for _ in range(2)]
    assert [v.outcome for v in verdicts] == ["INCORRECT"] * 2, [v.detail for v in verdicts]


@pytest.mark.docker
def test_a_run_job_that_cannot_use_the_artifact_falls_back_to_compiling(service, monkeypatch):
    """Fault injection: every run job (a cache hit) dies before the driver speaks; the program is compiled
    again in a plain driver job and graded as without the cache (never a SANDBOX_ERROR for our failure)."""
    service.toolchains.cache.clear()
    tail = "artifact.run_cached(driver.main)\n"
    assert compile_cache.RUN_JOB.endswith(tail)
    monkeypatch.setattr(compile_cache, "RUN_JOB", compile_cache.RUN_JOB[: -len(tail)] + "raise SystemExit(3)\n")
    before = dict(service.toolchains.stats)
    assert [grade(service, "c", PROGRAMS["c"][i]).outcome for i in (0, 0, 1)] == ["CORRECT", "CORRECT", "INCORRECT"]
    assert stats_delta(service, before) == {"compiles": 3, "cached": 1}  # build, the hit's fallback, build


@pytest.mark.docker
def test_an_artifact_with_no_room_left_in_the_output_cap_is_not_cached_and_the_job_is_graded(service):
    """Go's binary (~850 KB packed) and 300 KB of output do not fit in the 1 MiB cap together: the build
    job grades as the driver and sends no artifact; the next request compiles again."""
    src = 'package main\nimport ("fmt"; "strings")\nfunc main(){ fmt.Println(strings.Repeat("x", 300000)) }\n'
    ref = json.dumps([{"input": "", "output": "x" * 300000}])
    service.toolchains.cache.clear()
    before = dict(service.toolchains.stats)
    assert [grade(service, "go", src, reference=ref).outcome for _ in range(2)] == ["CORRECT"] * 2
    assert stats_delta(service, before) == {"compiles": 2, "uncached": 2}
