"""The block codec: what it writes comes back bit for bit; anything else reads as missing."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import msgpack
import numpy as np
import pytest
from hypothesis import given, strategies as st

from memo_solver.core.codec import FORMAT_VERSION, checksum, decode_block, encode_block
from memo_solver.core.game import Block

FP = "0123456789abcdef"
KEY = "1f3"
SHAPE = (4, 2)


def sample() -> Block:
    block = np.arange(8, dtype=np.float64).reshape(SHAPE) * 1.25 - 3.0
    block[1, 0] = np.nan
    block[2, 1] = -np.inf
    block[3, 0] = -0.0
    return block


def decode(
    data: bytes, *, fingerprint: str = FP, key: str = KEY, shape: tuple[int, ...] = SHAPE
) -> Block | None:
    return decode_block(data, fingerprint=fingerprint, key=key, shape=shape)


def forge(header_changes: dict[str, object], block: Block | None = None) -> bytes:
    """A real encoding of ``block`` (the sample by default) with some header fields replaced."""
    header, payload = msgpack.unpackb(
        encode_block(sample() if block is None else block, fingerprint=FP, key=KEY)
    )
    header.update(header_changes)
    return msgpack.packb([header, payload])


def test_round_trip_keeps_every_bit() -> None:
    block = sample()
    decoded = decode(encode_block(block, fingerprint=FP, key=KEY))
    assert decoded is not None
    assert decoded.dtype == np.float64
    assert decoded.shape == SHAPE
    np.testing.assert_array_equal(decoded, block)  # NaN compares equal here
    assert np.isnan(decoded[1, 0])
    assert np.signbit(decoded[3, 0])
    assert decoded.tobytes() == block.tobytes()


def test_round_trip_of_a_strided_block() -> None:
    wide = np.arange(16, dtype=np.float64).reshape(4, 4)
    block = wide[:, ::2]  # not contiguous
    decoded = decode(encode_block(block, fingerprint=FP, key=KEY))
    assert decoded is not None
    np.testing.assert_array_equal(decoded, block)


def test_round_trip_of_a_mostly_nan_block() -> None:
    """Unreachable guideposts hold NaN: half of a Yahtzee block, and they must survive."""
    block = np.full((64, 2), np.nan)
    block[::3, 0] = np.linspace(0.0, 254.5877287345, 22)
    decoded = decode(encode_block(block, fingerprint=FP, key=KEY), shape=(64, 2))
    assert decoded is not None
    assert decoded.tobytes() == block.tobytes()


def test_round_trip_of_a_one_value_block() -> None:
    block = np.array([[139.9712924424]])
    decoded = decode(encode_block(block, fingerprint=FP, key=KEY), shape=(1, 1))
    assert decoded is not None
    assert decoded[0, 0] == block[0, 0]


def test_a_block_written_before_the_packing_still_reads() -> None:
    """Stores filled before the NaN packing hold ``zlib(float64 bytes)`` under the same
    header without ``"n"``: they keep serving (no recompute, no new namespace)."""
    block = sample()
    payload = block.tobytes()
    header = {"v": FORMAT_VERSION, "f": FP, "k": KEY, "s": list(SHAPE), "c": checksum(payload)}
    decoded = decode(msgpack.packb([header, zlib.compress(payload, 1)]))
    assert decoded is not None
    assert decoded.tobytes() == payload


def test_the_packing_keeps_only_the_values_that_are_not_nan() -> None:
    block = np.full((64, 2), np.nan)
    block[::3, 0] = 1.5
    _, packed = msgpack.unpackb(encode_block(block, fingerprint=FP, key=KEY))
    assert len(packed) == 128 // 8 + 8 * 22  # a bit per value, then the 22 values


def test_forged_block_with_a_valid_header_decodes() -> None:
    """The forging helper itself builds a valid block, so the cases below test one field."""
    decoded = decode(forge({}))
    assert decoded is not None
    np.testing.assert_array_equal(decoded, sample())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"junk",
        b"\xc1",  # a byte msgpack never uses
        b"\x92",  # an array missing its items
        bytes(range(256)),
        msgpack.packb(None),
        msgpack.packb(42),
        msgpack.packb([]),
        msgpack.packb([1, 2, 3]),
        msgpack.packb({"v": 1, "f": 2}),  # unpacks into two strings
        msgpack.packb([{}, b""]),
        msgpack.packb([[1, 2], b""]),
        msgpack.packb(["header", b"payload"]),
    ],
    ids=lambda data: repr(data[:12]),
)
def test_garbage_is_missing(data: bytes) -> None:
    assert decode(data) is None


@pytest.mark.parametrize("cut", [1, 8, 20])
def test_truncated_bytes_are_missing(cut: int) -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data[:-cut]) is None


def test_a_block_that_fails_verification_is_logged_as_not_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not "recomputing it": an import skips it, and only the engine computes it again."""
    assert decode(b"junk") is None
    (record,) = caplog.records
    assert record.getMessage() == (
        f"block {KEY} of {FP} failed verification: not used (computed again where needed)"
    )


def test_trailing_bytes_are_missing() -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data + b"\x00") is None


def test_short_payload_with_a_matching_checksum_is_missing() -> None:
    """Seven values under a header that claims the expected shape: the length check refuses."""
    assert decode(forge({"s": list(SHAPE)}, sample().ravel()[:-1])) is None


def test_flipped_payload_byte_fails_the_checksum() -> None:
    """A payload that decodes cleanly but differs by one bit from what the header vouches for."""
    raw = bytearray(sample().tobytes())
    raw[13] ^= 0x10
    tampered = np.frombuffer(bytes(raw)).reshape(SHAPE)
    header, _ = msgpack.unpackb(encode_block(sample(), fingerprint=FP, key=KEY))
    _, payload = msgpack.unpackb(encode_block(tampered, fingerprint=FP, key=KEY))
    assert decode(msgpack.packb([header, payload])) is None
    assert decode(encode_block(tampered, fingerprint=FP, key=KEY)) is not None


@given(st.data())
def test_a_flipped_byte_never_gives_a_wrong_block(data: st.DataObject) -> None:
    """Missing, or (a flip in bits the format ignores, like deflate padding) the same bits."""
    block = sample()
    encoded = bytearray(encode_block(block, fingerprint=FP, key=KEY))
    index = data.draw(st.integers(0, len(encoded) - 1))
    encoded[index] ^= data.draw(st.integers(1, 255))
    decoded = decode(bytes(encoded))
    assert decoded is None or decoded.tobytes() == block.tobytes()


@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data: bytes) -> None:
    assert decode(data) is None


def test_wrong_fingerprint_is_missing() -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data, fingerprint="fedcba9876543210") is None


def test_wrong_key_is_missing() -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data, key="1f2") is None


@pytest.mark.parametrize("shape", [(8, 1), (2, 4), (4, 1), (8,), (4, 2, 1)])
def test_wrong_shape_is_missing(shape: tuple[int, ...]) -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data, shape=shape) is None


def test_wrong_format_version_is_missing() -> None:
    assert decode(forge({"v": FORMAT_VERSION + 1})) is None


@pytest.mark.parametrize(
    "changes",
    [
        {"s": [8]},  # a header that lies about the shape the reader expects
        {"s": "42"},
        {"s": 8},
        {"c": b"\x00" * 8},
        {"c": None},
        {"k": 0x1F3},
        {"f": None},
    ],
    ids=repr,
)
def test_bad_header_fields_are_missing(changes: dict[str, object]) -> None:
    assert decode(forge(changes)) is None


@pytest.mark.parametrize("payload", ["a string payload", 12345, None, b"not compressed"])
def test_payload_of_the_wrong_type_is_missing(payload: object) -> None:
    header, _ = msgpack.unpackb(encode_block(sample(), fingerprint=FP, key=KEY))
    assert decode(msgpack.packb([header, payload])) is None


def halves(block: Block) -> Block:
    """A toy game's pack: its rows come in equal pairs, so every other row is stored."""
    return block[::2]


def doubled(stored: Block) -> Block:
    return np.repeat(stored, 2, axis=0)


PAIRED = doubled(np.array([[1.5, np.nan], [-2.25, 7.0]]))


def decode_paired(data: bytes, unpack: Callable[[Block], Block] | None = doubled) -> Block | None:
    return decode_block(data, fingerprint=FP, key=KEY, shape=PAIRED.shape, unpack=unpack)


def test_a_packed_block_comes_back_unpacked_bit_for_bit() -> None:
    data = encode_block(PAIRED, fingerprint=FP, key=KEY, stored=halves(PAIRED))
    header, _ = msgpack.unpackb(data)
    assert header["s"] == [4, 2]
    assert header["p"] == [2, 2]
    decoded = decode_paired(data)
    assert decoded is not None
    assert decoded.tobytes() == PAIRED.tobytes()


def test_a_packed_block_read_as_if_stored_whole_is_missing() -> None:
    """Without the game's unpack, what was stored is not a block of the key's shape."""
    assert (
        decode_paired(encode_block(PAIRED, fingerprint=FP, key=KEY, stored=halves(PAIRED)), None)
        is None
    )


def test_a_pack_that_loses_a_value_reads_as_missing() -> None:
    """The checksum is the block's: rows that were not equal after all, stored once, never
    come back as a block nobody solved."""
    block = PAIRED.copy()
    block[1, 0] = 1.75
    assert decode_paired(encode_block(block, fingerprint=FP, key=KEY, stored=halves(block))) is None


def test_an_unpack_that_refuses_or_misshapes_reads_as_missing() -> None:
    data = encode_block(PAIRED, fingerprint=FP, key=KEY, stored=halves(PAIRED))

    def refuses(stored: Block) -> Block:
        raise ValueError("not a packed block")

    assert decode_paired(data, refuses) is None
    assert decode_paired(data, lambda stored: stored.ravel()) is None


def test_float32_values_take_four_bytes_and_read_back_as_float64() -> None:
    block = np.array([[0.5, np.nan], [1.0 / 3.0, -7.25]]).astype(np.float32).astype(np.float64)
    data = encode_block(block, fingerprint=FP, key=KEY, stored=block.astype(np.float32))
    header, packed = msgpack.unpackb(data)
    assert header["w"] == 4
    assert "p" not in header
    assert len(packed) == 1 + 4 * 3
    decoded = decode(data, shape=(2, 2))
    assert decoded is not None
    assert decoded.dtype == np.float64
    assert decoded.tobytes() == block.tobytes()


def test_float32_values_of_a_block_not_rounded_so_read_as_missing() -> None:
    """A game stores float32 only of blocks it solved at float32 (so the memo holds what the
    store holds): a block that float32 changes is not the block the checksum vouches for."""
    block = np.array([[1.0 / 3.0]])
    assert (
        decode(
            encode_block(block, fingerprint=FP, key=KEY, stored=block.astype(np.float32)),
            shape=(1, 1),
        )
        is None
    )


@pytest.mark.parametrize("kept", [[2**40], [2**20, 2**20], [-2, -4], [9]], ids=repr)
def test_a_stored_shape_past_the_blocks_is_missing_before_any_is_read(kept: list[int]) -> None:
    """A damaged ``"p"`` never makes a reader allocate more than the key's block."""
    assert decode(forge({"p": kept})) is None
