"""``memo-solver serve --workers 2``: two real processes on one port, sharing one store.

Each test pins a keep-alive connection to each process (a connection stays with the
process that accepted it; ``/healthz`` says which one answered), so that a retry lands
on the other process for certain. What must hold: a scrape of ``/metrics`` through either
process counts both; the retry after a 503 on another process finds the work the first
one started instead of starting it again; a Dice of Doom position that failed at the
limit in one process is a 422 at once in the other.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.api_support import LOWER_PIN, TOL, child_env
from support.redis_server import free_port
from support.worker_support import wait_for

from memo_solver.cli.main import main

DEADLINE_S = 0.05
"""Short enough that a whole distribution outlives it (503), and the retries begin."""
DOOM_LIMIT = 1000
BIG = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
"""201,861 positions: past the limit."""


@dataclass
class Server:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


def start_server(folder: Path, *options: str) -> Server:
    """``serve --workers 2`` on a store in ``folder``, once it answers ``/readyz``."""
    port = free_port()
    log = folder / "serve.log"
    args = ["--store", str(folder / "memo.sqlite"), "serve", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "memo_solver", *args, "--workers", "2", *options],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env(),
        )
    server = Server(f"http://127.0.0.1:{port}", port, process, log)

    def ready() -> bool:
        assert process.poll() is None, log.read_text()
        try:
            return httpx.get(f"{server.url}/readyz").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for("memo-solver serve --workers 2 to be ready", ready, timeout=120)
    except BaseException:
        stop(server)
        raise
    return server


def stop(server: Server) -> None:
    server.process.terminate()
    server.process.wait(timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    options = ["--deadline", str(DEADLINE_S), "--doom-limit", str(DOOM_LIMIT)]
    server = start_server(tmp_path_factory.mktemp("serve-workers"), *options)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture
def clients(server: Server) -> Iterator[list[httpx.Client]]:
    """A keep-alive client pinned to each of the two processes: new connections until each
    process has accepted one (``/healthz`` names the process that answered)."""
    by_pid: dict[str, httpx.Client] = {}
    spare: list[httpx.Client] = []

    def both() -> bool:
        client = httpx.Client(base_url=server.url, limits=httpx.Limits(max_connections=1))
        pid = client.get("/healthz").json()["pid"]
        if pid in by_pid:
            spare.append(client)
        else:
            by_pid[pid] = client
        return len(by_pid) == 2

    try:
        wait_for("a connection to each of the two processes", both, timeout=60)
        yield list(by_pid.values())
    finally:
        for client in [*by_pid.values(), *spare]:
            client.close()


def sample(metrics: str, name: str, **labels: str) -> float:
    """One sample's value (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics.splitlines():
        series, _, value = line.rpartition(" ")
        if series.startswith(name + "{") or series == name:
            found = dict(re.findall(r'(\w+)="([^"]*)"', series.partition("{")[2]))
            if all(found.get(k) == v for k, v in labels.items()) and (wanted or series == name):
                return float(value)
    return 0.0


def computations(client: httpx.Client) -> float:
    return sample(client.get("/metrics").text, "memo_solver_computations_started_total")


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_workers_must_be_positive(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--workers", bad]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith("memo-solver: error: ")
    assert "--workers" in error


def test_workers_must_be_an_integer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--workers", "two"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "--workers: expected a whole number, got 'two'" in error


def test_health_and_metrics_count_both_processes(clients: list[httpx.Client]) -> None:
    pids = {client.get("/healthz").json()["pid"] for client in clients}
    for client in clients:
        for _ in range(3):
            assert client.get("/readyz").json()["status"] == "ready"
    for client in clients:  # the same totals, whichever process is scraped
        metrics = client.get("/metrics").text
        ready = sample(metrics, "memo_solver_requests_total", route="/readyz", status="200")
        assert ready >= 6  # three through each process
        caches = set(re.findall(r'memo_solver_cache_bytes\{pid="(\d+)",rules="yahtzee"\}', metrics))
        assert caches == pids  # each process's own block cache, by pid


def test_a_retry_on_the_other_process_finds_the_work_the_first_one_started(
    clients: list[httpx.Client],
) -> None:
    first, other = clients
    body = {"rules": "yahtzee-lower", "state": "start"}
    before = computations(first)
    started = first.post("/v1/stats", json=body)
    assert started.status_code == 503  # a whole game outlives the deadline

    def answered() -> httpx.Response | None:
        retry = other.post("/v1/stats", json=body)  # always the other process
        assert retry.status_code in (200, 503), retry.text
        return retry if retry.status_code == 200 else None

    answer = wait_for("the retry's answer", answered, timeout=120)
    assert answer.json()["mean"] == pytest.approx(LOWER_PIN, abs=TOL)
    assert first.post("/v1/stats", json=body).json() == answer.json()
    assert computations(first) == before + 1  # started once, in the first process


def test_a_limit_failure_in_one_process_is_a_422_at_once_in_the_other(
    clients: list[httpx.Client],
) -> None:
    first, other = clients
    body = {"board": BIG, "to_move": "a", "stats": True}
    before = computations(first)

    def failed() -> httpx.Response | None:
        response = first.post("/v1/games/dice-of-doom/advice", json=body)
        assert response.status_code in (422, 503), response.text
        return response if response.status_code == 422 else None

    refused = wait_for("the solve to fail at the limit", failed, timeout=60)
    again = other.post("/v1/games/dice-of-doom/advice", json=body)
    assert again.status_code == 422
    assert again.json() == refused.json()
    assert computations(other) == before + 1  # the other process did not solve it again


# --- stopping ------------------------------------------------------------------------------


def ask(port: int) -> str:
    """One request on a connection of its own: ``answered``, ``refused`` (no connection), or
    ``dropped`` (connected, then reset or closed without an answer)."""
    try:
        connection = socket.create_connection(("127.0.0.1", port), timeout=30)
    except ConnectionRefusedError:
        return "refused"
    reply = b""
    with connection:
        try:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            while chunk := connection.recv(65536):
                reply += chunk
        except (ConnectionResetError, BrokenPipeError):
            return "dropped"
    return "answered" if reply.startswith(b"HTTP/1.1 200") else "dropped"


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_sigterm_refuses_new_connections_and_drops_no_accepted_request(tmp_path: Path) -> None:
    """Requests one after another across a SIGTERM, until the server is gone: each is
    answered or refused a connection, none accepted and then dropped; and once the parent
    has taken the signal (it logs so after it stopped the socket's intake), no new
    connection is made at all: each is refused.

    The mechanism (:class:`memo_solver.service.processes.Supervisor`): the parent makes the
    shared listening socket drop every new SYN before it tells the children to stop, and
    the children accept what the kernel had queued until they close the socket; the
    client sends its SYN again until it finds no listener. (The parent's copy of
    the socket once kept the port accepting connections that no process would serve while
    the children drained; the children still closed it on connections the kernel had
    completed into its queue since their last accept.)"""
    server = start_server(tmp_path, "--verbose")
    try:
        assert ask(server.port) == "answered"
        server.process.send_signal(signal.SIGTERM)
        before: Counter[str] = Counter()  # sent before the parent logged the signal
        after: Counter[str] = Counter()
        deadline = time.monotonic() + 60
        while server.process.poll() is None or not (before + after)["refused"]:
            assert time.monotonic() < deadline, f"still serving 60 s after SIGTERM: {after}"
            taken = "Received SIGTERM" in server.log.read_text()
            (after if taken else before)[ask(server.port)] += 1
            time.sleep(0.01)  # a request every 10 ms or so: a steady client, not a flood
    finally:
        stop(server)
    print(f"after the SIGTERM: {dict(before)}; after the parent took it: {dict(after)}")
    assert before["dropped"] == 0, before
    assert set(after) == {"refused"}, after
