"""Background jobs: what the CLI and the API enqueue and the workers run.

A job is content-addressed: its id is a hash of its kind, game (a rule set's name or a
Dice of Doom size, see :mod:`memo_solver.games.registry`) and state, so asking
twice for the same precompute merges into one job instead of doing the work twice. Jobs
travel on a Redis stream read by a consumer group (at-least-once: a job a dead worker
took stays pending until another worker claims it); each job also has a record (a hash)
that says where it stands.

Nothing here grows for ever or needs a SCAN: a finished or failed job's record expires
(a day by default), the workers trim the stream of the entries every group has
acknowledged, and the recent jobs and the live workers are sorted sets scored by when
they lapse, pruned as they are read (see :mod:`memo_solver.stores.redis_keys`).

One module of about 520 lines: the job's message, its record, the stream and the
heartbeats are one protocol on one hash tag, whose Lua scripts read each other's keys
(enqueue writes the record, the index and the stream in one step; a trim reads what the
heartbeats' consumers hold), so splitting them would spread one invariant over files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final

from redis.exceptions import ResponseError
from redis.typing import EncodableT, FieldT

from memo_solver.core.engine import namespace
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import get_game, value_table
from memo_solver.jobs.kinds import JobError as JobError, kind_named
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore, milliseconds
from memo_solver.stores.redis_client import Client
from memo_solver.stores.redis_scripts import LUA_FREES, LUA_NOW_MS, LUA_WRITES

log = logging.getLogger("worker")
"""The workers' log: a worker taking over a job says so from here."""


@dataclass(frozen=True)
class Job:
    kind: str
    """A name of :func:`memo_solver.jobs.kinds.kinds`, which says what the job does."""
    rules: str
    state: str = ""
    """For ``warm`` and ``stats``: the state as canonical JSON text; for ``block``: the
    block key (the pieces a precompute fans out into, so that every idle worker joins)."""

    @property
    def id(self) -> str:
        content = json.dumps([self.kind, self.rules, self.state], separators=(",", ":"))
        return hashlib.sha256(content.encode()).hexdigest()[:16]

    def fields(self) -> Fields:
        return {"id": self.id, "kind": self.kind, "rules": self.rules, "state": self.state}

    @classmethod
    def precompute(cls, rules: str) -> Job:
        return cls.parse({"kind": "precompute", "rules": rules})

    @classmethod
    def warm(cls, rules: str, state_text: str) -> Job:
        return cls.parse({"kind": "warm", "rules": rules, "state": state_text})

    @classmethod
    def stats(cls, rules: str, state_text: str) -> Job:
        """The exact score distribution from a state; the answer lands in the job record."""
        return cls.parse({"kind": "stats", "rules": rules, "state": state_text})

    @classmethod
    def block(cls, rules: str, key: str) -> Job:
        return cls.parse({"kind": "block", "rules": rules, "state": key})

    @classmethod
    def parse(cls, fields: dict[str, str]) -> Job:
        """Validate a job's fields (from the stream or a user) into a canonical job."""
        kind = kind_named(fields.get("kind", ""))
        name = fields.get("rules", "")
        state = fields.get("state", "")
        if value_table(name) is not None:
            # A game named by a fingerprint its family owns (one outside the registry, or
            # any value table but a built-in's mean): the worker reads its definition from
            # the store and checks the state there (producers send it written one way).
            return cls(kind.name, name, "" if kind.state is None else state)
        try:
            entry = get_game(name)
            return cls(
                kind.name, entry.name, "" if kind.state is None else kind.state(entry, state)
            )
        except ValueError as exc:
            raise JobError(str(exc)) from None


Fields = dict[FieldT, EncodableT]


def text(value: object) -> str:
    """A Redis reply item as text (replies are bytes; this client does not decode)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _text(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {text(k): text(v) for k, v in raw.items()}


async def enqueue(redis: Client, job: Job, *, again_if_done: bool = False) -> tuple[str, bool]:
    """Add the job unless the same job is already queued, running or (unless
    ``again_if_done``) done.

    Returns the id and whether it was newly queued. A failed or interrupted job is queued
    again, with a fresh record that keeps no expiry until it finishes.
    """
    queued = await redis.register_script(_ENQUEUE)(
        keys=_enqueue_keys(job), args=_enqueue_args(job, again_if_done)
    )
    return job.id, bool(queued)


async def enqueue_large(redis: Client, job: Job, cap: int) -> tuple[str, bool] | None:
    """:func:`enqueue` (a done job queued again) of a solve past a service's cold budget,
    unless ``cap`` such solves are queued or running already: then None. The same job
    queued or running already is no new solve, so never refused."""
    members = [text(m) for m in await redis.zrange(redis_keys.LARGE_SOLVES, 0, -1)]
    keys = [*_enqueue_keys(job), redis_keys.LARGE_SOLVES, *map(redis_keys.job, members)]
    queued = await redis.register_script(_ENQUEUE_LARGE)(
        keys=keys, args=[*_enqueue_args(job, again_if_done=True), cap]
    )
    return None if queued == -1 else (job.id, bool(queued))


def _enqueue_keys(job: Job) -> list[str]:
    return [redis_keys.job(job.id), redis_keys.RECENT_JOBS, redis_keys.JOB_STREAM]


def _enqueue_args(job: Job, again_if_done: bool) -> list[EncodableT]:
    stream_fields = [item for pair in job.fields().items() for item in pair]
    extra = ["status", "queued", "queued_at", f"{time.time():.3f}"]
    return ["1" if again_if_done else "0", job.id, len(stream_fields), *stream_fields, *extra]


# KEYS: the job's record, the recent-jobs index, the stream. ARGV: '1' to queue a done job
# again, the job id, the count of the stream's field items, those items, then the record's
# own (status, queued_at), up to ARGV[last]. Check, mark and add in one step, so two clients
# asking at once queue the job once.
_ENQUEUE_BODY: Final = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' or status == 'running' or (status == 'done' and ARGV[1] == '0') then
  return 0
end
local n = tonumber(ARGV[3])
local stream_fields = {unpack(ARGV, 4, 3 + n)}
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4, last))
redis.call('ZADD', KEYS[2], 'inf', ARGV[2])
redis.call('XADD', KEYS[3], '*', unpack(stream_fields))
return 1
"""
_ENQUEUE: Final = LUA_WRITES + "local last = #ARGV\n" + _ENQUEUE_BODY

# KEYS: as _ENQUEUE's, then the large solves' set and the records of its members as read
# just before. ARGV: as _ENQUEUE's, then the cap. The members read are dropped from the set
# unless still queued or running; one added since is new, so unfinished: the count is exact.
# -1: the cap is reached.
_ENQUEUE_LARGE: Final = (
    LUA_WRITES
    + """
local last = #ARGV - 1
local current = redis.call('HGET', KEYS[1], 'status')
if current ~= 'queued' and current ~= 'running' then
  for i = 5, #KEYS do
    local other = redis.call('HGET', KEYS[i], 'status')
    if other ~= 'queued' and other ~= 'running' then
      redis.call('ZREM', KEYS[4], string.match(KEYS[i], '[^:]+$'))
    end
  end
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[#ARGV]) then
    return -1
  end
  redis.call('ZADD', KEYS[4], 0, ARGV[2])
end
"""
    + _ENQUEUE_BODY
)


async def enqueue_precompute(store: RedisStore, entry: GameEntry) -> tuple[str, bool]:
    """Queue a game's precompute: again, even after it was done, while the store lacks some
    of its blocks (deleted since, or lost with a Redis that had not written them yet), so
    that "done" never stands for blocks that are gone."""
    game = entry.game
    if entry.definition is not None:  # what the workers solve it from
        await store.put_definition(namespace(game), entry.definition)
    covered = await store.coverage(namespace(game))
    return await enqueue(
        await store.client(),
        Job.precompute(entry.job_name),
        again_if_done=covered.blocks < game.block_count,
    )


async def ensure_group(redis: Client) -> None:
    """Create the stream and the workers' group, reading jobs queued before it existed."""
    try:
        await redis.xgroup_create(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, "0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


async def job_record(redis: Client, job_id: str) -> dict[str, str] | None:
    raw = await redis.hgetall(redis_keys.job(job_id))
    return _text(raw) if raw else None


async def update(redis: Client, job_id: str, **fields: str | int | float) -> None:
    mapping: Fields = {k: str(v) for k, v in fields.items()}
    await redis.hset(redis_keys.job(job_id), mapping=mapping)


async def start(redis: Client, job_id: str, **fields: str | int | float) -> bool:
    """Mark a job running, unless its record says it failed already (its rule set deleted
    while it was queued: see :func:`fail_jobs_of`); whether it may run."""
    flat = [str(item) for pair in fields.items() for item in pair]
    return bool(await redis.register_script(_START)(keys=[redis_keys.job(job_id)], args=flat))


# KEYS: the job's record. ARGV: field items. 0, writing nothing, for a failed job.
_START: Final = (
    LUA_WRITES
    + """
if redis.call('HGET', KEYS[1], 'status') == 'failed' then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""
)


async def finish(redis: Client, job_id: str, ttl_s: float, **fields: str | int | float) -> None:
    """Write a job's last fields (its status: done or failed) and let the record expire
    ``ttl_s`` later, in one step; the recent-jobs index learns when it goes. A record that
    says failed already keeps its fields: what failed the job (its rule set deleted) is
    what its worker's end would otherwise overwrite."""
    flat = [str(item) for pair in fields.items() for item in pair]
    keys = [redis_keys.job(job_id), redis_keys.RECENT_JOBS]
    await redis.register_script(_FINISH)(keys=keys, args=[milliseconds(ttl_s), job_id, *flat])


async def fail_jobs_of(redis: Client, rules: str, error: str, ttl_s: float) -> int:
    """Fail every queued or running job of the game ``rules`` names (a job's ``rules``),
    saying ``error`` in its record: their game is gone. How many were failed.

    Finds them among the live entries of the recent-jobs index (scored ``+inf`` until they
    finish), then fails each in one step only if it is still live and of that game: a job
    finished meanwhile keeps its end. A round trip per live job: a delete is rare, and the
    live jobs are the queue's width."""
    ids = [text(i) for i in await redis.zrangebyscore(redis_keys.RECENT_JOBS, "+inf", "+inf")]
    fail = redis.register_script(_FAIL_OF)
    now = f"{time.time():.3f}"
    failed = 0
    for job_id in ids:
        keys = [redis_keys.job(job_id), redis_keys.RECENT_JOBS]
        args: list[str | int] = [milliseconds(ttl_s), job_id, rules, error, now]
        failed += int(await fail(keys=keys, args=args))
    return failed


# KEYS: the job's record, the recent-jobs index. ARGV: TTL ms, the job id, the game, the
# error, the time. 1 when the job was live and of that game, and is failed now. It only
# overwrites a small record, so it runs at maxmemory: deleting a rule set frees memory.
_FAIL_OF: Final = (
    LUA_FREES
    + LUA_NOW_MS
    + """
local job = redis.call('HMGET', KEYS[1], 'status', 'rules')
if (job[1] ~= 'queued' and job[1] ~= 'running') or job[2] ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[4], 'finished_at', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[2])
return 1
"""
)


# KEYS: the job's record, the recent-jobs index. ARGV: TTL ms, the job id, field items.
_FINISH: Final = (
    LUA_WRITES
    + LUA_NOW_MS
    + """
if redis.call('HGET', KEYS[1], 'status') == 'failed' then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3, #ARGV))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[2])
return 0
"""
)

# KEYS: a sorted set scored by expiry (ms). ARGV: how many members to return. Drops the
# members whose time has passed, then answers the count of the others and the latest
# ARGV[1] of them (highest scores first).
_LIVE_MEMBERS: Final = (
    LUA_FREES
    + LUA_NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local members = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. now, 'LIMIT', 0, ARGV[1])
return {redis.call('ZCARD', KEYS[1]), members}
"""
)


async def _live_members(redis: Client, index: str, limit: int) -> tuple[int, list[str]]:
    count, members = await redis.register_script(_LIVE_MEMBERS)(keys=[index], args=[limit])
    return int(count), [text(member) for member in members]


async def _hashes(redis: Client, keys: list[str]) -> list[dict[str, str]]:
    """Each hash's fields in one round trip; an empty dict for one that is gone."""
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hgetall(key)
        replies = await pipe.execute()
    return [_text(raw) if raw else {} for raw in replies]


# KEYS: the worker's heartbeat hash, the live-workers set. ARGV: TTL ms, the worker id,
# field items. Prunes the workers whose heartbeat lapsed.
_BEAT: Final = (
    LUA_FREES
    + LUA_NOW_MS
    + """
redis.call('HSET', KEYS[1], unpack(ARGV, 3, #ARGV))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return 0
"""
)


async def beat(redis: Client, worker_id: str, fields: Fields, ttl_s: float) -> None:
    """A worker's heartbeat: its record, alive for ``ttl_s`` unless renewed."""
    flat = [str(item) for pair in fields.items() for item in pair]
    keys = [redis_keys.worker(worker_id), redis_keys.LIVE_WORKERS]
    await redis.register_script(_BEAT)(keys=keys, args=[milliseconds(ttl_s), worker_id, *flat])


async def forget_worker(redis: Client, worker_id: str) -> None:
    keys = [redis_keys.worker(worker_id), redis_keys.LIVE_WORKERS]
    await redis.register_script(_FORGET_WORKER)(keys=keys, args=[worker_id])


# KEYS: the worker's heartbeat hash, the live-workers set. ARGV: the worker id. One step
# (a cluster pipeline is no transaction).
_FORGET_WORKER: Final = (
    LUA_FREES
    + """
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 0
"""
)


IDLE_CONSUMER_S: Final = 3600.0
"""A consumer idle this long with nothing pending is forgotten (a live one that reads
again is made again: forgetting it costs nothing)."""


async def trim_stream(redis: Client, idle_consumer_s: float = IDLE_CONSUMER_S) -> int:
    """Drop the stream entries that every group has read and acknowledged, and the
    consumers idle for ``idle_consumer_s`` with nothing pending (a worker process that is
    gone: every process reads under names of its own); returns how many entries went.

    What must stay is every pending entry (a worker has it, or had it and died) and every
    entry no worker has read yet: the trim goes up to the oldest of the oldest pending id
    and the first id after the last delivered, never by length. Reading and trimming are
    not one step, and need not be: meanwhile ids only grow, deliveries only move the last
    delivered id on, and acknowledgements only shorten the pending list, so a stale look
    trims less, never more.
    """
    try:
        groups = await redis.xinfo_groups(redis_keys.JOB_STREAM)
    except ResponseError:
        return 0  # no stream yet
    keep_from: tuple[int, int] | None = None
    for group in groups:
        name = text(group["name"])
        first_unread = _stream_id(group["last-delivered-id"])
        first_unread = (first_unread[0], first_unread[1] + 1)
        if int(group["pending"]):
            summary = await redis.xpending(redis_keys.JOB_STREAM, name)
            if summary["min"] is not None:  # None: all acknowledged since the look above
                first_unread = min(first_unread, _stream_id(summary["min"]))
        keep_from = first_unread if keep_from is None else min(keep_from, first_unread)
        forget = redis.register_script(_FORGET_IDLE_CONSUMERS)
        await forget(keys=[redis_keys.JOB_STREAM], args=[name, milliseconds(idle_consumer_s)])
    if keep_from is None:
        return 0  # no group: nothing has been read
    minid = f"{keep_from[0]}-{keep_from[1]}"
    trimmed: int = await redis.xtrim(redis_keys.JOB_STREAM, minid=minid, approximate=False)
    return trimmed


# KEYS: the stream. ARGV: a group, the idle time (ms) past which a consumer that holds no
# entry is forgotten. One step, so that no entry is delivered to a consumer between the
# look and the deletion (which would drop it from the pending list).
_FORGET_IDLE_CONSUMERS: Final = (
    LUA_FREES
    + """
local gone = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local field = {}
  for i = 1, #consumer, 2 do field[consumer[i]] = consumer[i + 1] end
  if field['pending'] == 0 and field['idle'] > tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], field['name'])
    gone = gone + 1
  end
end
return gone
"""
)


def _stream_id(value: object) -> tuple[int, int]:
    time_part, _, sequence = text(value).partition("-")
    return int(time_part), int(sequence or 0)


Record = dict[str, str | int | float]
"""A job record or a worker's heartbeat, its numbers as numbers (see :func:`_typed`)."""

_NUMBER_FIELDS: Final[dict[str, type[int] | type[float]]] = {
    "pid": int,
    "blocks_computed": int,
    "blocks_waited": int,
    "blocks_fetched": int,
    "jobs_done": int,
    "blocks_done": int,
    "blocks_total": int,
    "started_at": float,
    "beat_at": float,
    "queued_at": float,
    "finished_at": float,
    "value": float,
}
"""The numeric fields of job records and heartbeats; every other field is text."""


def _typed(fields: Mapping[str, str]) -> Record:
    """A hash's fields with their numbers parsed, for readers such as ``status --json``
    that promise numbers; a field Redis holds as junk stays text, so that one bad record
    never breaks the listing of all the others."""
    record: Record = {}
    for name, value in fields.items():
        parse = _NUMBER_FIELDS.get(name)
        try:
            record[name] = value if parse is None else parse(value)
        except ValueError:
            record[name] = value
    return record


RECENT_SHOWN: Final = 100
"""Jobs ``status`` lists at most: the queued and running ones, then the latest finished."""


async def recent_jobs(redis: Client, limit: int = RECENT_SHOWN) -> tuple[int, list[Record]]:
    """How many job records are kept, and up to ``limit`` of them, oldest queued first.

    From the recent-jobs index, never a SCAN: an id whose record expired is dropped from
    the index on the way.
    """
    count, ids = await _live_members(redis, redis_keys.RECENT_JOBS, limit)
    records = await _hashes(redis, [redis_keys.job(job_id) for job_id in ids])
    gone = [job_id for job_id, record in zip(ids, records, strict=True) if not record]
    if gone:
        await redis.zrem(redis_keys.RECENT_JOBS, *gone)
    kept = sorted((r for r in records if r), key=lambda r: r.get("queued_at", ""))
    return count - len(gone), [_typed(record) for record in kept]


async def live_workers(redis: Client, match: str = "*") -> list[Record]:
    """The workers whose heartbeat is live and whose id matches the glob ``match``."""
    _, ids = await _live_members(redis, redis_keys.LIVE_WORKERS, _MAX_WORKERS_LISTED)
    ids = sorted(worker_id for worker_id in ids if fnmatchcase(worker_id, match))
    records = await _hashes(redis, [redis_keys.worker(worker_id) for worker_id in ids])
    return [_typed(record) for record in records if record]


_MAX_WORKERS_LISTED: Final = 10_000


async def live_worker_count(redis: Client) -> int:
    """Workers with a live heartbeat: one O(log n) count."""
    count, _ = await _live_members(redis, redis_keys.LIVE_WORKERS, 0)
    return count


Entry = tuple[str, dict[str, str]]
"""A stream entry as a worker takes it: its id and the job's fields."""


class JobQueue:
    """The job queue on the shared Redis, built beside its store (see
    :func:`memo_solver.jobs.storage.open_store_and_queue`): what the command line and the
    service queue and read, and what a worker takes. There is none on SQLite: background
    jobs need the workers' shared Redis.

    It talks through the store's connection, so it lives as long as the store is open.
    """

    def __init__(self, store: RedisStore) -> None:
        self.store = store

    async def enqueue(self, job: Job, *, again_if_done: bool = False) -> tuple[str, bool]:
        return await enqueue(await self.store.client(), job, again_if_done=again_if_done)

    async def enqueue_large(self, job: Job, cap: int) -> tuple[str, bool] | None:
        return await enqueue_large(await self.store.client(), job, cap)

    async def enqueue_precompute(self, entry: GameEntry) -> tuple[str, bool]:
        return await enqueue_precompute(self.store, entry)

    async def record(self, job_id: str) -> dict[str, str] | None:
        return await job_record(await self.store.client(), job_id)

    async def update(self, job_id: str, **fields: str | int | float) -> None:
        await update(await self.store.client(), job_id, **fields)

    async def finish(self, job_id: str, ttl_s: float, **fields: str | int | float) -> None:
        await finish(await self.store.client(), job_id, ttl_s, **fields)

    async def start(self, job_id: str, **fields: str | int | float) -> bool:
        return await start(await self.store.client(), job_id, **fields)

    async def fail_jobs_of(self, rules: str, error: str, ttl_s: float) -> int:
        return await fail_jobs_of(await self.store.client(), rules, error, ttl_s)

    async def recent_jobs(self, limit: int = RECENT_SHOWN) -> tuple[int, list[Record]]:
        return await recent_jobs(await self.store.client(), limit)

    async def live_workers(self, match: str = "*") -> list[Record]:
        return await live_workers(await self.store.client(), match)

    async def live_worker_count(self) -> int:
        return await live_worker_count(await self.store.client())

    # --- a worker's side ----------------------------------------------------------------------

    async def ensure_group(self) -> None:
        await ensure_group(await self.store.client())

    async def beat(self, worker_id: str, fields: Fields, ttl_s: float) -> None:
        await beat(await self.store.client(), worker_id, fields, ttl_s)

    async def forget_worker(self, worker_id: str) -> None:
        await forget_worker(await self.store.client(), worker_id)

    async def trim_stream(self) -> int:
        return await trim_stream(await self.store.client())

    async def take_own(self, consumer: str) -> Entry | None:
        """An entry ``consumer`` took and never acknowledged (before a restart or a lost
        Redis): id ``0`` reads a consumer's own pending entries instead of new ones. One
        deleted from the stream meanwhile is acknowledged and passed over."""
        read: Any = await (await self.store.client()).xreadgroup(
            redis_keys.JOB_GROUP, consumer, {redis_keys.JOB_STREAM: "0"}, count=1
        )
        for entry_id, raw in read[0][1] if read else []:
            if raw is None:
                await self.ack(text(entry_id))
                continue
            return text(entry_id), _text(raw)
        return None

    async def take(self, consumer: str, stale_s: float, block_ms: int) -> Entry | None:
        """The next entry for ``consumer``: one a silent worker left pending for
        ``stale_s`` first, else a new one, waiting for it up to ``block_ms``."""
        claimed: Any = await (await self.store.client()).xautoclaim(
            redis_keys.JOB_STREAM,
            redis_keys.JOB_GROUP,
            consumer,
            round(stale_s * 1000),
            "0-0",
            count=1,
        )
        entries: Any = claimed[1]
        if entries:
            log.info("taking over job entry %s from a silent worker", text(entries[0][0]))
        else:
            read: Any = await (await self.store.client()).xreadgroup(
                redis_keys.JOB_GROUP,
                consumer,
                {redis_keys.JOB_STREAM: ">"},
                count=1,
                block=block_ms,
            )
            entries = read[0][1] if read else []
        for entry_id, raw in entries:
            if raw is None:
                continue  # deleted from the stream meanwhile
            return text(entry_id), _text(raw)
        return None

    async def touch(self, consumer: str, entry_ids: Iterable[str]) -> None:
        """Take these pending entries again as ``consumer``, which resets their idle time:
        a live worker's jobs never look abandoned."""
        await (await self.store.client()).xclaim(
            redis_keys.JOB_STREAM,
            redis_keys.JOB_GROUP,
            consumer,
            min_idle_time=0,
            message_ids=list(entry_ids),
            justid=True,
        )

    async def ack(self, entry_id: str) -> None:
        await (await self.store.client()).xack(
            redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, entry_id
        )
