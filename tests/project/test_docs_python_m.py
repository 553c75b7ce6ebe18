"""Every ``python -m`` line of the docs runs as written (issue 51): this project's modules are written
``.venv/bin/python -m …`` (a bare ``python -m verifiers.canaries`` failed with ``ModuleNotFoundError: grpc``
unless the venv was active) and each one answers ``--help`` from a shell where no venv is active, from the
repository root, with the exact interpreter path the docs give. Other projects' modules (verl, OpenRLHF,
and pytest inside the sandbox's toolchain) run in their own environments and are listed here by name, so a
new one is a decision, not an accident. No Docker, no service."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [prefix]python[3] -m module, the module possibly on the next line (prose wraps)
PYTHON_M = re.compile(r"(?P<prefix>[\w./$()-]*?)(?<![\w-])python3?\s+-m\s+(?P<mod>[A-Za-z_][\w.]*)")
VENV_PYTHON = ".venv/bin/"
FOREIGN = {
    "verl": "verl's trainer, in verl's environment (docs/integrations.md)",
    "openrlhf": "OpenRLHF's trainer, in its environment (docs/integrations.md)",
    "pytest": "the toolchain image's test runner, inside the sandbox (docs/sandbox.md)",
}


def ours(mod: str) -> bool:
    top = mod.split(".")[0]
    return (ROOT / top / "__init__.py").is_file() or (ROOT / f"{top}.py").is_file()


def occurrences() -> list[tuple[str, int, str, str]]:
    """(file, line, prefix, module) for every ``python -m`` of the docs."""
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in PYTHON_M.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((str(path.relative_to(ROOT)), line, m.group("prefix"), m.group("mod").rstrip(".")))
    return out


def test_the_docs_have_python_m_lines_and_the_pattern_sees_a_bare_one():
    found = occurrences()
    assert len({mod for *_, mod in found if ours(mod)}) >= 8  # the scan itself works
    m = PYTHON_M.search("run `python -m\nverifiers.canaries HOST:PORT`")
    assert m and m.group("prefix") == "" and m.group("mod") == "verifiers.canaries"


def test_every_module_of_ours_is_written_with_the_venvs_python():
    bare = [
        f"{f}:{n}: {prefix}python -m {mod}"
        for f, n, prefix, mod in occurrences()
        if ours(mod) and prefix.removeprefix("$(") != VENV_PYTHON
    ]
    assert not bare, "write these as `.venv/bin/python -m …` (docs/setup.md):\n" + "\n".join(bare)


def test_every_other_module_is_a_known_foreign_one():
    unknown = [
        f"{f}:{n}: {mod}" for f, n, _, mod in occurrences() if not ours(mod) and mod.split(".")[0] not in FOREIGN
    ]
    assert not unknown, "a module that is neither this project's nor a known other project's:\n" + "\n".join(unknown)


def no_venv_env() -> dict[str, str]:
    """The environment of a shell where no venv is active: no VIRTUAL_ENV, no venv bin/ on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "activate").is_file()
    )
    return env


@pytest.mark.parametrize("mod", sorted({mod for *_, mod in occurrences() if ours(mod)}))
def test_it_runs_as_written_from_a_shell_without_the_venv(mod):
    r = subprocess.run(
        ["bash", "-c", f"{VENV_PYTHON}python -m {mod} --help"],
        cwd=ROOT,
        env=no_venv_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip(), f"{mod}: exit {r.returncode}\n{r.stderr[-2000:]}"
    assert "ModuleNotFoundError" not in r.stderr
