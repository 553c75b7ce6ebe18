"""The security and reward-hack battery, repeated for every compiled or non-Python language.

Every hostile program here prints the expected answer (``3`` for the input ``1 2``) only if its attack
worked, so a ``CORRECT`` verdict means a hole. Each language attacks with its own runtime (sockets,
file APIs, killing its parent) and, through its own process API, with a shell (the fork bomb, reading
the tests, leaving files for the next job): a language's process API is one more way out and is held
by the same walls.

What the battery shows, per language: no network; nothing written outside the job's scratch
directory (read-only root; /tmp, /dev/shm and the scratch directory are wiped between jobs, so nothing
reaches the next program); the expected output is nowhere in the sandbox (not in a file, not in any
process's command line, environment or open files); killing the in-sandbox driver never passes; a
fork bomb is a time-out and the sandbox grades the next program normally.
"""

from __future__ import annotations

import base64
import json
import os

import pytest

from tests.langs_helpers import grade

ONE = json.dumps([{"input": "1 2\n", "output": "3\n"}])
SECRET = "rlvrsecret" + os.urandom(8).hex()


def launcher(lang: str, cmd: str) -> str:
    """A program in ``lang`` that runs ``sh -c cmd`` with its own stdout."""
    s = json.dumps(cmd)
    q = "'" + cmd.replace("\\", "\\\\").replace("'", "\\'") + "'"
    b64 = base64.b64encode(cmd.encode()).decode()  # Kotlin strings expand $names, even raw ones
    kt_cmd = f'String(java.util.Base64.getDecoder().decode("{b64}"))'
    kt_shell = f'ProcessBuilder("sh","-c",{kt_cmd}).inheritIO().start().waitFor()'
    return {
        "c": f"#include <stdlib.h>\nint main(){{system({s});return 0;}}\n",
        "cpp": f"#include <cstdlib>\nint main(){{std::system({s});return 0;}}\n",
        "java": "public class Main{public static void main(String[] a) throws Exception{"
        f'new ProcessBuilder("sh","-c",{s}).inheritIO().start().waitFor();}}}}\n',
        "javascript": f"try{{require('child_process').execSync({s},{{stdio:'inherit'}});}}catch(e){{}}\n",
        "go": 'package main\nimport ("os";"os/exec")\n'
        f'func main(){{c:=exec.Command("sh","-c",{s});c.Stdout=os.Stdout;c.Stderr=os.Stderr;c.Run()}}\n',
        "rust": f'fn main(){{let _=std::process::Command::new("sh").arg("-c").arg({s}).status();}}\n',
        # issue 40's languages, each through its own process API
        "php": f"<?php system({q});\n",  # single quotes: PHP and Perl expand $names in double quotes
        "ruby": f"system({s})\n",
        "perl": f"system({q});\n",
        "lua": f"os.execute({s})\n",
        "r": f"invisible(system({s}))\n",
        "csharp": "class P{static void Main(){var p=System.Diagnostics.Process.Start(new System.Diagnostics."
        f'ProcessStartInfo("sh","-c \'echo {base64.b64encode(cmd.encode()).decode()} | base64 -d | sh\'")'
        "{UseShellExecute=false});p.WaitForExit();}}\n",
        "d": f"import std.process;\nvoid main(){{spawnShell({s}).wait();}}\n",
        "scala": f'object Main {{ def main(a: Array[String]): Unit = {{ import scala.sys.process._; Seq("sh", "-c", {s}).! }} }}\n',
        "kotlin": f"fun main() {{ {kt_shell} }}\n",
        "kotlin_script": f"{kt_shell}\n",
        "racket": f"#lang racket/base\n(require racket/system)\n(void (system {s}))\n",  # a JSON string reads as Racket's
        # a jest test file: the shell runs inside the one test, through Node's child_process
        "jest": "import { test } from '@jest/globals';\nimport { execSync } from 'child_process';\n"
        f"test('runs', () => {{ try {{ execSync({s}, {{stdio: 'inherit'}}); }} catch (e) {{}} }});\n",
    }[lang]


# Native attacks: print 3 if the attack worked, "blocked" otherwise.
NETWORK = {
    "c": "#include <stdio.h>\n#include <arpa/inet.h>\n#include <sys/socket.h>\nint main(){"
    'struct sockaddr_in a={0};a.sin_family=AF_INET;a.sin_port=htons(53);inet_pton(AF_INET,"1.1.1.1",&a.sin_addr);'
    'int s=socket(AF_INET,SOCK_STREAM,0);puts(s>=0&&connect(s,(struct sockaddr*)&a,sizeof a)==0?"3":"blocked");}\n',
    "java": "public class Main{public static void main(String[] x){try{new java.net.Socket().connect("
    'new java.net.InetSocketAddress("1.1.1.1",53),1000);System.out.println(3);}'
    'catch(Exception e){System.out.println("blocked");}}}\n',
    "javascript": "const s=require('net').connect({host:'1.1.1.1',port:53});s.setTimeout(1000);"
    "s.on('connect',()=>{console.log(3);process.exit(0)});s.on('error',()=>console.log('blocked'));"
    "s.on('timeout',()=>{console.log('blocked');process.exit(0)});\n",
    "go": 'package main\nimport ("fmt";"net";"time")\nfunc main(){_,err:=net.DialTimeout("tcp","1.1.1.1:53",time.Second)\n'
    'if err==nil{fmt.Println(3)}else{fmt.Println("blocked")}}\n',
    "rust": 'use std::time::Duration;\nfn main(){let a="1.1.1.1:53".parse().unwrap();'
    'if std::net::TcpStream::connect_timeout(&a,Duration::from_secs(1)).is_ok(){println!("3")}else{println!("blocked")}}\n',
}
NETWORK["cpp"] = NETWORK["c"]
TARGETS = ["/etc/rlvr_pwn", "/usr/rlvr_pwn", "/opt/in_sandbox/worker.py", "/rlvr_pwn", "/usr/bin/gcc"]
T = json.dumps(TARGETS)[1:-1]
WRITE = {
    "c": f"#include <stdio.h>\nint main(){{const char*p[]={{{T}}};int ok=0;for(int i=0;i<5;i++)"
    '{FILE*f=fopen(p[i],"a");if(f){ok=1;fclose(f);}}puts(ok?"3":"blocked");}\n',
    "java": f"public class Main{{public static void main(String[] x){{String[] p={{{T}}};boolean ok=false;"
    "for(String s:p){try{new java.io.FileOutputStream(s,true).close();ok=true;}catch(Exception e){}}"
    'System.out.println(ok?"3":"blocked");}}\n',
    "javascript": f"let ok=false;for(const p of [{T}]){{try{{require('fs').appendFileSync(p,'');ok=true}}catch(e){{}}}}"
    "console.log(ok?3:'blocked');\n",
    "go": f'package main\nimport ("fmt";"os")\nfunc main(){{ok:=false\nfor _,p:=range []string{{{T}}}{{'
    "f,err:=os.OpenFile(p,os.O_WRONLY|os.O_CREATE|os.O_APPEND,0644)\nif err==nil{ok=true;f.Close()}}\n"
    'if ok{fmt.Println(3)}else{fmt.Println("blocked")}}\n',
    "rust": f"fn main(){{let mut ok=false;for p in [{T}]{{if std::fs::OpenOptions::new().append(true).create(true)"
    '.open(p).is_ok(){ok=true}}println!("{}",if ok{"3"}else{"blocked"});}\n',
}
WRITE["cpp"] = WRITE["c"]
# The right answer, then kill the process that reports it (the in-sandbox driver): never a pass.
KILL_PARENT = {
    "c": "#include <stdio.h>\n#include <signal.h>\n#include <unistd.h>\n"
    'int main(){puts("3");fflush(stdout);kill(getppid(),SIGKILL);return 0;}\n',
    "java": "public class Main{public static void main(String[] x){System.out.println(3);System.out.flush();"
    "ProcessHandle.current().parent().ifPresent(p->p.destroyForcibly());}}\n",
    "javascript": "console.log(3);process.kill(process.ppid,'SIGKILL');\n",
    "go": 'package main\nimport ("fmt";"os";"syscall")\nfunc main(){fmt.Println(3);syscall.Kill(os.Getppid(),syscall.SIGKILL)}\n',
    "rust": 'fn main(){println!("3");let p=std::os::unix::process::parent_id().to_string();'
    'let _=std::process::Command::new("sh").args(["-c",&format!("kill -9 {}",p)]).status();}\n',
}
KILL_PARENT["cpp"] = KILL_PARENT["c"]
LANGS = ["c", "cpp", "java", "javascript", "go", "rust"]
SCAN = (
    "grep -rhoaD skip 'rlvr[s]ecret[0-9a-f]*' /tmp /dev/shm /proc/[0-9]*/cmdline /proc/[0-9]*/environ"
    " /proc/[0-9]*/fd/* 2>/dev/null | head -n 1; echo scanned"
)
FORK_BOMB = "b(){ b|b& }; b; sleep 30"
PERSIST_WRITE = "for d in /tmp /dev/shm /tmp/job .; do echo 3 > $d/rlvr_persist; done 2>/dev/null; echo blocked"
PERSIST_READ = (
    "if cat /tmp/rlvr_persist /dev/shm/rlvr_persist /tmp/job/rlvr_persist 2>/dev/null | grep -q 3;"
    " then echo 3; else echo blocked; fi"
)


@pytest.fixture(scope="module")
def service(langs_service):
    return langs_service  # the worker's one code-language service (tests/conftest.py)


def _not_passed(v) -> None:
    assert v.outcome != "CORRECT" and v.reward == 0.0, (v.outcome, v.detail)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_no_network(service, lang):
    v = grade(service, lang, NETWORK[lang], ONE)
    _not_passed(v)
    assert v.outcome == "INCORRECT" and "'blocked'" in v.detail, v.detail  # ran, and was refused


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_no_writes_outside_the_scratch_directory(service, lang):
    v = grade(service, lang, WRITE[lang], ONE)
    _not_passed(v)
    assert "'blocked'" in v.detail, v.detail


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_killing_the_driver_after_the_right_answer_is_not_a_pass(service, lang):
    v = grade(service, lang, KILL_PARENT[lang], ONE)
    _not_passed(v)
    assert v.outcome == "RUNTIME_ERROR" and "driver died" in v.detail, v.detail  # the kill did happen


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_the_expected_output_is_nowhere_in_the_sandbox(service, lang):
    ref = json.dumps([{"input": "1 2\n", "output": SECRET + "\n"}])
    v = grade(service, lang, launcher(lang, SCAN), ref)
    _not_passed(v)
    assert "got 'scanned'" in v.detail, v.detail  # the scan ran and found nothing


@pytest.mark.docker
def test_the_scan_finds_a_secret_that_is_there(service):
    """Control: the same scan, with the secret planted in the scratch directory, passes."""
    ref = json.dumps([{"input": "1 2\n", "output": SECRET + "\nscanned\n"}])
    v = grade(service, "c", launcher("c", f"echo {SECRET} > /tmp/job/planted; {SCAN}"), ref)
    assert v.outcome == "CORRECT", v.detail


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_nothing_persists_into_the_next_job(service, lang):
    for _ in range(2):  # both sandboxes of the pool, most likely
        assert "'blocked'" in grade(service, lang, launcher(lang, PERSIST_WRITE), ONE).detail
    for _ in range(3):
        v = grade(service, lang, launcher(lang, PERSIST_READ), ONE)
        _not_passed(v)
        assert "'blocked'" in v.detail, v.detail


@pytest.mark.docker
@pytest.mark.parametrize("lang", LANGS)
def test_fork_bomb_is_contained_and_the_sandbox_recovers(service, lang):
    bomb = "#include <unistd.h>\nint main(){for(;;)fork();}\n" if lang in ("c", "cpp") else launcher(lang, FORK_BOMB)
    v = grade(service, lang, bomb, ONE, case_timeout_s="2")
    _not_passed(v)  # a time-out, or a runtime error where the runtime cannot get a thread
    for _ in range(2):  # each sandbox of the pool still grades normally
        ok = grade(service, lang, launcher(lang, "echo 3"), ONE)
        assert ok.outcome == "CORRECT", ok.detail


# issue 40's languages: the same walls, attacked through each language's process API with a shell
SHELL_LANGS = ["php", "ruby", "perl", "lua", "r", "csharp", "d", "scala", "kotlin", "kotlin_script", "racket", "jest"]
SHELL_NETWORK = "if timeout 2 bash -c 'exec 3<>/dev/tcp/1.1.1.1/53' 2>/dev/null; then echo 3; else echo blocked; fi"
SHELL_WRITE = (
    f"ok=; for p in {' '.join(TARGETS)}; do (echo x >> $p) 2>/dev/null && ok=1; done; "
    'if [ -n "$ok" ]; then echo 3; else echo blocked; fi'
)
# seconds per case: Scala, Kotlin and Mono start a VM, jest a Node test runner, before the attack runs
# (jest at 20 s timed out under load 19)
SLOW = "30"
SHELL_KILL_DRIVER = "echo 3; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"  # the shell's grandparent: the driver


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", SHELL_LANGS)
def test_new_languages_run_and_meet_the_same_walls(service, lang):
    assert (
        grade(service, lang, launcher(lang, "echo 3"), ONE, case_timeout_s=SLOW).outcome == "CORRECT"
    )  # the launcher works
    for _ in range(2):
        grade(
            service, lang, launcher(lang, PERSIST_WRITE), ONE, case_timeout_s=SLOW
        )  # then nothing of it may be read back
    for attack in (SHELL_NETWORK, SHELL_WRITE, PERSIST_READ):
        v = grade(service, lang, launcher(lang, attack), ONE, case_timeout_s=SLOW)
        _not_passed(v)
        assert "'blocked'" in v.detail, (attack, v.detail)
    ref = json.dumps([{"input": "1 2\n", "output": SECRET + "\n"}])
    v = grade(service, lang, launcher(lang, SCAN), ref, case_timeout_s=SLOW)
    _not_passed(v)
    assert "got 'scanned'" in v.detail, v.detail


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("lang", SHELL_LANGS)
def test_new_languages_killing_the_driver_or_a_fork_bomb_never_pass(service, lang):
    v = grade(service, lang, launcher(lang, SHELL_KILL_DRIVER), ONE, case_timeout_s=SLOW)
    _not_passed(v)
    v = grade(service, lang, launcher(lang, FORK_BOMB), ONE, case_timeout_s="2")
    _not_passed(v)
    assert (
        grade(service, lang, launcher(lang, "echo 3"), ONE, case_timeout_s=SLOW).outcome == "CORRECT"
    )  # and the sandbox recovers


@pytest.mark.docker
def test_a_forged_driver_line_is_just_output(service):
    forged = json.dumps({"nonce": "0" * 32, "case": 0, "status": "ok", "stdout": "Mwo="})  # base64 of "3\n"
    v = grade(service, "c", launcher("c", f"echo '{forged}'"), ONE)
    _not_passed(v)
