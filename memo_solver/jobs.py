"""Background jobs: what the CLI and the API enqueue and the workers run.

A job is content-addressed: its id is a hash of its kind, game (a rule set's name or a
Dice of Doom size, see :mod:`memo_solver.games`) and state, so asking
twice for the same precompute merges into one job instead of doing the work twice. Jobs
travel on a Redis stream read by a consumer group (at-least-once: a job a dead worker
took stays pending until another worker claims it); each job also has a record (a hash)
that says where it stands.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import redis.asyncio as aioredis
from redis.exceptions import ResponseError
from redis.typing import EncodableT, FieldT

from memo_solver import redis_keys
from memo_solver.games import get_game

JobKind = Literal["precompute", "warm", "block", "stats"]
KINDS: Final = ("precompute", "warm", "block", "stats")


class JobError(ValueError):
    """A job message that cannot be run (malformed, unknown rule set, bad state)."""


@dataclass(frozen=True)
class Job:
    kind: JobKind
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
        kind = fields.get("kind", "")
        if kind not in KINDS:
            raise JobError(f"unknown job kind {kind!r} (kinds: {', '.join(KINDS)})")
        try:
            entry = get_game(fields.get("rules", ""))
        except ValueError as exc:
            raise JobError(str(exc)) from None
        if kind == "precompute":
            return cls("precompute", entry.name)
        if kind == "block":
            key = fields.get("state", "")
            if not entry.game.is_key(key):
                raise JobError(f"bad block key {key!r} for {entry.name}")
            return cls("block", entry.name, key)
        if kind == "stats" and entry.stats is None:
            raise JobError(f"{entry.name} has no statistics job")
        try:
            canonical = entry.canonical_state(fields.get("state", ""))
        except ValueError as exc:
            raise JobError(f"bad state: {exc}") from None
        return cls("stats" if kind == "stats" else "warm", entry.name, canonical)


Fields = dict[FieldT, EncodableT]


def text(value: object) -> str:
    """A Redis reply item as text (replies are bytes; this client does not decode)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _text(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {text(k): text(v) for k, v in raw.items()}


async def enqueue(redis: aioredis.Redis, job: Job) -> tuple[str, bool]:
    """Add the job unless the same job is already queued, running or done.

    Returns the id and whether it was newly queued. A failed or interrupted job is queued
    again.
    """
    fields: Fields = {**job.fields(), "status": "queued", "queued_at": f"{time.time():.3f}"}
    flat = [item for pair in fields.items() for item in pair]
    # Check and mark in one step, so two clients asking at once queue the job once.
    if not await redis.eval(_MARK_QUEUED, 1, redis_keys.job(job.id), *flat):
        return job.id, False
    await redis.xadd(redis_keys.JOB_STREAM, job.fields())
    return job.id, True


_MARK_QUEUED: Final = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'queued' or status == 'running' or status == 'done' then
    return 0
end
redis.call('HDEL', KEYS[1], 'error', 'finished_at')
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


async def ensure_group(redis: aioredis.Redis) -> None:
    """Create the stream and the workers' group, reading jobs queued before it existed."""
    try:
        await redis.xgroup_create(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, "0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


async def job_record(redis: aioredis.Redis, job_id: str) -> dict[str, str] | None:
    raw = await redis.hgetall(redis_keys.job(job_id))
    return _text(raw) if raw else None


async def update(redis: aioredis.Redis, job_id: str, **fields: str | int | float) -> None:
    mapping: Fields = {k: str(v) for k, v in fields.items()}
    await redis.hset(redis_keys.job(job_id), mapping=mapping)


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


async def _records(redis: aioredis.Redis, match: str, order: str) -> list[Record]:
    """Every hash whose key matches, sorted by one of its fields (as stored text: a record
    without the field, or with junk in it, must still sort)."""
    records = []
    async for key in redis.scan_iter(match=match):
        raw = await redis.hgetall(key)
        if raw:
            records.append(_text(raw))
    return [_typed(record) for record in sorted(records, key=lambda r: r.get(order, ""))]


async def all_jobs(redis: aioredis.Redis) -> list[Record]:
    return await _records(redis, f"{redis_keys.JOB_PREFIX}*", "queued_at")


async def live_workers(redis: aioredis.Redis, pattern: str = "*") -> list[Record]:
    return await _records(redis, f"{redis_keys.WORKER_PREFIX}{pattern}", "id")
