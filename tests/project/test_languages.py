"""A language is one record (languages/<name>.py): the ``language`` option, assert mode, ``/run_code``'s names,
the toolchain image's packages and the docs' table are all read from the records.

``test_a_language_added_in_a_scratch_tree_is_one_file`` copies the packages to a scratch directory, adds one
record for a made-up language and checks, in a fresh interpreter on that tree, that every one of them picks it
up. To refresh the docs' table after changing a record: ``.venv/bin/python -m tests.project.test_languages``
prints it; paste it between the markers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import languages

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "verifiers.md"
START = "<!-- languages table: generated from languages/<name>.py by tests/project/test_languages.py -->\n"
END = "\n<!-- end of the languages table -->"
TREE = ("languages", "sandbox", "in_sandbox", "verifiers", "proto")
ZIG = '''"""Zig (made up for the test): one record is the whole change."""

from languages.assemble import c_like
from languages.record import Record

RECORD = Record(
    name="zig",
    rank=99,
    tags=("zig",),
    source="main.zig",
    compile=["zig", "build-exe", "main.zig"],
    run=["./main"],
    aliases=("ziglang",),
    sandboxfusion=("zig",),
    shows_compile=True,
    packages=("zig",),
    asserts=c_like("#include <stdio.h>", "zig"),
    toolchain_doc="Zig 0.0",
)
'''
PROBE = """
import json
import languages
from sandbox.image import langs
from verifiers.fronts.http import sandboxfusion
from verifiers.kinds.code import asserts, languages as kind, options
print(json.dumps({
    "LANGUAGES": "zig" in kind.LANGUAGES,
    "option": options.CodeOptions.parse({"language": "ziglang", "mode": "stdio"}).language,
    "assert mode": "zig" in asserts.LANGUAGES,
    "run_code": "zig" in sandboxfusion.RUNNERS and "zig" in sandboxfusion.SHOWN_COMPILE,
    "image packages": "zig" in langs.TOOLCHAIN_PACKAGES,
    "docs": [row for row in languages.docs_table().splitlines() if "`zig`" in row],
    "toolchain": kind.language("zig").compile,
}))
"""


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for pkg in TREE
        for p in sorted((root / pkg).rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_docs_table_is_the_records():
    text = DOC.read_text(encoding="utf-8")
    assert START in text and END in text, "docs/verifiers.md lost the languages table's markers"
    in_docs = text.split(START, 1)[1].split(END, 1)[0]
    assert in_docs == languages.docs_table(), "stale: paste `python -m tests.project.test_languages`"


def test_every_name_users_send_is_kept():
    assert languages.LANGUAGES[0] == "python" and len(languages.LANGUAGES) == 26
    assert languages.ALIASES["nodejs"] == "javascript" and languages.ALIASES["c#"] == "csharp"
    assert languages.SANDBOXFUSION["R"] == "r" and languages.SANDBOXFUSION["D_ut"] == "d_ut"


def test_a_language_added_in_a_scratch_tree_is_one_file(tmp_path):
    ignore = shutil.ignore_patterns("__pycache__")
    for pkg in TREE:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=ignore)
    before = _digests(tmp_path)
    (tmp_path / "languages" / "zig.py").write_text(ZIG)
    after = _digests(tmp_path)
    assert {k for k in after if before.get(k) != after[k]} == {"languages/zig.py"}
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got == {
        "LANGUAGES": True,
        "option": "zig",
        "assert mode": True,
        "run_code": True,
        "image packages": True,
        "docs": ["| `zig` (`ziglang`) | `zig` | Zig 0.0 | yes |"],
        "toolchain": ["zig", "build-exe", "main.zig"],
    }


def test_a_record_that_reuses_a_name_is_refused(tmp_path):
    shutil.copytree(ROOT / "languages", tmp_path / "languages", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "languages" / "zig.py").write_text(ZIG.replace('("ziglang",)', '("js",)'))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", "import languages"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode != 0 and "alias 'js'" in out.stderr


if __name__ == "__main__":
    print(languages.docs_table())
