"""Serving details of ``memo-solver serve`` below the ASGI app: one write per response.

uvicorn writes a response's status line and headers as soon as the app sends
``http.response.start``, and the body when it sends the body: two ``write`` system calls and
two TCP segments for every small JSON answer, and two wake-ups of the client. The protocol
here is uvicorn's own (httptools when installed, else h11) with its transport wrapped so that
the writes made in one turn of the event loop go out together, in order, at the end of it.
Closing flushes first; aborting drops what is pending, as it drops the transport's buffer.

The protocol also closes a connection whose request head has not arrived within a bound
(``--header-timeout``, 10 s) of the connection opening or of the previous response: uvicorn
has no such timer (its keep-alive timer stops at the first byte), so clients that send their
headers a byte at a time would otherwise hold their connections for ever.

The body is timed the same way (``--body-timeout``, 10 s, from the end of the head): a
client that announces a body and sends nothing would otherwise keep its connection too.
Each process also caps its connections (``--max-connections``, by default half its
descriptor limit, so that the store's connections and the files it opens always find a
descriptor). A connection past the cap makes room by closing the one that has waited
longest for its client (an idle keep-alive connection, or one whose head or body is late),
so that idle connections cannot crowd out the requests; when every connection has a
request being answered, the new one is closed at once. uvicorn's ``limit_concurrency``
does not fit: it counts idle connections too, and answers every request 503 once they
fill it.

On a graceful shutdown, a connection whose request has not been read yet (just accepted, or
its head part-way in) is answered and then closed, where uvicorn would close it at once and
drop the request that was on its way (a reset when it already sat unread in the socket).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import resource
from collections.abc import Callable
from typing import Any, TypeVar, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from memo_solver.core.errors import UserError

N = TypeVar("N", int, float)
BODY_TIMEOUT_ENV = "MEMO_SOLVER_BODY_TIMEOUT"
MAX_CONNECTIONS_ENV = "MEMO_SOLVER_MAX_CONNECTIONS"


class OneWritePerTurn:
    """A transport that gathers the writes of one event-loop turn into one write."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_WAITS = itertools.count()


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools, as ``http="auto"`` picks it), writing once per
    turn, closing connections whose request head or body is late, and keeping the process's
    connections under a cap."""

    _client_timer: asyncio.TimerHandle | None = None
    _waiting_since: int | None = None
    """When the connection began to wait for its client, in the order of the process's
    waits (None: a request is being answered). An order, not a time: a turn of the event
    loop accepts many connections, at one reading of uvloop's clock."""
    _head_begun = False
    _closing = False
    """Shut down before this connection's request was read: close it after the answer."""

    def __init__(
        self,
        *args: Any,
        header_timeout_s: float = 10.0,
        body_timeout_s: float = 10.0,
        max_connections: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout_s = header_timeout_s
        self._body_timeout_s = body_timeout_s
        self._max_connections = (
            half_the_descriptor_limit() if max_connections is None else max_connections
        )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses: hence the cast)
        wrapped = OneWritePerTurn(cast(asyncio.Transport, transport), asyncio.get_running_loop())
        super().connection_made(cast(asyncio.Transport, wrapped))
        self._await_client(self._header_timeout_s)
        if len(self.connections) > self._max_connections:
            self._make_room()

    def on_message_begin(self) -> None:
        self._head_begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_begun = False
        super().on_headers_complete()
        if self._closing and self.cycle is not None:
            self.cycle.keep_alive = False
        self._await_client(self._body_timeout_s, since=self._waiting_since)

    def on_message_complete(self) -> None:
        self._cancel_timer()
        self._waiting_since = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn arms its keep-alive timer when no pipelined request is waiting: the
        # next request's head is then awaited.
        if self.timeout_keep_alive_task is not None:
            self._await_client(self._header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        # uvicorn closes a connection with no request in progress. One never used, or with
        # a head part-way in, may have its request on the way: wait for it (the head timer
        # bounds the wait, and so the shutdown's). An idle keep-alive one closes at once,
        # as HTTP lets a server do.
        if self.cycle is None or self._head_begun:
            self._closing = True
        else:
            super().shutdown()

    def _await_client(self, timeout_s: float, since: int | None = None) -> None:
        self._cancel_timer()
        self._waiting_since = next(_WAITS) if since is None else since
        self._client_timer = self.loop.call_later(timeout_s, self._close)

    def _cancel_timer(self) -> None:
        if self._client_timer is not None:
            self._client_timer.cancel()
            self._client_timer = None

    def _make_room(self) -> None:
        """Close the connection that has waited longest for its client, else this one."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, OneWriteHttpToolsProtocol)
            and c is not self
            and c._waiting_since is not None
            and not c.transport.is_closing()
        ]
        oldest = min(waiting, key=lambda c: cast(int, c._waiting_since), default=self)
        oldest._close()

    def _close(self) -> None:
        self._cancel_timer()
        if not self.transport.is_closing():
            self.transport.close()


def half_the_descriptor_limit() -> int:
    """The default connection cap: half the process's (soft) descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, soft // 2) if soft != resource.RLIM_INFINITY else 1 << 20  # no limit: 1 Mi


def connection_limits(
    body_timeout_s: float | None, max_connections: int | None
) -> tuple[float, int]:
    """``serve``'s body timeout and connection cap: each option where given, else its
    environment variable, else the default (10 s; half the descriptor limit)."""
    if body_timeout_s is None:
        body_timeout_s = _from_environment(BODY_TIMEOUT_ENV, float, 10.0)
    if max_connections is None:
        max_connections = _from_environment(MAX_CONNECTIONS_ENV, int, half_the_descriptor_limit())
    return body_timeout_s, max_connections


def _from_environment(variable: str, parse: Callable[[str], N], default: N) -> N:
    given = os.environ.get(variable)
    if not given:
        return default
    try:
        return parse(given)
    except ValueError:
        raise UserError(f"${variable} is not a number: {given!r}", field=variable) from None


def http_protocol(
    header_timeout_s: float = 10.0,
    body_timeout_s: float = 10.0,
    max_connections: int | None = None,
) -> Callable[..., asyncio.Protocol]:
    """What uvicorn's ``http=`` takes to make :class:`OneWriteHttpToolsProtocol` per
    connection with these bounds (no cap given: the default). A partial of a module-level
    class, not a class made here: ``serve --workers`` hands uvicorn's configuration to its
    child processes by pickling, and a class defined inside a function cannot be pickled."""
    return functools.partial(
        OneWriteHttpToolsProtocol,
        header_timeout_s=header_timeout_s,
        body_timeout_s=body_timeout_s,
        max_connections=max_connections,
    )
