"""Copy a game's solved blocks between stores and files, verifying every block on the way.

An operator seeds a new Redis from a file, or backs up an SQLite store, with the same
command. Each block is decoded against the game (format version, fingerprint, key, shape,
checksum) before it is written, so a damaged source never spreads: bad blocks are counted
and skipped (each logged as not used), and the engine recomputes them on demand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgpack

from memo_solver.core.codec import decode_game_block
from memo_solver.core.engine import expect_game, namespace
from memo_solver.core.errors import UserError
from memo_solver.core.game import Game
from memo_solver.core.store import Store

FILE_FORMAT: Final = "memo-solver-blocks"
FILE_VERSION: Final = 1
_BATCH: Final = 512


class TransferError(UserError):
    """A dump file that is not one, or belongs to another game."""

    field = "file"


@dataclass(frozen=True)
class Copied:
    blocks: int
    skipped: int
    """Blocks that failed verification and were left behind."""


def is_dump_file(spec: str) -> bool:
    """Where a copy reads or writes a plain file rather than a store."""
    return spec.endswith(".msgpack")


def _verified(game: Game, blocks: dict[str, bytes]) -> tuple[dict[str, bytes], int]:
    good = {
        key: data
        for key, data in blocks.items()
        if game.is_key(key) and decode_game_block(game, key, data) is not None
    }
    return good, len(blocks) - len(good)


async def _read_store(store: Store, game: Game) -> dict[str, bytes]:
    blocks: dict[str, bytes] = {}
    async for batch in _batches(store, game):
        blocks.update(batch)
    return blocks


async def _batches(store: Store, game: Game) -> AsyncIterator[dict[str, bytes]]:
    """Every stored block of ``game``, a batch at a time."""
    ns = namespace(game)
    keys = await store.keys(ns)
    for start in range(0, len(keys), _BATCH):
        yield await store.get_many(ns, keys[start : start + _BATCH])


async def count_damaged(store: Store, game: Game) -> int:
    """How many stored blocks of ``game`` fail to decode (garbage, truncated, a flipped
    bit, another game's): read and checked a batch at a time, so a game of any size
    costs one batch of memory."""
    damaged = 0
    async for batch in _batches(store, game):
        damaged += _verified(game, batch)[1]
    return damaged


_CUT_SHORT: Final = ("incomplete input", "exceeds max_")
"""What msgpack says of a file that ends early: it ran out of bytes, or (before reading
on) a map or a string announces more entries or bytes than the whole file holds."""


def read_file(path: Path, game: Game) -> dict[str, bytes]:
    try:
        content = msgpack.unpackb(path.read_bytes())
        ok = content["format"] == FILE_FORMAT and content["version"] == FILE_VERSION
        blocks = content["blocks"]
    except ValueError as exc:
        if any(words in str(exc) for words in _CUT_SHORT):
            raise TransferError(
                f"{path} is truncated: it ends before the blocks it announces (copy it again, "
                "or export the blocks again)"
            ) from None
        raise TransferError(f"{path} is not a memo-solver block file: {exc}") from None
    except (OSError, TypeError, KeyError, msgpack.UnpackException) as exc:
        raise TransferError(f"{path} is not a memo-solver block file: {exc}") from None
    if not ok or not isinstance(blocks, dict):
        raise TransferError(f"{path} is not a memo-solver block file")
    if content.get("namespace") != namespace(game):
        raise TransferError(
            f"{path} holds blocks of {content.get('rules')!r} "
            f"(namespace {content.get('namespace')}), not of {game.name}"
        )
    return blocks


def write_file(path: Path, game: Game, blocks: dict[str, bytes]) -> None:
    content = {
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        "rules": game.name,
        "namespace": namespace(game),
        "blocks": blocks,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(msgpack.packb(content))
    tmp.replace(path)


async def export_blocks(store: Store, game: Game, dest: Store | Path) -> Copied:
    """Copy every verified block of ``game`` from ``store`` into ``dest``."""
    good, skipped = _verified(game, await _read_store(store, game))
    if isinstance(dest, Path):
        write_file(dest, game, good)
    else:
        await _write_store(dest, game, good)
    return Copied(len(good), skipped)


async def import_blocks(source: Store | Path, game: Game, store: Store) -> Copied:
    """Copy every verified block of ``game`` from ``source`` into ``store``."""
    raw = read_file(source, game) if isinstance(source, Path) else await _read_store(source, game)
    good, skipped = _verified(game, raw)
    await _write_store(store, game, good)
    return Copied(len(good), skipped)


async def _write_store(store: Store, game: Game, blocks: dict[str, bytes]) -> None:
    expect_game(store, game)
    keys = list(blocks)
    for start in range(0, len(keys), _BATCH):
        chunk = {k: blocks[k] for k in keys[start : start + _BATCH]}
        await store.commit(namespace(game), chunk, None)
