"""The math warm-up's parser tables (in_sandbox/math/warm.py): what every sandbox job inherits from them.

A job is forked from the warm worker, so whatever the warm-up leaves in memory is in every job. The shapes'
fill must leave ANTLR's prediction tables (a cache of the parser's decisions: the same parse, faster) and no
parsed value: Math-Verify's own caches (``parse_latex_cached``, ``extract_latex``) keyed by the string would
hand a job a value computed outside it. And reading the corpus must not patch Math-Verify (bench/math_grading/speed.py reads
it in the process where it times Math-Verify as shipped). Each check runs in a fresh interpreter, since the
grader's import puts our rules in place of Math-Verify's for the whole process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


STATES = "sum(len(d.states) for d in PSParser.decisionsToDFA)"


def test_the_fill_leaves_prediction_tables_and_no_parsed_value():
    got = run(f"""
import json
from latex2sympy2_extended.antlr_parser import PSParser
from math_verify import parser
from in_sandbox.math import grader, warm
before = {STATES}
warm.fill_prediction_tables()
print(json.dumps({{"built": {STATES} - before, "shapes": len(warm.corpus()),
                  "parsed_kept": parser.parse_latex_cached.cache_info().currsize + parser.extract_latex.cache_info().currsize}}))
""")
    assert got["shapes"] > 50
    assert got["built"] > got["shapes"], got  # the shapes' prediction states are built before any job forks
    assert got["parsed_kept"] == 0, got  # and no parsed value is left for a job to find


def test_reading_the_corpus_leaves_math_verify_as_shipped():
    got = run("""
import json, sys
from math_verify import grader as mv
from in_sandbox.math import warm
warm.corpus()
print(json.dumps({"grader_loaded": "in_sandbox.math.grader" in sys.modules,
                  "patched": mv.sympy_expr_eq.__module__ != "math_verify.grader"}))
""")
    assert got == {"grader_loaded": False, "patched": False}
