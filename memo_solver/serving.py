"""Serving details of ``memo-solver serve`` below the ASGI app: one write per response.

uvicorn writes a response's status line and headers as soon as the app sends
``http.response.start``, and the body when it sends the body: two ``write`` system calls and
two TCP segments for every small JSON answer, and two wake-ups of the client. The protocol
here is uvicorn's own (httptools when installed, else h11) with its transport wrapped so that
the writes made in one turn of the event loop go out together, in order, at the end of it.
Closing flushes first; aborting drops what is pending, as it drops the transport's buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast


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


def http_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol as ``http="auto"`` picks it, writing once per turn."""
    base = _uvicorn_protocol()

    class Protocol(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            # (uvloop's transports are not asyncio.Transport subclasses: hence the cast)
            wrapped = OneWritePerTurn(
                cast(asyncio.Transport, transport), asyncio.get_running_loop()
            )
            super().connection_made(wrapped)

    Protocol.__name__ = Protocol.__qualname__ = f"OneWrite{base.__name__}"
    return Protocol


def _uvicorn_protocol() -> type[asyncio.Protocol]:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools comes with uvicorn[standard]
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    return HttpToolsProtocol
