"""``make help`` names every target of the Makefile, and runs on a checkout with no ``.venv`` (issue 39).

The targets are read from the Makefile itself (every ``name:`` rule at the start of a line; pattern and
file rules such as ``$(STAMP):``, the venv's stamp file, are not targets anyone types). A target left out
of ``make help`` on purpose goes in ``INTERNAL`` with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = re.compile(r"^([a-z][\w-]*)\s*:(?!=)", re.M)
INTERNAL: dict[str, str] = {}  # target -> why `make help` does not name it (none today)


def targets(makefile: str) -> set[str]:
    return set(RULE.findall(makefile))


def phony(makefile: str) -> set[str]:
    return {name for line in re.findall(r"^\.PHONY:(.*)$", makefile, re.M) for name in line.split()}


def undocumented(makefile: str, help_text: str) -> list[str]:
    """The targets ``make help`` does not name (a help line names a target as ``make TARGET``)."""
    named = set(re.findall(r"(?:^|\s)make ([a-z][\w-]*)", help_text))
    return sorted(targets(makefile) - named - set(INTERNAL))


@pytest.fixture(scope="module")
def bare_checkout(tmp_path_factory) -> Path:
    """The Makefile (and the pyproject.toml it hashes) in a folder with no .venv, no var/."""
    d = tmp_path_factory.mktemp("bare")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, d / name)
    return d


def test_make_help_runs_without_a_venv_and_names_every_target(bare_checkout):
    done = subprocess.run(["make", "-s", "help"], cwd=bare_checkout, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not (bare_checkout / ".venv").exists()  # help installed nothing
    makefile = (ROOT / "Makefile").read_text()
    assert len(targets(makefile)) >= 20, sorted(targets(makefile))
    assert undocumented(makefile, done.stdout) == [], done.stdout


def test_make_help_says_which_targets_take_args(bare_checkout):
    out = subprocess.run(["make", "-s", "help"], cwd=bare_checkout, capture_output=True, text=True, timeout=60).stdout
    makefile = (ROOT / "Makefile").read_text()
    for target in sorted(targets(makefile)):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        if "$(ARGS)" in recipe or "$(SERVE_ARGS)" in recipe:
            entry = out.split(f"make {target} ", 1)[1].split("\nmake ", 1)[0]
            assert "ARGS=" in entry, f"make help does not say that `make {target}` takes ARGS=:\n{entry}"


def test_every_target_is_phony_and_internal_ones_exist():
    makefile = (ROOT / "Makefile").read_text()
    assert targets(makefile) <= phony(makefile), targets(makefile) - phony(makefile)
    assert set(INTERNAL) <= targets(makefile), set(INTERNAL) - targets(makefile)


def test_a_target_missing_from_help_fails():
    makefile = ".PHONY: help build ship\nX := 1\nhelp:\n\t@echo 'make build   build it'\nbuild:\n\ttrue\nship: build\n"
    help_text = "make build   build it\n"
    assert targets(makefile) == {"help", "build", "ship"}
    assert undocumented(makefile, help_text) == ["help", "ship"]
