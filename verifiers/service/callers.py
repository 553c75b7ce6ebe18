"""Who is calling: the key that scopes the verdict cache and queues sandbox work fairly.

A caller is the peer's host (its port changes with every connection) plus, when sent, the
``x-client-id`` header / gRPC metadata (at most 64 characters), so several jobs on one host (or behind
one proxy) can be told apart. The id is declared, not proven: a caller on the same host can claim
another's id (docs/security.md says what that allows). The key is set once where a request enters
(``CALLER``: gRPC servicer, HTTP route) and passed along explicitly to worker threads.

>>> grpc_peer_host("ipv4:127.0.0.1:53412"), grpc_peer_host("ipv6:[::1]:80"), grpc_peer_host("unix:/tmp/s")
('127.0.0.1', '[::1]', 'unix:/tmp/s')
>>> caller_key("10.0.0.2", "run-7")
'10.0.0.2/run-7'
"""

from __future__ import annotations

import contextvars
from typing import Any

CLIENT_ID_KEY = "x-client-id"
MAX_CLIENT_ID = 64
CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")


def caller_key(host: str, client_id: str = "") -> str:
    client_id = "".join(c for c in client_id[:MAX_CLIENT_ID] if c.isprintable())
    return f"{host}/{client_id}" if client_id else host


def grpc_peer_host(peer: str) -> str:
    """The host part of ``ServicerContext.peer()`` (``ipv4:h:port``, ``ipv6:[h]:port``, ``unix:path``)."""
    scheme, _, rest = peer.partition(":")
    if scheme in ("ipv4", "ipv6") and ":" in rest:
        return rest.rsplit(":", 1)[0]
    return peer


def grpc_caller(context: Any) -> str:
    """The caller of a gRPC call (or of the HTTP routes' HttpContext, which answers the same two calls)."""
    metadata = dict(context.invocation_metadata() or ())
    return caller_key(grpc_peer_host(context.peer() or ""), str(metadata.get(CLIENT_ID_KEY, "")))


def http_caller(client: Any, headers: Any) -> str:
    """The caller of an HTTP request: ``request.client`` (host, port) and its headers."""
    host = client[0] if client else ""
    return caller_key(host, str(headers.get(CLIENT_ID_KEY, "")))
