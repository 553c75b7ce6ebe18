"""Docs that run (issue 42): every shell and Python example in README.md and docs/*.md runs against a real
service started for this test, and what the docs say it prints is checked. An example that drifts fails.

What an example is: a fenced block tagged ``bash``/``sh``/``shell`` or ``python``. Untagged fences (output,
tables, diagrams) and other languages (yaml, nginx) are text. A block that cannot run here carries, on the
line before its fence, ``<!-- not-run: the reason -->`` (a GPU, a cluster, another host, the model hub, a
long training run); it is still checked as far as that goes: ``bash -n`` parses a shell block, and a
Python block must compile and use no undefined name (ruff's F821).

How a block runs: in a scratch folder whose entries link to the repository's (so ``.venv/bin/python``,
``examples/`` and the Makefile are where the docs say, and what the examples write stays out of the
checkout), with ``VERIFIER_TARGET`` set and the docs' addresses (``127.0.0.1:50051``, ``localhost:8080``)
replaced by the test service's. Shell blocks run under ``set -eo pipefail``, so every command must succeed;
``make serve ...`` is checked (``make -n``: the target and its variables expand) rather than started, the
test's service standing in for it, and other ``make`` targets run without their ``setup`` prerequisite
(the machine is set up). Blocks of one file run in order against one registry, emptied between files.

What the docs say it prints: a comment ``# → TEXT`` (at the end of a line or on its own line). TEXT is
split at ", "; each piece's words and numbers must appear consecutively in the output (punctuation and
quotes aside: ``reward 1.0`` matches ``"reward": 1.0``). In Python, an expression statement on a ``# →``
line is printed. Run one file's examples with ``-k README`` (a later block may need an earlier one's
registrations).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.http_helpers import http_base
from verifiers.client import VerifierClient
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python"}
FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")
SAYS = re.compile(r"#\s*→\s*(.+?)\s*$")
TIMEOUT_S = 180
SHELL_PRELUDE = """set -eo pipefail
make() {  # `make serve`: the test's service stands in for it; other targets: the machine is set up
  if [ "${1:-}" = serve ]; then command make -s -n -o setup "$@" >/dev/null; else command make -s -o setup "$@"; fi
}
"""


@dataclass(frozen=True)
class Example:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str  # bash | python
    code: str
    not_run: str = ""  # the marker's reason: not run here

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path.name}:{self.line}"


def examples(paths: list[Path] = DOCS) -> list[Example]:
    out = []
    for path in paths:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            lang = LANGS.get(m.group(1))
            if lang is not None:
                before = next((x.strip() for x in reversed(lines[:i]) if x.strip()), "")
                mark = NOT_RUN.match(before)
                out.append(
                    Example(path, i + 1, lang, "\n".join(lines[i + 1 : end]) + "\n", mark.group(1) if mark else "")
                )
            i = end + 1
    return out


ALL = examples()


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[\w.+-]+", text) if re.search(r"\w", t)]


def unsaid(code: str, output: str) -> list[str]:
    """The pieces of the block's ``# →`` comments its output does not contain."""
    have = tokens(output)
    missing = []
    for line in code.splitlines():
        m = SAYS.search(line)
        for piece in m.group(1).split(", ") if m else []:
            want = tokens(piece)
            if want and not any(have[k : k + len(want)] == want for k in range(len(have) - len(want) + 1)):
                missing.append(piece)
    return missing


def printed(code: str) -> str:
    """``code`` with each expression statement on a ``# →`` line printed (unless it is a print call)."""
    said = {n for n, line in enumerate(code.splitlines(), 1) if SAYS.search(line)}

    class Print(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            call = node.value
            is_print = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"
            if is_print or not said.intersection(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                return node
            return ast.copy_location(ast.Expr(ast.Call(ast.Name("print", ast.Load()), [call], [])), node)

    return ast.unparse(ast.fix_missing_locations(Print().visit(ast.parse(code))))


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs_service")
    with LocalServer(
        pool_size=2,
        registry=str(tmp / "registry.sqlite"),
        log_path=str(tmp / "server.log"),
        extra_args=["--http-port", "0"],
    ) as srv:
        yield srv, http_base(srv).removeprefix("http://")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A scratch folder that looks like the checkout: links to its entries (what examples write lands here)."""
    d = tmp_path_factory.mktemp("docs_cwd")
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "runs", "var"):
            (d / entry.name).symlink_to(entry)
    return d


_files_seen: list[Path] = []


def fresh_registry_per_file(ex: Example, target: str) -> None:
    """Unregister what an earlier file's examples registered (a file's own blocks build on each other)."""
    if _files_seen and _files_seen[-1] == ex.path:
        return
    _files_seen.append(ex.path)
    with VerifierClient(target, timeout_s=60) as c:
        for v in sorted(c.list_verifiers(), key=lambda v: v.kind != "composite"):  # a composite before its parts
            if not v.builtin:
                c.unregister(v.name)


def run(ex: Example, target: str, http: str, cwd: Path) -> subprocess.CompletedProcess:
    code = ex.code.replace("127.0.0.1:50051", target)
    for addr in ("localhost:8080", "127.0.0.1:8080"):
        code = code.replace(addr, http)
    env = {**os.environ, "VERIFIER_TARGET": target, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    if ex.lang == "bash":
        argv = ["bash", "-c", SHELL_PRELUDE + code]
    else:
        script = cwd / f"example_{ex.path.stem}_{ex.line}.py"
        script.write_text(printed(code))
        argv = [sys.executable, str(script)]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def check(ex: Example, done: subprocess.CompletedProcess) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{ex.id} exited {done.returncode}:\n{ex.code}\n--- output ---\n{output[-3000:]}"
    missing = unsaid(ex.code, output)
    assert not missing, f"{ex.id}: the docs say it prints {missing}; it printed:\n{output[-3000:]}"


@pytest.mark.parametrize("ex", [e for e in ALL if not e.not_run], ids=lambda e: e.id)
def test_the_example_runs_and_prints_what_the_docs_say(ex, service, workdir):
    srv, http = service
    fresh_registry_per_file(ex, srv.target)
    check(ex, run(ex, srv.target, http, workdir))


@pytest.mark.parametrize("ex", [e for e in ALL if e.not_run], ids=lambda e: e.id)
def test_a_marked_example_still_parses(ex, tmp_path):
    if ex.lang == "bash":
        done = subprocess.run(["bash", "-n", "-c", ex.code], capture_output=True, text=True)
        assert done.returncode == 0, f"{ex.id}: {done.stderr}"
        return
    script = tmp_path / "example.py"
    script.write_text(ex.code)
    done = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "ruff"),
            "check",
            "--isolated",
            "--select",
            "F821",
            "--output-format",
            "concise",
            str(script),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"{ex.id} uses a name it never defines or imports:\n{done.stdout}"


def test_every_marker_says_why_and_most_examples_run():
    marked = [e for e in ALL if e.not_run]
    assert all(len(e.not_run) > 8 for e in marked), [e.id for e in marked if len(e.not_run) <= 8]
    print(f"\n{len(ALL) - len(marked)} examples run, {len(marked)} marked not-run:")
    for e in marked:
        print(f"  {e.id}: {e.not_run}")
    assert len(ALL) - len(marked) >= 10


def test_a_drifted_example_fails(service, workdir, tmp_path):
    """The checker itself: a doc whose printed figure drifted, or whose command no longer exists, fails."""
    srv, http = service
    doc = tmp_path / "drift.md"
    doc.write_text(
        "```bash\n"
        ".venv/bin/python -m verifiers.cli verify math --completion '\\boxed{2}' --reference 2  # → reward 0.0\n"
        "```\n\n"
        "```python\n"
        "from verifiers.client import VerifierClient\n\n"
        'with VerifierClient("127.0.0.1:50051") as c:\n'
        '    c.verify("math", "\\\\boxed{2}", "2")  # → reward=1.0, INCORRECT\n'
        "```\n\n"
        "<!-- not-run: a marked example is not run -->\n"
        "```bash\n.venv/bin/python -m verifiers.cli verfy math\n```\n\n"
        "```bash\n.venv/bin/python -m verifiers.cli verfy math --completion 2  # a command that drifted\n```\n"
    )
    wrong_figure, wrong_outcome, marked, wrong_command = examples([doc])
    assert marked.not_run == "a marked example is not run"
    for ex, why in ((wrong_figure, "'reward 0.0'"), (wrong_outcome, "'INCORRECT'"), (wrong_command, "exited 2")):
        with pytest.raises(AssertionError, match=why):
            check(ex, run(ex, srv.target, http, workdir))
    right = examples([doc])[0].code.replace("# → reward 0.0", "# → reward 1.0, CORRECT")
    check(Example(doc, 1, "bash", right), run(Example(doc, 1, "bash", right), srv.target, http, workdir))
