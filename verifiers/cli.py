"""Command line for the verifier registry: register, inspect and try verifiers on a running service.

    python -m verifiers.cli register countdown --python examples/countdown.py
    python -m verifiers.cli register r1_countdown --composite countdown=0.9 think_format=0.1
    python -m verifiers.cli register remote_math --remote 10.0.0.7:50051 --remote-verifier math
    python -m verifiers.cli list
    python -m verifiers.cli get countdown
    python -m verifiers.cli verify countdown --completion "<answer>3*25</answer>" \\
        --reference '{"numbers": [3, 25], "target": 75}'
    python -m verifiers.cli unregister countdown
    python -m verifiers.cli session open --kind python        # sessions: verifiers/session_cli.py

``--target`` (default ``$VERIFIER_TARGET`` or 127.0.0.1:50051) is the service; ``--token`` (default
``$VERIFIER_ADMIN_TOKEN``) is sent as ``authorization: Bearer`` on register/unregister; ``--timeout-s`` is
the call's deadline and ``--wait-s`` (default 10) how long a service that cannot be reached is tried
before the command says "cannot reach the verifier service". Output is JSON on stdout; a refused call
prints its status and message on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers import session_cli
from verifiers.client import VerifierClient, VerifierError
from verifiers.shapes.errors import UsageError

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_WAIT_S = 10.0
WAIT_HELP = f"how long to keep trying a service that cannot be reached, in seconds (default {DEFAULT_WAIT_S:g})"


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def option_pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise UsageError(f"{what} {it!r} is not KEY=VALUE")
        out[k] = v
    return out


def component_of(item: str) -> pb.Component:
    name, sep, weight = item.partition("=")
    try:
        return pb.Component(verifier=name, weight=float(weight) if sep else 1.0)
    except ValueError:
        raise UsageError(f"--composite {item!r}: the weight must be a number, e.g. math=0.9") from None


def register_request(a: argparse.Namespace) -> pb.RegisterVerifierRequest:
    req = pb.RegisterVerifierRequest(name=a.name, description=a.description, replace=a.replace)
    if a.python:
        req.python.CopyFrom(
            pb.PythonVerifier(
                source=_read(a.python),
                entrypoint=a.entrypoint,
                example_completion=a.example_completion,
                example_reference=a.example_reference,
            )
        )
    elif a.remote:
        req.remote.CopyFrom(pb.RemoteVerifier(target=a.remote, verifier=a.remote_verifier))
    else:
        req.composite.CopyFrom(pb.CompositeVerifier(components=[component_of(c) for c in a.composite]))
    return req


def _info(info: pb.VerifierInfo, full: bool = False) -> dict:
    d = MessageToDict(info, preserving_proto_field_name=True)
    d["version"] = int(d.get("version", 1))
    if not full and "python" in d:
        d["python"]["source"] = f"<{len(info.python.source)} characters>"
    return d


def run(a: argparse.Namespace) -> tuple[object, int]:
    """(the JSON to print, the exit code)."""
    token = a.token if a.cmd in ("register", "unregister") else None
    who = session_cli.client_id(a) if a.cmd == "session" else ""
    with VerifierClient(a.target, timeout_s=a.timeout_s, token=token or None, wait_s=a.wait_s, client_id=who) as c:
        if a.cmd == "session":
            return session_cli.run(c, a)
        return _registry(c, a), 0


def _registry(c: VerifierClient, a: argparse.Namespace) -> object:
    if a.cmd == "register":
        return _info(c.register(register_request(a)))
    if a.cmd == "unregister":
        c.unregister(a.name)
        return {"unregistered": a.name}
    if a.cmd == "list":
        return [_info(v) for v in c.list_verifiers()]
    if a.cmd == "get":
        return _info(c.get_verifier(a.name), full=True)
    r = c.verify(
        a.name,
        a.completion if a.completion is not None else _read(a.completion_file),
        a.reference,
        prompt=a.prompt,
        options=option_pairs(a.option, "--option"),
        timeout_s=a.grade_timeout_s,
    )
    return {k: v for k, v in vars(r).items() if k != "id"}


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--target", default=argparse.SUPPRESS, help="host:port of the service")
    common.add_argument("--token", default=argparse.SUPPRESS, help="admin token (env VERIFIER_ADMIN_TOKEN)")
    common.add_argument("--timeout-s", type=float, default=argparse.SUPPRESS, help="deadline of the call")
    common.add_argument("--wait-s", type=float, default=argparse.SUPPRESS, help=WAIT_HELP)
    p = argparse.ArgumentParser(
        prog="python -m verifiers.cli", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--target", default=os.environ.get("VERIFIER_TARGET", DEFAULT_TARGET), help="host:port of the service"
    )
    p.add_argument(
        "--token", default=os.environ.get("VERIFIER_ADMIN_TOKEN", ""), help="admin token for register/unregister"
    )
    p.add_argument("--timeout-s", type=float, default=60.0, help="deadline of the call in seconds")
    p.add_argument("--wait-s", type=float, default=DEFAULT_WAIT_S, help=WAIT_HELP)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("register", parents=[common], help="register (or with --replace, update) a verifier")
    r.add_argument("name")
    kind = r.add_mutually_exclusive_group(required=True)
    kind.add_argument("--python", metavar="FILE", help="source defining verify(completion, reference, options)")
    kind.add_argument("--remote", metavar="HOST:PORT", help="another server implementing VerifierService.Verify")
    kind.add_argument(
        "--composite", nargs="+", metavar="NAME=WEIGHT", help="weighted sum, e.g. math=0.9 think_format=0.1"
    )
    r.add_argument("--entrypoint", default="verify", help="python: the function to call")
    r.add_argument("--example-completion", default="", help="python: completion for the registration dry run")
    r.add_argument("--example-reference", default="", help="python: reference for the registration dry run")
    r.add_argument("--remote-verifier", default="", help="remote: the verifier's name there (default: NAME)")
    r.add_argument("--description", default="")
    r.add_argument("--replace", action="store_true", help="overwrite an existing verifier (bumps its version)")

    for name, text in (("unregister", "remove a registered verifier"), ("get", "show one verifier and its spec")):
        s = sub.add_parser(name, parents=[common], help=text)
        s.add_argument("name")
    sub.add_parser("list", parents=[common], help="list every verifier")

    v = sub.add_parser("verify", parents=[common], help="grade one completion")
    v.add_argument("name")
    src = v.add_mutually_exclusive_group(required=True)
    src.add_argument("--completion")
    src.add_argument("--completion-file", metavar="FILE", help="read the completion from FILE ('-': stdin)")
    v.add_argument("--reference", default="")
    v.add_argument("--prompt", default="")
    v.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    v.add_argument("--grade-timeout-s", type=float, default=0.0, help="grading budget (0: the verifier's default)")
    session_cli.add_parser(sub, common, _read, option_pairs)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    try:
        out, code = run(a)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 1
    except VerifierError as e:
        message = e.message  # UNAVAILABLE: the client's own message says where and what to check
        if e.code.name == "ALREADY_EXISTS":  # the server says it in the request's terms (field `replace`)
            said = "set replace to overwrite it"
            message = (
                message.replace(said, "pass --replace to overwrite it")
                if said in message
                else (f"{message} (pass --replace to overwrite it)")
            )
        print(f"error: {e.code.name}: {message}", file=sys.stderr)
        return 1
    print(json.dumps(out, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
