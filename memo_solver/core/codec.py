"""How a block travels and rests: msgpack with a header that lets a reader refuse bad bytes.

A block that fails to decode, belongs to another game or key, has the wrong shape, or
whose checksum does not match is reported as missing, so the engine recomputes it and the
next commit overwrites it: a damaged cache costs time, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from typing import Final

import msgpack
import numpy as np

from memo_solver.core.game import Block

FORMAT_VERSION: Final = 1
log = logging.getLogger(__name__)


def checksum(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=8).digest()


def encode_block(block: Block, *, fingerprint: str, key: str) -> bytes:
    """msgpack ``[header, packed]``: a bitmap of the NaN values (the unreachable guideposts,
    half of a Yahtzee block), then the others' float64 bytes, keeping the whole game's
    store under 10 MB. Header ``"n": 1`` marks this packing; blocks written before it hold
    ``zlib(float64 bytes)`` and still read. Packing costs 4 us a block, zlib 26 us (mostly
    setting up its state), which was a sixth of a whole solve once the kernel was compiled."""
    flat = np.ascontiguousarray(block, dtype="<f8").ravel()
    payload = flat.tobytes()
    missing = np.isnan(flat)
    packed = np.packbits(missing, bitorder="little").tobytes() + flat[~missing].tobytes()
    header = {
        "v": FORMAT_VERSION,
        "f": fingerprint,
        "k": key,
        "s": list(block.shape),
        "c": checksum(payload),
        "n": 1,
    }
    return msgpack.packb([header, packed])


def _unpack(header: dict[str, object], packed: bytes, count: int) -> bytes:
    """The ``count`` float64 values of a block as :func:`encode_block` packed them (or as
    zlib did, before)."""
    if header.get("n") != 1:
        return zlib.decompress(packed)
    width = (count + 7) // 8
    missing = np.unpackbits(
        np.frombuffer(packed[:width], dtype=np.uint8), count=count, bitorder="little"
    ).view(bool)
    values = np.frombuffer(packed[width:], dtype="<f8")
    if values.size != count - int(missing.sum()):
        raise ValueError("the values do not fill the block")
    flat = np.full(count, np.nan)
    flat[~missing] = values
    return flat.tobytes()


def decode_block(
    data: bytes, *, fingerprint: str, key: str, shape: tuple[int, ...]
) -> Block | None:
    """The block, or None (logged) if the bytes are not a valid block for this key."""
    count = int(np.prod(shape))
    try:
        header, packed = msgpack.unpackb(data)
        valid = (
            header["v"] == FORMAT_VERSION
            and header["f"] == fingerprint
            and header["k"] == key
            and tuple(header["s"]) == shape
        )
        if valid:  # only then is the payload read, at the size this key's blocks have
            payload = _unpack(header, packed, count)
            valid = header["c"] == checksum(payload) and len(payload) == 8 * count
    except (ValueError, TypeError, KeyError, AttributeError, zlib.error, msgpack.UnpackException):
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
    return np.frombuffer(payload, dtype="<f8").reshape(shape)
