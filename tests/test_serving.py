"""Below the app: uvicorn's protocol with a transport that sends each response in one write
(memo_solver.service.serving). ``tests/test_api_e2e.py`` runs it for real, under ``memo-solver
serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.api_support import child_env
from support.redis_server import free_port
from support.worker_support import wait_for

from memo_solver.cli.main import main
from memo_solver.service.serving import (
    BODY_TIMEOUT_ENV,
    MAX_CONNECTIONS_ENV,
    OneWritePerTurn,
    http_protocol,
)


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
    assert made.keywords == {
        "header_timeout_s": 2.5,
        "body_timeout_s": 10.0,
        "max_connections": None,
    }


# --- clients that never finish their request head -----------------------------------------

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.0
CLOSED_WITHIN_S = 20.0
"""Generous: the bound is checked by the connection closing at all, not by a stopwatch."""


@contextlib.contextmanager
def serving(folder: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``memo-solver serve`` with these options on a free port; its address and process."""
    port = free_port()
    log = (folder / "serve.log").open("wb")
    args = ["--store", str(folder / "memo.sqlite"), "serve", "--port", str(port), *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "memo_solver", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env(),
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, (folder / "serve.log").read_text()
        try:
            return httpx.get(f"{url}/healthz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for("memo-solver serve to answer", answers, timeout=60)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``memo-solver serve`` whose clients have 1 s for a request's head, and 1 s for its
    body."""
    timeouts = ["--header-timeout", str(HEADER_TIMEOUT_S), "--body-timeout", str(BODY_TIMEOUT_S)]
    with serving(tmp_path, *timeouts) as (url, _):
        yield url


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)))


def closed(connection: socket.socket, within_s: float) -> bool:
    """Whether the server closes the connection within ``within_s``, sending nothing."""
    connection.settimeout(within_s)
    try:
        return connection.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


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
    with connect(server) as slow:
        if first == "a whole request":
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            assert slow.recv(1024).startswith(b"HTTP/1.1 200 ")
        assert httpx.get(f"{server}/healthz").status_code == 200
        assert closed_while_trickling(slow, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 64)
    assert httpx.get(f"{server}/healthz").json()["status"] == "ok"


# --- clients that never send the body they announced ----------------------------------------

SLOW_BODY = b"POST /v1/advice HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n"
"""Complete headers, and a body announced but never sent."""


def test_a_body_that_never_comes_is_cut_off(server: str) -> None:
    """Timed as the head is: the connection is closed about the bound after the headers."""
    with connect(server) as slow:
        slow.sendall(SLOW_BODY)
        assert closed(slow, CLOSED_WITHIN_S)
    assert httpx.get(f"{server}/healthz").json()["status"] == "ok"


@pytest.mark.parametrize("option", ["--body-timeout", "--max-connections"])
def test_the_body_timeout_and_the_cap_must_be_positive(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", option, "0"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert option in error


@pytest.mark.parametrize("variable", [BODY_TIMEOUT_ENV, MAX_CONNECTIONS_ENV])
def test_a_bad_number_in_the_environment_is_named(
    variable: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "many")
    assert main(["serve"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert variable in error


MAX_CONNECTIONS = 40


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_past_the_connection_cap_idle_connections_make_room_and_advice_answers(
    tmp_path: Path,
) -> None:
    """The cap plus 10 connections waiting on their bodies, and one more for advice: the 11
    that waited longest are closed, and the advice is answered. (Whatever else the process
    still counts, the warming request's connection, is closed first, in place of one.)"""
    far = "60"  # the timeouts far off: only the cap closes connections here
    options = ["--header-timeout", far, "--body-timeout", far]
    advice = {"rules": "yahtzee-lower", "state": "start"}
    with serving(tmp_path, *options, "--max-connections", str(MAX_CONNECTIONS)) as (url, _):
        assert httpx.post(f"{url}/v1/advice", json=advice).status_code == 200  # warm now
        held: list[socket.socket] = []
        try:
            for _ in range(MAX_CONNECTIONS + 10):
                held.append(connect(url))
                held[-1].sendall(SLOW_BODY)
            assert httpx.post(f"{url}/v1/advice", json=advice).status_code == 200
            assert all(closed(c, CLOSED_WITHIN_S) for c in held[:11])
            # Room was made as each connection came, before the answer: the rest stay.
            assert not any(closed(c, 0.01) for c in held[11:])
        finally:
            for connection in held:
                connection.close()


# --- shutting down ---------------------------------------------------------------------------


def test_a_connection_accepted_before_a_sigterm_gets_the_answer_to_its_request(
    tmp_path: Path,
) -> None:
    """Its request sent once the server has begun to stop (it refuses new connections):
    answered, and the connection closed after, not dropped unread."""
    with serving(tmp_path) as (url, process):
        with connect(url) as early:
            # Accepted in the order they came: once a later one is answered, the early one
            # is the server's too.
            assert httpx.get(f"{url}/healthz").status_code == 200
            process.send_signal(signal.SIGTERM)

            def refused() -> bool:
                try:
                    connect(url).close()
                except ConnectionRefusedError:
                    return True
                return False

            wait_for("the server to stop listening", refused, timeout=30, every=0.01)
            early.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            early.settimeout(30)
            reply = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := early.recv(65536):
                    reply += chunk
        assert reply.startswith(b"HTTP/1.1 200 "), reply
        assert b"connection: close" in reply.lower()
