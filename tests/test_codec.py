"""The block codec: what it writes comes back bit for bit; anything else reads as missing."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memo_solver.codec import FORMAT_VERSION, checksum, decode_block, encode_block

FP = "0123456789abcdef"
KEY = "1f3"
SHAPE = (4, 2)


def sample() -> np.ndarray:
    block = np.arange(8, dtype=np.float64).reshape(SHAPE) * 1.25 - 3.0
    block[1, 0] = np.nan
    block[2, 1] = -np.inf
    block[3, 0] = -0.0
    return block


def decode(data: bytes, *, fingerprint: str = FP, key: str = KEY, shape=SHAPE):
    return decode_block(data, fingerprint=fingerprint, key=key, shape=shape)


def forge(header_changes: dict[str, object], payload: bytes | None = None) -> bytes:
    """A hand-built block: a valid header with some fields replaced."""
    if payload is None:
        payload = np.ascontiguousarray(sample(), dtype="<f8").tobytes()
    header = {"v": FORMAT_VERSION, "f": FP, "k": KEY, "s": list(SHAPE), "c": checksum(payload)}
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


def test_round_trip_of_a_one_value_block() -> None:
    block = np.array([[139.9712924424]])
    decoded = decode(encode_block(block, fingerprint=FP, key=KEY), shape=(1, 1))
    assert decoded is not None
    assert decoded[0, 0] == block[0, 0]


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


def test_trailing_bytes_are_missing() -> None:
    data = encode_block(sample(), fingerprint=FP, key=KEY)
    assert decode(data + b"\x00") is None


def test_truncated_payload_with_a_matching_checksum_is_missing() -> None:
    """A short payload whose checksum was recomputed still fails the length check."""
    short = np.ascontiguousarray(sample(), dtype="<f8").tobytes()[:-8]
    assert decode(forge({}, short)) is None


def test_flipped_payload_byte_fails_the_checksum() -> None:
    data = bytearray(encode_block(sample(), fingerprint=FP, key=KEY))
    data[-5] ^= 0x01  # inside the float64 payload, which msgpack stores last
    assert decode(bytes(data)) is None


@given(st.data())
def test_any_single_flipped_byte_is_missing(data: st.DataObject) -> None:
    encoded = bytearray(encode_block(sample(), fingerprint=FP, key=KEY))
    index = data.draw(st.integers(0, len(encoded) - 1))
    encoded[index] ^= data.draw(st.integers(1, 255))
    assert decode(bytes(encoded)) is None


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


def test_payload_of_the_wrong_type_is_missing() -> None:
    header = {"v": FORMAT_VERSION, "f": FP, "k": KEY, "s": list(SHAPE), "c": b"\x00" * 8}
    assert decode(msgpack.packb([header, "a string payload"])) is None
    assert decode(msgpack.packb([header, 12345])) is None
