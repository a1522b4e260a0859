"""The worker loop: jobs from a Redis stream, solved on the shared memo, acknowledged once done.

Delivery is at least once: a job is acknowledged only after its work is committed, and a
job that a silent worker left pending for ``stale_job_s`` is claimed by another. While a
worker runs a job it touches the job's pending entry at every heartbeat, so a long
precompute is never taken from a live worker.

What a job does is its kind's (:mod:`memo_solver.jobs.kinds`): a precompute fans out,
queueing one ``block`` job per successor of the root besides solving the root itself, so
every idle worker joins in; block claims keep any two of them from computing the same
block.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio

from memo_solver.core.engine import Engine, namespace_of, open_engine
from memo_solver.core.engine_pool import EnginePool
from memo_solver.core.errors import UserError
from memo_solver.core.store import StoreUnavailableError
from memo_solver.games.entry import GameEntry, JobRun
from memo_solver.games.registry import game_by_fingerprint, get_game, registry
from memo_solver.jobs.kinds import kind_named
from memo_solver.jobs.queue import Entry, Fields, Job, JobError, JobQueue
from memo_solver.jobs.settings import WorkerSettings
from memo_solver.stores.redis_client import FAULTS

log = logging.getLogger("worker")
_PROCESS_TOKEN = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
"""Claims of this process's engines: kept across reconnections, so that the engines of a
worker that lost Redis take back their predecessors' claims instead of waiting a lease."""
_READ_BLOCK_MS = 1000
POOLED_ENGINES = 8
"""Engines kept open at once for games outside the registry (rule-set files)."""
POOLED_CACHE_BYTES = 1 << 30
"""The memo budget those engines share."""


class Worker:
    def __init__(self, settings: WorkerSettings, queue: JobQueue) -> None:
        """``queue`` is on the Redis the settings name, not yet open: :meth:`run` opens
        its store and closes it when it stops."""
        self.settings = settings
        self.queue = queue
        self.store = queue.store
        # A blocking read must end well within the reply timeout, or every quiet read
        # would look like a hung Redis.
        self._read_block_ms = min(_READ_BLOCK_MS, round(self.store.socket_timeout_s * 500))
        self.engines: dict[str, Engine] = {}
        self._pooled = Counter[str]()
        """What pooled engines (rule-set files, need tables) did, counted as their jobs end:
        the pool closes engines, so their own counters cannot be summed at a heartbeat."""
        self._seen: weakref.WeakKeyDictionary[Engine, Counter[str]] = weakref.WeakKeyDictionary()
        self.pool: EnginePool | None = None
        """Engines for games named by fingerprint, opened while :meth:`run` runs."""
        self.jobs_done = 0
        self.running: dict[str, str] = {}
        """Stream entry id -> job id, for the jobs being served now."""
        self.started_at = time.time()
        self._stopping = False
        self._limiter = anyio.CapacityLimiter(settings.concurrency * settings.threads)

    async def run(self) -> None:
        """Serve jobs until SIGTERM or SIGINT; raise if Redis goes away (the caller retries)."""
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.store)
            await self.store.ping()
            await self.queue.ensure_group()
            log.info(
                "worker %s serving %s (concurrency %d, %d thread(s) per batch, lease %.1f s)",
                self.settings.worker_id,
                self.store.description,
                self.settings.concurrency,
                self.settings.threads,
                self.settings.lease_s,
            )
            stack.push_async_callback(self._forget_heartbeat)
            for name, entry in registry().items():
                self.engines[name] = await stack.enter_async_context(
                    open_engine(
                        entry.game,
                        self.store,
                        lease_s=self.settings.lease_s,
                        compute_limiter=self._limiter,
                        token=f"{_PROCESS_TOKEN}/{name}",
                        threads=self.settings.threads,
                        cache_bytes=self.settings.cache_bytes,
                    )
                )
            async with anyio.create_task_group() as tg:
                self.pool = EnginePool(
                    self.store,
                    self._limiter,
                    tg,
                    capacity=POOLED_ENGINES,
                    cache_bytes=POOLED_CACHE_BYTES,
                    lease_s=self.settings.lease_s,
                    threads=self.settings.threads,
                )
                tg.start_soon(self._heartbeat_forever)
                async with anyio.create_task_group() as serving:
                    tg.start_soon(self._stop_on_signal, serving.cancel_scope)
                    for slot in range(self.settings.concurrency):
                        serving.start_soon(self._serve, f"{self.settings.worker_id}/{slot}", slot)
                tg.cancel_scope.cancel()
        log.info("worker %s stopped after %d jobs", self.settings.worker_id, self.jobs_done)

    async def _forget_heartbeat(self) -> None:
        # Failing is fine: the key expires by itself within a few heartbeats.
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(2),
            contextlib.suppress(*FAULTS),
        ):
            await self.queue.forget_worker(self.settings.worker_id)

    async def _stop_on_signal(self, serving: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info(
                    "%s: taking no new jobs; work in progress is cancelled and its claims "
                    "released (unacknowledged jobs go to another worker)",
                    signal.Signals(signum).name,
                )
                self._stopping = True
                serving.cancel()
                return

    def counters(self) -> dict[str, int]:
        engines = self.engines.values()
        return {
            "blocks_computed": sum(e.counters.computed for e in engines) + self._pooled["c"],
            "blocks_waited": sum(e.counters.waited for e in engines) + self._pooled["w"],
            "blocks_fetched": sum(e.counters.fetched for e in engines) + self._pooled["f"],
            "jobs_done": self.jobs_done,
        }

    def _count_pooled(self, engine: Engine) -> None:
        """Add what ``engine`` did since it was last counted (jobs side by side on one
        engine are each counted once: the later one adds only what came after)."""
        counters = engine.counters
        now = Counter(c=counters.computed, w=counters.waited, f=counters.fetched)
        self._pooled.update(now - self._seen.get(engine, Counter()))
        self._seen[engine] = now

    async def _heartbeat_forever(self) -> None:
        """Beat, keep this worker's running jobs its own, and trim the stream of what
        every worker has acknowledged (three cheap commands; see jobs.trim_stream)."""
        while True:
            fields: Fields = {
                "id": self.settings.worker_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started_at": f"{self.started_at:.3f}",
                "beat_at": f"{time.time():.3f}",
                "running": ",".join(self.running.values()),
                **{name: str(count) for name, count in self.counters().items()},
            }
            await self.queue.beat(self.settings.worker_id, fields, self.settings.heartbeat_ttl_s)
            if self.running:
                # Touching our pending entries keeps them from looking abandoned.
                await self.queue.touch(self.settings.worker_id, list(self.running))
            await self.queue.trim_stream()
            await anyio.sleep(self.settings.heartbeat_s)

    async def _own_backlog(self, owner: str) -> Entry | None:
        """An entry ``owner`` took and never acknowledged (before a restart or a lost Redis)."""
        entry = await self.queue.take_own(owner)
        if entry is not None:
            log.info("resuming job entry %s that %s had taken", entry[0], owner)
        return entry

    async def _serve(self, consumer: str, slot: int) -> None:
        # The heartbeat files running entries under the worker id: slot 0 takes those back.
        owners = [consumer, self.settings.worker_id] if slot == 0 else [consumer]
        for owner in owners:
            while not self._stopping:
                entry = await self._own_backlog(owner)
                if entry is None:
                    break
                await self._handle(*entry)
        while not self._stopping:
            entry = await self.queue.take(consumer, self.settings.stale_job_s, self._read_block_ms)
            if entry is not None:
                await self._handle(*entry)

    async def _handle(self, entry_id: str, fields: dict[str, str]) -> None:
        try:
            job = Job.parse(fields)
        except JobError as exc:
            log.error("job entry %s is malformed (%s): acknowledged and dropped", entry_id, exc)
            if fields.get("id"):
                await self._finish(fields["id"], status="failed", error=str(exc))
            await self.queue.ack(entry_id)
            return
        started = await self.queue.start(
            job.id,
            status="running",
            worker=self.settings.worker_id,
            started_at=f"{time.time():.3f}",
        )
        if not started:  # failed while queued: its rule set was deleted
            log.info("job %s failed before it ran: acknowledged and dropped", job.id)
            await self.queue.ack(entry_id)
            return
        self.running[entry_id] = job.id
        log.info("job %s: %s %s %s", job.id, job.kind, job.rules, job.state)
        try:
            await self._run(job)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self.queue.update(job.id, status="queued", worker="")
            raise
        except (StoreUnavailableError, *FAULTS):
            raise  # the store's fault, not the job's: left pending, retried after reconnecting
        except Exception as exc:
            log.exception("job %s failed", job.id)
            await self._finish(job.id, status="failed", error=repr(exc))
            await self.queue.ack(entry_id)
            return
        finally:
            self.running.pop(entry_id, None)
        await self._finish(job.id, status="done", finished_at=f"{time.time():.3f}")
        await self.queue.ack(entry_id)
        self.jobs_done += 1
        log.info("job %s done", job.id)

    async def _finish(self, job_id: str, **fields: str) -> None:
        await self.queue.finish(job_id, self.settings.job_ttl_s, **fields)

    @asynccontextmanager
    async def _engine(self, job: Job) -> AsyncIterator[tuple[Engine, GameEntry]]:
        """The job's game and engine: a registry game's, or one a fingerprint names (a
        rule-set file's, or a need table's), from the definition the store keeps beside
        its blocks."""
        if job.rules in self.engines:
            yield self.engines[job.rules], get_game(job.rules)
            return
        for name, engine in self.engines.items():
            if engine.game.fingerprint == job.rules:  # a copy of a built-in, by fingerprint
                yield engine, get_game(name)
                return
        definition = await self.store.definition(namespace_of(job.rules))
        try:
            entry = game_by_fingerprint(job.rules, definition)
        except UserError as exc:
            raise JobError(str(exc)) from None
        assert self.pool is not None, "the worker is not running"
        async with self.pool.use(entry.game, None) as engine:
            try:
                yield engine, entry
            finally:
                self._count_pooled(engine)

    async def _run(self, job: Job) -> None:
        async with self._engine(job) as (engine, entry):
            await self._run_on(job, engine, entry)

    async def _run_on(self, job: Job, engine: Engine, entry: GameEntry) -> None:
        async def record(**fields: str | int | float) -> None:
            await self.queue.update(job.id, **fields)

        async def queue(kind: str, state: str) -> None:
            again = Job.parse({"kind": kind, "rules": job.rules, "state": state})
            await self.queue.enqueue(again, again_if_done=True)

        run = JobRun(entry, engine, job.state, self._limiter, record, queue)
        await kind_named(job.kind).run(run)
