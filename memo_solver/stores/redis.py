"""The shared store: one Redis (or one Redis Cluster) for every worker, CLI and server.

A namespace's blocks are spread over hash-tagged groups (:mod:`memo_solver.stores.redis_keys`):
each batch operation splits its keys by group and sends one command or one Lua script per
group touched, all in one pipeline (on a cluster, one round trip per node, in parallel):
``HMGET`` for lookups, a script for a group's claims, one for its commits (write the blocks,
drop the caller's claims, publish the keys on the group's channel, atomically). Every
script's keys are one group's, so one slot; the scripts themselves, as Lua source with the
``KEYS`` and ``ARGV`` each takes, are :mod:`memo_solver.stores.redis_scripts`.

Waiters are woken by sharded pub/sub (:mod:`memo_solver.stores.redis_notifications`); a
waiter registers *before* it looks, so a commit between the look and the wait is never
missed, and it re-checks the claim every second, so a lost message or a dead holder costs
at most one lease.

One module of about 680 lines, on purpose: it is the one class of the ``Store`` protocol on
Redis, and each of its jobs (blocks, claims, waits, coverage, namespaces and strays,
registrations, the probe and the node report) goes through the same private means: the
client under its connection cap (``_reachable``), the script runner that sends a script
again to a server that lost it (``_run``), and the namespace's layout as this process knows
it (``_layout``, ``_mark``, ``_forget``, with the namespaces held gone). Cut by job, each
module would reach into that state. What is not this class lives beside it already: the
keys (:mod:`~memo_solver.stores.redis_keys`), the address and its faults
(:mod:`~memo_solver.stores.redis_client`), the commits heard
(:mod:`~memo_solver.stores.redis_notifications`) and the scripts.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import NoScriptError

from memo_solver.core.store import (
    Claim,
    Coverage,
    GoneNamespaces,
    RegistrationQuotaError,
    StoreFullError,
    StoreUnavailableError,
    Write,
)
from memo_solver.stores import redis_keys, redis_scripts
from memo_solver.stores.redis_client import (
    FAULTS,
    MAX_CONNECTIONS,
    Address,
    Client,
    close,
    connect,
    parse_address,
    store_error,
)
from memo_solver.stores.redis_keys import Layout
from memo_solver.stores.redis_notifications import KEY_SEPARATOR, Notifications

_RECHECK_S: Final = 1.0
_PROBE_LEASE_MS: Final = 5000
WRITE_HEADROOM: Final = 8 << 20
"""Room under ``maxmemory`` a master needs to count as accepting writes: Redis refuses a
command while its memory, the command's own bytes in its query buffer included, is past
``maxmemory``, so a Redis a few hundred KB short of it accepts a probe's few bytes and
refuses every block. A commit batch is a few MiB at most (the whole ``yahtzee`` is 8 MiB)."""
log = logging.getLogger(__name__)
_MEMORY_SAMPLES: Final = 5
_SCAN_COUNT: Final = 1000


@dataclass(frozen=True)
class NodeReport:
    """One master (the server itself, standalone): where it is, what Redis says it uses,
    and how many blocks of each namespace asked about it holds."""

    address: str
    used_memory: int
    blocks: dict[str, int]


class RedisStore:
    """Blocks and claims in Redis, shared by every process that points at the same address
    (a server, or any node of a cluster)."""

    def __init__(self, url: str, *, groups: int | None = None) -> None:
        self.url = url
        self.address: Address = parse_address(url)
        self.groups = groups
        """How many groups every namespace written first by this store gets; None: by its
        size (:meth:`expect`), else ``redis_keys.DEFAULT_GROUPS``."""
        self._expected: dict[str, int] = {}
        self._client: Client | None = None
        self._connecting = anyio.Lock()
        self._sha: dict[str, str] = {}
        self._layouts: dict[str, Layout] = {}
        self._marked: set[str] = set()
        """Namespaces this process wrote the group copies of the layout record for: the
        record it writes under, which a commit checks (see :mod:`redis_keys`)."""
        self._gone = GoneNamespaces()
        self._probe_tags: dict[str, int] = {}
        self._notifications = Notifications(self.description)
        self._limit = anyio.CapacityLimiter(MAX_CONNECTIONS)
        self._stack = AsyncExitStack()

    @property
    def description(self) -> str:
        return self.address.description

    @property
    def socket_timeout_s(self) -> float:
        """The reply timeout in force (the default or the URL's)."""
        return self.address.socket_timeout_s

    async def client(self) -> Client:
        """The client, connected on first use: a cluster's when the address is one."""
        if self._client is None:
            async with self._connecting:
                if self._client is None:
                    self._client = await connect(self.address)
        return self._client

    @property
    def is_cluster(self) -> bool:
        """Whether the store talks to a Redis Cluster (known once connected)."""
        return isinstance(self._client, RedisCluster)

    @asynccontextmanager
    async def _reachable(self) -> AsyncIterator[Client]:
        """The client, with every fault raised as its store error; at most
        :data:`MAX_CONNECTIONS` commands at once (the cluster client's pools do not wait
        for a free connection, they fail)."""
        async with self._limit:
            try:
                yield await self.client()
            except StoreUnavailableError:
                raise
            except FAULTS as exc:
                raise store_error(exc, self.description) from exc

    async def _run(self, script: str, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        """Run ``script`` once per (keys, args), all in one pipeline; a server that lost the
        script (a restart, a failover's new master) is sent it and the batch again (every
        script here may run twice)."""
        if not calls:
            return []
        async with self._reachable() as client:
            for _ in range(2):
                sha = self._sha.get(script)
                if sha is None:
                    sha = self._sha[script] = str(await client.script_load(script))
                pipe: Any = client.pipeline(transaction=False)
                for keys, args in calls:
                    pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
                try:
                    return await _execute(pipe)
                except NoScriptError:
                    self._sha.pop(script, None)
            raise store_error(NoScriptError("script not loaded"), self.description)

    async def _layout(self, namespace: str, *, create: bool) -> Layout | None:
        """The namespace's layout, fixed by its first writer (``create``); None when a
        reader finds nothing written (no layout and no block of the old layout)."""
        known = self._layouts.get(namespace)
        if known is not None and (not create or namespace in self._marked):
            return known
        one = Layout(namespace, 1)
        keys = [redis_keys.layout(namespace), one.blocks(0), one.claims(0)]
        if create:
            self._gone.check(namespace)
            wanted = self.groups or self._expected.get(namespace, redis_keys.DEFAULT_GROUPS)
            [groups] = await self._run(redis_scripts.LAYOUT, [(keys, [wanted])])
            await self._mark(Layout(namespace, int(groups)))
        else:
            async with self._reachable() as client:
                found, old = await client.get(keys[0]), await client.exists(keys[1], keys[2])
            if found is None and not old:
                return None
            groups = 1 if found is None else int(found)
        layout = self._layouts[namespace] = Layout(namespace, int(groups))
        return layout

    async def _mark(self, layout: Layout) -> None:
        """Copy the layout record into every group, before this process's first write (and
        list the namespace as written): a copy is the record's only trace in the group's
        slot, which a commit's script can read. A delete between the record's script and
        these copies (one round trip, once per namespace and process) leaves copies without
        a record: the commits they let through are strays, which ``prune`` finds."""
        async with self._reachable() as client:
            pipe: Any = client.pipeline(transaction=False)
            for group in range(layout.groups) if layout.groups > 1 else ():
                pipe.set(layout.marker(group), layout.groups)
            pipe.sadd(redis_keys.WRITTEN, layout.namespace)
            await _execute(pipe)
        self._marked.add(layout.namespace)

    def expect(self, namespace: str, size_bytes: int) -> None:
        self._expected[namespace] = redis_keys.groups_for(size_bytes)

    async def arrange(
        self, namespace: str, keys: Sequence[str], shuffle: random.Random | None
    ) -> list[str]:
        """By group (the layout fixed now: a solve is about to write), so that a chunk of a
        layer claims, fetches and commits in a few scripts instead of one per group: a
        ``maxi-yatzy`` chunk of 512 blocks touched about 260 of its 340 groups."""
        layout = await self._layout(namespace, create=True)
        assert layout is not None
        split = list(layout.by_group(keys).values())
        if shuffle is not None:
            shuffle.shuffle(split)
            for group_keys in split:
                shuffle.shuffle(group_keys)
        return [key for group_keys in split for key in group_keys]

    async def ping(self) -> None:
        async with self._reachable() as client:
            await client.ping()

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        layout = await self._layout(namespace, create=False) if keys else None
        if layout is None:
            return {}
        split = layout.by_group(keys)
        async with self._reachable() as client:
            pipe: Any = client.pipeline(transaction=False)
            for group, group_keys in split.items():
                pipe.hmget(layout.blocks(group), group_keys)
            replies = await _execute(pipe)
        found: dict[str, bytes] = {}
        for group_keys, values in zip(split.values(), replies, strict=True):
            for key, value in zip(group_keys, values, strict=True):
                if isinstance(value, bytes):
                    found[key] = value
        return found

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        if not keys:
            return {}
        layout = await self._layout(namespace, create=True)
        assert layout is not None
        split = layout.by_group(keys)
        lease = milliseconds(lease_s)
        calls = [
            (
                [
                    layout.blocks(g),
                    layout.claims(g),
                    layout.marker(g),
                    *(layout.claim(g, k) for k in group_keys),
                ],
                [token, lease, "", *group_keys],
            )
            for g, group_keys in split.items()
        ]
        answers = await self._run(redis_scripts.CLAIM, calls)
        if not all(isinstance(found, list) for found in answers):
            self._forget(namespace)
            raise self._gone.hold(namespace)
        claims: dict[str, Claim] = {}
        for group_keys, found in zip(split.values(), answers, strict=True):
            for key, answer in zip(group_keys, found, strict=True):
                claims[key] = Claim(_text(answer))
        return {key: claims[key] for key in keys}

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        layout = await self._layout(namespace, create=True) if keys else None
        if layout is None:
            return
        lease = milliseconds(lease_s)
        await self._run(
            redis_scripts.RENEW,
            [
                (
                    [layout.claims(g), *(layout.claim(g, k) for k in group_keys)],
                    [token, lease, *group_keys],
                )
                for g, group_keys in layout.by_group(keys).items()
            ],
        )

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        layout = await self._layout(namespace, create=True) if keys else None
        if layout is None:
            return
        await self._run(
            redis_scripts.RELEASE,
            [
                (
                    [
                        layout.claims(g),
                        layout.done_channel(g),
                        *(layout.claim(g, k) for k in group_keys),
                    ],
                    [token, KEY_SEPARATOR, *group_keys],
                )
                for g, group_keys in layout.by_group(keys).items()
            ],
        )

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        layout = await self._layout(namespace, create=True) if blocks else None
        if layout is None:
            return
        calls: list[tuple[list[str], list[Any]]] = []
        for g, group_keys in layout.by_group(blocks).items():
            args: list[Any] = [token or "", KEY_SEPARATOR]
            for key in group_keys:
                args += [key, blocks[key]]
            script_keys = [
                layout.blocks(g),
                layout.claims(g),
                layout.done_channel(g),
                layout.marker(g),
            ]
            calls.append(([*script_keys, *(layout.claim(g, k) for k in group_keys)], args))
        if -1 in await self._run(redis_scripts.COMMIT, calls):
            self._forget(namespace)
            raise self._gone.hold(namespace)

    def _forget(self, namespace: str) -> None:
        """Drop what this process knows of the namespace's layout: deleted, it is read
        afresh, and written again (once no longer held gone) under a record of its own."""
        self._layouts.pop(namespace, None)
        self._marked.discard(namespace)

    async def __aenter__(self) -> RedisStore:
        """Start the readers that wake this process's waiters."""
        self._stack = AsyncExitStack()
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)
        self._notifications.start(tg)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self._stack.aclose()
        finally:
            await self.aclose()

    async def wait(self, namespace: str, key: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        layout = await self._layout(namespace, create=False)
        if layout is None:
            return  # nothing written: no claim to wait for
        group = layout.group_of(key)
        channel = layout.done_channel(group)
        with self._notifications.waiting(channel, key) as event:
            # Listen first, then look: a commit in between is not missed.
            await self._notifications.subscribe(await self.client(), channel)
            while True:
                async with self._reachable() as client:
                    if await client.hexists(layout.blocks(group), key):
                        return
                    if not await client.exists(layout.claim(group, key)):
                        return  # released or lapsed: the caller may claim it now
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                with anyio.move_on_after(min(left, _RECHECK_S)):
                    await event.wait()
                if event.is_set():
                    return

    async def keys(self, namespace: str) -> list[str]:
        layout = await self._layout(namespace, create=False)
        if layout is None:
            return []
        async with self._reachable() as client:
            pipe: Any = client.pipeline(transaction=False)
            for group in layout.block_groups():
                pipe.hkeys(group)
            replies = await _execute(pipe)
        return sorted(_text(field) for fields in replies for field in fields)

    async def coverage(self, namespace: str) -> Coverage:
        """One script per group, pipelined: O(groups), whatever the namespace holds.
        ``bytes`` is Redis's own (sampled) measure of the block hashes."""
        layout = await self._layout(namespace, create=False)
        if layout is None:
            return Coverage(blocks=0, claims=0, bytes=0)
        calls = [
            ([layout.claims(g), layout.blocks(g)], [_MEMORY_SAMPLES]) for g in range(layout.groups)
        ]
        replies = await self._run(redis_scripts.COVERAGE, calls)
        return Coverage(
            blocks=sum(int(r[0]) for r in replies),
            claims=sum(int(r[1]) for r in replies),
            bytes=sum(int(r[2]) for r in replies),
        )

    async def put_definition(self, namespace: str, definition: bytes) -> None:
        async with self._reachable() as client:
            await client.set(redis_keys.definition(namespace), definition, nx=True)

    async def definition(self, namespace: str) -> bytes | None:
        async with self._reachable() as client:
            found = await client.get(redis_keys.definition(namespace))
        return found if isinstance(found, bytes) else None

    async def namespaces(self) -> list[str]:
        """A SCAN of the whole database: of every master, on a cluster."""
        found: set[str] = set()
        async with self._reachable() as client:
            async for key in client.scan_iter(match=redis_keys.TAGGED_PATTERN, count=_SCAN_COUNT):
                name = redis_keys.namespace_of(_text(key))
                if name is not None:
                    found.add(name)
        return sorted(found)

    async def delete_namespace(self, namespace: str) -> int:
        """Per group, one script (its claim keys are the members of its claims set: a claim
        taken between the two round trips keeps its key until its lease lapses, which does
        no harm); then the layout and the definition."""
        layout = await self._layout(namespace, create=False)
        self._forget(namespace)
        self._gone.release(namespace)
        blocks = 0
        if layout is not None:
            async with self._reachable() as client:
                pipe: Any = client.pipeline(transaction=False)
                for g in range(layout.groups):
                    pipe.zrange(layout.claims(g), 0, -1)
                claimed = await _execute(pipe)
            calls: list[tuple[list[str], list[Any]]] = [
                (
                    [
                        layout.blocks(g),
                        layout.claims(g),
                        layout.marker(g),
                        *(layout.claim(g, _text(k)) for k in claimed[g]),
                    ],
                    [],
                )
                for g in range(layout.groups)
            ]
            blocks = sum(int(n) for n in await self._run(redis_scripts.DELETE_GROUP, calls))
        async with self._reachable() as client:
            await client.unlink(redis_keys.layout(namespace), redis_keys.definition(namespace))
            await client.srem(redis_keys.WRITTEN, namespace)
        return blocks

    async def written(self) -> list[str]:
        async with self._reachable() as client:
            return sorted(_text(name) for name in await client.smembers(redis_keys.WRITTEN))

    async def strays(self) -> dict[str, Coverage]:
        """A SCAN of the whole database, then each stray group's blocks counted (HLEN)
        and measured (MEMORY USAGE); its live claim keys are its claims."""
        found = await self._stray_keys(redis_keys.TAGGED_PATTERN)
        async with self._reachable() as client:
            pipe: Any = client.pipeline(transaction=False)
            blocks = [
                (ns, k) for ns, keys in found.items() for k in keys if redis_keys.is_blocks(k)
            ]
            for _, key in blocks:
                pipe.hlen(key)
                pipe.memory_usage(key, samples=_MEMORY_SAMPLES)
            replies = await _execute(pipe)
        covered = {
            ns: Coverage(blocks=0, claims=sum(map(redis_keys.is_claim, keys)), bytes=0)
            for ns, keys in found.items()
        }
        for (ns, _), count, size in zip(blocks, replies[::2], replies[1::2], strict=True):
            was = covered[ns]
            covered[ns] = Coverage(was.blocks + int(count), was.claims, was.bytes + int(size or 0))
        return covered

    async def delete_strays(self, namespace: str) -> int:
        """A SCAN for the namespace's group keys (``ms:{ns/*``), then the strays deleted a
        group per script, as :meth:`delete_namespace` deletes a group."""
        match = f"{redis_keys.PREFIX}:{{{namespace}/*"
        by_group: dict[int, list[str]] = {}
        for key in (await self._stray_keys(match)).get(namespace, []):
            found = redis_keys.group_key(key)
            assert found is not None
            by_group.setdefault(found[1], []).append(key)
        calls: list[tuple[list[str], list[Any]]] = []
        for number, keys in by_group.items():
            hashed = redis_keys.group_blocks(namespace, number)  # the script counts it first
            calls.append(([hashed, *(key for key in keys if key != hashed)], []))
        return sum(int(n) for n in await self._run(redis_scripts.DELETE_GROUP, calls))

    async def _stray_keys(self, match: str) -> dict[str, list[str]]:
        """The group keys among those ``match`` finds that no layout record names, by
        namespace."""
        grouped: dict[str, list[tuple[int, str]]] = {}
        async with self._reachable() as client:
            async for raw in client.scan_iter(match=match, count=_SCAN_COUNT):
                key = _text(raw)
                found = redis_keys.group_key(key)
                if found is not None:
                    grouped.setdefault(found[0], []).append((found[1], key))
            names = list(grouped)
            records = [await client.get(redis_keys.layout(ns)) for ns in names]
        strays: dict[str, list[str]] = {}
        for ns, record in zip(names, records, strict=True):
            named = Layout(ns, int(record)).tags() if record is not None else frozenset()
            keys = [key for number, key in grouped[ns] if number not in named]
            if keys:
                strays[ns] = keys
        return strays

    async def register(
        self, name: str, fingerprint: str, document: bytes, quota: int
    ) -> bytes | None:
        """One script in the ``{rules}`` slot (one slot on a cluster too): the count and the
        write are one step."""
        [held] = await self._run(
            redis_scripts.REGISTER,
            [(list(redis_keys.REGISTRATIONS), [name, fingerprint, document, quota])],
        )
        if held == 0:
            raise RegistrationQuotaError(quota)
        return None if held is None else bytes(held)

    async def registration(self, name: str) -> bytes | None:
        async with self._reachable() as client:
            found = await client.hget(redis_keys.REGISTERED_DOCUMENTS, name)
        return found if isinstance(found, bytes) else None

    async def registrations(self, after: str, limit: int) -> list[tuple[str, bytes]]:
        """Redis orders members of equal score bytewise (``ZRANGEBYLEX``)."""
        keys = [redis_keys.REGISTERED_NAMES, redis_keys.REGISTERED_DOCUMENTS]
        lowest = f"({after}" if after else "-"
        [flat] = await self._run(redis_scripts.REGISTRATIONS_PAGE, [(keys, [lowest, limit])])
        return [(_text(name), bytes(doc)) for name, doc in zip(flat[::2], flat[1::2], strict=True)]

    async def unregister(self, name: str) -> int | None:
        [others] = await self._run(
            redis_scripts.UNREGISTER, [(list(redis_keys.REGISTRATIONS), [name])]
        )
        return None if others is None else int(others)

    async def mark_used(self, names: Sequence[str], at: float) -> None:
        keys = [redis_keys.REGISTERED_DOCUMENTS, redis_keys.REGISTERED_USED]
        await self._run(redis_scripts.MARK_USED, [(keys, [repr(at), *names])])

    async def last_used(self, now: float) -> list[tuple[str, float]]:
        keys = [redis_keys.REGISTERED_NAMES, redis_keys.REGISTERED_USED]
        [flat] = await self._run(redis_scripts.LAST_USED, [(keys, [repr(now)])])
        pairs = zip(flat[::2], flat[1::2], strict=True)
        return [(_text(name), float(used)) for name, used in pairs]

    async def probe(self) -> Write:
        """Claim and release a probe key (SET NX PX, then DEL) in one pipelined round trip:
        a Redis that refuses writes (at ``maxmemory``) refuses this one too. On a cluster,
        one key on every master (each in a slot of its own), so that readiness proves a
        write on each. Then each master's room under ``maxmemory``: one with less than
        :data:`WRITE_HEADROOM` refuses blocks, so it is full, whatever the probe's few
        bytes did (they pass or not as the memory of the writes in flight comes and goes)."""
        token = uuid.uuid4().hex
        async with self._reachable() as client:
            pipe: Any = client.pipeline(transaction=False)
            for tag in self.probe_tags(client):
                key = redis_keys.probe(tag, token)
                pipe.set(key, b"1", nx=True, px=_PROBE_LEASE_MS)
                pipe.delete(key)
            await _execute(pipe)
            if isinstance(client, RedisCluster):
                nodes = client.get_primaries()
                memory = [await client.info("memory", target_nodes=node) for node in nodes]
                where = [node.name for node in nodes]
            else:
                memory, where = [await client.info("memory")], [self.description]
        for info, name in zip(memory, where, strict=True):
            room = int(info["maxmemory"]) - int(info["used_memory"])
            if int(info["maxmemory"]) and room < WRITE_HEADROOM:
                raise StoreFullError(
                    f"Redis at {name} has {max(room, 0):,} bytes left under its maxmemory, "
                    f"less than a commit of blocks may take ({WRITE_HEADROOM:,}): it refuses "
                    "them (free memory in Redis or raise its maxmemory; what it holds is still "
                    "read)"
                )
        return Write.ACCEPTED

    def probe_tags(self, client: Client) -> list[int]:
        """A probe tag per master: the first whose slot the master owns (the slot map as
        the client knows it now; a stale one only probes a master twice)."""
        if not isinstance(client, RedisCluster):
            return [0]
        masters = {node.name: node for node in client.get_primaries()}
        tags: dict[str, int] = {n: t for n, t in self._probe_tags.items() if n in masters}
        tag = 0
        while len(tags) < len(masters) and tag < _PROBE_TAG_SEARCH:
            owner = _owner(client, redis_keys.probe(tag, ""))
            if owner is not None and owner.name in masters and owner.name not in tags:
                tags[owner.name] = tag
            tag += 1
        self._probe_tags = tags
        return sorted(tags.values())

    async def nodes(self, namespaces: Sequence[str]) -> list[NodeReport]:
        """Every master (or the one server): its address, the memory Redis reports for it,
        and its share of each namespace's blocks (the HLEN of the groups in its slots)."""
        layouts = [await self._layout(ns, create=False) for ns in namespaces]
        async with self._reachable() as client:
            if isinstance(client, RedisCluster):
                masters: list[ClusterNode | None] = list(client.get_primaries())
                used = {  # node by node: redis-py answers one node's INFO unwrapped
                    node.name: int((await client.info("memory", target_nodes=node))["used_memory"])
                    for node in client.get_primaries()
                }
            else:
                masters = [None]
                used = {"": int((await client.info("memory"))["used_memory"])}
            counts: dict[tuple[str, str], int] = {}
            pipe: Any = client.pipeline(transaction=False)
            owners: list[tuple[str, str]] = []
            for ns, layout in zip(namespaces, layouts, strict=True):
                for group in layout.block_groups() if layout else []:
                    pipe.hlen(group)
                    owner = _owner(client, group) if isinstance(client, RedisCluster) else None
                    owners.append((ns, owner.name if owner else ""))
            for where, count in zip(owners, await _execute(pipe), strict=True):
                counts[where] = counts.get(where, 0) + int(count)
        reports = []
        for node in masters:
            name = node.name if node else ""
            reports.append(
                NodeReport(
                    address=name or self.description,
                    used_memory=used.get(name, 0),
                    blocks={ns: counts.get((ns, name), 0) for ns in namespaces},
                )
            )
        return reports

    async def aclose(self) -> None:
        """Close the client even from a cancelled scope (a worker giving up on a lost Redis
        drops the store from inside a timeout): a cluster client left open logs "Unclosed
        ClusterNode object" for each node when it is collected."""
        client, self._client = self._client, None
        with anyio.CancelScope(shield=True):
            await self._notifications.aclose()
            if client is not None:
                await close(client)


_PROBE_TAG_SEARCH: Final = 10_000
"""Tags tried to find one per master: a master's slots are a third of 16,384 on three
masters, so a few tries find its tag; the bound only stops a search for a master that owns
no slot."""


def _owner(client: RedisCluster, key: str) -> ClusterNode | None:
    """The master of ``key``'s slot as the client knows it, or None for an uncovered slot."""
    found = client.nodes_manager.slots_cache.get(key_slot(key.encode()))
    return found[0] if found else None


async def _execute(pipe: Any) -> list[Any]:
    """A pipeline's replies; the first error reply raised as itself (redis-py would wrap
    it in a message about the pipeline, which is not what went wrong)."""
    replies = list(await pipe.execute(raise_on_error=False))
    for reply in replies:
        if isinstance(reply, BaseException):
            raise reply
    return replies


def _text(name: object) -> str:
    """A hash field or set member as text (redis-py answers bytes)."""
    return name.decode() if isinstance(name, bytes) else str(name)


def milliseconds(seconds: float) -> int:
    """Seconds as the whole milliseconds Redis takes (at least 1)."""
    return max(1, round(seconds * 1000))
