"""Every language the ``code`` verifier runs, one record a module: ``languages/<name>.py`` holds ``RECORD``
(languages/record.py), its toolchain, names, image packages, assert-mode template and docs row.

Adding a language is adding one such module. Everything else is derived here: ``LANGUAGES`` and ``ALIASES``
(the ``language`` option), ``SANDBOXFUSION`` (``/run_code``'s names), ``image_packages`` (the toolchain
image's Debian packages), ``docs_table`` (docs/verifiers.md, "Languages").

Why a package of its own, below ``sandbox/`` and ``verifiers/``: the image build (sandbox/image/langs.py)
reads the packages and sandbox/ may not import verifiers/, while the code kind, the SandboxFusion front and
the docs read the rest. So the records are plain data and stdlib-only functions that import nothing else of
this repository.
"""

from __future__ import annotations

import importlib
import pkgutil

from languages.record import BadTests, Language, Parts, Record

__all__ = ["ALIASES", "LANGUAGES", "NOT_SERVED", "RECORDS", "SANDBOXFUSION", "BadTests", "Language", "Parts"]
_HELPERS = {"record", "parse", "assemble", "common"}  # modules of this package that are not languages


def _load() -> dict[str, Record]:
    found = []
    for mod in pkgutil.iter_modules(__path__):
        if mod.name in _HELPERS:
            continue
        rec = getattr(importlib.import_module(f"{__name__}.{mod.name}"), "RECORD", None)
        if not isinstance(rec, Record) or rec.name != mod.name:
            raise ImportError(f"languages/{mod.name}.py must define RECORD = Record(name={mod.name!r}, ...)")
        found.append(rec)
    found.sort(key=lambda r: (r.rank, r.name))
    return {r.name: r for r in found}


RECORDS: dict[str, Record] = _load()
LANGUAGES: tuple[str, ...] = tuple(RECORDS)
ALIASES: dict[str, str] = {a: r.name for r in RECORDS.values() for a in r.aliases}
# SandboxFusion's name (and a few of ours) -> the language
SANDBOXFUSION: dict[str, str] = {n: r.name for r in RECORDS.values() for n in r.sandboxfusion}
# SandboxFusion's languages this server does not run, and why (a request naming one is refused with this)
NOT_SERVED = {
    "julia": "Debian bookworm has no Julia package",
    "swift": "Debian bookworm has no Swift compiler package (its 'swift' is OpenStack's object store)",
    "lean": "Debian bookworm has no Lean package (its 'elan' installer downloads Lean from the network)",
    "cuda": "the sandbox has no GPU",
    "python_gpu": "the sandbox has no GPU",
}


def _check() -> None:
    every = [a for r in RECORDS.values() for a in r.aliases]
    for r in RECORDS.values():
        for n in r.aliases:
            if n in RECORDS or every.count(n) > 1:
                raise ImportError(f"languages/{r.name}.py: alias {n!r} is another language's name or alias")
    if len(SANDBOXFUSION) != sum(len(r.sandboxfusion) for r in RECORDS.values()):
        raise ImportError("two records claim the same /run_code name")


_check()


def image_packages() -> list[str]:
    """The toolchain image's Debian packages, sorted (sandbox/image/langs.py installs them)."""
    return sorted({p for r in RECORDS.values() for p in r.packages})


def docs_table() -> str:
    """The language table of docs/verifiers.md: one row per record, then the languages refused."""
    rows = [
        "| language (aliases) | `/run_code` name | toolchain in the image (Debian bookworm) | served |",
        "|---|---|---|---|",
    ]
    for r in RECORDS.values():
        aliases = f" ({', '.join(f'`{a}`' for a in r.aliases)})" if r.aliases else ""
        sf = ", ".join(f"`{n}`" for n in r.sandboxfusion) or "—"
        rows.append(f"| `{r.name}`{aliases} | {sf} | {r.toolchain_doc} | {r.served_doc} |")
    for name, why in NOT_SERVED.items():
        rows.append(f"| — | `{name}` | none: {why} | refused, naming why |")
    return "\n".join(rows)
