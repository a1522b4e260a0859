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
    """msgpack ``[header, zlib(float64 bytes)]``; NaN at unreachable guideposts (half of a
    Yahtzee block) compresses away, keeping the whole game's store under 10 MB."""
    payload = np.ascontiguousarray(block, dtype="<f8").tobytes()
    header = {
        "v": FORMAT_VERSION,
        "f": fingerprint,
        "k": key,
        "s": list(block.shape),
        "c": checksum(payload),
    }
    return msgpack.packb([header, zlib.compress(payload, 1)])


def decode_block(
    data: bytes, *, fingerprint: str, key: str, shape: tuple[int, ...]
) -> Block | None:
    """The block, or None (logged) if the bytes are not a valid block for this key."""
    try:
        header, packed = msgpack.unpackb(data)
        payload = zlib.decompress(packed)
        valid = (
            header["v"] == FORMAT_VERSION
            and header["f"] == fingerprint
            and header["k"] == key
            and tuple(header["s"]) == shape
            and header["c"] == checksum(payload)
            and len(payload) == 8 * int(np.prod(shape))
        )
    except (ValueError, TypeError, KeyError, zlib.error, msgpack.UnpackException):
        valid = False
    if not valid:
        log.warning("block %s of %s failed verification; recomputing it", key, fingerprint)
        return None
    return np.frombuffer(payload, dtype="<f8").reshape(shape)
