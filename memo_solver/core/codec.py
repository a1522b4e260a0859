"""How a block travels and rests: msgpack with a header that lets a reader refuse bad bytes.

A block that fails to decode, belongs to another game or key, has the wrong shape, or
whose checksum does not match is reported as missing, so the engine recomputes it and the
next commit overwrites it: a damaged cache costs time, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import logging
import math
import zlib
from collections.abc import Callable
from typing import Final

import msgpack
import numpy as np

from memo_solver.core.game import Block, Game, Packed

FORMAT_VERSION: Final = 1
log = logging.getLogger(__name__)


def checksum(payload: bytes | memoryview) -> bytes:
    return hashlib.blake2b(payload, digest_size=8).digest()


def encode_block(
    block: Block, *, fingerprint: str, key: str, stored: Packed | None = None
) -> bytes:
    """msgpack ``[header, packed]``: a bitmap of the NaN values (the unreachable guideposts,
    half of a Yahtzee block), then the others' float64 bytes, keeping the whole game's
    store under 10 MB. Header ``"n": 1`` marks this packing; blocks written before it hold
    ``zlib(float64 bytes)`` and still read. Packing costs 4 us a block, zlib 26 us (mostly
    setting up its state), which was a sixth of a whole solve once the kernel was compiled.

    ``stored`` is what the game keeps of the block (:meth:`Game.pack`), the block itself by
    default: its shape goes in the header as ``"p"`` where it is not the block's, and
    float32 values as ``"w": 4`` (bytes a value), so a block stored whole and in float64
    keeps the bytes it always had. The checksum is the block's, as the reader unpacks it:
    a pack that loses a value reads as missing, never as another block."""
    flat = np.ascontiguousarray(block, dtype="<f8").ravel()
    payload = flat.tobytes()
    kept = flat if stored is None else stored
    width = 4 if kept.dtype == np.float32 else 8
    kept = np.ascontiguousarray(kept, dtype=f"<f{width}").ravel()
    missing = np.isnan(kept)
    packed = np.packbits(missing, bitorder="little").tobytes() + kept[~missing].tobytes()
    header: dict[str, object] = {
        "v": FORMAT_VERSION,
        "f": fingerprint,
        "k": key,
        "s": list(block.shape),
        "c": checksum(payload),
        "n": 1,
    }
    if stored is not None and stored.shape != block.shape:
        header["p"] = list(stored.shape)
    if width != 8:
        header["w"] = width
    return msgpack.packb([header, packed])


_VALUE_TYPES: Final[dict[object, str]] = {8: "<f8", 4: "<f4"}
"""Bytes a stored value, as the header's ``"w"`` says (8 where it says nothing)."""


def _unpack(header: dict[str, object], packed: bytes, count: int) -> Block:
    """The ``count`` stored values of a block, as float64, as :func:`encode_block` packed
    them (or as zlib did, before)."""
    if header.get("n") != 1:
        return np.frombuffer(zlib.decompress(packed), dtype="<f8")
    # Views of the bytes, not copies, and the mask of present values in one step: what a
    # worker reading the blocks others solved does once per block (a million times for a
    # ``maxi-yatzy`` through two workers), a few us a block less than slices, ``~missing``
    # and ``np.full``.
    width = (count + 7) // 8
    bits = np.frombuffer(packed, dtype=np.uint8, count=width)
    present = np.unpackbits(bits, count=count, bitorder="little") == 0
    values = np.frombuffer(packed, dtype=_VALUE_TYPES[header.get("w", 8)], offset=width)
    if values.size != np.count_nonzero(present):
        raise ValueError("the values do not fill the block")
    flat = np.empty(count)
    flat.fill(np.nan)
    flat[present] = values
    return flat


def decode_block(
    data: bytes,
    *,
    fingerprint: str,
    key: str,
    shape: tuple[int, ...],
    unpack: Callable[[Block], Block] | None = None,
) -> Block | None:
    """The block, or None (logged) if the bytes are not a valid block for this key.

    ``unpack`` makes the block from what was stored where the game packs it
    (:meth:`Game.unpack`); its ValueError or a block of another shape is a missing block."""
    try:
        header, packed = msgpack.unpackb(data)
        valid = (
            header["v"] == FORMAT_VERSION
            and header["f"] == fingerprint
            and header["k"] == key
            and tuple(header["s"]) == shape
        )
        if valid:  # only then is the payload read, at most at the size this key's blocks have
            kept = tuple(header.get("p", shape))
            if math.prod(kept) > math.prod(shape):
                raise ValueError("more values stored than the block holds")
            stored = _unpack(header, packed, math.prod(kept)).reshape(kept)
            block = stored if unpack is None else unpack(stored)
            flat = np.ascontiguousarray(block, dtype="<f8")
            valid = block.shape == shape and header["c"] == checksum(flat.data)
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        zlib.error,
        msgpack.UnpackException,
    ):
        valid = False
    if not valid:
        # Not used, whoever reads it: the engine computes it again when it is needed, a copy
        # (export, import) leaves it behind and counts it.
        log.warning(
            "block %s of %s failed verification: not used (computed again where needed)",
            key,
            fingerprint,
        )
        return None
    flat.setflags(write=False)  # as the memo keeps it: shared, never written
    return flat.reshape(shape)


def encode_game_block(game: Game, key: str, block: Block) -> bytes:
    """``key``'s block as ``game`` stores it (:meth:`Game.pack`): what the engine commits."""
    return encode_block(block, fingerprint=game.fingerprint, key=key, stored=game.pack(key, block))


def decode_game_block(game: Game, key: str, data: bytes) -> Block | None:
    """``key``'s block of ``game`` from stored bytes, or None (logged) where they are not
    one: what the engine fetches and a copy verifies."""
    return decode_block(
        data,
        fingerprint=game.fingerprint,
        key=key,
        shape=game.block_shape(key),
        unpack=lambda stored: game.unpack(key, stored),
    )
