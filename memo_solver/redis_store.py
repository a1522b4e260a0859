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
from redis.exceptions import AuthenticationError, OutOfMemoryError, RedisError, ResponseError

from memo_solver import redis_keys
from memo_solver.store import (
    Claim,
    Coverage,
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
    Write,
)

_RECHECK_S: Final = 1.0
_PROBE_LEASE_MS: Final = 5000
_MAX_CONNECTIONS: Final = 32
log = logging.getLogger(__name__)

# KEYS: blocks hash, then one claim key per block. ARGV: token, lease ms, then block keys.
_CLAIM = """
local out = {}
for i = 2, #KEYS do
  local field = ARGV[i + 1]
  if redis.call('HEXISTS', KEYS[1], field) == 1 then
    out[#out + 1] = 'done'
  elseif redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    out[#out + 1] = 'claimed'
  elseif redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    out[#out + 1] = 'claimed'
  else
    out[#out + 1] = 'busy'
  end
end
return out
"""

# KEYS: claim keys. ARGV: token, lease ms.
_RENEW = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
end
return 0
"""

# KEYS: claim keys. ARGV: token, then one channel per claim.
_RELEASE = """
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('PUBLISH', ARGV[i + 1], 'released')
  end
end
return 0
"""

# KEYS: blocks hash, then one claim key per block. ARGV: token ('' for none), then
# (block key, data, channel) triples.
_COMMIT = """
for i = 2, #KEYS do
  local at = 2 + (i - 2) * 3
  redis.call('HSET', KEYS[1], ARGV[at], ARGV[at + 1])
  if ARGV[1] ~= '' and redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
  end
  redis.call('PUBLISH', ARGV[at + 2], 'committed')
end
return 0
"""


# KEYS: blocks hash. The bytes of every stored block (for status; O(blocks)).
_SIZES = """
local total = 0
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  total = total + redis.call('HSTRLEN', KEYS[1], field)
end
return total
"""


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisStore:
    """Blocks and claims in Redis, shared by every process that points at the same URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            # A blocking pool: hundreds of concurrent waits queue for a connection instead
            # of failing with "Too many connections".
            pool = aioredis.BlockingConnectionPool.from_url(
                url, max_connections=_MAX_CONNECTIONS, timeout=None, socket_connect_timeout=5
            )
            self.redis: aioredis.Redis = aioredis.Redis(connection_pool=pool)
        except ValueError as exc:
            raise StoreLocationError(f"bad Redis URL {redacted(url)}: {exc}") from exc
        self._claim = self.redis.register_script(_CLAIM)
        self._renew = self.redis.register_script(_RENEW)
        self._release = self.redis.register_script(_RELEASE)
        self._commit = self.redis.register_script(_COMMIT)
        self._sizes = self.redis.register_script(_SIZES)
        self._waiters: dict[str, set[anyio.Event]] = {}
        self._stack = AsyncExitStack()

    @property
    def description(self) -> str:
        return redacted(self.url)

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
        script_keys = [redis_keys.blocks(namespace)]
        script_keys += [redis_keys.claim(namespace, k) for k in keys]
        async with self._reachable():
            answers = await self._claim(keys=script_keys, args=[token, _ms(lease_s), *keys])
        return {k: Claim(a.decode()) for k, a in zip(keys, answers, strict=True)}

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        if keys:
            async with self._reachable():
                await self._renew(
                    keys=[redis_keys.claim(namespace, k) for k in keys],
                    args=[token, _ms(lease_s)],
                )

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        if keys:
            async with self._reachable():
                await self._release(
                    keys=[redis_keys.claim(namespace, k) for k in keys],
                    args=[token, *(redis_keys.done_channel(namespace, k) for k in keys)],
                )

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        if not blocks:
            return
        script_keys = [redis_keys.blocks(namespace)]
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
                async for message in pubsub.listen():
                    if message.get("type") == "pmessage":
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
        async with self._reachable():
            fields = await self.redis.hkeys(redis_keys.blocks(namespace))
        return sorted(f.decode() if isinstance(f, bytes) else f for f in fields)

    async def coverage(self, namespace: str) -> Coverage:
        async with self._reachable():
            blocks = await self.redis.hlen(redis_keys.blocks(namespace))
            size = await self._sizes(keys=[redis_keys.blocks(namespace)])
            claims = 0
            async for _ in self.redis.scan_iter(match=redis_keys.claim_pattern(namespace)):
                claims += 1
        return Coverage(blocks=blocks, claims=claims, bytes=size)

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


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
