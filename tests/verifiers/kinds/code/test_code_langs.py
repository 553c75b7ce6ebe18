"""Every language beside Python, graded by the real service in the real toolchain sandbox: a correct
solution, a wrong one, a time-out, a compile error (compiled languages), a runtime error, and the
fenced-block selection. The hostile programs are in tests/security/test_langs_battery.py."""

from __future__ import annotations

import pytest

from tests.langs_helpers import SUM_CASES, grade
from verifiers.kinds.code.languages import language, tags
from verifiers.kinds.code.verifier import candidate_code
from verifiers.shapes.outcome import CaseStatus

# language: (correct a+b, wrong, endless loop, runtime error, compile error or None)
PROGRAMS = {
    "c": (
        '#include <stdio.h>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);return 0;}\n',
        '#include <stdio.h>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a-b);return 0;}\n',
        "int main(){volatile unsigned long i=0;for(;;)i++;}\n",
        '#include <stdio.h>\n#include <stdlib.h>\nint main(){fputs("boom-c\\n",stderr);abort();}\n',
        "int main(){ return undefined_name; }\n",
    ),
    "cpp": (
        "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
        "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a*b<<std::endl;}\n",
        "int main(){volatile unsigned long i=0;for(;;)i++;}\n",
        '#include <stdexcept>\nint main(){throw std::runtime_error("boom-cpp");}\n',
        "#include <vector>\nint main(){ std::vector<int> v = 3; }\n",
    ),
    "java": (
        "import java.util.*;\npublic class Main{public static void main(String[] x){"
        "Scanner s=new Scanner(System.in);System.out.println(s.nextLong()+s.nextLong());}}\n",
        "public class Main{public static void main(String[] x){System.out.println(42);}}\n",
        "public class Main{public static void main(String[] x){long i=0;while(true){i++;}}}\n",
        'public class Main{public static void main(String[] x){throw new RuntimeException("boom-java");}}\n',
        'public class Main{public static void main(String[] x){int y = "s";}}\n',
    ),
    "javascript": (
        'const v=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/).map(Number);console.log(v[0]+v[1]);\n',
        'const v=require("fs").readFileSync(0,"utf8").trim().split(/\\s+/);console.log(v[0]+v[1]);\n',
        "for(;;){}\n",
        'throw new Error("boom-javascript");\n',
        None,
    ),
    "go": (
        'package main\nimport "fmt"\nfunc main(){var a,b int64; fmt.Scan(&a,&b); fmt.Println(a+b)}\n',
        'package main\nimport "fmt"\nfunc main(){var a,b int64; fmt.Scan(&a,&b); fmt.Println(b)}\n',
        "package main\nfunc main(){i:=0\nfor {i++}}\n",
        'package main\nfunc main(){panic("boom-go")}\n',
        'package main\nimport "fmt"\nfunc main(){ x := 1 }\n',
    ),
    "rust": (
        "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s).unwrap();"
        'let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();println!("{}",v[0]+v[1]);}\n',
        'fn main(){println!("3");}\n',
        "fn main(){let mut i:u64=0;loop{unsafe{std::ptr::write_volatile(&mut i,i.wrapping_add(1));}}}\n",
        'fn main(){panic!("boom-rust");}\n',
        'fn main(){ let x: i32 = "s"; }\n',
    ),
    "typescript": (
        'const v: number[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
        "const add = (a: number, b: number): number => a + b;\nconsole.log(add(v[0], v[1]));\n",
        'const v: string[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/);\nconsole.log(v[0] + v[1]);\n',
        "for (;;) {}\n",
        'throw new Error("boom-typescript");\n',
        "const x: number = ;\n",  # a syntax error (types are stripped, not checked: as SandboxFusion's tsx)
    ),
    "bash": (
        "read a b\necho $((a + b))\n",
        "read a b\necho $((a - b))\n",
        "while :; do :; done\n",
        "echo boom-bash >&2\nexit 3\n",
        None,
    ),
}
LANGS = list(PROGRAMS)


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_correct(service, lang):
    v = grade(service, lang, PROGRAMS[lang][0])
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    assert [c.status for c in v.cases] == [CaseStatus.PASSED] * 2


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_wrong(service, lang):
    v = grade(service, lang, PROGRAMS[lang][1], reward="fraction")
    assert v.outcome == "INCORRECT" and v.reward < 1.0, v.detail
    assert CaseStatus.WRONG_ANSWER in [c.status for c in v.cases]
    assert "expected" in v.detail  # the first failing case's diff


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_time_limit(service, lang):
    v = grade(service, lang, PROGRAMS[lang][2], case_timeout_s="1")
    assert (v.outcome, v.reward) == ("TIMEOUT", 0.0), v.detail
    assert v.cases[0].status is CaseStatus.TIME_LIMIT
    assert v.cases[1].status is CaseStatus.SKIPPED  # reward=all: the rest is not run


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_runtime_error(service, lang):
    v = grade(service, lang, PROGRAMS[lang][3])
    assert (v.outcome, v.reward) == ("RUNTIME_ERROR", 0.0), v.detail
    assert v.cases[0].status is CaseStatus.RUNTIME_ERROR
    assert f"boom-{lang}" in v.detail  # the stderr tail


@pytest.mark.docker
@pytest.mark.parametrize("lang", [lang for lang in LANGS if PROGRAMS[lang][4]])
def test_compile_error(service, lang):
    v = grade(service, lang, PROGRAMS[lang][4])
    assert (v.outcome, v.reward) == ("COMPILE_ERROR", 0.0), v.detail
    assert v.detail and v.cases == []


@pytest.mark.docker
def test_javascript_syntax_error_is_a_runtime_error(service):
    v = grade(service, "javascript", "const = ;\n")
    assert v.outcome == "RUNTIME_ERROR" and "SyntaxError" in v.detail, v.detail


@pytest.mark.docker
def test_java_class_named_after_public_class(service):
    src = PROGRAMS["java"][0].replace("class Main", "class Solution")
    assert grade(service, "java", src).outcome == "CORRECT"
    v = grade(service, "java", "package contest.a;\n" + src)
    assert v.outcome == "CORRECT", v.detail


JAVA_SUM = "Scanner s=new Scanner(System.in);System.out.println(s.nextLong()+s.nextLong());"
JAVA_SHAPES = {
    # no public class, and the class is not Main (issue 36)
    "package-private": "import java.util.*;\nclass Solution{public static void main(String[] x){" + JAVA_SUM + "}}\n",
    # a public helper class first, main in another top-level class
    "main elsewhere": "import java.util.*;\npublic class Helper{static long id(long v){return v;}}\n"
    "class Runner{public static void main(String[] x){" + JAVA_SUM + "}}\n",
    # a public class named in a comment and in a string: neither names the file
    "commented": "import java.util.*;\n// public class Old { }\n/* public class Older */\n"
    'public class Main{static String s = "public class Fake {";public static void main(String[] x){'
    + JAVA_SUM
    + "}}\n",
}


@pytest.mark.docker
@pytest.mark.parametrize("shape", sorted(JAVA_SHAPES))
def test_java_runs_the_class_that_declares_main(service, shape):
    v = grade(service, "java", JAVA_SHAPES[shape])
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail


@pytest.mark.docker
def test_java_runs_with_assertions_enabled(service):
    """SandboxFusion runs ``java -ea``: a failing ``assert`` is a runtime error, not a pass."""
    src = (
        'public class Main{public static void main(String[] x){assert 1 + 1 == 3 : "boom-assert";'
        'System.out.println("3");}}\n'
    )
    v = grade(service, "java", src)
    assert v.outcome == "RUNTIME_ERROR" and "AssertionError" in v.detail, v.detail


@pytest.mark.docker
def test_compile_timeout_is_a_compile_error(service):
    slow = "#include <bits/stdc++.h>\nint main(){ std::cout << 1; }\n"  # parsing the header alone takes ~1 s
    v = grade(service, "cpp", slow, compile_timeout_s="0.2")
    assert v.outcome == "COMPILE_ERROR" and "did not finish" in v.detail, v.detail


def test_the_code_is_the_last_block_of_the_language():
    text = "```c\nint a;\n```\n```python\nx = 1\n```\n```c\nint b;\n```\nthe end"
    assert candidate_code(text, tags("c")) == "int b;\n"
    assert candidate_code(text, tags("python")) == "x = 1\n"
    assert candidate_code("```cpp\nint x;\n```", tags("c")) == "```cpp\nint x;\n```"  # no c block: the whole text
    assert candidate_code("int main(){}", tags("rust")) == "int main(){}"
    assert language("cpp").compile and "-std=c++17" in language("cpp").compile


@pytest.mark.docker
def test_a_request_budget_that_ends_while_compiling_is_a_timeout(service):
    slow = "#include <bits/stdc++.h>\nint main(){ std::cout << 3; }\n"
    v = grade(service, "cpp", slow, timeout_s=0.3)
    assert (v.outcome, v.reward) == ("TIMEOUT", 0.0), v.detail
    assert "compiling" in v.detail and v.cases[0].status is CaseStatus.TIME_LIMIT


@pytest.mark.docker
def test_a_compiled_language_over_grpc(client):
    """The server process starts its toolchain pool on the first non-Python request."""
    r = client.verify(
        "code",
        f"```go\n{PROGRAMS['go'][0]}```",
        SUM_CASES,
        timeout_s=60,
        options={"mode": "stdio", "language": "go", "reward": "fraction"},
    )
    assert (r.outcome, r.reward) == ("CORRECT", 1.0), r.detail
    assert [c["status"] for c in r.cases] == ["PASSED", "PASSED"]
    bad = client.verify(
        "code",
        "```go\npackage main\nfunc main(){ x := }\n```",
        SUM_CASES,
        timeout_s=60,
        options={"mode": "stdio", "language": "go"},
    )
    assert bad.outcome == "COMPILE_ERROR" and "syntax error" in bad.detail, bad.detail


@pytest.mark.docker
@pytest.mark.parametrize("lang", ["go", "java"])
def test_a_batch_of_one_program_compiles_it_once(service, lang):
    """G completions that hold the same program (different prose around it): one compile, one run, every
    item graded from it (service.toolchains.stats: ``compiles`` run, ``shared`` joined)."""
    from verifiers.shapes.request import Request

    opts = {"mode": "stdio", "language": lang, "case_timeout_s": "5"}
    texts = [f"Attempt {i}: here it is.\n```{lang}\n{PROGRAMS[lang][0]}```\n" for i in range(6)]
    service.toolchains.cache.clear()  # the other tests compiled this program: the artifact cache would answer
    before = dict(service.toolchains.stats)
    verdicts = service.verify_batch([Request("code", t, SUM_CASES, options=opts, timeout_s=60) for t in texts])
    assert [(v.outcome, v.reward) for v in verdicts] == [("CORRECT", 1.0)] * 6, [v.detail for v in verdicts]
    compiles = service.toolchains.stats["compiles"] - before.get("compiles", 0)
    shared = service.toolchains.stats["shared"] - before.get("shared", 0)
    assert (compiles, shared) == (1, 5)
    wrong = service.verify_batch(
        [Request("code", f"```{lang}\n{PROGRAMS[lang][1]}```", SUM_CASES, options=opts, timeout_s=60)] * 2
    )
    assert [v.outcome for v in verdicts[:1] + wrong] == ["CORRECT", "INCORRECT", "INCORRECT"]
    assert service.toolchains.stats["compiles"] - before.get("compiles", 0) == 2  # another source: its own compile
