"""Rust: rustc 1.63, the tests an ``fn main`` with ``assert!`` that ours calls."""

import re

from languages.assemble import need, rename
from languages.record import Parts, Record

_MAIN = re.compile(r"\bfn\s+main\s*\(\s*\)\s*\{")


def _assemble(p: Parts) -> tuple[str, dict[str, str]]:
    t = f"rlvr_tests_{p.tag}"
    program, _ = rename(p.program, _MAIN, f"rlvr_unused_main_{p.tag}")
    tests, m = rename(p.tests, _MAIN, t)
    need(m, "rust", "fn main() { assert!(...); }")
    out = "::std::io::Write::{}(&mut ::std::io::stdout()"
    ours = (
        f"\nfn main() {{\n  {t}();\n  {out.format('write_all')}, "
        f'["\\n", "{p.a}", "{p.b}", "\\n"].concat().as_bytes()).unwrap();\n  {out.format("flush")}).unwrap();\n}}\n'
    )
    return f"{program}\n{tests}\n{ours}", {}


RECORD = Record(
    name="rust",
    rank=6,
    tags=("rust", "rs"),
    source="main.rs",
    compile=["rustc", "-O", "--edition", "2021", "-C", "strip=debuginfo", "-o", "main", "main.rs"],
    run=["./main"],
    aliases=("rs",),
    sandboxfusion=("rust",),
    shows_compile=True,
    packages=("rustc",),
    asserts=_assemble,
    toolchain_doc="rustc 1.63 `-O --edition 2021 -C strip=debuginfo`",
)
