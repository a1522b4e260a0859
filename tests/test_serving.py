"""Below the app: uvicorn's protocol with a transport that sends each response in one write
(memo_solver.serving). ``tests/test_api_e2e.py`` runs it for real, under ``memo-solver serve``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memo_solver.serving import OneWritePerTurn, http_protocol


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1)}.get(name, default)


async def test_writes_of_one_turn_go_out_as_one() -> None:
    loop = asyncio.get_running_loop()
    raw = FakeTransport()
    transport = OneWritePerTurn(raw, loop)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(bytearray(b"{}"))
    transport.write(b"")
    assert raw.writes == []
    assert transport.get_write_buffer_size() == 21
    assert transport.get_extra_info("peername") == ("127.0.0.1", 1)
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    transport.write(b"last")
    transport.close()  # flushes first
    assert raw.writes[1:] == [b"last"]
    assert raw.closed
    await asyncio.sleep(0)
    assert len(raw.writes) == 2


async def test_abort_drops_what_is_pending() -> None:
    raw = FakeTransport()
    transport = OneWritePerTurn(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"never")
    transport.abort()
    await asyncio.sleep(0)
    assert raw.writes == []
    assert raw.aborted


def test_the_protocol_is_uvicorns_own() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(http_protocol(), HttpToolsProtocol)
