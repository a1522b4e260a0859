"""The store contract: every store behaves the same, whatever holds its bytes.

Each case runs against every store of the ``store`` fixture; the SQLite-only cases at the
end check what a file shared between processes adds.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from redis.exceptions import OutOfMemoryError
from support.redis_server import RedisServer
from support.store_faults import (
    FULL,
    READ_ONLY,
    FailingConnection,
    failing_connections,
    on_every_connection,
    redis_at_maxmemory,
    store_file,
)

from memo_solver.core import store as store_module
from memo_solver.core.store import (
    Claim,
    Coverage,
    GoneNamespaces,
    NamespaceGoneError,
    RegistrationQuotaError,
    Store,
    StoreBusyError,
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
    Write,
)
from memo_solver.jobs import queue as jobs
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore

NS = "1:contract"  # conftest.CONTRACT_NAMESPACE: the cluster store is seeded away from it
OTHER_NS = "1:elsewhere"
KEYS = ["a", "b", "c"]
A, B = "token-a", "token-b"
LONG_LEASE = 30.0
PROMPT_S = 2.0
"""A wait that returns "promptly" does so well inside this, against timeouts of 10 s: a
margin for two test workers sharing two cores, far from a waiter that sat out its timeout."""
CLAIM_AND_HOLD = """
import os, socket, sys, uuid
from pathlib import Path
import anyio
from memo_solver.stores.sqlite import SQLiteStore

async def main() -> None:
    token = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"  # as an engine's
    claims = await SQLiteStore(Path(sys.argv[1])).try_claim(sys.argv[2], ["a"], token, 600.0)
    print(claims["a"].name, flush=True)
    await anyio.sleep_forever()

anyio.run(main)
"""
"""A process that claims block ``a`` for ten minutes, says so, and holds on until killed."""


async def test_get_many_of_missing_keys_is_empty(store: Store) -> None:
    assert await store.get_many(NS, KEYS) == {}
    assert await store.get_many(NS, []) == {}


async def test_commit_then_get_many_returns_the_bytes(store: Store) -> None:
    await store.commit(NS, {"a": b"alpha", "b": b"\x00\xffbeta"}, None)
    assert await store.get_many(NS, KEYS) == {"a": b"alpha", "b": b"\x00\xffbeta"}
    assert await store.get_many(NS, ["b"]) == {"b": b"\x00\xffbeta"}


async def test_commit_overwrites_a_block(store: Store) -> None:
    await store.commit(NS, {"a": b"old"}, None)
    await store.commit(NS, {"a": b"new"}, None)
    assert await store.get_many(NS, ["a"]) == {"a": b"new"}


async def test_claim_lifecycle(store: Store) -> None:
    assert await store.try_claim(NS, KEYS, A, LONG_LEASE) == dict.fromkeys(KEYS, Claim.CLAIMED)
    assert await store.try_claim(NS, KEYS, B, LONG_LEASE) == dict.fromkeys(KEYS, Claim.BUSY)
    # The holder may claim its own keys again.
    assert await store.try_claim(NS, KEYS, A, LONG_LEASE) == dict.fromkeys(KEYS, Claim.CLAIMED)
    await store.commit(NS, dict.fromkeys(KEYS, b"x"), A)
    assert await store.try_claim(NS, KEYS, B, LONG_LEASE) == dict.fromkeys(KEYS, Claim.DONE)
    assert await store.try_claim(NS, KEYS, A, LONG_LEASE) == dict.fromkeys(KEYS, Claim.DONE)


async def test_claim_answers_per_key(store: Store) -> None:
    await store.commit(NS, {"a": b"x"}, None)
    await store.try_claim(NS, ["b"], A, LONG_LEASE)
    assert await store.try_claim(NS, KEYS, B, LONG_LEASE) == {
        "a": Claim.DONE,
        "b": Claim.BUSY,
        "c": Claim.CLAIMED,
    }


async def test_an_expired_lease_can_be_claimed_by_another_token(store: Store) -> None:
    assert await store.try_claim(NS, ["a"], A, 0.05) == {"a": Claim.CLAIMED}
    await anyio.sleep(0.1)
    assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.CLAIMED}
    assert await store.try_claim(NS, ["a"], A, LONG_LEASE) == {"a": Claim.BUSY}


async def test_release_lets_another_token_claim_at_once(store: Store) -> None:
    await store.try_claim(NS, KEYS, A, LONG_LEASE)
    await store.release(NS, ["a", "b"], A)
    assert await store.try_claim(NS, KEYS, B, LONG_LEASE) == {
        "a": Claim.CLAIMED,
        "b": Claim.CLAIMED,
        "c": Claim.BUSY,
    }


async def test_release_leaves_other_tokens_claims_alone(store: Store) -> None:
    await store.try_claim(NS, ["a"], A, LONG_LEASE)
    await store.release(NS, ["a"], B)
    assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.BUSY}


async def test_commit_with_a_token_drops_its_claims(store: Store) -> None:
    await store.try_claim(NS, KEYS, A, LONG_LEASE)
    assert (await store.coverage(NS)).claims == 3
    await store.commit(NS, {"a": b"x", "b": b"y"}, A)
    assert (await store.coverage(NS)).claims == 1
    await store.commit(NS, {"c": b"z"}, A)
    assert (await store.coverage(NS)).claims == 0


async def test_commit_leaves_other_tokens_claims_alone(store: Store) -> None:
    await store.try_claim(NS, ["a", "b"], A, LONG_LEASE)
    await store.commit(NS, {"a": b"x"}, B)
    assert (await store.coverage(NS)).claims == 2
    assert await store.try_claim(NS, ["a", "b"], B, LONG_LEASE) == {
        "a": Claim.DONE,
        "b": Claim.BUSY,
    }


async def test_renew_extends_a_lease(store: Store) -> None:
    """Of two claims taken with one short lease, the renewed one outlives the other."""
    await store.try_claim(NS, ["a", "b"], A, 0.5)
    await store.renew(NS, ["a"], A, LONG_LEASE)
    with anyio.fail_after(10):
        while True:  # until the short lease has lapsed
            if await store.try_claim(NS, ["b"], B, LONG_LEASE) == {"b": Claim.CLAIMED}:
                break
            await anyio.sleep(0.02)
    assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.BUSY}


async def test_renew_by_another_token_does_not_extend(store: Store) -> None:
    await store.try_claim(NS, ["a"], A, 0.05)
    await store.renew(NS, ["a"], B, 5.0)
    await anyio.sleep(0.1)
    assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.CLAIMED}


async def test_wait_returns_promptly_when_another_task_commits(store: Store) -> None:
    await store.try_claim(NS, ["a"], A, LONG_LEASE)

    async def commit_soon() -> None:
        await anyio.sleep(0.05)
        await store.commit(NS, {"a": b"x"}, A)

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(commit_soon)
        await store.wait(NS, "a", 10.0)
        elapsed = time.monotonic() - start
    assert elapsed < PROMPT_S
    assert await store.get_many(NS, ["a"]) == {"a": b"x"}


async def test_wait_returns_promptly_when_the_holder_releases(store: Store) -> None:
    await store.try_claim(NS, ["a"], A, LONG_LEASE)

    async def release_soon() -> None:
        await anyio.sleep(0.05)
        await store.release(NS, ["a"], A)

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(release_soon)
        await store.wait(NS, "a", 10.0)
        elapsed = time.monotonic() - start
    assert elapsed < PROMPT_S


@pytest.mark.parametrize("before", ["never-claimed", "released", "lapsed"])
async def test_wait_returns_promptly_when_no_live_claim_holds(store: Store, before: str) -> None:
    """Nothing to wait for: the caller may claim the block now. (A waiter that missed the
    release, or whose holder died, must not sit out its whole timeout.)"""
    if before == "released":
        await store.try_claim(NS, ["a"], A, LONG_LEASE)
        await store.release(NS, ["a"], A)
    elif before == "lapsed":
        await store.try_claim(NS, ["a"], A, 0.05)
        await anyio.sleep(0.1)
    start = time.monotonic()
    await store.wait(NS, "a", 10.0)
    assert time.monotonic() - start < PROMPT_S


async def test_wait_returns_at_once_for_a_stored_block(store: Store) -> None:
    await store.commit(NS, {"a": b"x"}, None)
    start = time.monotonic()
    await store.wait(NS, "a", 10.0)
    assert time.monotonic() - start < PROMPT_S


async def test_wait_times_out_while_a_live_claim_holds(store: Store) -> None:
    await store.try_claim(NS, ["a"], A, LONG_LEASE)
    start = time.monotonic()
    await store.wait(NS, "a", 0.2)
    elapsed = time.monotonic() - start
    assert 0.15 <= elapsed < 1.0


async def test_keys_lists_committed_keys(store: Store) -> None:
    assert await store.keys(NS) == []
    await store.try_claim(NS, ["z"], A, LONG_LEASE)  # a claim is not a block
    await store.commit(NS, {"b": b"1", "a": b"2"}, None)
    await store.commit(NS, {"c": b"3"}, None)
    assert sorted(await store.keys(NS)) == ["a", "b", "c"]


def payload_bytes(store: Store, coverage: Coverage, expected: int) -> Coverage:
    """The coverage with the bytes of the encoded blocks where the store counts those;
    Redis reports its own measure of the hash (MEMORY USAGE), which holds them and more."""
    if isinstance(store, RedisStore) and coverage.bytes >= expected:
        return replace(coverage, bytes=expected)
    return coverage


async def test_coverage_counts_blocks_live_claims_and_bytes(store: Store) -> None:
    assert await store.coverage(NS) == Coverage(blocks=0, claims=0, bytes=0)
    await store.commit(NS, {"a": b"12345", "b": b"123"}, None)
    await store.try_claim(NS, ["c", "d"], A, LONG_LEASE)
    await store.try_claim(NS, ["e"], B, 0.05)
    covered = payload_bytes(store, await store.coverage(NS), 8)
    assert covered == Coverage(blocks=2, claims=3, bytes=8)
    await anyio.sleep(0.1)  # the short lease lapses: no longer counted
    covered = payload_bytes(store, await store.coverage(NS), 8)
    assert covered == Coverage(blocks=2, claims=2, bytes=8)
    await store.commit(NS, {"a": b"1"}, None)  # overwriting replaces the bytes
    covered = payload_bytes(store, await store.coverage(NS), 4)
    assert covered == Coverage(blocks=2, claims=2, bytes=4)


async def test_namespaces_are_isolated(store: Store) -> None:
    await store.commit(NS, {"a": b"x"}, None)
    await store.try_claim(NS, ["b"], A, LONG_LEASE)
    assert await store.get_many(OTHER_NS, ["a", "b"]) == {}
    assert await store.keys(OTHER_NS) == []
    assert await store.coverage(OTHER_NS) == Coverage(blocks=0, claims=0, bytes=0)
    assert await store.try_claim(OTHER_NS, ["a", "b"], B, LONG_LEASE) == {
        "a": Claim.CLAIMED,
        "b": Claim.CLAIMED,
    }
    await store.commit(OTHER_NS, {"a": b"other"}, B)
    assert await store.get_many(NS, ["a"]) == {"a": b"x"}
    assert await store.get_many(OTHER_NS, ["a"]) == {"a": b"other"}
    assert (await store.coverage(NS)).claims == 1


# --- definitions, and the namespaces as a whole (prune) ----------------------------------------

DEFINED_NS = "1:defined"


async def test_a_definition_is_kept_beside_the_blocks_and_set_once(store: Store) -> None:
    """The namespace is the rules' fingerprint: a second definition says the same rules."""
    assert await store.definition(NS) is None
    await store.put_definition(NS, b'{"name": "first"}')
    await store.put_definition(NS, b'{"name": "second"}')
    assert await store.definition(NS) == b'{"name": "first"}'
    assert await store.definition(OTHER_NS) is None
    assert await store.keys(NS) == []  # a definition is no block
    assert await store.coverage(NS) == Coverage(blocks=0, claims=0, bytes=0)


async def test_a_layer_is_arranged_as_the_same_keys(store: Store) -> None:
    keys = [f"{mask:x}" for mask in range(300)]
    assert sorted(await store.arrange(NS, keys, None)) == sorted(keys)
    assert sorted(await store.arrange(NS, keys, random.Random(1))) == sorted(keys)


async def test_namespaces_are_those_holding_blocks_claims_or_a_definition(store: Store) -> None:
    assert await store.namespaces() == []
    await store.commit(NS, {"a": b"x"}, None)
    await store.try_claim(OTHER_NS, ["b"], A, LONG_LEASE)
    await store.put_definition(DEFINED_NS, b"{}")
    # Reads hold nothing: a namespace only looked at is none.
    await store.get_many("1:looked-at", ["a"])
    await store.coverage("1:looked-at")
    await store.keys("1:looked-at")
    await store.definition("1:looked-at")
    assert await store.namespaces() == sorted([NS, OTHER_NS, DEFINED_NS])
    await store.release(OTHER_NS, ["b"], A)  # its only claim let go: it holds nothing
    assert await store.namespaces() == sorted([NS, DEFINED_NS])


async def test_deleting_a_namespace_deletes_all_it_holds_and_counts_its_blocks(
    store: Store,
) -> None:
    await store.commit(NS, {"a": b"1", "b": b"2"}, None)
    await store.try_claim(NS, ["c"], A, LONG_LEASE)
    await store.put_definition(NS, b"old rules")
    await store.commit(OTHER_NS, {"a": b"other"}, None)
    await store.put_definition(OTHER_NS, b"other rules")

    assert await store.delete_namespace(NS) == 2
    assert await store.get_many(NS, ["a", "b"]) == {}
    assert await store.keys(NS) == []
    assert await store.coverage(NS) == Coverage(blocks=0, claims=0, bytes=0)
    assert await store.definition(NS) is None
    assert await store.namespaces() == [OTHER_NS]
    assert await store.try_claim(NS, ["c"], B, LONG_LEASE) == {"c": Claim.CLAIMED}  # free now
    await store.put_definition(NS, b"new rules")  # set once per life of the namespace
    assert await store.definition(NS) == b"new rules"
    # Nothing of another namespace goes.
    assert await store.get_many(OTHER_NS, ["a"]) == {"a": b"other"}
    assert await store.definition(OTHER_NS) == b"other rules"
    assert await store.delete_namespace("1:never-used") == 0


async def test_the_namespaces_written_are_listed_without_a_walk_and_leave_with_a_delete(
    store: Store,
) -> None:
    await store.commit(NS, {"a": b"1"}, None)
    await store.commit(OTHER_NS, {"a": b"1"}, None)
    await store.put_definition("1:defined-only", b"rules")
    assert await store.written() == sorted([NS, OTHER_NS])
    await store.delete_namespace(OTHER_NS)
    assert await store.written() == [NS]


def another_process(store: Store) -> Store:
    """A second handle on the same store, as another process opens it (None in memory)."""
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    if isinstance(store, RedisStore):
        return RedisStore(store.url)
    pytest.skip("one process's memory: no other process writes to it")


async def test_a_commit_into_a_namespace_deleted_since_the_writer_began_is_refused(
    store: Store,
) -> None:
    """A worker still solving a rule set that was deleted (its layout record gone) has its
    commits refused, writing nothing, so no block lands where no record says whose it is,
    and its solve's other writes too (:data:`GONE_HOLD_S`); a writer that starts afresh
    makes the namespace again."""
    async with another_process(store) as worker:
        assert await worker.try_claim(NS, ["a", "b"], A, LONG_LEASE) == {
            "a": Claim.CLAIMED,
            "b": Claim.CLAIMED,
        }
        await worker.commit(NS, {"a": b"1"}, A)
        assert await store.delete_namespace(NS) == 1
        with pytest.raises(NamespaceGoneError) as refused:
            await worker.commit(NS, {"b": b"2", "c": b"3", "d": b"4"}, A)
        assert refused.value.field == "rules"
        assert await store.namespaces() == []
        assert await store.strays() == {}
        assert await store.coverage(NS) == Coverage(blocks=0, claims=0, bytes=0)
        await store.commit(NS, {"c": b"3"}, None)
        assert await worker.get_many(NS, ["c"]) == {"c": b"3"}
        with pytest.raises(NamespaceGoneError):
            await worker.try_claim(NS, ["d"], A, LONG_LEASE)
        with pytest.raises(NamespaceGoneError):
            await worker.commit(NS, {"d": b"4"}, None)
        assert await store.get_many(NS, ["c", "d"]) == {"c": b"3"}


def test_a_namespace_held_gone_is_refused_for_the_hold_then_may_start_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = GoneNamespaces()
    assert isinstance(gone.hold(NS), NamespaceGoneError)
    with pytest.raises(NamespaceGoneError):
        gone.check(NS)
    gone.check(OTHER_NS)  # another namespace is written as ever
    gone.release(NS)  # this process deleted it itself
    gone.check(NS)
    monkeypatch.setattr(store_module, "GONE_HOLD_S", 0.0)
    gone.hold(NS)
    gone.check(NS)  # the hold is over: a rule set registered again is solved here again


async def test_redis_finds_and_deletes_the_strays_no_layout_record_covers(store: Store) -> None:
    """Blocks a writer left in a namespace's groups after its layout record went (what a
    version without the commit's check wrote after a delete) are found by no reader: the
    store counts them as strays, and deletes them and nothing else."""
    if not isinstance(store, RedisStore):
        pytest.skip("SQLite and memory keep no layout: every block is read")
    await store.commit(NS, {k: k.encode() for k in KEYS}, None)
    await store.try_claim(NS, ["d"], A, LONG_LEASE)
    await store.commit(OTHER_NS, {"a": b"kept"}, None)
    assert await store.strays() == {}
    client = await store.client()
    await client.delete(redis_keys.layout(NS))  # the record alone, as a delete leaves it
    strays = await store.strays()
    assert list(strays) == [NS]
    assert (strays[NS].blocks, strays[NS].claims) == (3, 1)
    async with another_process(store) as reader:  # one that never saw the record
        assert await reader.coverage(NS) == Coverage(blocks=0, claims=0, bytes=0)
    assert await store.delete_strays(NS) == 3
    assert await store.strays() == {}
    assert await store.namespaces() == [OTHER_NS]
    assert await store.get_many(OTHER_NS, ["a"]) == {"a": b"kept"}


# --- registrations: names given to rule sets, shared by every process on the store -------------

YAHTZEE_PRINT, YATZY_PRINT = "a1a1a1a1a1a1a1a1", "b2b2b2b2b2b2b2b2"
ROOM = 100
"""A registration quota that the tests of other rules never reach."""


async def test_a_name_is_registered_once_and_keeps_its_first_document(store: Store) -> None:
    assert await store.registration("house") is None
    assert await store.register("house", YAHTZEE_PRINT, b'{"v": 1}', ROOM) is None  # registered now
    assert await store.register("house", YATZY_PRINT, b'{"v": 2}', ROOM) == b'{"v": 1}'
    assert await store.register("house", YAHTZEE_PRINT, b'{"v": 1}', ROOM) == b'{"v": 1}'  # held
    assert await store.registration("house") == b'{"v": 1}'
    assert await store.registrations("", 10) == [("house", b'{"v": 1}')]
    # A registration is no namespace: nothing for prune to find or delete.
    assert await store.namespaces() == []


async def test_registrations_are_paged_in_name_order_strictly_after_the_last_name(
    store: Store,
) -> None:
    names = ["echo", "alpha", "delta", "bravo", "charlie"]
    for name in names:
        await store.register(name, YAHTZEE_PRINT, f"rules of {name}".encode(), ROOM)
    pages: list[list[tuple[str, bytes]]] = []
    after = ""
    while page := await store.registrations(after, 2):
        pages.append(page)
        after = page[-1][0]
    assert [[name for name, _ in page] for page in pages] == [
        ["alpha", "bravo"],
        ["charlie", "delta"],
        ["echo"],
    ]
    assert dict(pair for page in pages for pair in page) == {
        name: f"rules of {name}".encode() for name in names
    }
    assert await store.registrations("charlie", 10) == [
        ("delta", b"rules of delta"),
        ("echo", b"rules of echo"),
    ]
    assert await store.registrations("bz", 1) == [("charlie", b"rules of charlie")]


async def test_names_are_ordered_bytewise(store: Store) -> None:
    """Upper case before lower case, and a name before its extensions, as bytes compare."""
    for name in ["yatzy", "Yatzy", "yatzy-2", "yätzy", "yatzy2"]:
        await store.register(name, YATZY_PRINT, name.encode(), ROOM)
    assert [name for name, _ in await store.registrations("", 10)] == sorted(
        ["yatzy", "Yatzy", "yatzy-2", "yätzy", "yatzy2"], key=str.encode
    )


async def test_unregistering_counts_the_other_names_that_share_the_fingerprint(
    store: Store,
) -> None:
    """What the caller needs to know whether the blocks of those rules are still named."""
    await store.register("copy-1", YAHTZEE_PRINT, b"yahtzee as copy-1", ROOM)
    await store.register("copy-2", YAHTZEE_PRINT, b"yahtzee as copy-2", ROOM)
    await store.register("copy-3", YAHTZEE_PRINT, b"yahtzee as copy-3", ROOM)
    await store.register("scandinavian", YATZY_PRINT, b"yatzy", ROOM)

    assert await store.unregister("copy-1") == 2
    assert await store.registration("copy-1") is None
    assert await store.unregister("copy-2") == 1
    assert await store.unregister("scandinavian") == 0
    assert await store.unregister("copy-3") == 0
    assert await store.registrations("", 10) == []
    assert await store.unregister("copy-1") is None  # gone already
    # A freed name takes new rules, and is counted afresh.
    assert await store.register("copy-1", YATZY_PRINT, b"yatzy now", ROOM) is None
    assert await store.registrations("", 10) == [("copy-1", b"yatzy now")]
    assert await store.unregister("copy-1") == 0


async def test_unregistering_a_name_never_registered_is_none(store: Store) -> None:
    assert await store.unregister("nobody") is None
    await store.register("somebody", YAHTZEE_PRINT, b"rules", ROOM)
    assert await store.unregister("nobody") is None
    assert await store.registration("somebody") == b"rules"


async def test_of_concurrent_registrations_of_one_name_exactly_one_wins_for_all(
    store: Store,
) -> None:
    await _race_for_a_name([store])
    assert await store.unregister("contested") == 0  # the losers' fingerprints were not counted


async def test_of_concurrent_registrations_of_one_document_exactly_one_registers_it(
    store: Store,
) -> None:
    """The same rules sent twenty times at once: one caller registered them, and the others
    learn that they were registered already, although the document is their own."""
    await _race_for_a_name([store], same_document=True)
    assert await store.unregister("contested") == 0  # counted once


async def _race_for_a_name(stores: list[Store], *, same_document: bool = False) -> None:
    """Twenty registrations of one name (with different documents, or all with one),
    spread over ``stores``: exactly one registers its document, every other caller is told
    that document, and every store reads it."""
    answers: dict[int, bytes | None] = {}

    def document(i: int) -> bytes:
        return b"rules" if same_document else f"rules {i}".encode()

    async def register(i: int) -> None:
        store = stores[i % len(stores)]
        fingerprint = "a1" * 8 if same_document else f"{i:016x}"
        answers[i] = await store.register("contested", fingerprint, document(i), ROOM)

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(register, i)
    winners = [i for i, answer in answers.items() if answer is None]
    assert len(winners) == 1, answers
    winner = document(winners[0])
    assert {answer for answer in answers.values() if answer is not None} == {winner}
    for store in stores:
        assert await store.registration("contested") == winner


async def test_of_concurrent_registrations_of_new_names_exactly_the_quota_succeed(
    store: Store,
) -> None:
    """Forty new names at once against a quota of five with two taken: exactly three are
    registered, the others refused with the quota named, and a name held is still answered
    with its document past the quota (no new registration)."""
    quota = 5
    for name, fingerprint in (("held-1", YAHTZEE_PRINT), ("held-2", YATZY_PRINT)):
        assert await store.register(name, fingerprint, name.encode(), quota) is None
    registered: list[str] = []
    refused: list[int] = []

    async def register(i: int) -> None:
        try:
            held = await store.register(f"new-{i:02}", f"{i:016x}", b"rules %d" % i, quota)
        except RegistrationQuotaError as exc:
            refused.append(exc.quota)
        else:
            assert held is None
            registered.append(f"new-{i:02}")

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(register, i)
    assert len(registered) == quota - 2
    assert refused == [quota] * (40 - len(registered))
    listed = [name for name, _ in await store.registrations("", 100)]
    assert listed == sorted(["held-1", "held-2", *registered])
    assert await store.register("held-1", YAHTZEE_PRINT, b"held-1", quota) == b"held-1"
    assert await store.unregister("held-1") == 0
    assert await store.register("new-xx", YAHTZEE_PRINT, b"in the freed place", quota) is None


# --- SQLite only: one file shared by several store objects (as by several processes) --------


async def test_sqlite_stores_on_one_file_share_blocks_and_claims(tmp_path: Path) -> None:
    first, second = SQLiteStore(tmp_path / "shared.sqlite"), SQLiteStore(tmp_path / "shared.sqlite")
    try:
        assert await first.try_claim(NS, ["a", "b"], A, LONG_LEASE) == {
            "a": Claim.CLAIMED,
            "b": Claim.CLAIMED,
        }
        assert await second.try_claim(NS, ["a", "b"], B, LONG_LEASE) == {
            "a": Claim.BUSY,
            "b": Claim.BUSY,
        }
        await first.commit(NS, {"a": b"from first"}, A)
        assert await second.get_many(NS, ["a", "b"]) == {"a": b"from first"}
        assert await second.coverage(NS) == Coverage(blocks=1, claims=1, bytes=10)

        start = time.monotonic()
        async with anyio.create_task_group() as tg:

            async def commit_soon() -> None:
                await anyio.sleep(0.05)
                await first.commit(NS, {"b": b"later"}, A)

            tg.start_soon(commit_soon)
            await second.wait(NS, "b", 10.0)
            assert time.monotonic() - start < PROMPT_S
        assert await second.get_many(NS, ["b"]) == {"b": b"later"}
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize("same_document", [False, True], ids=["other-documents", "one-document"])
async def test_sqlite_stores_on_one_file_register_a_name_once(
    tmp_path: Path, same_document: bool
) -> None:
    """Two store objects on one file, as two API processes: each registration is one write
    transaction, so of two racing for a name one wins, and both are told its document."""
    stores: list[Store] = [SQLiteStore(tmp_path / "shared.sqlite") for _ in range(4)]
    try:
        await _race_for_a_name(stores, same_document=same_document)
    finally:
        for store in stores:
            await store.aclose()


async def test_sqlite_blocks_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "folder" / "memo.sqlite"
    store = SQLiteStore(path)
    try:
        await store.commit(NS, {"a": b"kept", "b": b"too"}, None)
    finally:
        await store.aclose()
    reopened = SQLiteStore(path)
    try:
        assert await reopened.get_many(NS, ["a", "b"]) == {"a": b"kept", "b": b"too"}
        assert sorted(await reopened.keys(NS)) == ["a", "b"]
        assert await reopened.try_claim(NS, ["a"], A, LONG_LEASE) == {"a": Claim.DONE}
    finally:
        await reopened.aclose()


async def test_sqlite_claims_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "memo.sqlite"
    store = SQLiteStore(path)
    try:
        await store.try_claim(NS, ["a"], A, LONG_LEASE)
    finally:
        await store.aclose()
    reopened = SQLiteStore(path)
    try:
        assert await reopened.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.BUSY}
    finally:
        await reopened.aclose()


async def test_sqlite_a_claim_of_a_dead_process_is_free_at_once(tmp_path: Path) -> None:
    """A process of this host that claimed a block and was killed (SIGKILL: no release)
    holds it no longer: the claim is taken, and waited past, at once, not after its lease
    (ten minutes, so only the holder's death can explain it)."""
    path = tmp_path / "memo.sqlite"
    store = SQLiteStore(path)
    try:
        args = [sys.executable, "-c", CLAIM_AND_HOLD, str(path), NS]
        async with await anyio.open_process(args) as holder:
            assert holder.stdout is not None
            with anyio.fail_after(30):
                said = await holder.stdout.receive()
            assert said.strip() == b"CLAIMED"
            assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.BUSY}
            holder.kill()
            await holder.wait()
        with anyio.fail_after(5):
            await store.wait(NS, "a", 600.0)
        assert await store.try_claim(NS, ["a"], B, LONG_LEASE) == {"a": Claim.CLAIMED}
    finally:
        await store.aclose()


@pytest.mark.parametrize("many", [1, 499, 500, 501, 1200])
async def test_get_many_of_many_keys(store: Store, many: int) -> None:
    blocks = {f"{i:x}": i.to_bytes(4, "little") for i in range(many)}
    await store.commit(NS, blocks, None)
    assert await store.get_many(NS, [*blocks, "missing"]) == blocks


# --- readiness and faults: every store error names the store and says what it is ----------


async def test_a_sound_store_accepts_the_probe_write(store: Store) -> None:
    assert await store.probe() is Write.ACCEPTED
    assert await store.probe() is Write.ACCEPTED  # the first left nothing in the way
    assert await store.keys("probe") == []


async def test_sqlite_a_failing_statement_commits_nothing_of_its_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_connections(monkeypatch)
    async with SQLiteStore(tmp_path / "memo.sqlite") as store:
        # BEGIN, two SELECTs for the batch, the INSERT of every claim: the COMMIT fails,
        # after the claims were written.
        FailingConnection.statements_left = 4
        with pytest.raises(StoreUnavailableError, match="injected"):
            await store.try_claim(NS, KEYS, A, LONG_LEASE)
        assert (await store.coverage(NS)).claims == 0
        assert await store.try_claim(NS, KEYS, B, LONG_LEASE) == dict.fromkeys(KEYS, Claim.CLAIMED)


async def test_sqlite_a_failing_statement_commits_nothing_of_its_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_connections(monkeypatch)
    async with SQLiteStore(tmp_path / "memo.sqlite") as store:
        await store.try_claim(NS, KEYS, A, LONG_LEASE)
        FailingConnection.statements_left = 3  # BEGIN, the blocks; dropping the claims fails
        with pytest.raises(StoreUnavailableError, match="injected"):
            await store.commit(NS, dict.fromkeys(KEYS, b"x"), A)
        assert await store.keys(NS) == []
        assert (await store.coverage(NS)).claims == len(KEYS)


async def test_sqlite_a_commit_writes_its_blocks_in_one_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One INSERT for the whole batch, cut out of one joined blob by SQLite itself (a
    statement per row took the GIL back after each row, behind the solver's threads), with
    every block's bytes intact: empty, zero bytes, sizes that differ."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    blocks = {f"k{i}": bytes([i % 3, 0, 255]) * i for i in range(40)}
    async with SQLiteStore(tmp_path / "memo.sqlite") as store:
        await store.commit(NS, blocks, A)
        assert await store.get_many(NS, list(blocks)) == blocks
    # One for the blocks; the namespace's record (the first write's) is a row of its own.
    assert sum(" INTO blocks " in statement for statement in statements) == 1


async def test_sqlite_commits_never_checkpoint_and_a_checkpoint_of_its_own_follows_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's connection never copies the WAL into the file inside a commit (that copy
    and its fsync stalled a whole solve): after 8 MB of commits a checkpoint runs on a
    connection of its own, in a thread beside the writes, and the file holds the blocks."""
    statements: list[tuple[int, str]] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(*args, **kwargs)
        connection.set_trace_callback(lambda sql: statements.append((id(connection), sql)))
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    path = tmp_path / "memo.sqlite"
    async with SQLiteStore(path) as store:
        own = statements[0][0]
        for i in range(9):
            await store.commit(NS, {f"k{i}": bytes([i]) * 1_000_000}, A)
        deadline = time.monotonic() + 10
        while path.stat().st_size < 9_000_000:
            assert time.monotonic() < deadline, "the WAL was never checkpointed"
            await anyio.sleep(0.01)
        assert await store.get_many(NS, ["k8"]) == {"k8": bytes([8]) * 1_000_000}
    checkpoints = [(db, sql) for db, sql in statements if "wal_checkpoint" in sql]
    assert checkpoints
    assert all(db != own for db, _ in checkpoints)
    assert (own, "PRAGMA wal_autocheckpoint = 0") in statements


async def test_sqlite_a_full_file_is_a_store_full_error_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite rolls a full transaction back itself: the error raised must still be "full"
    (a COMMIT after it would fail with "no transaction is active" and hide it)."""
    path = await store_file(tmp_path / "memo.sqlite")
    on_every_connection(monkeypatch, FULL)
    async with SQLiteStore(path) as store:
        many = [f"key-{i}" for i in range(2000)]  # more claims than the file's pages hold
        with pytest.raises(StoreFullError, match=f"the store {path} is full") as full:
            await store.try_claim(NS, many, A, LONG_LEASE)
        assert "--store" in str(full.value)
        assert (await store.coverage(NS)).claims == 0
        with pytest.raises(StoreFullError):
            await store.commit(NS, {"a": bytes(100_000)}, None)
        with pytest.raises(StoreFullError):
            await store.probe()
        assert await store.get_many(NS, ["a"]) == {}  # reads go on


async def test_sqlite_a_read_only_file_is_read_and_refuses_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memo.sqlite"
    async with SQLiteStore(path) as writable:
        await writable.commit(NS, {"a": b"kept"}, None)
    on_every_connection(monkeypatch, READ_ONLY)
    async with SQLiteStore(path) as store:
        assert await store.get_many(NS, ["a"]) == {"a": b"kept"}
        with pytest.raises(StoreRefusedError, match=f"the store {path} refused the write"):
            await store.commit(NS, {"b": b"new"}, None)
        with pytest.raises(StoreRefusedError, match="writable"):
            await store.probe()


async def test_sqlite_a_file_from_before_definitions_is_read_and_gets_them_once_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file is orphaned: one written before definitions and registrations were kept (no
    tables for them) opens as it did, read-only too, and holds none; the first definition
    makes its table, the first registration its own."""
    path = tmp_path / "memo.sqlite"
    with sqlite3.connect(path) as old:  # the schema of a file from before definitions
        old.executescript(
            """
            CREATE TABLE blocks (namespace TEXT NOT NULL, key TEXT NOT NULL,
                data BLOB NOT NULL, PRIMARY KEY (namespace, key));
            CREATE TABLE claims (namespace TEXT NOT NULL, key TEXT NOT NULL,
                token TEXT NOT NULL, expires REAL NOT NULL,
                PRIMARY KEY (namespace, key)) WITHOUT ROWID;
            INSERT INTO blocks VALUES ('1:contract', 'a', x'6b657074');
            """
        )
    old.close()
    with monkeypatch.context() as read_only:
        on_every_connection(read_only, READ_ONLY)
        async with SQLiteStore(path) as store:
            assert await store.get_many(NS, ["a"]) == {"a": b"kept"}
            assert await store.definition(NS) is None
            assert await store.namespaces() == [NS]
            assert await store.registration("house") is None
            assert await store.registrations("", 10) == []
            assert await store.unregister("house") is None
            with pytest.raises(StoreRefusedError, match="refused the write"):
                await store.put_definition(NS, b"rules")
            with pytest.raises(StoreRefusedError, match="refused the write"):
                await store.register("house", "a1a1a1a1a1a1a1a1", b"rules", ROOM)
    async with SQLiteStore(path) as store:
        await store.put_definition(NS, b"rules")
        assert await store.definition(NS) == b"rules"
        assert await store.delete_namespace(NS) == 1
        assert await store.namespaces() == []
        assert await store.register("house", "a1a1a1a1a1a1a1a1", b"rules", ROOM) is None
        assert await store.registrations("", 10) == [("house", b"rules")]


async def test_sqlite_a_write_lock_held_elsewhere_is_busy(tmp_path: Path) -> None:
    """Another process's write transaction (a precompute committing): the probe answers
    BUSY at once; a write waits for the lock, and past the timeout says who to wait for."""
    path = await store_file(tmp_path / "memo.sqlite")
    other = sqlite3.connect(path, isolation_level=None)
    try:
        async with SQLiteStore(path, lock_timeout_s=0.2) as store:
            other.execute("BEGIN IMMEDIATE")
            assert await store.probe() is Write.BUSY
            with pytest.raises(StoreBusyError, match=f"the store {path} stayed locked"):
                await store.commit(NS, {"a": b"x"}, None)
            other.execute("ROLLBACK")
            assert await store.probe() is Write.ACCEPTED
            await store.commit(NS, {"a": b"x"}, None)
    finally:
        other.close()


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        (lambda tmp: Path("/proc/memo-solver-test"), "cannot open the store"),
        (lambda tmp: tmp, "cannot open the store"),
    ],
    ids=["under-proc", "a-folder"],
)
def test_sqlite_a_path_that_cannot_be_a_store_is_bad_input(
    tmp_path: Path, folder: Callable[[Path], Path], expected: str
) -> None:
    """Not an outage: the CLI says it as bad input (exit status 2), not "retry later"."""
    where = folder(tmp_path)
    with pytest.raises(StoreLocationError, match=expected):
        SQLiteStore(where if where == tmp_path else where / "memo.sqlite")


async def test_redis_at_maxmemory_refused_the_write_it_was_not_unreachable(
    fresh_redis: RedisServer,
) -> None:
    async with RedisStore(fresh_redis.url) as store:
        await store.commit(NS, {"a": b"kept"}, None)
        with fresh_redis.client() as client, redis_at_maxmemory(client):
            for write in (
                store.probe(),
                store.commit(NS, {"b": b"x"}, None),
                store.try_claim(NS, ["b"], A, LONG_LEASE),
            ):
                with pytest.raises(StoreFullError) as refused:
                    await write
                message = str(refused.value)
                assert message.startswith(f"Redis at {fresh_redis.url} refused the write: OOM")
                assert "cannot reach" not in message
                assert "maxmemory" in message
            assert await store.get_many(NS, ["a"]) == {"a": b"kept"}  # reads go on
        assert await store.probe() is Write.ACCEPTED
        with fresh_redis.client() as client:
            assert client.keys("ms:{probe}:*") == []


async def test_redis_at_maxmemory_refuses_a_growing_script_at_once_and_runs_the_others(
    fresh_redis: RedisServer,
) -> None:
    """A script refused at maxmemory is refused before it starts: a job record whose first
    write is a DEL is not rewritten halfway. Scripts that only read or free memory run:
    status and health answer, claims are renewed and let go, workers stay listed."""
    async with RedisStore(fresh_redis.url) as store:
        await store.try_claim(NS, ["held"], A, LONG_LEASE)
        await jobs.enqueue(
            await store.client(), jobs.Job.precompute("yahtzee-lower"), again_if_done=True
        )
        with fresh_redis.client() as client, redis_at_maxmemory(client):
            before = client.hgetall(redis_keys.job(jobs.Job.precompute("yahtzee-lower").id))
            with pytest.raises(OutOfMemoryError):
                await jobs.enqueue(
                    await store.client(), jobs.Job.precompute("yahtzee-lower"), again_if_done=True
                )
            after = client.hgetall(redis_keys.job(jobs.Job.precompute("yahtzee-lower").id))
            assert after == before
            assert (await store.coverage(NS)).claims == 1
            await jobs.beat(await store.client(), "w1", {"id": "w1"}, 10)
            assert [w["id"] for w in await jobs.live_workers(await store.client(), "*")] == ["w1"]
            await store.renew(NS, ["held"], A, LONG_LEASE)
            await store.release(NS, ["held"], A)
            assert (await store.coverage(NS)).claims == 0


async def test_redis_at_maxmemory_refuses_a_definition_and_still_deletes_a_namespace(
    fresh_redis: RedisServer,
) -> None:
    """Deleting frees memory: ``prune`` works on a full Redis, which is when it is wanted."""
    async with RedisStore(fresh_redis.url) as store:
        await store.commit(NS, {"a": b"x", "b": b"y"}, None)
        await store.try_claim(NS, ["c"], A, LONG_LEASE)
        with fresh_redis.client() as client, redis_at_maxmemory(client):
            with pytest.raises(StoreFullError):
                await store.put_definition(NS, b"rules")
            assert await store.namespaces() == [NS]
            assert await store.delete_namespace(NS) == 2
            assert await store.namespaces() == []


async def test_redis_at_maxmemory_refuses_a_registration_and_still_unregisters(
    fresh_redis: RedisServer,
) -> None:
    """Removing a registration frees memory, and the registered are still read: a full Redis
    refuses only new names."""
    async with RedisStore(fresh_redis.url) as store:
        await store.register("house", YAHTZEE_PRINT, b"house rules", ROOM)
        with fresh_redis.client() as client, redis_at_maxmemory(client):
            with pytest.raises(StoreFullError):
                await store.register("other", YATZY_PRINT, b"other rules", ROOM)
            assert await store.registration("other") is None
            assert await store.registration("house") == b"house rules"
            assert await store.registrations("", 10) == [("house", b"house rules")]
            assert await store.unregister("house") == 0
            assert await store.registrations("", 10) == []
        # Nothing left behind, not even a fingerprint's count.
        assert await (await store.client()).exists(*redis_keys.REGISTRATIONS) == 0


async def test_redis_error_replies_are_refusals_and_only_lost_connections_unreachable(
    fresh_redis: RedisServer,
) -> None:
    async with RedisStore(fresh_redis.url) as store:
        with fresh_redis.client() as client:
            client.set(redis_keys.Layout(NS, 1).blocks(0), "not a hash")  # WRONGTYPE for all
        with pytest.raises(StoreRefusedError, match="refused the command: WRONGTYPE"):
            await store.get_many(NS, ["a"])
        fresh_redis.kill()
        with pytest.raises(StoreUnavailableError, match="cannot reach Redis") as down:
            await store.probe()
        assert not isinstance(down.value, StoreRefusedError)
