"""Below the app: uvicorn's protocol with a transport that sends each response in one write
(memo_solver.service.serving). ``tests/test_api_e2e.py`` runs it for real, under ``memo-solver
serve``.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import pickle
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import child_env
from redis_server import free_port
from worker_support import wait_for

from memo_solver.service.serving import OneWritePerTurn, http_protocol


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


def test_the_protocol_is_uvicorns_own_and_survives_pickling() -> None:
    """``serve --workers`` hands the protocol to its child processes pickled."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    made = pickle.loads(pickle.dumps(http_protocol(2.5)))
    assert isinstance(made, functools.partial)
    assert isinstance(made.func, type)
    assert issubclass(made.func, HttpToolsProtocol)
    assert made.keywords == {"header_timeout_s": 2.5}


# --- clients that never finish their request head -----------------------------------------

HEADER_TIMEOUT_S = 1.0
CLOSED_WITHIN_S = 20.0
"""Generous: the bound is checked by the connection closing at all, not by a stopwatch."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``memo-solver serve --header-timeout 1`` on a free port; its address."""
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    args = ["--store", str(tmp_path / "memo.sqlite"), "serve", "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-m", "memo_solver", *args, "--header-timeout", str(HEADER_TIMEOUT_S)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env(),
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, (tmp_path / "serve.log").read_text()
        try:
            return httpx.get(f"{url}/healthz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for("memo-solver serve to answer", answers, timeout=60)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def closed_while_trickling(connection: socket.socket, head: bytes) -> bool:
    """Send ``head`` a byte at a time, one every 0.1 s, until the server closes the
    connection (True) or the deadline passes (False)."""
    connection.settimeout(0.1)
    deadline = time.monotonic() + CLOSED_WITHIN_S
    for byte in itertools.cycle(head):
        if time.monotonic() > deadline:
            return False
        try:
            connection.sendall(bytes([byte]))
            if connection.recv(1024) == b"":
                return True
        except TimeoutError:
            continue  # nothing from the server yet: the next byte
        except (BrokenPipeError, ConnectionResetError):
            return True
    raise AssertionError("unreachable: the cycle never ends")


@pytest.mark.parametrize("first", ["nothing", "a whole request"])
def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(server: str, first: str) -> None:
    """Headers that never end (slowloris): the connection is closed about the bound after
    it opened or after its last response, while other clients are answered meanwhile."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as slow:
        if first == "a whole request":
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            assert slow.recv(1024).startswith(b"HTTP/1.1 200 ")
        assert httpx.get(f"{server}/healthz").status_code == 200
        assert closed_while_trickling(slow, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 64)
    assert httpx.get(f"{server}/healthz").json()["status"] == "ok"
