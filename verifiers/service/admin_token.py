"""Where the server's admin token comes from, and that it does not stay where others can read it.

``--admin-token-file PATH`` (first line of the file) is the way to give it: nothing of the token is in
the process's command line or environment. The older forms still work, and are moved out of sight:
a token in ``VERIFIER_ADMIN_TOKEN`` or on the command line (``--admin-token``) makes the server re-exec
itself once, with the variable removed from its environment and the flag from its arguments, handing
the token over through a pipe (``--admin-token-file /dev/fd/N``). Removing a variable from
``os.environ`` is not enough: ``/proc/<pid>/environ`` shows the environment the process was started
with, to its user and to root, for as long as it runs.
"""

from __future__ import annotations

import argparse
import os
import sys

ENV = "VERIFIER_ADMIN_TOKEN"
MAX_TOKEN_BYTES = 4096


class TokenError(ValueError):
    """The token file could not be read or holds no token."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--admin-token",
        default=None,
        help=f"require 'authorization: Bearer <token>' on mutating RPCs (env {ENV}); prefer "
        "--admin-token-file: a token given here or in the environment makes the server re-exec without it",
    )
    p.add_argument(
        "--admin-token-file",
        default="",
        help="read the admin token from this file's first line (e.g. a file only the service's user can "
        "read, or a secret mounted by the orchestrator)",
    )


def read_token_file(path: str) -> str:
    """The first line of ``path``, stripped; a ``/dev/fd/N`` path's descriptor is closed after reading."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TOKEN_BYTES + 1)
    except OSError as e:
        raise TokenError(f"--admin-token-file {path}: {e.strerror}") from None
    finally:
        if path.startswith("/dev/fd/") and path[8:].isdigit():
            try:
                os.close(int(path[8:]))
            except OSError:
                pass
    lines = raw.decode(errors="replace").splitlines()
    token = lines[0].strip() if lines else ""
    if not token or len(raw) > MAX_TOKEN_BYTES:
        raise TokenError(f"--admin-token-file {path}: no token on its first line (or over {MAX_TOKEN_BYTES} bytes)")
    return token


def _without_token_flag(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--admin-token":
            skip = True
        elif not a.startswith("--admin-token="):
            out.append(a)
    return out


def reexec_without_token(token: str) -> None:
    """Replace this process (same pid) by the server without the token in its environment or arguments;
    the token goes through an inherited pipe. Does not return."""
    r, w = os.pipe()
    os.write(w, token.encode() + b"\n")
    os.close(w)
    os.set_inheritable(r, True)
    orig = list(getattr(sys, "orig_argv", []))
    head = orig[: orig.index("-m") + 2] if "-m" in orig else [sys.executable, "-m", "verifiers.fronts.server"]
    argv = [*head, *_without_token_flag(sys.argv[1:]), "--admin-token-file", f"/dev/fd/{r}"]
    env = {k: v for k, v in os.environ.items() if k != ENV}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(head[0] if os.path.isabs(head[0]) else sys.executable, argv, env)


def resolve(args: argparse.Namespace, *, may_reexec: bool) -> str:
    """The token (``""``: none), from the file, the flag or the environment, in that order. With a token in
    the environment or on the command line and ``may_reexec`` (the real command line), re-execs first."""
    if args.admin_token_file:
        os.environ.pop(ENV, None)
        return read_token_file(args.admin_token_file)
    token = args.admin_token if args.admin_token is not None else os.environ.get(ENV, "")
    if token and may_reexec:
        reexec_without_token(token)
    os.environ.pop(ENV, None)  # in-process callers (tests): at least no child process inherits it
    return token
