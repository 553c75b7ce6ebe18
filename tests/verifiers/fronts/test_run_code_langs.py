"""SandboxFusion's ``POST /run_code`` for every language the ``code`` verifier runs, under SandboxFusion's
names, over real HTTP to a real server process (real Docker, the real toolchain image), classified the
way verl's sandbox_fusion utils classify a reply (verl/utils/reward_score/sandbox_fusion/utils.py):

* ``status`` Success and ``run_result.stdout`` equal to the expected output → correct (True);
* ``status`` Failed with a compile step that failed (``compile_result`` Finished with a non-zero
  ``return_code``, or TimeLimitExceeded) → compile error (-4); a run that timed out → -3; a run that
  exited non-zero → runtime error (-2); SandboxError → -1 (not the program's fault).

Also: ``files`` reach a compiled program, the server's ``--output-cap-bytes`` applies to compiled
languages too, and an unknown language still gets SandboxFusion's error shape naming the ones served."""

from __future__ import annotations

import base64

import httpx
import pytest

from tests.http_helpers import http_base
from tests.langs_helpers import ensure_langs_image
from tests.sandboxfusion_helpers import verl_result
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker
CAP = 65536  # the smallest output cap the server accepts

# SandboxFusion language -> (echo the sum of two numbers on stdin, a compile error or None, a runtime error)
PROGRAMS = {
    "cpp": (
        "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
        "int main(){ return undefined_name; }\n",
        "#include <cstdlib>\nint main(){std::abort();}\n",
    ),
    "c": (
        '#include <stdio.h>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);return 0;}\n',
        "int main(){ return undefined_name; }\n",
        "int main(){return 3;}\n",
    ),
    "java": (
        "import java.util.*;\npublic class Main{public static void main(String[] x){"
        "Scanner s=new Scanner(System.in);System.out.println(s.nextLong()+s.nextLong());}}\n",
        'public class Main{public static void main(String[] x){int y = "s";}}\n',
        "public class Main{public static void main(String[] x){System.exit(3);}}\n",
    ),
    "go": (
        'package main\nimport "fmt"\nfunc main(){var a,b int64; fmt.Scan(&a,&b); fmt.Println(a+b)}\n',
        'package main\nimport "fmt"\nfunc main(){ x := 1 }\n',
        'package main\nimport "os"\nfunc main(){os.Exit(3)}\n',
    ),
    "rust": (
        "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s).unwrap();"
        'let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();println!("{}",v[0]+v[1]);}\n',
        'fn main(){ let x: i32 = "s"; }\n',
        "fn main(){std::process::exit(3);}\n",
    ),
    "nodejs": (
        'const v=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(Number);console.log(v[0]+v[1]);\n',
        None,
        "process.exit(3);\n",
    ),
    "typescript": (
        'const v: number[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
        "const add = (a: number, b: number): number => a + b;\nconsole.log(add(v[0], v[1]));\n",
        None,
        "process.exit(3);\n",
    ),
    "bash": ("read a b\necho $((a + b))\n", None, "exit 3\n"),
    "kotlin": (
        'fun main() { val v = readLine()!!.trim().split(" ").map { it.toLong() }; println(v[0] + v[1]) }\n',
        'fun main() { val x: Int = "s" }\n',
        "fun main() { kotlin.system.exitProcess(3) }\n",
    ),
    "kotlin_script": (
        'val v = readLine()!!.trim().split(" ").map { it.toLong() }\nprintln(v[0] + v[1])\n',
        None,
        "kotlin.system.exitProcess(3)\n",
    ),
    "racket": ("#lang racket\n(displayln (+ (read) (read)))\n", None, "#lang racket\n(exit 3)\n"),
}
LOOP = {"cpp": "int main(){volatile unsigned long i=0;for(;;)i++;}\n", "nodejs": "for(;;){}\n",
        "bash": "while :; do :; done\n", "java": "public class Main{public static void main(String[] x){while(true){}}}\n"}  # fmt: skip


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    ensure_langs_image()
    tmp = tmp_path_factory.mktemp("runcode_langs")
    args = ["--http-port", "0", "--output-cap-bytes", str(CAP)]
    with LocalServer(
        pool_size=2, registry=str(tmp / "registry.sqlite"), log_path=str(tmp / "server.log"), extra_args=args
    ) as srv:
        with httpx.Client(base_url=http_base(srv), timeout=180) as client:
            yield client


def run(http, language: str, code: str, stdin: str = "", run_timeout: float = 10, **extra) -> dict:
    """What verl's call_sandbox_api posts (compile_timeout and run_timeout from its per-case timeout)."""
    payload = {"compile_timeout": 30, "run_timeout": run_timeout, "code": code, "stdin": stdin,
               "language": language, "files": {}, "fetch_files": [], **extra}  # fmt: skip
    r = http.post("/run_code", json=payload)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_a_correct_program_succeeds(http, language):
    body = run(http, language, PROGRAMS[language][0], stdin="20 22\n")
    assert body["status"] == "Success", body
    assert body["run_result"]["status"] == "Finished" and body["run_result"]["return_code"] == 0
    assert verl_result(body, "42\n") is True
    compiled = language in ("c", "cpp", "java", "go", "rust", "kotlin")  # a compile step shown (ours: C, Kotlin)
    assert (body["compile_result"] is not None) == compiled, body
    if compiled:
        assert body["compile_result"]["status"] == "Finished" and body["compile_result"]["return_code"] == 0


@pytest.mark.parametrize("language", sorted(k for k, v in PROGRAMS.items() if v[1]))
def test_a_compile_error_is_failed_with_the_compile_result(http, language):
    body = run(http, language, PROGRAMS[language][1])
    assert body["status"] == "Failed" and body["run_result"] is None, body
    comp = body["compile_result"]
    assert comp["status"] == "Finished" and comp["return_code"] != 0 and comp["stderr"]
    assert verl_result(body, "") == -4


def test_a_typescript_syntax_error_fails_its_run_as_with_tsx(http):
    body = run(http, "typescript", "const x: number = ;\n")
    assert body["status"] == "Failed" and body["compile_result"] is None
    assert body["run_result"]["return_code"] != 0 and "TS1109" in body["run_result"]["stderr"]
    assert verl_result(body, "") == -2


@pytest.mark.parametrize("language", ["kotlin_script", "racket"])
def test_a_script_that_does_not_compile_fails_its_run_as_in_sandboxfusion(http, language):
    """SandboxFusion's ``kotlin x.kts`` and ``racket x.rkt`` compile as they run: no compile step shown."""
    broken = {"kotlin_script": 'val x: Int = "s"\n', "racket": "#lang racket\n(displayln\n"}
    body = run(http, language, broken[language])
    assert body["status"] == "Failed" and body["compile_result"] is None, body
    assert body["run_result"]["return_code"] != 0 and body["run_result"]["stderr"]
    assert verl_result(body, "") == -2


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_a_runtime_error_is_failed_with_its_return_code(http, language):
    body = run(http, language, PROGRAMS[language][2])
    assert body["status"] == "Failed", body
    assert body["run_result"]["status"] == "Finished" and body["run_result"]["return_code"] != 0
    assert verl_result(body, "") == -2


@pytest.mark.parametrize("language", sorted(LOOP))
def test_an_endless_loop_is_a_time_limit(http, language):
    body = run(http, language, LOOP[language], run_timeout=2)
    assert body["status"] == "Failed" and body["run_result"]["status"] == "TimeLimitExceeded", body
    assert verl_result(body, "") == -3


JAVA_SOLUTION = (
    "import java.util.*;\n// public class Commented { }\nclass Solution{public static void main(String[] x){"
    "Scanner s=new Scanner(System.in);System.out.println(s.nextLong()+s.nextLong());}}\n"
)


def test_java_without_a_public_main_class_runs(http):
    """A package-private class not named Main, a ``public class`` in a comment (issue 36)."""
    body = run(http, "java", JAVA_SOLUTION, stdin="20 22\n")
    assert body["status"] == "Success" and verl_result(body, "42\n") is True, body


def test_java_asserts_are_enabled_as_in_sandboxfusion(http):
    body = run(http, "java", 'public class Main{public static void main(String[] x){assert false : "ea-on";}}\n')
    assert body["status"] == "Failed" and "ea-on" in body["run_result"]["stderr"], body
    assert verl_result(body, "") == -2


JEST_SUITE = (
    "import {{ describe, expect, test }} from '@jest/globals';\nimport _ from 'lodash';\n"
    "const add = (a: number, b: number): number => a {op} b;\n"
    "describe('add', () => {{ test('adds', () => {{ expect(add(1, 2)).toBe(_.sum([1, 2])); }}); }});\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["+", "-"])
def test_a_jest_suite_passes_or_fails_by_its_exit_status(http, op):
    """SandboxFusion's ``jest``: the program is a TypeScript test file; Success when jest exits 0."""
    body = run(http, "jest", JEST_SUITE.format(op=op), run_timeout=60)
    run_result = body["run_result"]
    assert body["compile_result"] is None and run_result["status"] == "Finished", body
    if op == "+":
        assert body["status"] == "Success" and run_result["return_code"] == 0, body
    else:
        assert body["status"] == "Failed" and run_result["return_code"] == 1, body
        assert "Expected: 3" in run_result["stderr"] and verl_result(body, "") == -2


def test_files_reach_a_compiled_program(http):
    code = '#include <stdio.h>\nint main(){char b[64]={0};FILE*f=fopen("data/in.txt","r");fread(b,1,63,f);puts(b);}\n'
    body = run(http, "c", code, files={"data/in.txt": base64.b64encode(b"hello").decode(), "skip.txt": None})
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "hello\n", body


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_the_servers_output_cap_applies_to_compiled_languages(http, stream):
    # 256 KiB (4x the cap) and then the right answer: the program is killed at the cap, never a Success
    code = (
        "#include <stdio.h>\n#include <string.h>\nint main(){static char b[1024];memset(b,120,sizeof b);"
        f'for(int i=0;i<256;i++)fwrite(b,1,sizeof b,{stream});fflush({stream});puts("42");return 0;}}\n'
    )
    body = run(http, "c", code)
    assert body["status"] == "Failed", {k: v for k, v in body.items() if k != "run_result"}
    assert body["run_result"]["return_code"] != 0 and "output limit exceeded" in body["run_result"]["stderr"]
    assert len(body["run_result"]["stdout"]) <= CAP


def test_an_unknown_language_names_the_ones_served(http):
    body = run(http, "cobol", "DISPLAY 'x'.")
    assert body["status"] == "SandboxError" and body["run_result"] is None
    for name in ("python", "cpp", "java", "nodejs", "go", "rust", "typescript", "bash"):
        assert name in body["message"], name
