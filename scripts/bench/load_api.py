"""Load on the HTTP API: ``POST /v1/advice`` for random warm states, over loopback.

What it does:

1. Precomputes ``yahtzee`` (or ``--rules``) into a temporary SQLite store with ``memo-solver
   precompute`` (or reuses ``--store``, filling it if needed), so every answer is warm in the store.
2. Starts one server process, ``memo-solver --store <store> serve --host 127.0.0.1 --port
   <free port>`` (one uvicorn worker), and waits for ``GET /readyz``.
3. Builds every request body before any timing: a random valid state per request (seeded),
   a uniform random filled mask (never all filled), a random upper total the filled upper
   boxes can make (``rules.upper_totals``), the Yahtzee-bonus flag at random only when the
   Yahtzee box is filled, 0..2 rerolls left and five random dice, as JSON.
4. Sends untimed warm-up requests first (closed loop; by default one for each of the 8,191
   filled masks, which loads every block into the server's process memo, as in a server
   that has been up a while; ``--warmup N`` sends N random ones instead), then
   ``--requests`` timed ones (default
   20,000), at most ``--concurrency`` (default 32) in flight on keep-alive connections,
   bounded by ``--max-seconds``. Loopback only. Closed loop (the default): each of the 32
   clients sends its next request as soon as its last is answered, which saturates the
   server and measures its throughput. Open loop (``--rate R``): request ``i`` is due at
   ``i / R`` s and its latency counts from then, so it measures latency at a given load.

Reports requests/s, latency p50/p90/p99/max in ms (from writing the request to reading the
whole response), errors (a status other than 200, a broken connection, a timeout), the
server process's CPU time during the timed phase (``/proc/<pid>/stat``), the client's own,
and what every other process on the machine took meanwhile (``/proc/stat``, in cores: the
neighbours on a shared machine), and checks the targets: >= 1,000 requests/s, p50 <= 5 ms,
p99 <= 25 ms, 0 errors over at least 20,000 requests. In closed loop the mean latency is
``concurrency / throughput`` (Little's law): with 32 in flight, a p50 of 5 ms needs about
6,400 requests/s.

The client shares the machine with the server, so it must be cheap: ``--client lean`` (the
default) is one ``asyncio.Protocol`` per keep-alive connection on uvloop (``--loop``): a
request is one ``write``, the response is parsed and timed in ``data_received``, and the
connection's next request goes out from that same callback, with no stream objects and no
task per request (15 to 25 us of client CPU per request here in closed loop, about 80 us
in open loop, where it also sleeps until each request is due); ``--client raw`` is the
earlier client on asyncio streams, one task per request (25 us on uvloop, 0.1 to 0.2 ms on
asyncio's own loop, ``--loop asyncio``);
``--client httpx`` uses ``httpx.AsyncClient`` with a pool of ``--concurrency`` connections,
which cost about 3 ms of client CPU per request here and made the client the bottleneck.
In open loop the lean client sleeps until each request is due and sends it at once on a
free connection, or queues it until one is free (its latency still counts from when it was
due). Throughput is the requests answered over the time from the first request sent to the
last answer read; in open loop it is therefore a little under the offered rate (20,000 at
1,000 per second take 20 s plus the last answer), so offer a little more than the target.

``--profile FILE`` runs the server under cProfile (for finding where its time goes; such a
run's figures are not the benchmark's).

Run::

    .venv/bin/python scripts/bench/load_api.py                      # precomputes into a temp file
    .venv/bin/python scripts/bench/load_api.py --store S.db --json  # reuse a store; one JSON object
    .venv/bin/python scripts/bench/load_api.py --rate 500            # open loop, 500 requests/s
    .venv/bin/python scripts/bench/load_api.py --rate 1100 --requests 22000  # >= 1,000 answered/s
    .venv/bin/python scripts/bench/load_api.py --client raw          # or httpx: the other clients

One script of about 700 lines, on purpose: a load client (the request bodies, keep-alive
connections, the closed and the open loop, the latencies, the server's CPU) whose parts are
measured together; what the benchmarks share is in ``_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _bench import (
    Target,
    add_targets,
    child_env,
    cpu_seconds,
    machine_busy_s,
    memo_solver_command,
    percentile,
    precompute_cli,
    verdict,
)
from support.random_states import random_state

TARGET_RPS = 1000.0
TARGET_P50_MS = 5.0
TARGET_P99_MS = 25.0
TARGET_MIN_REQUESTS = 20_000
REQUEST_TIMEOUT_S = 30.0
PATH = "/v1/advice"


# --- request bodies -----------------------------------------------------------------------


def random_body(
    rng: random.Random, filled: int | None = None, rules_name: str = "yahtzee"
) -> bytes:
    """The JSON body of one advice request for a random valid warm state."""
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.games.yahtzee.rules.state import state_to_json

    rules = get_rule_set(rules_name)
    if filled is None:
        filled = rng.randrange(rules.all_filled)  # never all filled: that is game over
    state = state_to_json(random_state(rules, rng, filled), rules)
    return json.dumps({"rules": rules_name, "state": state}, separators=(",", ":")).encode()


def make_bodies(seed: int, count: int, rules_name: str = "yahtzee") -> list[bytes]:
    rng = random.Random(seed)
    return [random_body(rng, None, rules_name) for _ in range(count)]


def every_mask_bodies(seed: int, rules_name: str = "yahtzee") -> list[bytes]:
    """One request per filled mask but the last (8,191): together they touch every block."""
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set

    rng = random.Random(seed)
    masks = list(range(get_rule_set(rules_name).all_filled))
    rng.shuffle(masks)
    return [random_body(rng, filled, rules_name) for filled in masks]


# --- the server process -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Poll ``GET /readyz`` until 200; the seconds it took."""
    started = time.perf_counter()
    url = f"http://127.0.0.1:{port}/readyz"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:
            pass
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(f"the server was not ready after {timeout_s:.0f} s")
        time.sleep(0.1)


# --- the load -----------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    first_error: str | None = None
    last_body: bytes = b""
    started: float | None = None
    """When the first request went out (the lean client: after connecting)."""
    finished: float | None = None

    def fail(self, reason: str) -> None:
        self.errors += 1
        self.statuses[reason] += 1
        if self.first_error is None:
            self.first_error = reason


class RawConnection:
    """One keep-alive HTTP/1.1 connection over asyncio streams: just enough for the API."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.head = (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nContent-Length: "
        ).encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length, close = None, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        if length is None:
            raise RuntimeError("a response without Content-Length")
        payload = await self.reader.readexactly(length)
        if close:
            await self.close()
        return status, payload

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


Post = Callable[[bytes], Awaitable[tuple[int, bytes]]]


class LeanConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection driven by callbacks: a request is one ``write``,
    its response is parsed in ``data_received`` and timed there, and the connection's next
    request is sent from the same callback. No stream objects, no task per request."""

    def __init__(self, head: bytes, done: Callable[[LeanConnection, int, bytes, float], None]):
        self.head = head
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.started = 0.0  # when the request in flight was due (open loop) or written
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's: not a subclass

    def send(self, body: bytes, started: float) -> None:
        assert self.transport is not None
        self.started, self.busy = started, True
        self.transport.write(b"%s%d\r\n\r\n%s" % (self.head, len(body), body))

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            self.buffer = buffer
            return
        head = buffer[:end].lower()
        at = head.find(b"\r\ncontent-length:")
        if at < 0:
            self.fail("a response without Content-Length")
            return
        line_end = head.find(b"\r\n", at + 2)
        length = int(head[at + 17 : line_end if line_end >= 0 else len(head)])
        if len(buffer) < end + 4 + length:
            self.buffer = buffer
            return
        if len(buffer) > end + 4 + length:
            self.fail("bytes after the response")
            return
        now = time.perf_counter()
        self.buffer = b""
        self.busy = False
        status = int(head[9:12])
        if b"\r\nconnection: close" in head:
            self.fail("the server closed the connection")
            return
        self.done(self, status, buffer[end + 4 :], now - self.started)

    def fail(self, reason: str) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.report(reason)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.busy:
            self.report(f"connection lost ({exc!r})")

    def report(self, reason: str) -> None:
        self.busy = False
        self.done(self, -1, reason.encode(), 0.0)


async def paced(
    bodies: Sequence[bytes], rate: float, deadline: float
) -> AsyncIterator[tuple[bytes, float]]:
    """The open loop's schedule: each body at its due time (``rate`` a second from now),
    with that time, until the bodies or the time run out."""
    start = time.perf_counter()
    for i, body in enumerate(bodies):
        due = start + i / rate
        now = time.perf_counter()
        if now > deadline:
            return
        if due > now:
            await asyncio.sleep(due - now)
        yield body, due


async def drive_lean(
    port: int, bodies: Sequence[bytes], concurrency: int, deadline: float, rate: float | None
) -> Tally:
    """As :func:`drive`, with :class:`LeanConnection` callbacks instead of tasks."""
    loop = asyncio.get_running_loop()
    tally = Tally()
    finished: asyncio.Future[None] = loop.create_future()
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nContent-Length: "
    ).encode()
    queue = iter(bodies)
    backlog: collections.deque[tuple[bytes, float]] = collections.deque()
    """Open loop: requests due, waiting for a free connection."""
    free: collections.deque[LeanConnection] = collections.deque()
    """Open loop: idle connections, the longest idle first (so all of them take turns)."""
    in_flight = 0
    scheduled = rate is None  # closed loop: everything is "scheduled" from the start

    def done(connection: LeanConnection, status: int, payload: bytes, latency: float) -> None:
        nonlocal in_flight
        in_flight -= 1
        if status < 0:
            fail(payload.decode())
        elif latency > REQUEST_TIMEOUT_S:
            fail(f"answered after {latency:.0f} s")
        else:
            tally.latencies.append(latency)
            if status == 200 and payload[:1] == b"{":
                tally.statuses["200"] += 1
                tally.last_body = payload
            else:
                tally.fail(str(status))
        if status >= 0:
            next_request(connection)
        if in_flight == 0 and scheduled and not backlog and not finished.done():
            finished.set_result(None)

    def fail(reason: str) -> None:
        tally.fail("connection error or timeout")
        if tally.first_error == "connection error or timeout":
            tally.first_error += f" ({reason})"

    def next_request(connection: LeanConnection) -> None:
        nonlocal in_flight
        if time.perf_counter() > deadline:
            return
        if rate is None:
            body = next(queue, None)
            if body is None:
                return
            started = time.perf_counter()
        elif backlog:
            body, started = backlog.popleft()
        else:
            free.append(connection)
            return
        in_flight += 1
        connection.send(body, started)

    connections = []

    async def connect() -> LeanConnection:
        _, connection = await loop.create_connection(
            lambda: LeanConnection(head, done), "127.0.0.1", port
        )
        connections.append(connection)
        return connection

    for _ in range(concurrency):
        await connect()
    tally.started = time.perf_counter()
    if rate is None:
        for connection in connections:
            next_request(connection)
    else:
        free.extend(connections)
        async for body, due in paced(bodies, rate, deadline):
            if free:
                connection = free.popleft()
                if connection.transport is None or connection.transport.is_closing():
                    connection = await connect()  # the server closed it: idle too long
                in_flight += 1
                connection.send(body, due)
            else:
                backlog.append((body, due))
        scheduled = True
    if in_flight or backlog:
        with contextlib.suppress(TimeoutError):
            wait = max(0.0, deadline - time.perf_counter()) + REQUEST_TIMEOUT_S
            await asyncio.wait_for(finished, wait)
    tally.finished = time.perf_counter()
    for _ in range(in_flight + len(backlog)):
        fail(f"no answer within {REQUEST_TIMEOUT_S:.0f} s of the end")
    for connection in connections:
        if connection.transport is not None:
            connection.transport.close()
    return tally


async def drive(
    port: int,
    bodies: Sequence[bytes],
    concurrency: int,
    client: str,
    deadline: float,
    rate: float | None = None,
) -> Tally:
    """Send every body once, at most ``concurrency`` at a time; stop at ``deadline``.

    Closed loop (``rate`` None): ``concurrency`` clients, each sending its next request as
    soon as the last one is answered, so the server is saturated. Open loop: request ``i``
    is due at ``i / rate`` seconds; its latency counts from then, so time spent waiting
    for a free connection is included (no coordinated omission).
    """
    tally = Tally()

    async def send(post: Post, body: bytes, due: float) -> None:
        try:
            status, payload = await asyncio.wait_for(post(body), REQUEST_TIMEOUT_S)
        except (OSError, RuntimeError, ValueError, TimeoutError, asyncio.IncompleteReadError):
            tally.fail("connection error or timeout")
            raise
        tally.latencies.append(time.perf_counter() - due)
        if status == 200 and payload[:1] == b"{":
            tally.statuses["200"] += 1
            tally.last_body = payload
        else:
            tally.fail(str(status))

    async def closed_loop(posts: list[Post]) -> None:
        queue = iter(bodies)

        async def one(post: Post) -> None:
            for body in queue:
                if time.perf_counter() > deadline:
                    return
                await send(post, body, time.perf_counter())

        results = await asyncio.gather(*(one(p) for p in posts), return_exceptions=True)
        note(results)

    async def open_loop(posts: list[Post], rate: float) -> None:
        free: asyncio.Queue[Post] = asyncio.Queue()
        for post in posts:
            free.put_nowait(post)
        tasks = []

        async def one(body: bytes, due: float) -> None:
            post = await free.get()
            try:
                await send(post, body, due)
            finally:
                free.put_nowait(post)

        async for body, due in paced(bodies, rate, deadline):
            tasks.append(asyncio.create_task(one(body, due)))
        note(await asyncio.gather(*tasks, return_exceptions=True))

    def note(results: list[Any]) -> None:
        for result in results:
            if isinstance(result, BaseException) and tally.first_error is not None:
                tally.first_error += f" ({result!r})"
                return

    async def run(posts: list[Post]) -> None:
        if rate is None:
            await closed_loop(posts)
        else:
            await open_loop(posts, rate)

    if client == "raw":
        connections = [RawConnection(port) for _ in range(concurrency)]
        try:
            await run([c.post for c in connections])
        finally:
            for connection in connections:
                await connection.close()
        return tally

    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    url = f"http://127.0.0.1:{port}{PATH}"
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT_S) as http:

        async def post(body: bytes) -> tuple[int, bytes]:
            response = await http.post(url, content=body, headers=headers)
            return response.status_code, response.content

        await run([post] * concurrency)
    return tally


# --- figures ------------------------------------------------------------------------------


def run_loop(work: Coroutine[Any, Any, Tally], loop: str) -> Tally:
    """Run the client on uvloop (when installed and asked for or ``auto``) or asyncio's loop."""
    if loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if loop == "uvloop":
                raise
        else:
            return uvloop.run(work)
    return asyncio.run(work)


def run_phase(
    port: int, pid: int, bodies: Sequence[bytes], args: argparse.Namespace, rate: float | None
) -> dict[str, Any]:
    server_cpu = cpu_seconds(pid)
    client_cpu = time.process_time()
    busy = machine_busy_s()
    started = time.perf_counter()
    deadline = started + args.max_seconds
    if args.client == "lean":
        tally = run_loop(drive_lean(port, bodies, args.concurrency, deadline, rate), args.loop)
    else:
        tally = run_loop(
            drive(port, bodies, args.concurrency, args.client, deadline, rate), args.loop
        )
    wall = (tally.finished or time.perf_counter()) - (tally.started or started)
    server_cpu = cpu_seconds(pid) - server_cpu
    client_cpu = time.process_time() - client_cpu
    others = machine_busy_s() - busy - server_cpu - client_cpu
    ms = [s * 1e3 for s in tally.latencies] or [math.nan]
    done = len(tally.latencies)
    return {
        "requests": done,
        "wall_s": wall,
        "requests_per_s": done / wall,
        "p50_ms": percentile(ms, 0.50),
        "p90_ms": percentile(ms, 0.90),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "errors": tally.errors,
        "not_sent": len(bodies) - done - tally.statuses["connection error or timeout"],
        "statuses": dict(tally.statuses),
        "first_error": tally.first_error,
        "server_cpu_s": server_cpu,
        "server_cpu_us_per_request": server_cpu / max(done, 1) * 1e6,
        "server_cpu_share_of_one_core": server_cpu / wall,
        "client_cpu_s": client_cpu,
        "client_cpu_us_per_request": client_cpu / max(done, 1) * 1e6,
        "others_cpu_cores": max(0.0, others) / wall,
        "sample_response": json.loads(tally.last_body) if tally.last_body else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", type=Path, help="reuse this SQLite store (default: temp file)")
    parser.add_argument(
        "--requests", type=int, default=20_000, help="timed requests (default 20000)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        help="untimed random requests first (default: one per filled mask, 8191, which "
        "loads every block into the server's memo; 0 for none)",
    )
    parser.add_argument("--concurrency", type=int, default=32, help="clients at once (32)")
    parser.add_argument(
        "--client",
        choices=("lean", "raw", "httpx"),
        default="lean",
        help="HTTP client: lean (default; protocol callbacks), raw (asyncio streams), httpx",
    )
    parser.add_argument(
        "--loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the client's event loop (auto: uvloop when installed)",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=300.0, help="stop the timed phase after (300)"
    )
    parser.add_argument(
        "--rate",
        type=float,
        help="open loop: offer this many requests/s (at most --concurrency in flight) "
        "instead of sending each as soon as the last is answered",
    )
    parser.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--memo-solver", help="our console script (default: beside python)")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="run the server under cProfile and write its stats to FILE (slows it down: "
        "the figures of such a run are not the benchmark's)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(
        parser,
        requests=TARGET_MIN_REQUESTS,
        rps=TARGET_RPS,
        p50_ms=TARGET_P50_MS,
        p99_ms=TARGET_P99_MS,
    )
    args = parser.parse_args()
    if min(args.requests, args.concurrency, args.max_seconds, args.rate or 1) <= 0:
        parser.error("--requests, --concurrency, --max-seconds and --rate must be positive")
    if args.warmup is not None and args.warmup < 0:
        parser.error("--warmup must not be negative")
    mode = "closed loop" if args.rate is None else f"open loop at {args.rate:g} req/s"

    command = memo_solver_command(args.memo_solver)
    bodies = make_bodies(args.seed, args.requests, args.rules)
    if args.warmup is None:
        warm_bodies = every_mask_bodies(args.seed + 1, args.rules)
    else:
        warm_bodies = make_bodies(args.seed + 1, args.warmup, args.rules)
    with tempfile.TemporaryDirectory(prefix="load-api-") as tmp:
        store = str(args.store or Path(tmp) / "warm.sqlite3")
        solve = precompute_cli(command, store, args.rules)
        port = free_port()
        argv = [command, "--store", store, "serve", "--host", "127.0.0.1", "--port", str(port)]
        with open(Path(tmp) / "server.log", "w+b") as log:
            profiler = [sys.executable, "-m", "cProfile", "-o", str(args.profile)]
            launch = [*profiler, *argv] if args.profile else argv
            server = subprocess.Popen(launch, env=child_env(), stdout=log, stderr=log)
            try:
                ready_s = wait_ready(port, server, 60.0)
                warm = None
                if warm_bodies:  # closed loop: as fast as the server goes
                    warm = run_phase(port, server.pid, warm_bodies, args, None)
                timed = run_phase(port, server.pid, bodies, args, args.rate)
            except BaseException:
                log.seek(0)
                sys.stderr.write(log.read().decode(errors="replace")[-3000:])
                raise
            finally:
                server.send_signal(signal.SIGINT)
                try:
                    _, _, usage = os.wait4(server.pid, 0)
                    server.returncode = 0
                    server_total_cpu = usage.ru_utime + usage.ru_stime
                    server_rss_mb = usage.ru_maxrss / 1024
                except ChildProcessError:
                    server_total_cpu = server_rss_mb = math.nan

    targets = [
        Target("timed requests", timed["requests"], args.target_requests, at_least=True),
        Target("requests/s", timed["requests_per_s"], args.target_rps, at_least=True),
        Target("p50 ms", timed["p50_ms"], args.target_p50_ms),
        Target("p99 ms", timed["p99_ms"], args.target_p99_ms),
        Target.holds("no error", timed["errors"] == 0),
    ]
    result = {
        "server": [*argv[:2], "<store>", *argv[3:-1], "<port>"],
        "client": args.client,
        "mode": mode,
        "concurrency": args.concurrency,
        "seed": args.seed,
        "precompute": solve,
        "ready_s": ready_s,
        "warmup": warm,
        "timed": timed,
        "server_total_cpu_s": server_total_cpu,
        "server_peak_rss_mb": server_rss_mb,
        "load_average": os.getloadavg(),
    }
    if args.json:
        return verdict(targets, result)
    print(
        f"POST {PATH}: {timed['requests']} requests, {mode}, concurrency {args.concurrency}, "
        f"client {args.client}, one uvicorn process (ready in {ready_s:.2f} s)"
    )
    for name, row in (("warm-up (untimed)", warm), ("timed", timed)):
        if row is None:
            continue
        print(
            f"  {name:<18} {row['requests']:>6} req in {row['wall_s']:6.2f} s = "
            f"{row['requests_per_s']:7.0f} req/s; ms p50 {row['p50_ms']:.2f} "
            f"p90 {row['p90_ms']:.2f} p99 {row['p99_ms']:.2f} max {row['max_ms']:.2f}; "
            f"errors {row['errors']}"
        )
    print(
        f"  server CPU {timed['server_cpu_s']:.2f} s ({timed['server_cpu_us_per_request']:.0f} "
        f"us/request, {timed['server_cpu_share_of_one_core']:.0%} of a core); client CPU "
        f"{timed['client_cpu_s']:.2f} s ({timed['client_cpu_us_per_request']:.0f} us/request); "
        f"other processes {timed['others_cpu_cores']:.2f} cores"
    )
    print(
        f"  server process: {server_total_cpu:.2f} CPU s in all, peak RSS "
        f"{server_rss_mb:.0f} MB; load average {os.getloadavg()[0]:.2f}"
    )
    if timed["first_error"]:
        print(f"  first error: {timed['first_error']}")
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
