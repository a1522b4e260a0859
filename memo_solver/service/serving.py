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

On a graceful shutdown, a connection whose request has not been read yet (just accepted, or
its head part-way in) is answered and then closed, where uvicorn would close it at once and
drop the request that was on its way (a reset when it already sat unread in the socket).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


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


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools, as ``http="auto"`` picks it), writing once per
    turn and closing connections whose request head is late."""

    _head_timer: asyncio.TimerHandle | None = None
    _head_begun = False
    _closing = False
    """Shut down before this connection's request was read: close it after the answer."""

    def __init__(self, *args: Any, header_timeout_s: float = 10.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout_s = header_timeout_s

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses: hence the cast)
        wrapped = OneWritePerTurn(cast(asyncio.Transport, transport), asyncio.get_running_loop())
        super().connection_made(cast(asyncio.Transport, wrapped))
        self._await_head()

    def on_message_begin(self) -> None:
        self._head_begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_arrived()
        self._head_begun = False
        super().on_headers_complete()
        if self._closing and self.cycle is not None:
            self.cycle.keep_alive = False

    def shutdown(self) -> None:
        # uvicorn closes a connection with no request in progress. One never used, or with
        # a head part-way in, may have its request on the way: wait for it (the head timer
        # bounds the wait, and so the shutdown's). An idle keep-alive one closes at once,
        # as HTTP lets a server do.
        if self.cycle is None or self._head_begun:
            self._closing = True
        else:
            super().shutdown()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn arms its keep-alive timer when no pipelined request is waiting: the
        # next request's head is then awaited.
        if self.timeout_keep_alive_task is not None:
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._head_arrived()
        self._head_timer = self.loop.call_later(self._header_timeout_s, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def http_protocol(header_timeout_s: float = 10.0) -> Callable[..., asyncio.Protocol]:
    """What uvicorn's ``http=`` takes to make :class:`OneWriteHttpToolsProtocol` per
    connection with this header timeout. A partial of a module-level class, not a class made
    here: ``serve --workers`` hands uvicorn's configuration to its child processes by
    pickling, and a class defined inside a function cannot be pickled."""
    return functools.partial(OneWriteHttpToolsProtocol, header_timeout_s=header_timeout_s)
