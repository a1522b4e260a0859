"""What the Redis store adds to the store contract (tests/test_store.py runs that on Redis too).

- every key of a namespace carries its hash tag, so a block, its claim and the Lua scripts
  that touch both live in one Redis Cluster slot; the tag is the format version and the
  rule set's fingerprint;
- a waiter is woken by pub/sub when *another* connection (another process) commits or
  releases, within milliseconds, not at its one-second re-check;
- a waiter whose holder died (a claim never committed) returns once the lease lapses;
- an unreachable Redis is a :class:`StoreUnavailableError` naming the URL (never its
  password), and one line from the CLI with exit status 2;
- the CLI finds the Redis URL in ``$MEMO_SOLVER_REDIS_URL`` when ``--redis`` is not given;
- a namespace is found by its keys (never by a job's, a worker's, a registration's or
  another program's) and deleted with every one of them, in one slot;
- the registrations of named rule sets are keys of one slot, apart from every namespace.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from redis.crc import key_slot
from support.redis_server import RedisServer, free_port
from support.worker_support import stored_blocks

from memo_solver.core.codec import FORMAT_VERSION
from memo_solver.core.compiled import CACHE_ENV, cache_dir
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.store import Claim, NamespaceGoneError, StoreUnavailableError
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.redis_keys import Layout

LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])
LOWER_PIN = RULE_SETS["yahtzee-lower"].start_value
NS = namespace(LOWER)
ROOM = 100
"""A registration quota that these tests never reach."""
TAG = "{" + NS + "}"
A, B = "token-a", "token-b"
LONG_LEASE = 30.0
RECHECK_S = 1.0
"""How often a waiter re-checks the claim without a notification (redis_store._RECHECK_S)."""
NOTIFIED_WITHIN_S = 0.4
"""A notification's latency on loopback is a millisecond or two; this leaves room for a
loaded CI machine (two test workers on two cores) while staying far below the one-second
re-check."""


@asynccontextmanager
async def opened(url: str, *, listen: bool = True) -> AsyncIterator[RedisStore]:
    """A RedisStore on ``url``: entered with its notifications flowing, or (``listen=False``)
    never entered, so that nothing but its one-second re-check can wake its waiters.

    An entered store subscribes to a group's channel when one of its waiters first waits.
    """
    store = RedisStore(url)
    if not listen:
        try:
            yield store
        finally:
            await store.aclose()
        return
    async with store:
        yield store


# --- keys and slots ------------------------------------------------------------------------


@pytest.fixture
def cluster_node(cluster_redis: RedisServer) -> int:
    """The one-node cluster's port (for CLUSTER KEYSLOT)."""
    return cluster_redis.port


def _slot(port: int, name: str) -> int:
    with redis.Redis("127.0.0.1", port) as node:
        return int(node.execute_command("CLUSTER", "KEYSLOT", name))


GROUPED = Layout(NS, redis_keys.DEFAULT_GROUPS)
OLD = Layout(NS, 1)
"""The layouts of a namespace written now, and of one written before groups existed."""


@pytest.mark.parametrize("layout", [GROUPED, OLD], ids=["groups", "one group"])
def test_every_key_of_a_group_shares_its_slot(cluster_node: int, layout: Layout) -> None:
    keys = [LOWER.root(), *LOWER.successors(LOWER.root()), "7f"]
    for group in {layout.group_of(key) for key in keys}:
        names = [layout.blocks(group), layout.claims(group), layout.done_channel(group)]
        names += [layout.claim(group, key) for key in keys if layout.group_of(key) == group]
        slot = _slot(cluster_node, names[0])
        for name in names:
            assert "{" + layout.tag(group) + "}" in name, name
            assert _slot(cluster_node, name) == slot, name
            assert key_slot(name.encode()) == slot, name  # redis-py's CRC16 agrees
    # The layout and the definition: the namespace's own tag.
    assert _slot(cluster_node, redis_keys.layout(NS)) == _slot(
        cluster_node, redis_keys.definition(NS)
    )


@pytest.mark.parametrize("groups", [redis_keys.MIN_GROUPS, 340])
def test_the_groups_slots_are_spaced_evenly(groups: int) -> None:
    """Group g's slot lies in the g-th of ``groups`` equal slices, so masters that own equal
    slot ranges hold equal shares of the groups; blocks spread evenly over the groups."""
    layout = Layout(NS, groups)
    slots = [key_slot(layout.blocks(g).encode()) for g in range(groups)]
    assert [slot * groups // 16384 for slot in slots] == list(range(groups))
    for masters in (3, 5):
        shares = [sum(1 for s in slots if s * masters // 16384 == m) for m in range(masters)]
        assert max(shares) - min(shares) <= 1 + groups // 16384 * masters, shares
    keys = [f"{mask:x}" for mask in range(4096)]
    sizes = [len(v) for v in layout.by_group(keys).values()]
    assert len(sizes) == groups
    assert max(sizes) < 3 * 4096 / groups


@pytest.mark.parametrize(
    ("size", "groups"),
    [(0, 32), (8 << 20, 32), (64 << 20, 32), (65 << 20, 33), (680 << 20, 340), (10 << 30, 1024)],
)
def test_a_namespace_is_spread_by_its_expected_size(size: int, groups: int) -> None:
    """At least 32 groups, then one more per 2 MB the engine says it may hold, at most 1024."""
    assert redis_keys.groups_for(size) == groups


async def test_the_engine_sizes_the_spread_of_a_namespace_it_writes(
    redis_url: str, r: redis.Redis
) -> None:
    maxi = YahtzeeGame(RULE_SETS["maxi-yatzy"])
    async with opened(redis_url) as store:
        async with open_engine(maxi, store):
            pass
        await store.commit(namespace(maxi), {"a": b"x"}, None)
    assert int(r.get(redis_keys.layout(namespace(maxi))) or 0) > 256


def _names_of(names: list[str]) -> set[str]:
    return {name.split("}:", 1)[1].split(":", 1)[0] for name in names}


async def test_a_layer_is_arranged_by_group_so_a_chunk_is_a_few_scripts(redis_url: str) -> None:
    keys = [f"{mask:x}" for mask in range(2048)]
    async with opened(redis_url) as store:
        order = await store.arrange(NS, keys, None)
        mixed = await store.arrange(NS, keys, random.Random(7))
    assert sorted(order) == sorted(mixed) == sorted(keys)
    for arranged in (order, mixed):
        groups = [GROUPED.group_of(key) for key in arranged]
        runs = 1 + sum(1 for a, b in itertools.pairwise(groups) if a != b)
        assert runs == GROUPED.groups  # each group's keys together, once
    assert mixed != order


async def test_every_script_call_touches_one_slot(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a cluster demands of every script (else CROSSSLOT): each call's keys, in every
    batch a solve, a wait, a release, coverage, deletion and the registrations send."""
    calls: list[list[str]] = []
    run = RedisStore._run

    async def recorded(
        self: RedisStore, script: str, batch: Sequence[tuple[list[str], list[Any]]]
    ) -> list[Any]:
        calls.extend(keys for keys, _ in batch)
        return await run(self, script, batch)

    monkeypatch.setattr(RedisStore, "_run", recorded)
    async with opened(redis_url) as store:
        async with open_engine(LOWER, store) as engine:
            await engine.block(LOWER.root())
        await store.try_claim(NS, ["x", "y", "z"], A, LONG_LEASE)
        await store.renew(NS, ["x", "y"], A, LONG_LEASE)
        await store.release(NS, ["x"], A)
        await store.coverage(NS)
        await store.register("house", "f" * 16, b"rules", ROOM)
        await store.registrations("", 10)
        await store.unregister("house")
        await store.delete_namespace(NS)
    assert len(calls) > LOWER.block_count // 64
    for keys in calls:
        assert len({key_slot(key.encode()) for key in keys}) == 1, keys


async def namespace_keys(store: RedisStore, written: list[str]) -> list[str]:
    """Every key the store holds but the one index of the namespaces written, which must
    list ``written`` (what ``status`` reads instead of a SCAN)."""
    client = await store.client()
    assert await store.written() == sorted(written)
    return [
        n.decode() async for n in client.scan_iter(match="*") if n != redis_keys.WRITTEN.encode()
    ]


async def test_every_key_written_by_a_solve_carries_its_groups_tag(redis_url: str) -> None:
    async with opened(redis_url) as store:
        async with open_engine(LOWER, store) as engine:
            root = await engine.block(LOWER.root())
        assert root[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
        # A claim still held, so that its key is among those scanned.
        assert await store.try_claim(NS, ["held"], A, LONG_LEASE) == {"held": Claim.CLAIMED}
        names = await namespace_keys(store, [NS])
    assert names, "the solve wrote nothing"
    assert redis_keys.layout(NS) in names
    held = GROUPED.group_of("held")
    assert GROUPED.claim(held, "held") in names
    assert GROUPED.claims(held) in names
    for name in names:
        assert name.startswith(f"ms:{{{NS}"), name
        assert redis_keys.namespace_of(name) in (NS, None if name.endswith(":layout") else NS)
    assert _names_of(names) == {"layout", "blocks", "claim", "claims"}
    blocks = [n for n in names if n.endswith(":blocks")]
    assert len(blocks) > 1  # spread over groups


async def test_keys_carry_the_format_version_and_the_rules_fingerprint(redis_url: str) -> None:
    """Blocks of another format or of other rules can never be read as these: a change of
    either is a change of every key."""
    upper = YahtzeeGame(RULE_SETS["yahtzee-upper"])
    async with opened(redis_url) as store:
        async with open_engine(upper, store) as engine:
            await engine.block(upper.root())
        names = await namespace_keys(store, [namespace(upper)])
    tag = f"{{{FORMAT_VERSION}:{RULE_SETS['yahtzee-upper'].fingerprint}"
    assert names
    assert all(name.startswith(f"ms:{tag}") for name in names)


async def test_a_claim_is_a_key_with_the_lease_as_its_ttl(redis_url: str) -> None:
    claim, blocks = GROUPED.claim(GROUPED.group_of("a"), "a"), GROUPED.blocks(GROUPED.group_of("a"))
    async with opened(redis_url, listen=False) as store:
        client = await store.client()
        await store.try_claim(NS, ["a"], A, 2.0)
        ttl_ms = await client.pttl(claim)
        assert 1000 < ttl_ms <= 2000
        assert await client.get(claim) == A.encode()
        await store.renew(NS, ["a"], A, 20.0)
        assert 10_000 < await client.pttl(claim) <= 20_000
        await store.commit(NS, {"a": b"x"}, A)
        assert await client.exists(claim) == 0
        assert await client.hget(blocks, "a") == b"x"


async def test_a_namespace_written_before_groups_is_read_and_written_in_place(
    redis_url: str, r: redis.Redis
) -> None:
    """Blocks under the namespace's own tag (the old layout, with no layout record) stay
    where they are, and every process reads and writes there; the first write records the
    layout of one group, which its commits check (a delete removes it)."""
    r.hset(OLD.blocks(0), "a", b"old")
    async with opened(redis_url) as store:
        assert await store.get_many(NS, ["a", "b"]) == {"a": b"old"}
        assert await store.try_claim(NS, ["a", "b"], A, LONG_LEASE) == {
            "a": Claim.DONE,
            "b": Claim.CLAIMED,
        }
        await store.commit(NS, {"b": b"new"}, A)
        assert (await store.coverage(NS)).blocks == 2
        assert await store.keys(NS) == ["a", "b"]
    assert r.hgetall(OLD.blocks(0)) == {b"a": b"old", b"b": b"new"}
    assert r.smembers(redis_keys.WRITTEN) == {NS.encode()}
    assert {n.decode() for n in r.scan_iter(match="*")} == {
        OLD.blocks(0),
        OLD.marker(0),
        redis_keys.WRITTEN,
    }
    assert r.get(redis_keys.layout(NS)) == b"1"


async def test_a_claim_in_a_namespace_deleted_since_is_refused_and_leaves_nothing(
    redis_url: str, r: redis.Redis
) -> None:
    """A worker whose rule set was deleted is refused its next claim as its next commit:
    nothing it does leaves a key behind (a claims set without a layout record would be
    debris for ``prune``)."""
    async with opened(redis_url) as worker, opened(redis_url) as operator:
        assert await worker.try_claim(NS, ["a"], A, LONG_LEASE) == {"a": Claim.CLAIMED}
        await operator.delete_namespace(NS)
        with pytest.raises(NamespaceGoneError):
            await worker.try_claim(NS, ["b", "c"], A, LONG_LEASE)
    assert list(r.scan_iter(match="*")) == []


async def test_a_new_namespace_gets_groups_and_readers_write_nothing(
    redis_url: str, r: redis.Redis
) -> None:
    async with opened(redis_url) as store:
        assert await store.get_many(NS, ["a"]) == {}
        assert (await store.coverage(NS)).blocks == 0
        assert await store.keys(NS) == []
        await store.wait(NS, "a", 0.1)
        assert r.dbsize() == 0  # reading a namespace never written writes nothing
        await store.commit(NS, {"a": b"x"}, None)
    assert int(r.get(redis_keys.layout(NS)) or 0) == redis_keys.DEFAULT_GROUPS
    assert r.hget(GROUPED.blocks(GROUPED.group_of("a")), "a") == b"x"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (OLD.blocks(0), NS),
        (OLD.claims(0), NS),
        (OLD.claim(0, "7f"), NS),
        (GROUPED.blocks(7), NS),
        (GROUPED.claims(GROUPED.groups - 1), NS),
        (GROUPED.claim(3, "7f"), NS),
        (redis_keys.definition(NS), NS),
        (redis_keys.layout(NS), None),
        (f"ms:{{{NS}/3}}:definition", None),
        (f"ms:{{{NS}/x}}:blocks", None),
        (redis_keys.JOB_STREAM, None),
        (redis_keys.RECENT_JOBS, None),
        (redis_keys.LIVE_WORKERS, None),
        (redis_keys.job("b951bdf6d2969e31"), None),
        (redis_keys.worker("w1"), None),
        (redis_keys.probe(0, "0123abcd"), None),
        (redis_keys.probe(17, "0123abcd"), None),
        *((key, None) for key in redis_keys.REGISTRATIONS),
        (f"ms:{TAG}:something-else", None),
        ("ms:jobs", None),
        ("other-app:{x}:blocks", None),
    ],
)
def test_a_key_names_its_namespace_only_when_it_is_one_of_a_namespaces(
    key: str, expected: str | None
) -> None:
    assert redis_keys.namespace_of(key) == expected


async def test_a_namespace_is_deleted_with_every_key_a_solve_wrote_and_nothing_else(
    redis_url: str, r: redis.Redis
) -> None:
    from memo_solver.jobs import queue as jobs

    other = "1:other"
    async with opened(redis_url) as store:
        async with open_engine(LOWER, store) as engine:
            await engine.block(LOWER.root())
        assert await store.try_claim(NS, ["held"], A, LONG_LEASE) == {"held": Claim.CLAIMED}
        await store.put_definition(NS, b"rules")
        await store.commit(other, {"a": b"x"}, None)
        await jobs.enqueue(await store.client(), jobs.Job.precompute("yahtzee-lower"))
        await jobs.beat(await store.client(), "w1", {"id": "w1"}, 60)
        r.set("other-app:key", "kept")
        before = {name.decode() for name in r.scan_iter(match="*")}
        mine = {n for n in before if n.startswith(f"ms:{{{NS}")}
        assert redis_keys.definition(NS) in mine
        assert GROUPED.claim(GROUPED.group_of("held"), "held") in mine
        assert await store.namespaces() == sorted([NS, other])

        assert await store.delete_namespace(NS) == LOWER.block_count
        after = {name.decode() for name in r.scan_iter(match="*")}
        assert after == before - mine
        assert await store.namespaces() == [other]


async def test_the_namespace_calls_run_on_a_one_node_cluster(cluster_redis: RedisServer) -> None:
    """A cluster refuses a script whose keys are in two slots, or that touches a key it was
    not given (CROSSSLOT): deleting a namespace declares every key it deletes."""
    with cluster_redis.client() as client:
        client.flushall()
    async with opened(cluster_redis.url) as store:
        await store.commit(NS, {"a": b"1", "b": b"2"}, None)
        await store.try_claim(NS, ["c", "d"], A, LONG_LEASE)
        await store.put_definition(NS, b"rules")
        assert await store.definition(NS) == b"rules"
        assert await store.namespaces() == [NS]
        assert await store.delete_namespace(NS) == 2
        assert await store.namespaces() == []


def test_the_registrations_share_one_cluster_slot_of_their_own(cluster_node: int) -> None:
    slot = _slot(cluster_node, redis_keys.REGISTERED_NAMES)
    for name in redis_keys.REGISTRATIONS:
        assert "{rules}" in name, name
        assert _slot(cluster_node, name) == slot, name
    assert _slot(cluster_node, redis_keys.layout(NS)) != slot


async def test_registrations_are_never_taken_for_a_namespace(redis_url: str) -> None:
    """``prune`` walks every tagged key: a registered name, even one spelled like a
    namespace, is no namespace, and deleting a namespace leaves every registration."""
    async with opened(redis_url) as store:
        await store.register(NS, "a1a1a1a1a1a1a1a1", b"rules named like a namespace", ROOM)
        await store.register("house", "a1a1a1a1a1a1a1a1", b"house rules", ROOM)
        await store.commit(NS, {"a": b"x"}, None)
        assert await store.namespaces() == [NS]
        assert await store.delete_namespace(NS) == 1
        assert await store.namespaces() == []
        assert [name for name, _ in await store.registrations("", 10)] == sorted([NS, "house"])


async def test_the_registration_calls_run_on_a_one_node_cluster(
    cluster_redis: RedisServer,
) -> None:
    """A cluster refuses a script whose keys are in two slots, or that touches a key it was
    not given (CROSSSLOT): each registration script declares every key it touches."""
    with cluster_redis.client() as client:
        client.flushall()
    async with opened(cluster_redis.url) as store:
        assert await store.register("house", "a1a1a1a1a1a1a1a1", b"one", ROOM) is None
        assert await store.register("house", "b2b2b2b2b2b2b2b2", b"two", ROOM) == b"one"
        await store.register("copy", "a1a1a1a1a1a1a1a1", b"one", ROOM)
        assert await store.registration("house") == b"one"
        assert await store.registrations("", 1) == [("copy", b"one")]
        assert await store.registrations("copy", 1) == [("house", b"one")]
        assert await store.unregister("house") == 1
        assert await store.unregister("house") is None


# --- waiting across connections ------------------------------------------------------------


@pytest.mark.parametrize("how", ["commit", "release"])
async def test_a_waiter_is_woken_by_another_connection_long_before_its_recheck(
    redis_url: str, how: str
) -> None:
    async with opened(redis_url) as waiter, opened(redis_url, listen=False) as holder:
        assert await holder.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.CLAIMED}
        acted_at = 0.0

        async def act_soon() -> None:
            nonlocal acted_at
            await anyio.sleep(0.2)
            acted_at = time.monotonic()
            if how == "commit":
                await holder.commit(NS, {"a": b"x"}, B)
            else:
                await holder.release(NS, ["a"], B)

        async with anyio.create_task_group() as tg:
            tg.start_soon(act_soon)
            with anyio.fail_after(5):
                await waiter.wait(NS, "a", 10.0)
            woke_at = time.monotonic()
        assert acted_at > 0, "the waiter returned before the other connection acted"
        assert woke_at - acted_at < NOTIFIED_WITHIN_S
        if how == "commit":
            assert await waiter.get_many(NS, ["a"]) == {"a": b"x"}
        else:
            assert await waiter.try_claim(NS, ["a"], A, LONG_LEASE) == {"a": Claim.CLAIMED}


async def test_without_its_listener_a_waiter_only_notices_at_the_recheck(redis_url: str) -> None:
    """The contrast that shows the notification is what makes the test above fast."""
    async with opened(redis_url, listen=False) as waiter, opened(redis_url) as holder:
        await holder.try_claim(NS, ["a"], B, LONG_LEASE)
        acted_at = 0.0

        async def commit_soon() -> None:
            nonlocal acted_at
            await anyio.sleep(0.2)
            acted_at = time.monotonic()
            await holder.commit(NS, {"a": b"x"}, B)

        async with anyio.create_task_group() as tg:
            tg.start_soon(commit_soon)
            start = time.monotonic()
            await waiter.wait(NS, "a", 10.0)
            woke_at = time.monotonic()
        assert woke_at - acted_at > 0.5
        assert woke_at - start < RECHECK_S + 0.5


async def test_a_waiter_whose_holder_died_returns_about_when_the_lease_lapses(
    redis_url: str,
) -> None:
    lease = 0.5
    async with opened(redis_url) as waiter, opened(redis_url, listen=False) as holder:
        assert await holder.try_claim(NS, ["a"], "dead-holder", lease) == {"a": Claim.CLAIMED}
        start = time.monotonic()
        with anyio.fail_after(10):
            await waiter.wait(NS, "a", 30.0)
        elapsed = time.monotonic() - start
        # No message comes when a lease lapses: the waiter sees it at its next re-check.
        assert lease * 0.9 <= elapsed < lease + RECHECK_S + 0.5
        assert await waiter.try_claim(NS, ["a"], A, LONG_LEASE) == {"a": Claim.CLAIMED}


# --- an unreachable Redis ------------------------------------------------------------------


def _dead_url(password: str | None = None) -> str:
    auth = f":{password}@" if password else ""
    return f"redis://{auth}127.0.0.1:{free_port()}/0"


@pytest.mark.parametrize(
    "operation", ["ping", "get_many", "try_claim", "commit", "wait", "keys", "coverage"]
)
async def test_an_unreachable_url_raises_store_unavailable_naming_it(operation: str) -> None:
    url = _dead_url()
    calls = {
        "ping": lambda s: s.ping(),
        "get_many": lambda s: s.get_many(NS, ["a"]),
        "try_claim": lambda s: s.try_claim(NS, ["a"], A, 1.0),
        "commit": lambda s: s.commit(NS, {"a": b"x"}, A),
        "wait": lambda s: s.wait(NS, "a", 1.0),
        "keys": lambda s: s.keys(NS),
        "coverage": lambda s: s.coverage(NS),
    }
    async with opened(url, listen=False) as store:
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=re.escape(url)):
            await calls[operation](store)
        assert time.monotonic() - start < 3.0  # refused at once: no long retry loop
    assert store.description == url


async def test_an_unreachable_url_never_shows_its_password() -> None:
    url = _dead_url(password="s3cret-pw")
    async with opened(url, listen=False) as store:
        with pytest.raises(StoreUnavailableError) as caught:
            await store.ping()
    message = str(caught.value)
    assert "s3cret-pw" not in message
    assert "***" in message
    assert "s3cret-pw" not in store.description


COMPILED = str(cache_dir())


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memo_solver", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # The compiled code the suite's own processes use, wherever ``env`` puts the cache.
        env={"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", CACHE_ENV: COMPILED, **env},
    )


@pytest.mark.parametrize("command", [["value"], ["status"], ["precompute", "--rules", "yazy"]])
def test_the_cli_exits_75_naming_an_unreachable_url(command: list[str]) -> None:
    """Store trouble, not bad input: EX_TEMPFAIL, so a script knows to retry later."""
    url = _dead_url()
    done = _cli("--redis", url, *command)
    assert done.returncode == 75, done.stderr
    assert done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("memo-solver: error: cannot reach Redis at " + url), done.stderr
    assert "Traceback" not in done.stderr


def test_the_cli_says_an_unreachable_url_in_one_line() -> None:
    url = _dead_url()
    done = _cli("--redis", url, "value")
    assert done.returncode == 75
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert url in done.stderr


def test_the_cli_finds_redis_in_the_environment(
    redis_url: str, r: redis.Redis, tmp_path: Path
) -> None:
    """``$MEMO_SOLVER_REDIS_URL`` alone (no ``--redis``) points a query at the shared Redis:
    it solves there, and the SQLite cache in the user's folder is never created."""
    done = _cli(
        "value",
        "--rules",
        "yahtzee-lower",
        "--json",
        MEMO_SOLVER_REDIS_URL=redis_url,
        XDG_CACHE_HOME=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert stored_blocks(r, NS) == LOWER.block_count
    assert list(tmp_path.iterdir()) == []


async def test_aclose_closes_every_connection(redis_url: str, tmp_path: Path) -> None:
    with redis.Redis.from_url(redis_url) as observer:
        before = len(observer.client_list())
        store = RedisStore(redis_url)
        await store.ping()
        assert len(observer.client_list()) == before + 1
        await store.aclose()
        with anyio.fail_after(5):
            while True:  # until the server has seen the connection go
                if len(observer.client_list()) == before:
                    break
                await anyio.sleep(0.01)


async def test_the_same_job_asked_for_at_once_is_queued_once(
    redis_url: str, r: redis.Redis
) -> None:
    """Job ids come from content, so duplicates merge, even when the asks race."""
    from memo_solver.jobs import queue as jobs

    job = jobs.Job("precompute", "yahtzee-lower")
    store = RedisStore(redis_url)
    answers: list[bool] = []

    async def ask() -> None:
        answers.append((await jobs.enqueue(await store.client(), job))[1])

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(ask)
    await store.aclose()
    assert sorted(answers) == [False] * 19 + [True]
    assert r.xlen(redis_keys.JOB_STREAM) == 1
    assert r.hget(redis_keys.job(job.id), b"status") == b"queued"
