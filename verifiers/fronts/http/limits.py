"""Bounds on an HTTP request before it is buffered: the head (request line + headers) and
the header count, enforced in uvicorn's httptools protocol as the bytes arrive; the body's size and its
JSON nesting, in an ASGI middleware before any route parses it.

httptools (llhttp) has no header limit of its own and uvicorn sets none for it (``h11_max_incomplete_event_size``
is h11's only): a header that never ends grew the server by the bytes sent. ``HeadLimitedProtocol`` feeds
the parser at most ``max_head_bytes`` of an unfinished head and answers 431 past it, or past
``max_headers`` headers, then closes the connection.

The JSON depth check runs on the raw bytes at C speed (a regex drops the strings, ``bytes.translate``
keeps the brackets, ``bytes.replace`` strips innermost pairs once per level), so a 2.4 kB body of 1,200
nested arrays is a 400 naming ``--max-json-depth``, not a RecursionError in a parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

from verifiers.fronts.http.common import error_response

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # no httptools here: uvicorn's h11 with its own incomplete-event limit (a 400, not 431)
    HttpToolsProtocol = None

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))


def json_too_deep(body: bytes, max_depth: int) -> bool:
    """True when arrays/objects in ``body`` (JSON text) nest deeper than ``max_depth`` (or, past that many
    brackets, do not balance: such a body is not JSON either).

    >>> json_too_deep(b'{"a": [[1], {"b": "[[[[[["}]}', 3), json_too_deep(b'[[[[1]]]]', 3)
    (False, True)
    """
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    s = _STRING.sub(b"", body).translate(_SQUARE, _NOT_BRACKET)
    deep = b"[" * (max_depth + 1)
    for _ in range(max_depth):  # each pass removes the innermost level of every nest
        if deep in s:
            return True
        t = s.replace(b"[]", b"")
        if not t:
            return False
        if t == s:
            break
        s = t
    return b"[" in s


def _head_refusal(message: str) -> bytes:
    body = json.dumps({"error": {"code": 431, "status": "RESOURCE_EXHAUSTED", "message": message}}).encode()
    return (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s"
    ) % (len(body), body)


class _TooManyHeaders(Exception):
    pass


if HttpToolsProtocol is not None:

    class HeadLimitedProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol, with the head's bytes and header count bounded (431 past them)."""

        max_head_bytes = 64 << 10
        max_headers = 100

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self._in_head = True  # between a message's first byte and its headers' end
            self._head_seen = 0
            self._headers_seen = 0
            self._refusal = b""

        def data_received(self, data: bytes) -> None:
            while data and self._in_head and self._head_seen + len(data) > self.max_head_bytes:
                room = self.max_head_bytes - self._head_seen
                if room <= 0:
                    return self._refuse(
                        f"request line and headers over {self.max_head_bytes} bytes (the server's --max-header-bytes)"
                    )
                piece, data = data[:room], data[room:]
                self._head_seen += len(piece)
                super().data_received(piece)
                if self.transport.is_closing():
                    return None
            if self._in_head:
                self._head_seen += len(data)
            if data:
                super().data_received(data)
            return None

        def _refuse(self, message: str) -> None:
            self.logger.info("refused a request: %s", message)
            self.transport.write(_head_refusal(message))
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            if self._refusal:  # a parser callback refused the request (too many headers)
                self.transport.write(self._refusal)
                self.transport.close()
                return
            super().send_400_response(msg)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._headers_seen = 0

        def on_header(self, name: bytes, value: bytes) -> None:
            self._headers_seen += 1
            if self._headers_seen > self.max_headers:
                self._refusal = _head_refusal(f"more than {self.max_headers} headers (the server's --max-headers)")
                raise _TooManyHeaders
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._in_head, self._head_seen = False, 0
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._in_head, self._head_seen = True, 0
            super().on_message_complete()


def uvicorn_http_options(max_head_bytes: int, max_headers: int) -> dict:
    """``uvicorn.Config`` keyword arguments that bound a request's head."""
    if HttpToolsProtocol is None:
        return {"http": "h11", "h11_max_incomplete_event_size": max_head_bytes}
    limited = type(
        "HeadLimitedProtocol", (HeadLimitedProtocol,), {"max_head_bytes": max_head_bytes, "max_headers": max_headers}
    )
    return {"http": limited}


class InputLimits:
    """ASGI middleware: the body is read here, at most ``max_bytes`` (413 past it, unread beyond), and a JSON
    body nested deeper than ``max_depth`` is a 400; then the app gets the body as one message, typed JSON."""

    def __init__(self, app: Any, max_bytes: int, max_depth: int = 32):
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._too_large(scope, receive, send)
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                return await self.app(scope, _replay([message], receive), send)
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                return await self._too_large(scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if json_too_deep(body, self.max_depth):
            msg = (
                f"JSON body nested deeper than {self.max_depth} levels (the server's --max-json-depth): no "
                "request of this API needs that many"
            )
            return await error_response("INVALID_ARGUMENT", msg)(scope, receive, send)
        return await self.app(
            as_json(scope), _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send
        )

    async def _too_large(self, scope: dict, receive: Any, send: Any) -> None:
        msg = f"request body over the limit of {self.max_bytes} bytes (the server's --max-message-mb)"
        await error_response("RESOURCE_EXHAUSTED", msg, 413)(scope, receive, send)


def as_json(scope: dict) -> dict:
    """``scope`` with its Content-Type set to JSON: every route of this API reads a JSON body, and curl's
    ``-d`` sends ``application/x-www-form-urlencoded`` (a typed FastAPI body would then be a 422)."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k != b"content-type"]
    return {**scope, "headers": [*headers, (b"content-type", b"application/json")]}


def _replay(messages: list[dict], receive: Any) -> Any:
    async def replayed() -> dict:
        return messages.pop(0) if messages else await receive()

    return replayed
