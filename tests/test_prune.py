"""``memo-solver prune`` end to end, on SQLite and on a real Redis.

A namespace is known when it belongs to a built-in game or holds its rule set's definition
(of this format version: another's blocks are unreadable); ``prune --dry-run`` lists the
others with what they hold and deletes nothing, ``prune`` deletes them and says so, and
the known ones stay, whatever they hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from memo_solver.core.codec import FORMAT_VERSION
from memo_solver.core.engine import namespace, namespace_of
from memo_solver.core.store import Coverage, Store
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore

CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    k: v for k, v in os.environ.items() if k not in ("MEMO_SOLVER_STORE", "MEMO_SOLVER_REDIS_URL")
}

BUILT_IN = namespace(YahtzeeGame(RULE_SETS["yahtzee-lower"]))
DEFINED = f"{FORMAT_VERSION}:0123456789abcdef"
"""A rule set from a file or the API: its definition is stored beside its blocks."""
ORPHAN = f"{FORMAT_VERSION}:fedcba9876543210"
"""Blocks of rules nobody can name: no built-in, no definition."""
OLDER_FORMAT = f"{FORMAT_VERSION - 1}:{BUILT_IN.partition(':')[2]}"
"""A built-in's fingerprint in a format this version cannot read, definition or not."""
CLAIMED_ONLY = f"{FORMAT_VERSION}:00000000claimed"
"""Nothing but a claim left behind."""
UNKNOWN = sorted([ORPHAN, OLDER_FORMAT, CLAIMED_ONLY])


async def fill(store: Store) -> None:
    async with store:
        await store.commit(BUILT_IN, {"a": b"1", "b": b"2"}, None)
        await store.commit(DEFINED, {"a": b"1"}, None)
        await store.put_definition(DEFINED, b'{"name": "house"}')
        await store.commit(ORPHAN, {"a": b"1", "b": b"2", "c": b"3"}, None)
        await store.commit(OLDER_FORMAT, {"a": b"1"}, None)
        await store.put_definition(OLDER_FORMAT, b'{"name": "old"}')
        await store.try_claim(CLAIMED_ONLY, ["a"], "token", 600.0)


async def namespaces_of(store: Store) -> list[str]:
    async with store:
        return await store.namespaces()


def prune(options: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *options, "prune", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )


def test_prune_lists_then_deletes_the_unknown_namespaces_and_keeps_the_known(
    store_of: tuple[list[str], Callable[[], Store]],
) -> None:
    options, open_store = store_of
    anyio.run(fill, open_store())
    everything = sorted([BUILT_IN, DEFINED, *UNKNOWN])

    listed = prune(options, "--dry-run", "--json")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)
    assert answer["dry_run"] is True
    assert answer["known"] == 2
    rows = {row["namespace"]: (row["blocks"], row["claims"]) for row in answer["namespaces"]}
    assert rows == {ORPHAN: (3, 0), OLDER_FORMAT: (1, 0), CLAIMED_ONLY: (0, 1)}
    assert answer["blocks"] == 4
    assert anyio.run(namespaces_of, open_store()) == everything  # nothing deleted

    deleted = prune(options)
    assert deleted.returncode == 0, deleted.stderr
    lines = deleted.stdout.splitlines()
    assert lines[0].endswith("2 known namespaces kept; 3 unknown deleted, 4 blocks:")
    assert sorted(lines[1:]) == sorted(
        [
            f"  {ORPHAN}  3 blocks, 0 claims held",
            f"  {OLDER_FORMAT}  1 blocks, 0 claims held",
            f"  {CLAIMED_ONLY}  0 blocks, 1 claims held",
        ]
    )
    assert anyio.run(namespaces_of, open_store()) == sorted([BUILT_IN, DEFINED])

    again = prune(options, "--dry-run")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().endswith("2 known namespaces kept; nothing to prune")


def test_a_need_table_the_command_line_built_for_a_built_in_is_listed_and_kept(
    store_of: tuple[list[str], Callable[[], Store]],
) -> None:
    """A built-in's need table keeps no definition (every process knows the built-in): its
    family reads the table's fingerprint as one of a built-in, so ``status`` lists it by
    rule set and cap and ``prune`` knows it; a need table of rules nobody can name is
    unknown all the same."""
    options, open_store = store_of
    rules = RULE_SETS["yahtzee"]
    state = "open=chance,yahtzee upper=50"
    built = subprocess.run(
        [
            str(CLI),
            *options,
            "value",
            "--rules",
            "yahtzee",
            state,
            "--need",
            "30",
            "--need-cap",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    table = namespace_of(f"{rules.fingerprint}-need40")
    status = subprocess.run(
        [str(CLI), *options, "status", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    listed = json.loads(status.stdout)["tables"]
    assert list(listed) == [table]
    assert listed[table]["rules"] == "yahtzee"
    assert listed[table]["value_type"] == "need table up to 40 points"
    assert listed[table]["blocks_done"] > 0
    assert listed[table]["bytes"] > 0
    orphan_table = f"{ORPHAN}-need40"
    anyio.run(commit_blocks, open_store(), orphan_table)

    deleted = prune(options, "--json")
    assert deleted.returncode == 0, deleted.stderr
    assert [row["namespace"] for row in json.loads(deleted.stdout)["namespaces"]] == [orphan_table]
    assert table in anyio.run(namespaces_of, open_store())


async def commit_blocks(store: Store, name: str) -> None:
    async with store:
        await store.commit(name, {"a": b"1"}, None)


async def leave_strays(store: RedisStore, name: str) -> None:
    """What a delete left before commits were checked: the layout record and the definition
    gone, the blocks its workers wrote back spread over the groups."""
    async with store:
        await store.put_definition(name, b'{"name": "deleted"}')
        await store.commit(name, {f"k{i}": b"1" for i in range(40)}, None)
        client = await store.client()
        await client.delete(redis_keys.layout(name), redis_keys.definition(name))


@pytest.mark.parametrize(
    "where", ["redis_url", pytest.param("cluster_url", marks=pytest.mark.full)]
)
def test_prune_finds_and_deletes_blocks_that_no_layout_record_covers(
    where: str, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue(where)
    anyio.run(leave_strays, RedisStore(url), ORPHAN)

    listed = prune(["--redis", url], "--dry-run", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["namespace"]: row["blocks"] for row in json.loads(listed.stdout)["namespaces"]}
    assert rows == {ORPHAN: 40}

    deleted = prune(["--redis", url], "--json")
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout)["blocks"] == 40
    assert anyio.run(namespaces_of, RedisStore(url)) == []
    assert anyio.run(strays_of, RedisStore(url)) == {}  # the groups' record copies too


async def strays_of(store: Store) -> dict[str, Coverage]:
    async with store:
        return await store.strays()


def test_prune_help_shows_examples() -> None:
    shown = prune([], "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--dry-run" in shown.stdout
    assert "memo-solver --redis redis://127.0.0.1:6379/0 prune --dry-run --json" in shown.stdout
