"""Agreement of our ``math`` verifier with Math-Verify's own test-suite expectations.

    .venv/bin/python -m bench.math_grading.agreement                        # the cases in tests/data/mv_suite.tsv
    .venv/bin/python -m bench.math_grading.agreement /tmp/Math-Verify       # read from a work tree or git dir
    .venv/bin/python -m bench.math_grading.agreement /tmp/Math-Verify --write-tsv tests/data/mv_suite.tsv

The cases are the rows of every ``@pytest.mark.parametrize`` table with gold/pred/expected columns in
Math-Verify's ``tests/*.py`` (read with ``ast``, nothing of theirs executed), each with the settings its
test calls Math-Verify with (``match_types``, ``precision``, ``strict``, ``allow_set_relation_comp``).
``--write-tsv`` stores them as data (tests/data/mv_suite.tsv, the source commit in its header); without it
each case is graded through a local server (reference = gold, completion = pred, ``fallback = full``) and
the agreement is printed per file and overall, with every disagreement. Cases whose test uses a setting we
do not expose (``strict=False``, ``allow_set_relation_comp=True``, a precision other than 6 decimals) are
also counted separately.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
from collections import defaultdict
from pathlib import Path

GOLD, PRED, EXPECTED = ("gold",), ("pred",), ("expected", "result")
SUITE_TSV = Path(__file__).resolve().parents[2] / "tests" / "data" / "mv_suite.tsv"
# compare_strings' defaults in Math-Verify's test_all.py; a test calling parse/verify directly gets None
DEFAULTS = {"match_types": ["latex", "expr"], "precision": 6, "strict": True, "allow_set_relation_comp": False}
COLUMNS = ("file", "test", "expected", "settings", "gold", "pred")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True).stdout


def source_commit(repo: Path) -> str:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    try:
        return _git(git_dir, "rev-parse", "HEAD").strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown (not a git checkout)"


def test_sources(repo: Path) -> dict[str, str]:
    if (repo / "tests").is_dir():
        return {p.name: p.read_text() for p in sorted((repo / "tests").glob("test_*.py"))}
    names = _git(repo, "ls-tree", "--name-only", "HEAD", "tests/").split()
    return {
        Path(n).name: _git(repo, "show", f"HEAD:{n}")
        for n in names
        if Path(n).name.startswith("test_") and n.endswith(".py")
    }


def _settings(fn: ast.FunctionDef, row: dict) -> dict:
    """The settings the test body calls Math-Verify with: compare_strings' keywords (a name is the row's
    parameter of that name), or Math-Verify's own defaults for a direct ``verify(parse(..), parse(..))``."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "compare_strings":
            out = dict(DEFAULTS)
            for kw in node.keywords:
                v = kw.value
                out[kw.arg] = row[v.id] if isinstance(v, ast.Name) else ast.literal_eval(v)
            return out
    return dict(DEFAULTS, match_types=None)


def nondefault(settings: dict) -> bool:
    """A setting our service does not expose (extraction targets aside: ``fallback=full`` uses both)."""
    return not settings["strict"] or settings["allow_set_relation_comp"] or settings["precision"] != 6


def cases_in(source: str) -> tuple[list[dict], list[str]]:
    """(rows of every parametrize table that has gold, pred and expected columns, tables skipped)."""
    out, skipped = [], []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for dec in fn.decorator_list:
            if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize")):
                continue
            try:
                cols = {n.strip(): i for i, n in enumerate(ast.literal_eval(dec.args[0]).split(","))}
            except (ValueError, SyntaxError, IndexError, AttributeError):
                continue
            g = next((cols[n] for n in GOLD if n in cols), None)
            p = next((cols[n] for n in PRED if n in cols), None)
            e = next((cols[n] for n in EXPECTED if n in cols), None)
            if None in (g, p, e):
                continue
            try:
                rows = ast.literal_eval(dec.args[1])
            except ValueError:
                skipped.append(f"{fn.name} (its table computes values: {ast.unparse(dec.args[1])[:60]})")
                continue
            for row in rows:
                settings = _settings(fn, {n: row[i] for n, i in cols.items()})
                out.append(
                    {
                        "test": fn.name,
                        "gold": row[g],
                        "pred": row[p],
                        "expected": bool(row[e]),
                        "settings": settings,
                        "nondefault": nondefault(settings),
                    }
                )
    return out, skipped


def write_tsv(cases: list[dict], commit: str, path: Path, skipped: list[str]) -> None:
    """One case a line; gold and pred as JSON strings (they hold tabs, newlines and backslashes)."""
    head = [
        f"# Math-Verify's own test cases: github.com/huggingface/Math-Verify at {commit}, tests/*.py",
        "# (MIT License, Copyright (c) 2024 The HuggingFace Team); data only, extracted with",
        "#   .venv/bin/python -m bench.math_grading.agreement <Math-Verify checkout> --write-tsv tests/data/mv_suite.tsv",
        *(f"# not extracted: {s}" for s in skipped),
        "# columns: " + "\t".join(COLUMNS) + "   (settings, gold and pred as JSON; expected 1 = equivalent)",
    ]
    rows = [
        "\t".join(
            [
                c["file"],
                c["test"],
                str(int(c["expected"])),
                json.dumps(c["settings"]),
                json.dumps(c["gold"], ensure_ascii=False),
                json.dumps(c["pred"], ensure_ascii=False),
            ]
        )
        for c in cases
    ]
    path.write_text("\n".join(head + rows) + "\n")


def read_tsv(path: Path = SUITE_TSV) -> list[dict]:
    """The cases of a file written by ``write_tsv``; a malformed line is an error naming it."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != len(COLUMNS):
            raise ValueError(f"{path}:{n}: {len(parts)} tab-separated fields, expected {len(COLUMNS)}")
        f, test, expected, settings, gold, pred = parts
        s = json.loads(settings)
        out.append(
            {
                "file": f,
                "test": test,
                "expected": expected == "1",
                "settings": s,
                "gold": json.loads(gold),
                "pred": json.loads(pred),
                "nondefault": nondefault(s),
                "line": n,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, nargs="?", help="Math-Verify work tree or git directory (else the TSV)")
    ap.add_argument("--write-tsv", type=Path, help="write the repository's cases to this file and stop")
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--show", type=int, default=100, help="disagreements to print")
    args = ap.parse_args()
    if args.repo is None:
        if args.write_tsv:
            ap.error("--write-tsv needs the Math-Verify repository to read")
        cases = read_tsv()
    else:
        cases, skipped = [], []
        for f, src in test_sources(args.repo).items():
            got, skip = cases_in(src)
            cases += [dict(c, file=f) for c in got]
            skipped += [f"{f}::{s}" for s in skip]
        if skipped:
            print("skipped: " + ", ".join(skipped))
        if args.write_tsv:
            write_tsv(cases, source_commit(args.repo), args.write_tsv, skipped)
            print(f"{len(cases)} cases written to {args.write_tsv}")
            return
    grade(cases, args.pool_size, args.show)


def grade(cases: list[dict], pool_size: int, show: int) -> None:
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    items = [
        {
            "verifier": "math",
            "completion": c["pred"],
            "reference": c["gold"],
            "options": {"fallback": "full"},
            "timeout_s": 10,
            "id": str(i),
        }
        for i, c in enumerate(cases)
    ]
    with LocalServer(pool_size=pool_size) as srv, VerifierClient(srv.target, timeout_s=1800) as client:
        results = client.verify_batch(items)
    per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    agree = agree_default = n_default = 0
    wrong = []
    for c, r in zip(cases, results, strict=True):
        ok = (r.outcome == "CORRECT") == c["expected"]
        per_file[c["file"]][0] += ok
        per_file[c["file"]][1] += 1
        agree += ok
        if not c["nondefault"]:
            n_default += 1
            agree_default += ok
        if not ok:
            wrong.append((c, r))
    for f, (a, n) in sorted(per_file.items()):
        print(f"{f:28s} {a:4d}/{n:<4d} {100 * a / n:6.1f}%")
    print(f"{'overall':28s} {agree:4d}/{len(cases):<4d} {100 * agree / len(cases):6.1f}%")
    print(f"{'default settings only':28s} {agree_default:4d}/{n_default:<4d} {100 * agree_default / n_default:6.1f}%")
    print(f"\n{len(wrong)} disagreements (expected → ours):")
    for c, r in wrong[:show]:
        print(f"  {c['file']}::{c['test']} gold={c['gold'][:60]!r} pred={c['pred'][:60]!r} "
              f"{int(c['expected'])} → {r.outcome} ({r.detail[:80]}){' [non-default setting]' if c['nondefault'] else ''}")  # fmt: skip


if __name__ == "__main__":
    main()
