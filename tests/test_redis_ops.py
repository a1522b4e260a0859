"""Running the Redis side as an operator does: what health, coverage and status cost, what
grows, and what a paused worker, a lost Redis or a deleted rule set do.

- health, coverage, ``status`` and ``worker --check`` never SCAN (a user denied SCAN and
  KEYS runs them all), and live claims are counted in a set that holds about the live
  ones only;
- every command and script of a worker, the CLI and the store runs on a one-node Redis
  Cluster, which refuses keys of two slots in one call;
- a finished or failed job's record expires (configurable), a queued one never; the
  stream is trimmed of what every worker acknowledged, never of a queued job; ``status``
  lists the recent jobs from their index, a live one's count beside the store's blocks;
- a cold API request past its deadline hands its state to the workers, once;
- a precompute whose blocks were deleted runs again, and ``--wait`` with no live worker
  says so at once;
- a worker paused past its lease goes on without a restart, and one whose Redis comes
  back serves at once, whatever its back-off had grown to;
- ``status --verify`` counts the stored blocks that fail to decode.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import pytest
import redis
from support.api_support import LOWER_PIN, TOL, UPPER_PIN, api_client, error_of
from support.redis_server import RedisServer, free_port
from support.worker_support import (
    ENV,
    Children,
    check,
    cli,
    cli_json,
    heartbeat,
    job_record,
    json_of,
    layout_of,
    pending,
    refused_jobs,
    start_workers,
    stored_blocks,
    wait_for,
    with_store,
)

from memo_solver.core.engine import namespace, namespace_of, open_engine
from memo_solver.core.store import Claim, Store
from memo_solver.games.yahtzee.need_entries import need_entry
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.jobs import queue as jobs
from memo_solver.service.app import ApiSettings
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.redis_client import standalone_client
from memo_solver.stores.sqlite import SQLiteStore

T = TypeVar("T")
LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])
LOWER_NS = namespace(LOWER)
UPPER = YahtzeeGame(RULE_SETS["yahtzee-upper"])
YAHTZEE_NS = namespace(YahtzeeGame(RULE_SETS["yahtzee"]))


async def until(probe: Callable[[], Awaitable[T | None]]) -> T:
    """Ask ``probe`` every 20 ms until it answers something truthy (bound it with
    ``anyio.fail_after``)."""
    while True:
        answer = await probe()
        if answer:
            return answer
        await anyio.sleep(0.02)


# --- health and coverage in O(1) -----------------------------------------------------------


@pytest.fixture
def no_scan_url(redis_url: str, r: redis.Redis) -> Iterator[str]:
    """The session Redis as a user who may run anything but SCAN and KEYS."""
    r.acl_setuser(
        "noscan",
        enabled=True,
        nopass=True,
        keys=["*"],
        channels=["*"],
        categories=["+@all"],
        commands=["-scan", "-keys"],
    )
    try:
        yield redis_url.replace("redis://", "redis://noscan:any@")
    finally:
        r.acl_deluser("noscan")


def test_health_coverage_status_and_worker_check_never_scan(
    no_scan_url: str, r: redis.Redis
) -> None:
    """Whatever else the database holds, none of them walks the keyspace."""

    async def look(store: RedisStore) -> tuple[Any, ...]:
        await store.try_claim(LOWER_NS, ["held"], "the-test", 60)
        await store.commit(LOWER_NS, {"a": b"1", "b": b"2"}, None)
        await jobs.beat(await store.client(), "w-test", {"id": "w-test"}, 60)
        await jobs.enqueue(await store.client(), jobs.Job.precompute("yahtzee-lower"))
        return (
            await store.coverage(LOWER_NS),
            await jobs.live_worker_count(await store.client()),
            [w["id"] for w in await jobs.live_workers(await store.client())],
            await jobs.recent_jobs(await store.client()),
        )

    coverage, alive, workers, (kept, recent) = with_store(no_scan_url, look)
    assert (coverage.blocks, coverage.claims) == (2, 1)
    assert (alive, workers) == (1, ["w-test"])
    assert kept == 1
    assert [job["kind"] for job in recent] == ["precompute"]
    status = cli_json(no_scan_url, "status")
    assert status["rule_sets"]["yahtzee-lower"]["blocks_done"] == 2
    assert [w["id"] for w in status["workers"]] == ["w-test"]
    assert check(no_scan_url, "--id", "w-test").returncode == 0


async def test_the_claims_set_keeps_only_about_the_live_claims(redis_url: str) -> None:
    """Lapsed claims leave the set at the next claim: it never grows with the work done."""
    claims = redis_keys.Layout(LOWER_NS, 1).claims(0)
    async with RedisStore(redis_url, groups=1) as store:  # one claims set holds them all
        await store.try_claim(LOWER_NS, ["a", "b", "c"], "short", 0.05)

        async def lapsed() -> bool:
            return (await store.coverage(LOWER_NS)).claims == 0

        with anyio.fail_after(5):
            await until(lapsed)
        assert await (await store.client()).zcard(claims) == 3
        await store.try_claim(LOWER_NS, ["d"], "long", 60)
        assert await (await store.client()).zcard(claims) == 1
        await store.release(LOWER_NS, ["d"], "long")
        assert await (await store.client()).zcard(claims) == 0


def test_status_reports_the_namespaces_own_size_not_the_servers(
    redis_url: str, r: redis.Redis
) -> None:
    r.set("someone-elses", b"x" * 2_000_000)
    cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--here")
    status = cli_json(redis_url, "status")
    groups = layout_of(r, LOWER_NS).block_groups()
    hash_bytes = sum(int(r.memory_usage(group) or 0) for group in groups)
    assert status["size_basis"] == "redis-memory-usage"
    assert status["size_bytes"] == status["rule_sets"]["yahtzee-lower"]["bytes"] == hash_bytes
    assert 0 < status["size_bytes"] < 1_000_000
    words = cli(redis_url, "status").stdout.splitlines()
    assert "sampled by MEMORY USAGE" in words[0]
    # The server's own memory, beside the namespace's: one node, holding every block.
    (node,) = status["nodes"]
    assert node["address"] == redis_url
    assert node["used_memory"] == pytest.approx(int(r.info("memory")["used_memory"]), rel=0.2)
    assert node["blocks"] == {"yahtzee-lower": LOWER.block_count}
    assert any(line.startswith("nodes: 1, Redis used_memory") for line in words)
    assert f"  {redis_url}: " in "\n".join(words)


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_status_shows_the_stores_blocks_beside_a_live_jobs_count(redis_url: str) -> None:
    """A precompute's count is its worker's: it stops where that worker was killed, while
    the other workers' blocks go on landing until the job is taken over. ``status`` shows
    the store's blocks of the job's game beside it, for a game named by the registry and
    one named by a fingerprint (a need table), and leaves a finished job's count alone."""
    need = need_entry(RULE_SETS["yahtzee-lower"], 400).game.fingerprint

    async def queue_killed_jobs(store: RedisStore) -> list[str]:
        client = await store.client()
        ids = []
        for rules, held in (("yahtzee-lower", 3), (need, 2)):
            job_id, _ = await jobs.enqueue(client, jobs.Job.precompute(rules))
            assert await jobs.start(client, job_id, status="running", worker="w-killed")
            await jobs.update(client, job_id, blocks_done=1, blocks_total=held + 10)
            ns = LOWER_NS if rules == "yahtzee-lower" else namespace_of(need)
            await store.commit(ns, {f"k{i}": b"1" for i in range(held)}, None)
            ids.append(job_id)
        return ids

    lower_id, need_id = with_store(redis_url, queue_killed_jobs)
    listed = {job["id"]: job for job in cli_json(redis_url, "status")["jobs"]}
    assert (listed[lower_id]["blocks_done"], listed[lower_id]["blocks_stored"]) == (1, 3)
    assert (listed[need_id]["blocks_done"], listed[need_id]["blocks_stored"]) == (1, 2)
    words = cli(redis_url, "status").stdout
    assert (
        f"{lower_id}: precompute yahtzee-lower  -> running (1/13 blocks), 3 in the store" in words
    )
    assert f"{need_id}: precompute {need}  -> running (1/12 blocks), 2 in the store" in words

    async def finish(store: RedisStore) -> None:
        await jobs.finish(await store.client(), lower_id, 60, status="done", blocks_done=13)

    with_store(redis_url, finish)
    listed = {job["id"]: job for job in cli_json(redis_url, "status")["jobs"]}
    assert "blocks_stored" not in listed[lower_id]


# --- one slot per call: everything on a one-node cluster -----------------------------------


@pytest.fixture
def one_node_cluster_url(cluster_redis: RedisServer) -> str:
    with cluster_redis.client() as client:
        client.flushall()
    return cluster_redis.url


def test_a_worker_the_cli_and_the_store_run_on_a_one_node_cluster(
    one_node_cluster_url: str, children: Children
) -> None:
    """A cluster refuses a call whose keys are in two slots (CROSSSLOT), and a script that
    touches a key it was not given: every call here passed that check."""

    async def every_store_call(store: RedisStore) -> list[Any]:
        async with store:
            ns = namespace(UPPER)
            answers: list[Any] = [await store.try_claim(ns, ["x", "y"], "t", 30)]
            await store.renew(ns, ["x", "y"], "t", 30)
            await store.release(ns, ["x"], "t")
            await store.commit(ns, {"y": b"1"}, "t")
            await store.wait(ns, "y", 1)
            answers += [await store.keys(ns), await store.coverage(ns)]
            async with open_engine(UPPER, store) as engine:
                answers.append(float((await engine.block(UPPER.root())).flat[0]))
            job_id, _ = await jobs.enqueue(
                await store.client(), jobs.Job.precompute("yahtzee-upper")
            )
            await jobs.finish(await store.client(), job_id, 60, status="done")
            await jobs.beat(await store.client(), "w-test", {"id": "w-test"}, 60)
            await jobs.forget_worker(await store.client(), "w-test")
            answers += [
                await jobs.recent_jobs(await store.client()),
                await jobs.trim_stream(await store.client()),
            ]
            return answers

    answers = with_store(one_node_cluster_url, every_store_call)
    assert answers[0] == {"x": Claim.CLAIMED, "y": Claim.CLAIMED}
    assert answers[3] == pytest.approx(UPPER_PIN, abs=TOL)
    with redis.Redis.from_url(one_node_cluster_url) as r:
        start_workers(children, r, one_node_cluster_url, ["w1"])
        solved = cli_json(one_node_cluster_url, "precompute", "--rules", "yahtzee-lower", "--wait")
        assert solved["value"] == pytest.approx(LOWER_PIN, abs=TOL)
        status = cli_json(one_node_cluster_url, "status")
        assert status["rule_sets"]["yahtzee-lower"]["blocks_done"] == 128
        assert [w["id"] for w in status["workers"]] == ["w1"]
        assert check(one_node_cluster_url, "--id", "w1").returncode == 0
    assert "CROSSSLOT" not in children.logs()


# --- nothing grows for ever ------------------------------------------------------------------


async def test_a_job_record_expires_once_finished_or_failed_never_while_queued(
    redis_url: str, r: redis.Redis
) -> None:
    async with RedisStore(redis_url) as store:
        job = jobs.Job.precompute("yahtzee-lower")
        assert await jobs.enqueue(await store.client(), job) == (job.id, True)
        assert r.pttl(redis_keys.job(job.id)) == -1  # queued: kept
        await jobs.finish(await store.client(), job.id, 60, status="failed", error="boom")
        assert 0 < r.pttl(redis_keys.job(job.id)) <= 60_000
        assert await jobs.enqueue(await store.client(), job) == (job.id, True)  # failed: again
        assert r.pttl(redis_keys.job(job.id)) == -1
        assert job_record(r, job.id)["status"] == "queued"
        assert "error" not in job_record(r, job.id)
        await jobs.finish(await store.client(), job.id, 60, status="done")
        assert 0 < r.pttl(redis_keys.job(job.id)) <= 60_000
        assert await jobs.enqueue(await store.client(), job) == (job.id, False)  # done: joined
        assert await jobs.enqueue(await store.client(), job, again_if_done=True) == (job.id, True)


async def test_recent_jobs_forget_the_records_that_expired(redis_url: str, r: redis.Redis) -> None:
    async with RedisStore(redis_url) as store:
        kept, gone = jobs.Job.precompute("yahtzee-lower"), jobs.Job.precompute("yahtzee-upper")
        for job in (kept, gone):
            await jobs.enqueue(await store.client(), job)
        await jobs.finish(await store.client(), gone.id, 0.05, status="done")

        async def expired() -> bool:
            return not r.exists(redis_keys.job(gone.id))

        with anyio.fail_after(5):
            await until(expired)
        count, listed = await jobs.recent_jobs(await store.client())
    assert (count, [job["id"] for job in listed]) == (1, [kept.id])
    assert r.zrange(redis_keys.RECENT_JOBS, 0, -1) == [kept.id.encode()]


async def test_a_trim_drops_only_what_every_worker_acknowledged(
    redis_url: str, r: redis.Redis
) -> None:
    async with RedisStore(redis_url) as store:
        await jobs.ensure_group(await store.client())
        for rules in ("yahtzee-lower", "yahtzee-upper", "yazy"):
            await jobs.enqueue(await store.client(), jobs.Job.precompute(rules))

        def read(count: int) -> list[bytes]:
            entries: Any = r.xreadgroup(
                redis_keys.JOB_GROUP, "reader", {redis_keys.JOB_STREAM: ">"}, count=count
            )
            return [entry_id for entry_id, _ in entries[0][1]]

        def ack(entry_id: bytes) -> None:
            r.xack(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, entry_id)

        def stream() -> list[bytes]:
            entries: Any = r.xrange(redis_keys.JOB_STREAM)
            return [entry_id for entry_id, _ in entries]

        first, second = read(2)
        third = stream()[2]
        ack(first)
        assert await jobs.trim_stream(await store.client()) == 1  # the acknowledged one only
        assert stream() == [second, third]
        ack(second)
        assert await jobs.trim_stream(await store.client()) == 1
        assert stream() == [third]  # queued, unread
        assert await jobs.trim_stream(await store.client()) == 0
        assert read(1) == [third]
        assert await jobs.trim_stream(await store.client()) == 0  # read, not yet acknowledged
        ack(third)
        assert await jobs.trim_stream(await store.client()) == 1
        assert r.xlen(redis_keys.JOB_STREAM) == 0


async def test_a_trim_survives_the_last_acknowledgement_landing_while_it_looks(
    redis_url: str, r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group said one entry was pending; by the time the trim asks which, a worker
    has acknowledged it (XPENDING's summary then has no oldest id)."""
    async with RedisStore(redis_url) as store:
        await jobs.ensure_group(await store.client())
        await jobs.enqueue(await store.client(), jobs.Job.precompute("yahtzee-lower"))
        entries: Any = r.xreadgroup(
            redis_keys.JOB_GROUP, "reader", {redis_keys.JOB_STREAM: ">"}, count=1
        )
        ((entry_id, _),) = entries[0][1]
        look = (await store.client()).xpending

        async def acknowledged_meanwhile(*args: Any, **kwargs: Any) -> Any:
            r.xack(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, entry_id)
            return await look(*args, **kwargs)

        monkeypatch.setattr(await store.client(), "xpending", acknowledged_meanwhile)
        assert await jobs.trim_stream(await store.client()) == 1
        assert r.xlen(redis_keys.JOB_STREAM) == 0


async def test_a_trim_forgets_idle_consumers_that_hold_nothing(
    redis_url: str, r: redis.Redis
) -> None:
    """Each worker process reads under names of its own: the names of those gone must not
    pile up in the group (a live one that reads again is simply made again)."""
    async with RedisStore(redis_url) as store:
        await jobs.ensure_group(await store.client())
        await jobs.enqueue(await store.client(), jobs.Job.precompute("yahtzee-lower"))
        r.xreadgroup(redis_keys.JOB_GROUP, "holds-a-job", {redis_keys.JOB_STREAM: ">"})
        r.xgroup_createconsumer(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, "gone")

        def consumers() -> dict[str, int]:
            rows: Any = r.xinfo_consumers(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP)
            return {row["name"].decode(): int(row["idle"]) for row in rows}

        async def both_idle() -> bool:
            return min(consumers().values()) > 50

        with anyio.fail_after(5):
            await until(both_idle)
        await jobs.trim_stream(await store.client(), idle_consumer_s=3600)
        assert set(consumers()) == {"holds-a-job", "gone"}  # not idle that long
        await jobs.trim_stream(await store.client(), idle_consumer_s=0.05)
    assert set(consumers()) == {"holds-a-job"}  # its entry is pending: kept


def test_a_workers_finished_and_failed_jobs_expire_and_its_stream_is_trimmed(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    (worker,) = start_workers(children, r, redis_url, ["w1"], "--job-ttl", "600")
    cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=60)
    refused_jobs(r, worker, [{"id": "not-a-job", "kind": "bogus", "rules": "yahtzee"}])

    def all_finished() -> list[str] | None:
        members: Any = r.zrange(redis_keys.RECENT_JOBS, 0, -1)
        ids = [member.decode() for member in members]
        statuses = {job_record(r, job_id).get("status") for job_id in ids}
        return ids if statuses <= {"done", "failed"} and pending(r) == 0 else None

    ids = wait_for("every job finished", all_finished, 30)
    assert len(ids) == 1 + len(LOWER.successors(LOWER.root())) + 1  # and the malformed one
    for job_id in ids:
        assert 0 < r.pttl(redis_keys.job(job_id)) <= 600_000, job_id
    assert job_record(r, "not-a-job")["status"] == "failed"
    wait_for("the stream trimmed", lambda: r.xlen(redis_keys.JOB_STREAM) == 0, 10)


# --- the warm job's producer: a cold request past its deadline ----------------------------

COLD = ApiSettings(deadline_s=0.001)
"""Any cold state misses this deadline."""


def _warm_job(rules: str) -> jobs.Job:
    """The start's warm job (any spelling of a state gives the same, canonical job)."""
    return jobs.Job.warm(rules, "start")


@pytest.mark.parametrize("worker_alive", [True, False], ids=["a worker alive", "no worker"])
async def test_cold_requests_hand_their_state_to_the_workers_once(
    redis_url: str, r: redis.Redis, worker_alive: bool
) -> None:
    """Three cold requests for one state: one warm job while it waits in the queue (no
    worker process here, only a heartbeat), none without a live worker."""
    body = {"rules": "yahtzee", "state": "start"}
    async with api_client(redis_url, COLD) as client:
        if worker_alive:
            redis_client = await client.app.state.service.store.client()  # type: ignore[attr-defined]
            await jobs.beat(redis_client, "w-test", {"id": "w-test"}, 60)
        for _ in range(3):
            error_of(await client.post("/v1/value", json=body), 503, "state")
    job = _warm_job("yahtzee")
    if worker_alive:
        assert r.xlen(redis_keys.JOB_STREAM) == 1
        assert job_record(r, job.id)["status"] == "queued"
    else:
        assert r.exists(redis_keys.JOB_STREAM, redis_keys.job(job.id)) == 0


async def test_a_cold_request_is_solved_by_a_live_worker(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    start_workers(children, r, redis_url, ["w1"])
    body = {"rules": "yahtzee-upper", "state": "start"}
    job = _warm_job("yahtzee-upper")
    async with api_client(redis_url, COLD) as client:
        error_of(await client.post("/v1/value", json=body), 503, "state")

        async def done() -> dict[str, str] | None:
            record = job_record(r, job.id)
            return record if record.get("status") == "done" else None

        with anyio.fail_after(60):
            record = await until(done)

        async def answered() -> httpx.Response | None:
            response = await client.post("/v1/value", json=body)
            return response if response.status_code == 200 else None

        with anyio.fail_after(60):
            answer = await until(answered)
    assert record["worker"] == "w1"
    assert answer.json()["value"] == pytest.approx(UPPER_PIN, abs=TOL)


# --- precompute: deleted blocks, no worker ---------------------------------------------------


def test_a_precompute_whose_blocks_were_deleted_runs_again(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    start_workers(children, r, redis_url, ["w1"])
    first = cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=60)
    r.delete(*layout_of(r, LOWER_NS).block_groups())
    assert cli_json(redis_url, "status")["rule_sets"]["yahtzee-lower"]["blocks_done"] == 0
    again = cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=60)
    assert again["job"] == first["job"]
    assert again["value"] == pytest.approx(LOWER_PIN, abs=TOL)
    assert stored_blocks(r, LOWER_NS) == LOWER.block_count


def test_precompute_wait_with_no_live_worker_says_so_at_once(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    done = cli(redis_url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=30)
    assert done.returncode == 69, done.stderr
    (line,) = done.stderr.splitlines()
    assert "no worker is alive" in line
    assert f"memo-solver worker --redis {redis_url}" in line
    assert "--here" in line
    job_id = jobs.Job.precompute("yahtzee-lower").id
    assert job_record(r, job_id)["status"] == "queued"  # a worker started later takes it

    waiting = children.cli(
        "waiting", redis_url, "precompute", "--rules", "yahtzee-lower", "--wait",
        "--wait-for-workers", "--json",
    )  # fmt: skip
    wait_for("the hint", lambda: "waiting for one" in waiting.text(), 30)
    start_workers(children, r, redis_url, ["w1"])
    assert json_of(waiting, 60)["value"] == pytest.approx(LOWER_PIN, abs=TOL)


# --- timeouts, a paused worker, a Redis that comes back ------------------------------------


def test_redis_timeouts_are_explicit_and_the_url_overrides_them() -> None:
    def timeouts(url: str) -> tuple[Any, ...]:
        kwargs = standalone_client(url).connection_pool.connection_kwargs
        names = ("socket_timeout", "socket_connect_timeout", "health_check_interval")
        return tuple(kwargs[name] for name in names)

    assert timeouts("redis://127.0.0.1:1/0") == (5.0, 5.0, 10)
    tuned = (
        "redis://127.0.0.1:1/0?socket_timeout=2.5&socket_connect_timeout=1&health_check_interval=3"
    )
    assert timeouts(tuned) == (2.5, 1.0, 3)
    assert RedisStore(tuned).socket_timeout_s == 2.5
    assert RedisStore("redis://127.0.0.1:1/0").socket_timeout_s == 5.0


def test_a_worker_paused_past_its_reply_timeout_goes_on_without_a_restart(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """SIGSTOP past the reply timeout, the lease and the heartbeat (as a debugger or a VM's
    pause would): the reads in flight expire the moment it resumes, which is no outage."""
    url = f"{redis_url}?socket_timeout=1.5"
    (worker,) = start_workers(children, r, url, ["w1"], "--lease", "1")
    os.kill(worker.pid, signal.SIGSTOP)
    try:
        r.set("pause-marker", 1, px=2500)  # longer than the reply timeout and the lease
        wait_for("the pause to last", lambda: not r.exists("pause-marker"), 10)
        assert heartbeat(r, "w1") is None, "the heartbeat outlived the pause"
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    beat = wait_for("the heartbeat back", lambda: heartbeat(r, "w1"), 20)
    wait_for(
        "two beats more",
        lambda: float((heartbeat(r, "w1") or beat)["beat_at"]) > float(beat["beat_at"]) + 0.5,
        20,
    )
    solved = cli_json(redis_url, "precompute", "--rules", "yahtzee-upper", "--wait", timeout=60)
    assert solved["value"] == pytest.approx(UPPER_PIN, abs=TOL)
    log = worker.text()
    assert "retrying in" not in log, log
    assert log.count(" serving ") == 1, log


def test_a_worker_serves_at_once_when_its_redis_comes_back(
    redis_binary: str, tmp_path: Path, children: Children
) -> None:
    """Its back-off has grown to 8 s when Redis starts: it serves within about a second."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    worker = children.worker(url, "w1")
    wait_for("a back-off of 8 s", lambda: "retrying in 8 s" in worker.text(), 30)
    with (
        RedisServer(tmp_path / "late-redis", port=port, binary=redis_binary) as server,
        server.client() as r,
    ):
        # Without its probes it would sleep out the 8 s; it asks Redis every second.
        wait_for("the worker's heartbeat", lambda: heartbeat(r, "w1"), 6)
    assert worker.process.poll() is None, worker.text()


# --- status --verify -------------------------------------------------------------------------


def _sqlite_cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memo_solver", "--store", str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_status_verify_counts_the_blocks_that_fail_to_decode(
    kind: str, redis_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "memo.sqlite"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _sqlite_cli(path, *args) if kind == "sqlite" else cli(redis_url, *args)

    def open_store() -> Store:
        return SQLiteStore(path) if kind == "sqlite" else RedisStore(redis_url)

    assert run("precompute", "--rules", "yahtzee-lower", "--here").returncode == 0
    keys = sorted(LOWER.successors(LOWER.root()))[:2]
    stored = anyio.run(_damage, open_store(), keys)
    assert stored == 2

    plain = json.loads(run("status", "--json").stdout)["rule_sets"]["yahtzee-lower"]
    assert plain["blocks_done"] == LOWER.block_count  # damaged blocks still count: O(1)
    assert "blocks_damaged" not in plain
    verified = json.loads(run("status", "--verify", "--json").stdout)["rule_sets"]
    assert verified["yahtzee-lower"]["blocks_damaged"] == 2
    assert verified["yahtzee-lower"]["blocks_done"] == LOWER.block_count
    assert {row["blocks_damaged"] for name, row in verified.items() if name != "yahtzee-lower"} == {
        0
    }
    words = run("status", "--verify").stdout
    assert "128 of    128 blocks (100.0%), 0 claims held, 2 damaged" in words


async def _damage(store: Store, keys: list[str]) -> int:
    """Garbage in one block, the other cut short."""
    async with store:
        (good,) = (await store.get_many(LOWER_NS, keys[1:])).values()
        await store.commit(LOWER_NS, {keys[0]: b"garbage", keys[1]: good[:-3]}, None)
        return len(await store.get_many(LOWER_NS, keys))
