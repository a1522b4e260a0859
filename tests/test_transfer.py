"""Seeding a Redis from a file: export from SQLite, import into Redis, serve without computing;
and backing a Redis up: export from it into a file or an SQLite store.

Every block is verified on the way out and on the way in, so a damaged source is counted
and skipped (the engine recomputes what is missing), and a file of another rule set is
refused as a whole, with one line from the CLI and exit status 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgpack
import pytest

from memo_solver.core.codec import decode_block
from memo_solver.core.engine import namespace, open_engine
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore
from memo_solver.stores.transfer import TransferError, export_blocks, import_blocks, read_file

LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])
UPPER = YahtzeeGame(RULE_SETS["yahtzee-upper"])
LOWER_PIN = RULE_SETS["yahtzee-lower"].start_value
NS = namespace(LOWER)
LATE = block_key(0b1011111)
"""A late block of yahtzee-lower: only the Yahtzee box open."""
ONLY_YAHTZEE_OPEN = 2.3014321263
"""50 x P(Yahtzee within three rolls) (pins.md)."""


@asynccontextmanager
async def opened_redis(url: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(url) as store:
        yield store


async def precomputed_sqlite(path: Path, *, damaged: tuple[str, ...] = ()) -> Path:
    """An SQLite store holding all 128 blocks of yahtzee-lower, some of them junk."""
    async with SQLiteStore(path) as store:
        async with open_engine(LOWER, store) as engine:
            root = await engine.block(LOWER.root())
        assert root[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
        assert engine.counters.computed == LOWER.block_count == 128
        if damaged:
            await store.commit(NS, dict.fromkeys(damaged, b"junk"), None)
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memo_solver", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )


def cli_json(*args: str) -> dict[str, object]:
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    payload: dict[str, object] = json.loads(done.stdout)
    return payload


async def assert_served_without_computing(url: str) -> None:
    """A fresh engine on the Redis finds the root stored: nothing computed, the pinned value."""
    async with opened_redis(url) as store:
        coverage = await store.coverage(NS)
        async with open_engine(LOWER, store) as engine:
            root = await engine.block(LOWER.root())
    assert root[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert engine.counters.computed == 0
    assert engine.counters.fetched >= 1
    assert coverage.claims == 0


# --- the CLI, end to end -------------------------------------------------------------------


async def test_export_to_a_file_and_import_into_redis(redis_url: str, tmp_path: Path) -> None:
    source = await precomputed_sqlite(tmp_path / "source.sqlite")
    dump = tmp_path / "lower.msgpack"
    exported = cli_json(
        "--store", str(source), "export", "--rules", "yahtzee-lower", "--to", str(dump)
    )
    assert exported == {
        "rules": "yahtzee-lower",
        "blocks": 128,
        "skipped_bad": 0,
        "blocks_total": 128,
    }
    assert dump.is_file()
    assert len(read_file(dump, LOWER)) == 128

    imported = cli_json(
        "--redis", redis_url, "import", "--rules", "yahtzee-lower", "--from", str(dump)
    )
    assert imported["blocks"] == 128
    assert imported["skipped_bad"] == 0
    await assert_served_without_computing(redis_url)

    # And a player's question is answered from the imported blocks.
    value = cli_json("--redis", redis_url, "value", "--rules", "yahtzee-lower")
    assert value["value"] == pytest.approx(LOWER_PIN, abs=1e-9)


async def test_export_and_import_move_a_namespace_from_the_old_layout_to_groups(
    redis_url: str, tmp_path: Path
) -> None:
    """A namespace written before groups existed (one hash, no layout record) is read in
    place; exported and imported again, it lands in groups, spread over a cluster's masters."""
    async with RedisStore(redis_url, groups=1) as store:
        async with open_engine(LOWER, store) as engine:
            await engine.block(LOWER.root())
        client = await store.client()
        await client.delete(redis_keys.layout(NS))  # as a store written before groups
        assert await client.hlen(redis_keys.Layout(NS, 1).blocks(0)) == 128
    dump = tmp_path / "lower.msgpack"
    exported = cli_json(
        "--redis", redis_url, "export", "--rules", "yahtzee-lower", "--to", str(dump)
    )
    assert exported["blocks"] == 128
    async with opened_redis(redis_url) as store:
        assert await store.delete_namespace(NS) == 128
    imported = cli_json(
        "--redis", redis_url, "import", "--rules", "yahtzee-lower", "--from", str(dump)
    )
    assert imported["blocks"] == 128
    async with opened_redis(redis_url) as store:
        client = await store.client()
        assert int(await client.get(redis_keys.layout(NS)) or 0) == redis_keys.DEFAULT_GROUPS
        assert await client.exists(redis_keys.Layout(NS, 1).blocks(0)) == 0
    await assert_served_without_computing(redis_url)


async def test_export_from_sqlite_straight_into_redis(redis_url: str, tmp_path: Path) -> None:
    source = await precomputed_sqlite(tmp_path / "source.sqlite")
    exported = cli_json(
        "--store", str(source), "export", "--rules", "yahtzee-lower", "--to", redis_url
    )
    assert exported["blocks"] == 128
    await assert_served_without_computing(redis_url)


async def test_a_damaged_block_is_skipped_and_counted(redis_url: str, tmp_path: Path) -> None:
    source = await precomputed_sqlite(tmp_path / "source.sqlite", damaged=(LATE,))
    dump = tmp_path / "lower.msgpack"
    exported = cli_json(
        "--store", str(source), "export", "--rules", "yahtzee-lower", "--to", str(dump)
    )
    assert (exported["blocks"], exported["skipped_bad"]) == (127, 1)
    assert LATE not in read_file(dump, LOWER)

    # A block damaged in the file itself (one flipped byte) is caught on the way in.
    content = msgpack.unpackb(dump.read_bytes())
    other = block_key(0b1111011)
    data = bytearray(content["blocks"][other])
    data[-1] ^= 0xFF
    content["blocks"][other] = bytes(data)
    dump.write_bytes(msgpack.packb(content))

    imported = cli_json(
        "--redis", redis_url, "import", "--rules", "yahtzee-lower", "--from", str(dump)
    )
    assert (imported["blocks"], imported["skipped_bad"]) == (126, 1)
    await assert_served_without_computing(redis_url)

    # The two missing blocks are computed on demand, once each, from the stored ones.
    async with opened_redis(redis_url) as store:
        assert set(await store.keys(NS)) == {block_key(m) for m in range(128)} - {LATE, other}
        async with open_engine(LOWER, store) as engine:
            late = await engine.block(LATE)
            await engine.block(other)
        assert engine.counters.computed == 2
        stored = await store.get_many(NS, [LATE, other])
    for key in (LATE, other):
        decoded = decode_block(
            stored[key], fingerprint=LOWER.fingerprint, key=key, shape=LOWER.block_shape(key)
        )
        assert decoded is not None
    assert late[0, 0] == pytest.approx(ONLY_YAHTZEE_OPEN, abs=1e-9)


async def blocks_at(dest: Path) -> dict[str, bytes]:
    """Every block of yahtzee-lower in a dump file or an SQLite store, as stored."""
    if dest.suffix == ".msgpack":
        return read_file(dest, LOWER)
    async with SQLiteStore(dest) as store:
        return await store.get_many(NS, await store.keys(NS))


@pytest.mark.parametrize("dest_name", ["lower.msgpack", "lower.sqlite"])
async def test_export_from_redis_copies_its_verified_blocks(
    redis_url: str, tmp_path: Path, dest_name: str
) -> None:
    """Redis as the source: every good block arrives as it was, a junk one is left out."""
    async with opened_redis(redis_url) as store:
        async with open_engine(LOWER, store) as engine:
            await engine.block(LOWER.root())
        await store.commit(NS, {LATE: b"junk"}, None)
        in_redis = await store.get_many(NS, await store.keys(NS))
    dest = tmp_path / dest_name

    exported = cli_json(
        "--redis", redis_url, "export", "--rules", "yahtzee-lower", "--to", str(dest)
    )
    assert (exported["blocks"], exported["skipped_bad"]) == (127, 1)
    copied = await blocks_at(dest)
    assert copied == {key: data for key, data in in_redis.items() if key != LATE}


def test_a_file_of_another_rule_set_is_refused(redis_url: str, tmp_path: Path) -> None:
    source = tmp_path / "source.sqlite"
    assert cli("--store", str(source), "precompute", "--rules", "yahtzee-lower").returncode == 0
    dump = tmp_path / "lower.msgpack"
    cli_json("--store", str(source), "export", "--rules", "yahtzee-lower", "--to", str(dump))

    done = cli("--redis", redis_url, "import", "--rules", "yahtzee-upper", "--from", str(dump))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memo-solver: error: ")
    assert "yahtzee-lower" in lines[0]
    assert "yahtzee-upper" in lines[0]
    status = cli_json("--redis", redis_url, "status")
    rule_sets = status["rule_sets"]
    assert isinstance(rule_sets, dict)
    assert rule_sets["yahtzee-upper"]["blocks_done"] == 0
    assert rule_sets["yahtzee-lower"]["blocks_done"] == 0


def test_a_file_that_is_no_dump_is_refused(redis_url: str, tmp_path: Path) -> None:
    dump = tmp_path / "garbage.msgpack"
    dump.write_bytes(b"\x00 not msgpack at all")
    done = cli("--redis", redis_url, "import", "--rules", "yahtzee-lower", "--from", str(dump))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "not a memo-solver block file" in lines[0]


@pytest.mark.parametrize("kept", [0.5, 0.01, 0.999])
def test_a_truncated_file_is_said_to_be_truncated(tmp_path: Path, kept: float) -> None:
    """Cut anywhere: msgpack runs out of bytes, or first finds a map announcing more
    entries than the bytes left could hold ("2048 exceeds max_map_len(500)")."""
    whole = msgpack.packb(
        {
            "format": "memo-solver-blocks",
            "version": 1,
            "rules": LOWER.name,
            "namespace": namespace(LOWER),
            "blocks": {block_key(mask): bytes(40) for mask in range(128)},
        }
    )
    dump = tmp_path / "cut.msgpack"
    dump.write_bytes(whole[: int(len(whole) * kept)])
    with pytest.raises(TransferError, match=r"cut.msgpack is truncated: it ends before the blocks"):
        read_file(dump, LOWER)


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_a_bad_from_is_named_as_from_not_store(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "s.sqlite"), "import", "--rules", "yahtzee-lower"]
    missing = cli(*store, "--from", str(tmp_path / "no.sqlite"))
    assert missing.returncode == 2
    assert missing.stderr == f"memo-solver: error: --from {tmp_path / 'no.sqlite'}: no such file\n"
    assert not (tmp_path / "no.sqlite").exists()  # not made into an empty store
    folder = cli(*store, "--from", str(tmp_path))
    assert folder.returncode == 2
    assert folder.stderr.endswith("(choose another file with --from)\n"), folder.stderr


# --- the library calls ---------------------------------------------------------------------


async def test_import_blocks_refuses_another_games_file(tmp_path: Path) -> None:
    source = await precomputed_sqlite(tmp_path / "source.sqlite")
    dump = tmp_path / "lower.msgpack"
    async with SQLiteStore(source) as store:
        copied = await export_blocks(store, LOWER, dump)
    assert (copied.blocks, copied.skipped) == (128, 0)
    async with SQLiteStore(tmp_path / "dest.sqlite") as dest:
        with pytest.raises(TransferError, match="yahtzee-lower"):
            await import_blocks(dump, UPPER, dest)
        assert (await dest.coverage(namespace(UPPER))).blocks == 0
        copied = await import_blocks(dump, LOWER, dest)
        assert (copied.blocks, copied.skipped) == (128, 0)
