"""The job queue is an object built beside the store and handed to whoever queues jobs.

A Redis URL opens a store and its queue; an SQLite file a store alone. The service, the
command line and the workers queue and read jobs on the queue they are given, never on a
queue guessed from the store's type: a service given a Redis store and no queue has no
background jobs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.api_support import api_client, error_of

from memo_solver.jobs import queue as jobs
from memo_solver.jobs.queue import JobQueue
from memo_solver.jobs.storage import open_store_and_queue
from memo_solver.service.app import ApiSettings
from memo_solver.service.settings import ADMIN_TOKEN_ENV
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore

TOKEN = "s3cret-operator-token"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}
QUICK = ApiSettings(deadline_s=30.0)


def test_a_redis_url_opens_a_store_and_its_queue_an_sqlite_file_a_store_alone(
    tmp_path: Path,
) -> None:
    store, queue = open_store_and_queue("redis://127.0.0.1:6379/0")
    assert isinstance(store, RedisStore)
    assert isinstance(queue, JobQueue)
    assert queue.store is store
    store, queue = open_store_and_queue(tmp_path / "memo.sqlite")
    assert isinstance(store, SQLiteStore)
    assert queue is None


async def test_the_queue_reads_what_was_queued_beside_its_store(redis_url: str) -> None:
    store, queue = open_store_and_queue(redis_url)
    assert queue is not None
    async with store:
        job = jobs.Job.precompute("yahtzee-lower")
        assert await queue.enqueue(job) == (job.id, True)
        assert await queue.enqueue(job) == (job.id, False)
        record = await queue.record(job.id)
        assert record is not None
        assert record["status"] == "queued"
        await queue.beat("w-test", {"id": "w-test"}, 60)
        assert await queue.live_worker_count() == 1
        assert [w["id"] for w in await queue.live_workers()] == ["w-test"]
        assert (await queue.recent_jobs())[0] == 1


async def test_a_service_given_no_queue_has_no_jobs_even_on_redis(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    with_queue = RedisStore(redis_url)
    async with with_queue:
        await JobQueue(with_queue).beat("w-test", {"id": "w-test"}, 60)
    async with api_client(lambda: RedisStore(redis_url), QUICK) as client:
        job = await client.post("/v1/jobs/precompute", json={"rules": "yazy"}, headers=OPERATOR)
        coverage = await client.get("/v1/rules/yazy/coverage")
    assert "background jobs need the shared Redis store" in error_of(job, 409, "store")
    assert coverage.json()["workers_alive"] == 0
    async with api_client(redis_url, QUICK) as client:
        job = await client.post("/v1/jobs/precompute", json={"rules": "yazy"}, headers=OPERATOR)
        coverage = await client.get("/v1/rules/yazy/coverage")
    assert job.status_code == 202, job.text
    assert coverage.json()["workers_alive"] == 1
