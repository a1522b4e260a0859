"""The shared store: one Redis for every worker, CLI and server on every machine.

Each batch operation is one round trip: ``HMGET`` for lookups, one Lua script for a batch
of claims, one for a batch of commits (write the blocks, drop the caller's claims, publish
on each block's channel, atomically). One pattern subscription per process (started by
``async with store``) wakes every waiter; a waiter registers *before* it looks, so a
commit between the look and the wait is never missed, and it re-checks the claim every
second, so a lost message or a dead holder costs at most one lease.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, OutOfMemoryError, RedisError, ResponseError

from memo_solver.core.store import (
    Claim,
    Coverage,
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
    Write,
)
from memo_solver.stores import redis_keys

_RECHECK_S: Final = 1.0
_PROBE_LEASE_MS: Final = 5000
_MAX_CONNECTIONS: Final = 32
SOCKET_TIMEOUT_S: Final = 5.0
"""The longest wait for one reply: a hung Redis fails a command after this instead of
hanging it (redis-py 5, the declared floor, would wait for ever). ``?socket_timeout=``
in the URL overrides it; a blocking read (a worker's XREADGROUP) blocks for less."""
CONNECT_TIMEOUT_S: Final = 5.0
"""The longest wait to connect (``?socket_connect_timeout=``)."""
HEALTH_CHECK_INTERVAL_S: Final = 10
"""A connection idle this long is PINGed before its next command, so one that a Redis
restart dropped while idle is replaced instead of failing that command
(``?health_check_interval=``)."""
log = logging.getLogger(__name__)

# Claims live twice: a key per block with the lease as its TTL (what a waiter checks) and a
# member of the namespace's claims set scored by the same expiry in Redis's own clock (what
# coverage counts, with no SCAN). Every script keeps the two in step and prunes the set of
# lapsed members as it goes, so the set holds about the live claims and never grows.
# Every script opens with a shebang (Redis 7) that says what it does to memory, so that a
# Redis at maxmemory refuses a script that would grow it before it starts, never halfway
# (without one, Redis refuses only the first write, and not at all after a DEL).
LUA_WRITES: Final = "#!lua\n"
"""A script that may grow what Redis holds: refused at once by a Redis at maxmemory."""
LUA_FREES: Final = "#!lua flags=allow-oom\n"
"""A script that only deletes, expires or overwrites a small fixed record: it runs even at
maxmemory, so claims are let go and workers stay visible while Redis refuses new blocks."""
LUA_READS: Final = "#!lua flags=no-writes\n"
"""A script that only reads: it runs at maxmemory, so status and health still answer."""

LUA_NOW_MS: Final = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
"""
"""Sets ``now``, Redis's own clock in ms, for a script: expiry scores then agree with the
TTLs Redis keeps, whichever host's script wrote them."""

# KEYS: blocks hash, claims set, then one claim key per block. ARGV: token, lease ms, then
# block keys.
_CLAIM = (
    LUA_WRITES
    + LUA_NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local expiry = now + tonumber(ARGV[2])
local out = {}
for i = 3, #KEYS do
  local field = ARGV[i]
  if redis.call('HEXISTS', KEYS[1], field) == 1 then
    out[#out + 1] = 'done'
  elseif redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.call('ZADD', KEYS[2], expiry, field)
    out[#out + 1] = 'claimed'
  elseif redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('ZADD', KEYS[2], expiry, field)
    out[#out + 1] = 'claimed'
  else
    out[#out + 1] = 'busy'
  end
end
return out
"""
)

# KEYS: claims set, then claim keys. ARGV: token, lease ms, then block keys.
_RENEW = (
    LUA_FREES
    + LUA_NOW_MS
    + """
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[i + 1])
  end
end
return 0
"""
)

# KEYS: claims set, then claim keys. ARGV: token, then (block key, channel) pairs.
_RELEASE = (
    LUA_FREES
    + """
for i = 2, #KEYS do
  local at = 2 + (i - 2) * 2
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], ARGV[at])
    redis.call('PUBLISH', ARGV[at + 1], 'released')
  end
end
return 0
"""
)

# KEYS: blocks hash, claims set, then one claim key per block. ARGV: token ('' for none),
# then (block key, data, channel) triples.
_COMMIT = (
    LUA_WRITES
    + """
for i = 3, #KEYS do
  local at = 2 + (i - 3) * 3
  redis.call('HSET', KEYS[1], ARGV[at], ARGV[at + 1])
  if ARGV[1] ~= '' and redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[2], ARGV[at])
  end
  redis.call('PUBLISH', ARGV[at + 2], 'committed')
end
return 0
"""
)

# KEYS: claims set, then the block group hashes. Blocks stored, live claims, and the bytes
# Redis spends on the groups (MEMORY USAGE samples a few fields of a large hash): a few O(1)
# commands, whatever the namespace or the database holds.
_COVERAGE = (
    LUA_READS
    + LUA_NOW_MS
    + """
local blocks, size = 0, 0
for i = 2, #KEYS do
  blocks = blocks + redis.call('HLEN', KEYS[i])
  size = size + (redis.call('MEMORY', 'USAGE', KEYS[i], 'SAMPLES', ARGV[1]) or 0)
end
return {blocks, redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), size}
"""
)
_MEMORY_SAMPLES: Final = 5

# KEYS: the namespace's block group hashes (ARGV[1] of them), then its other keys. Counts the
# blocks and deletes every key at once; UNLINK frees a large hash in the background instead
# of blocking Redis while it does. It only deletes, so it runs at maxmemory: a full Redis is
# when an operator prunes.
_DELETE_NAMESPACE = (
    LUA_FREES
    + """
local blocks = 0
for i = 1, tonumber(ARGV[1]) do
  blocks = blocks + redis.call('HLEN', KEYS[i])
end
for i = 1, #KEYS do
  redis.call('UNLINK', KEYS[i])
end
return blocks
"""
)
_SCAN_COUNT: Final = 1000

# KEYS: the registrations' (redis_keys.REGISTRATIONS). ARGV: name, fingerprint, document.
# Registers the name if it is free (nil), else answers the document that holds it.
_REGISTER = (
    LUA_WRITES
    + """
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  return held
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[4], ARGV[2], 1)
return false
"""
)

# KEYS: the registered names, their documents. ARGV: the ZRANGEBYLEX lower bound, the limit.
# Names and documents, alternately.
_REGISTRATIONS_PAGE = (
    LUA_READS
    + """
local out = {}
for _, name in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], '+', 'LIMIT', 0, ARGV[2])) do
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGET', KEYS[2], name)
end
return out
"""
)

# KEYS: the registrations'. ARGV: name. Nil when the name is not registered, else how many
# names its fingerprint still has. It only deletes and counts down, so it runs at maxmemory.
_UNREGISTER = (
    LUA_FREES
    + """
local fingerprint = redis.call('HGET', KEYS[3], ARGV[1])
if not fingerprint then
  return false
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local others = redis.call('HINCRBY', KEYS[4], fingerprint, -1)
if others <= 0 then
  redis.call('HDEL', KEYS[4], fingerprint)
end
return others
"""
)


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs. One that cannot be parsed (a
    broken IPv6 host, a port that is no number) may still hold a password: only its scheme
    is shown."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return f"{url.partition('://')[0]}://<unreadable address>"
    return urlunsplit(parts._replace(netloc=netloc))


class RedisStore:
    """Blocks and claims in Redis, shared by every process that points at the same URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            # A blocking pool: hundreds of concurrent waits queue for a connection instead
            # of failing with "Too many connections". Every timeout is set here, not left to
            # the redis-py version's defaults; the URL's query parameters win. A command
            # that times out or finds its connection dropped is sent once more on a fresh
            # connection: a process paused past the timeout (SIGSTOP, a VM's pause) sees its
            # reads expire the moment it resumes, and that is no outage. Every command
            # sent is idempotent or guarded (claims by token, jobs by status), so sending
            # one twice is harmless.
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                max_connections=_MAX_CONNECTIONS,
                timeout=None,
                socket_timeout=SOCKET_TIMEOUT_S,
                socket_connect_timeout=CONNECT_TIMEOUT_S,
                health_check_interval=HEALTH_CHECK_INTERVAL_S,
                retry=Retry(NoBackoff(), 1),
            )
            self.redis: aioredis.Redis = aioredis.Redis(connection_pool=pool)
        except ValueError as exc:
            raise StoreLocationError(f"bad Redis URL {redacted(url)}: {exc}") from exc
        self._claim = self.redis.register_script(_CLAIM)
        self._renew = self.redis.register_script(_RENEW)
        self._release = self.redis.register_script(_RELEASE)
        self._commit = self.redis.register_script(_COMMIT)
        self._coverage = self.redis.register_script(_COVERAGE)
        self._delete_namespace = self.redis.register_script(_DELETE_NAMESPACE)
        self._register = self.redis.register_script(_REGISTER)
        self._registrations_page = self.redis.register_script(_REGISTRATIONS_PAGE)
        self._unregister = self.redis.register_script(_UNREGISTER)
        self._waiters: dict[str, set[anyio.Event]] = {}
        self._stack = AsyncExitStack()

    @property
    def description(self) -> str:
        return redacted(self.url)

    @property
    def socket_timeout_s(self) -> float:
        """The reply timeout in force (the default or the URL's)."""
        timeout = self.redis.connection_pool.connection_kwargs.get("socket_timeout")
        return SOCKET_TIMEOUT_S if timeout is None else float(timeout)

    @asynccontextmanager
    async def _reachable(self) -> AsyncIterator[None]:
        try:
            yield
        except (RedisError, OSError) as exc:
            raise store_error(exc, self.description) from exc

    async def ping(self) -> None:
        async with self._reachable():
            await self.redis.ping()

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        async with self._reachable():
            values = await self.redis.hmget(redis_keys.blocks(namespace), list(keys))
        return {k: v for k, v in zip(keys, values, strict=True) if isinstance(v, bytes)}

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        if not keys:
            return {}
        script_keys = [redis_keys.blocks(namespace), redis_keys.claims(namespace)]
        script_keys += [redis_keys.claim(namespace, k) for k in keys]
        args: list[str | int] = [token, milliseconds(lease_s), *keys]
        async with self._reachable():
            answers = await self._claim(keys=script_keys, args=args)
        return {k: Claim(a.decode()) for k, a in zip(keys, answers, strict=True)}

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        if keys:
            async with self._reachable():
                await self._renew(
                    keys=[redis_keys.claims(namespace)]
                    + [redis_keys.claim(namespace, k) for k in keys],
                    args=[token, milliseconds(lease_s), *keys],
                )

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        if keys:
            async with self._reachable():
                args: list[Any] = [token]
                for key in keys:
                    args += [key, redis_keys.done_channel(namespace, key)]
                await self._release(
                    keys=[redis_keys.claims(namespace)]
                    + [redis_keys.claim(namespace, k) for k in keys],
                    args=args,
                )

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        if not blocks:
            return
        script_keys = [redis_keys.blocks(namespace), redis_keys.claims(namespace)]
        script_keys += [redis_keys.claim(namespace, k) for k in blocks]
        args: list[Any] = [token or ""]
        for key, data in blocks.items():
            args += [key, data, redis_keys.done_channel(namespace, key)]
        async with self._reachable():
            await self._commit(keys=script_keys, args=args)

    async def __aenter__(self) -> RedisStore:
        """Start the one subscription that wakes every waiter of this process."""
        self._stack = AsyncExitStack()
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)
        tg.start_soon(self._listen_forever)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()
        await self.aclose()

    async def _listen_forever(self) -> None:
        """Dispatch commit and release messages to the waiters of this process.

        A lost connection only costs latency (waiters re-check every second), so it is
        logged and retried, never raised.
        """
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.psubscribe(redis_keys.DONE_PATTERN)
                while True:
                    # A read with its own timeout answers None when it expires, where a
                    # plain listen() takes a quiet spell longer than the socket timeout
                    # for a lost connection under redis-py versions that apply it there.
                    message = await pubsub.get_message(timeout=_RECHECK_S)
                    if message is not None and message.get("type") == "pmessage":
                        channel = message["channel"]
                        name = channel.decode() if isinstance(channel, bytes) else str(channel)
                        for event in self._waiters.get(name, ()):
                            event.set()
            except (RedisError, OSError) as exc:
                # Info, not a warning: waiters re-check every second without it, and a
                # command that needs Redis reports the outage itself, in one line.
                log.info("notifications from %s lost (%s); retrying", self.description, exc)
                await anyio.sleep(1.0)
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def wait(self, namespace: str, key: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        channel = redis_keys.done_channel(namespace, key)
        claim_key = redis_keys.claim(namespace, key)
        event = anyio.Event()
        waiters = self._waiters.setdefault(channel, set())
        waiters.add(event)  # listen first, then look: a commit in between is not missed
        try:
            while True:
                async with self._reachable():
                    if await self.redis.hexists(redis_keys.blocks(namespace), key):
                        return
                    if not await self.redis.exists(claim_key):
                        return  # released or lapsed: the caller may claim it now
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                with anyio.move_on_after(min(left, _RECHECK_S)):
                    await event.wait()
                if event.is_set():
                    return
        finally:
            waiters.discard(event)
            if not waiters:
                self._waiters.pop(channel, None)

    async def keys(self, namespace: str) -> list[str]:
        fields: list[Any] = []
        async with self._reachable():
            for group in redis_keys.block_groups(namespace):
                fields += await self.redis.hkeys(group)
        return sorted(_text(f) for f in fields)

    async def coverage(self, namespace: str) -> Coverage:
        """One round trip of O(1) commands: ``bytes`` is Redis's own (sampled) measure of
        the block hashes, not a sum over every block."""
        keys = [redis_keys.claims(namespace), *redis_keys.block_groups(namespace)]
        async with self._reachable():
            blocks, claims, size = await self._coverage(keys=keys, args=[_MEMORY_SAMPLES])
        return Coverage(blocks=int(blocks), claims=int(claims), bytes=int(size))

    async def put_definition(self, namespace: str, definition: bytes) -> None:
        async with self._reachable():
            await self.redis.set(redis_keys.definition(namespace), definition, nx=True)

    async def definition(self, namespace: str) -> bytes | None:
        async with self._reachable():
            found = await self.redis.get(redis_keys.definition(namespace))
        return found if isinstance(found, bytes) else None

    async def namespaces(self) -> list[str]:
        """A SCAN of the whole database. On a Redis Cluster a SCAN walks one node: the
        namespaces of the others would need a walk of each (this store talks to one)."""
        found: set[str] = set()
        async with self._reachable():
            async for key in self.redis.scan_iter(
                match=redis_keys.TAGGED_PATTERN, count=_SCAN_COUNT
            ):
                name = redis_keys.namespace_of(key.decode(errors="replace"))
                if name is not None:
                    found.add(name)
        return sorted(found)

    async def delete_namespace(self, namespace: str) -> int:
        """Its claim keys are the members of its claims set: a claim taken between the two
        round trips keeps its key until its lease lapses, which does no harm."""
        groups = redis_keys.block_groups(namespace)
        async with self._reachable():
            claimed = await self.redis.zrange(redis_keys.claims(namespace), 0, -1)
            keys = redis_keys.namespace_keys(namespace)
            keys += [redis_keys.claim(namespace, _text(k)) for k in claimed]
            blocks = await self._delete_namespace(keys=keys, args=[len(groups)])
        return int(blocks)

    async def register(self, name: str, fingerprint: str, document: bytes) -> bytes:
        async with self._reachable():
            held = await self._register(
                keys=list(redis_keys.REGISTRATIONS), args=[name, fingerprint, document]
            )
        return document if held is None else bytes(held)

    async def registration(self, name: str) -> bytes | None:
        async with self._reachable():
            found = await self.redis.hget(redis_keys.REGISTERED_DOCUMENTS, name)
        return found if isinstance(found, bytes) else None

    async def registrations(self, after: str, limit: int) -> list[tuple[str, bytes]]:
        """Redis orders members of equal score bytewise (``ZRANGEBYLEX``)."""
        keys = [redis_keys.REGISTERED_NAMES, redis_keys.REGISTERED_DOCUMENTS]
        lowest = f"({after}" if after else "-"
        async with self._reachable():
            flat = await self._registrations_page(keys=keys, args=[lowest, limit])
        return [(_text(name), bytes(doc)) for name, doc in zip(flat[::2], flat[1::2], strict=True)]

    async def unregister(self, name: str) -> int | None:
        async with self._reachable():
            others = await self._unregister(keys=list(redis_keys.REGISTRATIONS), args=[name])
        return None if others is None else int(others)

    async def probe(self) -> Write:
        """Claim and release a probe key of its own (SET NX PX, then DEL) in one pipelined
        round trip: a Redis that refuses writes (at ``maxmemory``) refuses this one too."""
        key = redis_keys.probe(uuid.uuid4().hex)
        async with self._reachable(), self.redis.pipeline(transaction=False) as pipe:
            pipe.set(key, b"1", nx=True, px=_PROBE_LEASE_MS)
            pipe.delete(key)
            await pipe.execute()
        return Write.ACCEPTED

    async def aclose(self) -> None:
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()


def store_error(exc: RedisError | OSError, where: str) -> StoreUnavailableError:
    """What went wrong, in words: an error reply is Redis answering that it will not do
    it; only a failed connection is "cannot reach"."""
    if isinstance(exc, OutOfMemoryError):
        return StoreFullError(
            f"Redis at {where} refused the write: OOM command not allowed when used memory > "
            "'maxmemory' (free memory in Redis or raise its maxmemory; what it holds is still "
            "read)"
        )
    if isinstance(exc, ResponseError):
        return StoreRefusedError(f"Redis at {where} refused the command: {exc}")
    if isinstance(exc, AuthenticationError):
        return StoreRefusedError(
            f"Redis at {where} refused the connection: {exc} (check the password in the URL)"
        )
    return StoreUnavailableError(
        f"cannot reach Redis at {where}: {exc} "
        "(is redis-server running? check --redis or $MEMO_SOLVER_REDIS_URL)"
    )


def _text(name: object) -> str:
    """A hash field or set member as text (redis-py answers bytes)."""
    return name.decode() if isinstance(name, bytes) else str(name)


def milliseconds(seconds: float) -> int:
    """Seconds as the whole milliseconds Redis takes (at least 1)."""
    return max(1, round(seconds * 1000))
