"""``python -m verifiers.cli session ...``: sessions from the command line (docs/sessions.md, "The CLI").

    python -m verifiers.cli session open --kind python --file data.csv=./data.csv --ttl-s 300
    python -m verifiers.cli session exec ID --code 'x = 6 * 7; x'
    python -m verifiers.cli session exec ID --code-file cell.py        # '-': the cell from stdin
    python -m verifiers.cli session fork ID 4
    python -m verifiers.cli session grade ID code --reference-file tests.py
    python -m verifiers.cli session list
    python -m verifiers.cli session close ID

A session belongs to the caller that opened it: the host plus ``--client-id`` (default ``$VERIFIER_CLIENT_ID``,
else none), so every command on one session must send the same one. Output is JSON on stdout; ``exec`` exits
0 when the cell ran (its own exception included: see ``error``), 2 when it did not end as ``ok`` (timeout, cpu,
output_limit, exited, memory, gone).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from verifiers.shapes.errors import UsageError

LIMITS = ("cpu_s", "timeout_s", "memory_mb", "output_bytes", "nproc", "nofile", "fsize_mb")


def add_parser(sub, common: argparse.ArgumentParser, read, pairs) -> None:
    """The ``session`` command and its subcommands on ``sub`` (cli.py's); ``read``/``pairs``: cli.py's helpers."""
    who = argparse.ArgumentParser(add_help=False, parents=[common])
    who.add_argument("--client-id", default=argparse.SUPPRESS, help="who the session belongs to (x-client-id)")
    s = sub.add_parser("session", parents=[who], help="open, use, fork, grade, list and close sessions")
    s.set_defaults(read=read, pairs=pairs)
    common = who
    ss = s.add_subparsers(dest="session_cmd", required=True)
    o = ss.add_parser("open", parents=[common], help="open a session; prints its SessionInfo")
    o.add_argument("--kind", default="python", help="python (default) or bash")
    o.add_argument("--file", action="append", default=[], metavar="NAME=PATH", help="place PATH's bytes as NAME")
    o.add_argument("--ttl-s", type=float, default=0.0, help="idle time to live (0: the server's)")
    o.add_argument("--limit", action="append", default=[], metavar="KEY=VALUE", help=f"one of {', '.join(LIMITS)}")
    e = ss.add_parser("exec", parents=[common], help="run one cell; prints its ExecResponse")
    e.add_argument("id")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--code")
    src.add_argument("--code-file", metavar="FILE", help="read the cell from FILE ('-': stdin)")
    e.add_argument("--cell-timeout-s", type=float, default=0.0, help="this cell's wall time (0: the session's)")
    e.add_argument("--cpu-s", type=int, default=0, help="this cell's CPU seconds (0: the session's)")
    f = ss.add_parser("fork", parents=[common], help="N new sessions from a copy of this one")
    f.add_argument("id")
    f.add_argument("n", type=int)
    g = ss.add_parser("grade", parents=[common], help="grade the session's program with a verifier")
    g.add_argument("id")
    g.add_argument("verifier")
    ref = g.add_mutually_exclusive_group()
    ref.add_argument("--reference", default="")
    ref.add_argument("--reference-file", metavar="FILE", help="read the reference (hidden tests) from FILE")
    g.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    g.add_argument("--grade-timeout-s", type=float, default=0.0, help="grading budget (0: the verifier's default)")
    c = ss.add_parser("close", parents=[common], help="close a session")
    c.add_argument("id")
    ss.add_parser("list", parents=[common], help="your open sessions")


def client_id(a: argparse.Namespace) -> str:
    return getattr(a, "client_id", None) or os.environ.get("VERIFIER_CLIENT_ID", "")


def run(c, a: argparse.Namespace) -> tuple[object, int]:
    """(the JSON to print, the exit code) of ``a.session_cmd`` on client ``c``."""
    cmd = a.session_cmd
    if cmd == "open":
        limits = {k: _number(k, v) for k, v in a.pairs(a.limit, "--limit").items()}
        files = {k: _bytes(p) for k, p in a.pairs(a.file, "--file").items()}
        return _dict(c.open_session(a.kind, files=files, ttl_s=a.ttl_s, **limits)), 0
    if cmd == "exec":
        code = a.code if a.code is not None else a.read(a.code_file)
        r = c.exec(a.id, code, timeout_s=a.cell_timeout_s, cpu_s=a.cpu_s)
        return _dict(r), 0 if r.status == "ok" else 2
    if cmd == "fork":
        return [_dict(i) for i in c.fork_session(a.id, a.n)], 0
    if cmd == "grade":
        reference = a.reference if a.reference_file is None else a.read(a.reference_file)
        r = c.grade_session(
            a.id, a.verifier, reference, options=a.pairs(a.option, "--option"), timeout_s=a.grade_timeout_s
        )
        return {k: v for k, v in vars(r).items() if k != "id"}, 0
    if cmd == "close":
        c.close_session(a.id)
        return {"closed": a.id}, 0
    return [_dict(i) for i in c.list_sessions()], 0


def _dict(msg) -> dict:
    return MessageToDict(msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def _number(key: str, raw: str) -> float:
    if key not in LIMITS:
        raise UsageError(f"--limit {key}: not a session limit (known: {', '.join(LIMITS)})")
    try:
        return float(raw) if key == "timeout_s" else int(raw)
    except ValueError:
        raise UsageError(f"--limit {key}={raw!r}: not a number") from None


def _bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"--file: cannot read {path}: {e.strerror}") from None
