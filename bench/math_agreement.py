"""Agreement of our ``math`` verifier with Math-Verify's own test-suite expectations.

    git clone https://github.com/huggingface/Math-Verify /tmp/Math-Verify   # or a fetched mirror
    .venv/bin/python bench/math_agreement.py /tmp/Math-Verify

Reads every ``@pytest.mark.parametrize`` table with gold/pred/expected columns from the repository's
``tests/*.py`` (a work tree, or a git directory read at HEAD) without copying them anywhere, grades each
case through a local server (reference = gold, completion = pred, ``fallback = full``) and prints the
agreement, per file and overall, and every disagreement. Cases whose test runs Math-Verify with a
non-default setting we do not expose (``strict=False``, ``allow_set_relation_comp=True``, a ``precision``
other than 6 decimals) are also counted separately.
"""

from __future__ import annotations

import sys

sys.path[0] = __file__.rsplit("/", 2)[0]  # the repository root, not bench/ (whose math.py shadows the stdlib's)

import argparse  # noqa: E402
import ast  # noqa: E402
import subprocess  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

GOLD, PRED, EXPECTED = ("gold",), ("pred",), ("expected", "result")


def test_sources(repo: Path) -> dict[str, str]:
    if (repo / "tests").is_dir():
        return {p.name: p.read_text() for p in sorted((repo / "tests").glob("test_*.py"))}
    names = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "--name-only", "HEAD", "tests/"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return {
        Path(n).name: subprocess.run(
            ["git", "--git-dir", str(repo), "show", f"HEAD:{n}"], capture_output=True, text=True, check=True
        ).stdout  # fmt: skip
        for n in names
        if Path(n).name.startswith("test_") and n.endswith(".py")
    }


def cases_in(source: str) -> list[dict]:
    """Rows of every parametrize table that has gold, pred and expected columns."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef):
            continue
        body = ast.unparse(fn)
        special = any(k in body for k in ("strict=strict", "allow_set_relation_comp=allow_set_relation_comp",
                                          "precision=precision"))  # fmt: skip
        for dec in fn.decorator_list:
            if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize")):
                continue
            try:
                names = [n.strip() for n in ast.literal_eval(dec.args[0]).split(",")]
                rows = ast.literal_eval(dec.args[1])
            except (ValueError, SyntaxError, IndexError):
                continue
            cols = {n: i for i, n in enumerate(names)}
            g = next((cols[n] for n in GOLD if n in cols), None)
            p = next((cols[n] for n in PRED if n in cols), None)
            e = next((cols[n] for n in EXPECTED if n in cols), None)
            if None in (g, p, e):
                continue
            for row in rows:
                extra = {n: row[i] for n, i in cols.items() if i not in (g, p, e)}
                nondefault = special and (extra.get("strict") is False or extra.get("allow_set_relation_comp") is True
                                          or extra.get("precision", 6) != 6)  # fmt: skip
                out.append({"test": fn.name, "gold": row[g], "pred": row[p], "expected": bool(row[e]),
                            "nondefault": nondefault, "extra": extra})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="Math-Verify work tree or git directory")
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--show", type=int, default=100, help="disagreements to print")
    args = ap.parse_args()
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    cases = [dict(c, file=f) for f, src in test_sources(args.repo).items() for c in cases_in(src)]
    items = [{"verifier": "math", "completion": c["pred"], "reference": c["gold"], "options": {"fallback": "full"},
              "timeout_s": 10, "id": str(i)} for i, c in enumerate(cases)]  # fmt: skip
    with LocalServer(pool_size=args.pool_size) as srv, VerifierClient(srv.target, timeout_s=1800) as client:
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
    for c, r in wrong[: args.show]:
        print(f"  {c['file']}::{c['test']} gold={c['gold'][:60]!r} pred={c['pred'][:60]!r} "
              f"{int(c['expected'])} → {r.outcome} ({r.detail[:80]}){' [non-default setting]' if c['nondefault'] else ''}")  # fmt: skip


if __name__ == "__main__":
    main()
