"""Real worker and CLI processes on a real Redis, for the end-to-end tests of every game.

Every process a test starts through :class:`Children` (the ``children`` fixture of
conftest.py) is killed at teardown; the logs are files in the test's temporary folder,
printed when the test fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
import redis

from memo_solver.jobs.queue import text
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore

T = TypeVar("T")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")},
    "OPENBLAS_NUM_THREADS": "1",
}
HOST = socket.gethostname()
HEARTBEAT_S = 0.5
ANY_CLAIM = f"{redis_keys.PREFIX}:{{*}}:claim:*"
"""Every claim of every namespace (a SCAN pattern: for tests only)."""


def layout_of(r: redis.Redis | redis.RedisCluster, ns: str) -> redis_keys.Layout:
    """The namespace's layout as its record says (none: the one-group layout)."""
    groups = r.get(redis_keys.layout(ns))
    return redis_keys.Layout(ns, int(groups) if groups else 1)


def stored_blocks(r: redis.Redis | redis.RedisCluster, ns: str) -> int:
    """How many blocks the namespace holds: HLEN summed over its groups."""
    with r.pipeline(transaction=False) as pipe:  # one round trip: a moment, not 256
        for group in layout_of(r, ns).block_groups():
            pipe.hlen(group)
        return sum(int(n) for n in pipe.execute())


def stored_keys(r: redis.Redis | redis.RedisCluster, ns: str) -> set[str]:
    """The namespace's block keys, over its groups."""
    return {text(k) for group in layout_of(r, ns).block_groups() for k in r.hkeys(group)}


def block_hash(r: redis.Redis | redis.RedisCluster, ns: str, key: str) -> str:
    """The group hash that holds (or would hold) the block ``key``."""
    layout = layout_of(r, ns)
    return layout.blocks(layout.group_of(key))


# --- processes -----------------------------------------------------------------------------


@dataclass
class Child:
    """A child process whose output goes to a file."""

    name: str
    process: subprocess.Popen[bytes]
    out: Path
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    def text(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def finish(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)


class Children:
    """The processes of one test; all killed and reaped at teardown, logs kept."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[Child] = []

    def spawn(self, name: str, args: list[str]) -> Child:
        out = self.folder / f"{name}.log"
        with out.open("wb") as sink:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=ENV
            )
        child = Child(name, process, out)
        self.started.append(child)
        return child

    def worker(self, url: str, name: str, *extra: str, entry: Sequence[str] = ("worker",)) -> Child:
        """A worker started as ``python -m worker``, or as ``python -m <entry>`` (the CLI's
        ``memo_solver worker``)."""
        args = [sys.executable, "-m", *entry, "--redis", url, "--id", name]
        return self.spawn(name, [*args, "--heartbeat", str(HEARTBEAT_S), *extra])

    def cli(self, name: str, url: str, *args: str) -> Child:
        return self.spawn(name, [sys.executable, "-m", "memo_solver", "--redis", url, *args])

    def kill_all(self) -> None:
        for child in self.started:
            if child.process.poll() is None:
                child.process.kill()
        for child in self.started:
            child.process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(f"--- {c.name} ---\n{c.text()[-3000:]}" for c in self.started)


def cli(url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memo_solver", "--redis", url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        check=False,
    )


def cli_json(url: str, *args: str, timeout: float = 120) -> Any:
    done = cli(url, *args, "--json", timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", "--redis", url, "--check", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )


def json_of(child: Child, timeout: float) -> Any:
    code = child.finish(timeout)
    text = child.text()
    assert code == 0, text
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert lines, text
    return json.loads(lines[-1])


def with_store(url: str, call: Callable[[RedisStore], Awaitable[T]]) -> T:
    """One call of the store API (on a RedisStore of the test's own), from a sync test: to
    hold a claim as another worker would, or to queue a job as the API does."""

    async def run() -> T:
        store = RedisStore(url)
        try:
            return await call(store)
        finally:
            await store.aclose()

    return anyio.run(run)


# --- reading Redis -------------------------------------------------------------------------


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, every: float = 0.05) -> T:
    """Poll ``probe`` until it answers something truthy; fail naming ``what`` after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def heartbeat(r: redis.Redis | redis.RedisCluster, name: str) -> dict[str, str] | None:
    raw = r.hgetall(redis_keys.worker(name))
    return {text(k): text(v) for k, v in raw.items()} if raw else None


def claim_holders(r: redis.Redis, ns: str | None = None) -> list[str]:
    """The tokens of the live claims (of one namespace, or of all)."""
    pattern = f"{redis_keys.PREFIX}:{{{ns}*}}:claim:*" if ns else ANY_CLAIM
    tokens = [r.get(name) for name in r.scan_iter(match=pattern, count=1000)]
    return [text(t) for t in tokens if t is not None]


def held_by(r: redis.Redis, child: Child, ns: str) -> int:
    """How many claims of ``ns`` the process holds (tokens are host/pid/random)."""
    prefix = f"{HOST}/{child.pid}/"
    return sum(1 for token in claim_holders(r, ns) if token.startswith(prefix))


def job_record(r: redis.Redis, job_id: str) -> dict[str, str]:
    raw = r.hgetall(redis_keys.job(job_id))
    return {text(k): text(v) for k, v in raw.items()}


TAKE_OVER_WITHIN_S = 2.0
"""How soon an idle worker takes a job entry that went stale: at its next look, which is at
most one blocking read of the stream (1 s, memo_solver.jobs.worker) away, then three round
trips to Redis, given another second on a loaded machine. Timers and round trips only: the
worker computes nothing before it writes its name in the job's record."""


def last_touch(r: redis.Redis | redis.RedisCluster, worker: Child) -> float:
    """A ``time.monotonic()`` no later than ``worker``'s last touch of the job entries it
    holds (the earliest, where it holds several): each goes stale the stale time after it,
    and not before. Read from Redis (each entry's idle time, in whole milliseconds), not
    assumed from the heartbeat's period: a worker starved of the CPU touches its entries
    late, so its last touch may lie further back than one period."""
    before = time.monotonic()
    entries = r.xpending_range(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, "-", "+", 1000)

    def owner(entry: dict[str, Any]) -> str:
        consumer = entry["consumer"]  # the worker id, or the id and a slot: "w1/0"
        text = consumer.decode() if isinstance(consumer, bytes) else str(consumer)
        return text.split("/")[0]

    idle_ms = max(int(e["time_since_delivered"]) for e in entries if owner(e) == worker.name)
    return before - (idle_ms + 1) / 1000


def taken_over_by(r: redis.Redis, job_id: str, worker: Child) -> dict[str, str] | None:
    """The job's record once ``worker`` runs the job (taken over from a silent worker)."""
    record = job_record(r, job_id)
    return record if record.get("worker") == worker.name else None


class Stalls:
    """The workers' idle time from ``since`` (a kill) on: the time in which ``count`` (blocks
    stored) did not move. What a dead worker costs the others is time standing idle, which
    this measures apart from the time they spend computing (slower on a loaded machine)."""

    def __init__(self, count: Callable[[], int], since: float) -> None:
        self.count = count
        self.since = since
        self.last, self.last_moved = count(), since

    def until(self, done: Callable[[], T | None], timeout: float) -> tuple[float, T]:
        """The longest stall until ``done`` answers (one going on when this is called counts
        from its start), and the answer. Calls follow each other: no stall is missed."""
        longest = 0.0
        while True:
            answer = done()
            now, current = time.monotonic(), self.count()
            if current != self.last:
                self.last, self.last_moved = current, now
            longest = max(longest, now - self.last_moved)
            if answer:
                return longest, answer
            assert now - self.since < timeout, f"not done {timeout} s after the kill"
            time.sleep(0.02)


def pending(r: redis.Redis) -> int:
    info = r.xpending(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP)
    return int(info["pending"])


def refused_jobs(r: redis.Redis, worker: Child, entries: list[dict[str, str]]) -> list[str]:
    """Put each entry on the job stream as it is, wait until the worker has read and
    acknowledged every one, and return its log's error lines: one "malformed" per entry."""
    for fields in entries:
        r.xadd(redis_keys.JOB_STREAM, fields)  # type: ignore[arg-type]

    def all_read_and_acked() -> bool:
        (group,) = r.xinfo_groups(redis_keys.JOB_STREAM)
        return group["lag"] == 0 and pending(r) == 0

    wait_for("every malformed entry read and acknowledged", all_read_and_acked, 10)
    errors = [line for line in worker.text().splitlines() if " ERROR " in line]
    assert len(errors) == len(entries), worker.text()
    assert all("malformed" in line for line in errors)
    return errors


def start_workers(
    children: Children,
    r: redis.Redis | redis.RedisCluster,
    url: str,
    names: list[str],
    *extra: str,
    entry: Sequence[str] = ("worker",),
) -> list[Child]:
    workers = [children.worker(url, name, *extra, entry=entry) for name in names]
    for worker in workers:
        wait_for(f"{worker.name}'s heartbeat", partial(heartbeat, r, worker.name), 30)
    return workers


def counters_after_a_beat(url: str, names: list[str]) -> dict[str, dict[str, Any]]:
    """The workers' rows of ``status --json``, once each has beaten after this call."""
    since = time.time()
    while True:
        rows = {w["id"]: w for w in cli_json(url, "status")["workers"] if w["id"] in names}
        if len(rows) == len(names) and all(w["beat_at"] > since for w in rows.values()):
            return rows
        assert time.time() - since < 30, rows
        time.sleep(HEARTBEAT_S / 2)
