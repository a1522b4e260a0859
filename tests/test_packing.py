"""What a store keeps of a Yahtzee block: with saved rolls, the upper levels that can no longer
make the bonus once; at float32 where a rule file asks for it. Either way the block a reader
unpacks is the block that was solved, bit for bit, and damaged bytes read as missing.

Below the hopeless levels (an upper total that falls short of the threshold even if every open
upper box scores all its dice) the bonus is never banked, and nothing else reads the upper
total: every such level holds the same values, so the round trips below, on blocks the kernel
solved, check that claim as much as the packing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from support.rule_strategies import tiny_saved_rule_sets

from memo_solver.core.codec import decode_block, decode_game_block, encode_block, encode_game_block
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.game import Block
from memo_solver.games.registry import registry
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.kinds import RuleFileError
from memo_solver.games.yahtzee.rules.rule_file import (
    parse_rule_set,
    read_rule_file,
    rule_set_document,
)
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

RULE_SETS_DIR = Path(__file__).parent.parent / "memo_solver" / "games" / "yahtzee" / "rules"

FEW_BOXES: dict[str, Any] = {
    "name": "high-upper-saved",
    "dice": 5,
    "rerolls": 2,
    "upper_threshold": 60,
    "upper_bonus": 35,
    "saved_rolls": True,
    "boxes": [
        {"name": "threes", "kind": "upper", "face": 3},
        {"name": "fours", "kind": "upper", "face": 4},
        {"name": "fives", "kind": "upper", "face": 5},
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "chance", "kind": "chance"},
    ],
}
"""Five boxes (32 blocks, a second to solve) whose threshold most games miss: many blocks
have hopeless levels, some several that a game reaches."""

CAPPED_WITH_FIFTY: dict[str, Any] = {
    "name": "capped-fifty-saved",
    "dice": 3,
    "rerolls": 1,
    "upper_threshold": 12,
    "upper_bonus": 20,
    "yahtzee_bonus": 100,
    "joker": "free",
    "saved_rolls": True,
    "max_saved": 2,
    "boxes": [
        {"name": "ones", "kind": "upper", "face": 1},
        {"name": "twos", "kind": "upper", "face": 2},
        {"name": "threes", "kind": "upper", "face": 3},
        {"name": "pair", "kind": "pairs", "count": 1},
        {"name": "alike", "kind": "all_alike", "points": 50},
    ],
}
"""A cap on the bank, and the Yahtzee flag's second level (NaN while the box is open)."""


def solve_game(game: YahtzeeGame) -> dict[str, Block]:
    """Every block of the game, a layer at a time, the end first, as a whole solve does."""
    by_key: dict[str, Block] = {}
    for layer in game.layers(game.root()):
        by_key |= zip(layer, game.solve_many(layer, by_key), strict=True)
    return by_key


def assert_round_trips(game: YahtzeeGame, blocks: Mapping[str, Block]) -> None:
    for key, block in blocks.items():
        packed = game.pack(key, block).astype(np.float64)  # as the codec reads it back
        assert game.unpack(key, packed).tobytes() == block.tobytes(), key
        back = decode_game_block(game, key, encode_game_block(game, key, block))
        assert back is not None, key
        assert back.tobytes() == block.tobytes(), key


@pytest.mark.parametrize("document", [FEW_BOXES, CAPPED_WITH_FIFTY], ids=lambda d: d["name"])
def test_a_saved_rolls_block_packs_and_unpacks_to_the_bit(document: dict[str, Any]) -> None:
    game = YahtzeeGame(parse_rule_set(document))
    blocks = solve_game(game)
    assert_round_trips(game, blocks)
    shrunk = [key for key, block in blocks.items() if game.pack(key, block).size < block.size]
    assert len(shrunk) >= 4
    several = [  # blocks where more than one reached level is stored once
        key
        for key in shrunk
        if np.count_nonzero(
            game.rules.reachable_upper(int(key, 16)) < game.rules.hopeless_levels(int(key, 16))
        )
        > 1
    ]
    assert several


@settings(max_examples=15, deadline=None)
@given(tiny_saved_rule_sets())
def test_tiny_saved_rolls_blocks_pack_and_unpack_to_the_bit(document: Any) -> None:
    game = YahtzeeGame(parse_rule_set(document))
    assert_round_trips(game, solve_game(game))


def test_a_packed_block_is_its_lowest_level_then_the_levels_that_may_make_the_bonus() -> None:
    """Sixes and chance open, threes, fours and fives filled: the open upper box adds at most
    30, so levels 0..29 of 61 cannot reach 60; level 0 stands for them."""
    game = YahtzeeGame(parse_rule_set(FEW_BOXES))
    key = block_key(0b00111)
    assert game.rules.hopeless_levels(0b00111) == 30
    block = solve_game(game)[key]
    packed = game.pack(key, block)
    assert packed.shape == (1 + 61 - 30, *block.shape[1:])
    assert packed[0].tobytes() == block[0].tobytes()
    assert packed[1:].tobytes() == block[30:].tobytes()


def damaged(data: bytes, change: Mapping[str, object] = {}, value: int | None = None) -> bytes:
    """``data`` with header fields replaced, or the lowest bit of one stored value (counted
    from the first kept, past the NaN bitmap) flipped."""
    header, payload = msgpack.unpackb(data)
    if value is not None:
        at = (int(np.prod(header["p"])) + 7) // 8 + 8 * value
        payload = payload[:at] + bytes([payload[at] ^ 1]) + payload[at + 1 :]
    header.update(change)
    return msgpack.packb([header, payload])


def test_a_damaged_packed_block_reads_as_missing() -> None:
    game = YahtzeeGame(parse_rule_set(FEW_BOXES))
    key = block_key(0b00111)
    data = encode_game_block(game, key, solve_game(game)[key])
    header, _ = msgpack.unpackb(data)
    rows, *rest = header["p"]
    assert decode_game_block(game, key, data) is not None
    for bad in (
        damaged(data, value=0),  # in the row that stands for the hopeless levels
        damaged(data, value=rest[-1] + 2),  # a level that may make the bonus
        damaged(data, {"p": [rows - 1, *rest]}),  # the values do not fill it
        damaged(data, {"p": [1, rows * rest[0], rest[1]]}),  # as many values, another shape
        damaged(data, {"p": header["s"]}),  # a lie that it is stored whole
        damaged(data, {"w": 4}),  # read as float32
    ):
        assert decode_game_block(game, key, bad) is None
    # Read as if stored whole (the codec alone): not a block of this shape.
    assert (
        decode_block(data, fingerprint=game.fingerprint, key=key, shape=game.block_shape(key))
        is None
    )


def test_without_saved_rolls_a_block_is_stored_as_it_always_was() -> None:
    """The bytes of every existing store: no packed shape, float64, the block whole."""
    for name in ("yahtzee", "maxi-yatzy"):
        game = YahtzeeGame(RULE_SETS[name])
        key = block_key(game.rules.all_filled & ~0b1001)
        block = solve_game_below(game, key)
        data = encode_game_block(game, key, block)
        assert data == encode_block(block, fingerprint=game.fingerprint, key=key)
        assert set(msgpack.unpackb(data)[0]) == {"v", "f", "k", "s", "c", "n"}


def test_dice_of_doom_blocks_are_stored_as_they_always_were() -> None:
    game = registry()["dice-of-doom-2x2"].game
    for key in (game.root(), *game.successors(game.root())[:2]):
        block = np.linspace(0.0, 1.0, math.prod(game.block_shape(key))).reshape(
            game.block_shape(key)
        )
        data = encode_game_block(game, key, block)
        assert data == encode_block(block, fingerprint=game.fingerprint, key=key)


def solve_game_below(game: YahtzeeGame, key: str) -> Block:
    """``key``'s block, solved from the end of the game up."""
    by_key: dict[str, Block] = {}
    for layer in game.layers(key):
        by_key |= zip(layer, game.solve_many(layer, by_key), strict=True)
    return by_key[key]


def stored_values(rules: RuleSet) -> tuple[int, int]:
    """The values of a whole game's table that are not NaN, stored whole and as packed,
    from every block's reachable guideposts and banks, no solve: a block's rows depend only
    on which upper boxes (and the Yahtzee box) it has filled, its banks on how many boxes."""
    game = YahtzeeGame(rules)
    boxes = len(rules.categories)
    deciding = np.flatnonzero(rules.upper_faces).tolist()
    if rules.yahtzee_box is not None:
        deciding.append(rules.yahtzee_box)
    whole_rows = np.zeros(1 << len(deciding))
    packed_rows = np.zeros(1 << len(deciding))
    for part in range(1 << len(deciding)):
        filled = sum(1 << box for i, box in enumerate(deciding) if part >> i & 1)
        posts = Guideposts.reachable(rules, filled)
        block = np.full(rules.block_shape, np.nan)
        block[posts.upper, posts.bonus] = 1.0
        key = block_key(filled)
        banks = rules.saved_levels(filled.bit_count())
        packed = game.pack(key, np.repeat(block[..., None], banks, axis=2))
        whole_rows[part] = posts.upper.size
        packed_rows[part] = np.count_nonzero(~np.isnan(packed)) / banks
    masks = np.arange(1 << boxes, dtype=np.int64)
    part_of = np.zeros_like(masks)
    for i, box in enumerate(deciding):
        part_of |= (masks >> box & 1) << i
    banks_of = np.array([rules.saved_levels(count) for count in range(boxes + 1)])
    each = banks_of[rules.filled_counts(masks)]
    return int((whole_rows[part_of] * each).sum()), int((packed_rows[part_of] * each).sum())


def test_the_whole_maxi_yatzy_saved_table_keeps_714_million_values() -> None:
    """The issue's figures: 1,269,658,211 reachable turn starts (10.2 GB as float64), plus
    the end of the game's block (85 upper totals, 41 banks: 3,485 values, which the engine
    stores too); packed, 713,572,352 (5.7 GB), 56 % of them."""
    rules = read_rule_file(RULE_SETS_DIR / "rule_sets" / "maxi-yatzy-saved.json")
    whole, packed = stored_values(rules)
    assert whole == 1_269_658_211 + 85 * 41
    assert packed == 713_572_352


def test_precision_is_a_rule_files_opt_in_hashed_only_when_set() -> None:
    plain = parse_rule_set(FEW_BOXES)
    assert plain.precision == "float64"
    assert parse_rule_set(dict(FEW_BOXES, precision="float64")).fingerprint == plain.fingerprint
    single = parse_rule_set(dict(FEW_BOXES, precision="float32"))
    assert single.precision == "float32"
    assert single.fingerprint != plain.fingerprint
    assert rule_set_document(single)["precision"] == "float32"
    assert parse_rule_set(rule_set_document(single)).fingerprint == single.fingerprint
    assert "precision" not in rule_set_document(plain)
    assert all(rules.precision == "float64" for rules in RULE_SETS.values())


@pytest.mark.parametrize("value", ["float16", "double", 32, True])
def test_a_precision_that_is_not_one_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(RuleFileError) as refused:
        parse_rule_set(dict(FEW_BOXES, precision=value))
    assert refused.value.field == "precision"


@pytest.mark.parametrize("document", [FEW_BOXES, CAPPED_WITH_FIFTY], ids=lambda d: d["name"])
def test_float32_values_are_within_their_documented_bound(document: dict[str, Any]) -> None:
    """Every stored value is rounded to float32 (within 2**-24 of it), and a turn's
    expectations and maxima never widen its successors' error: a block with k boxes open is
    within k * 2**-24 of the largest value of the float64 game's blocks."""
    exact = solve_game(YahtzeeGame(parse_rule_set(document)))
    game = YahtzeeGame(parse_rule_set(dict(document, precision="float32")))
    single = solve_game(game)
    largest = max(float(np.nanmax(np.abs(block))) for block in exact.values())
    boxes = len(game.rules.categories)
    for key, block in single.items():
        assert block.dtype == np.float64
        assert block.astype(np.float32).astype(np.float64).tobytes() == block.tobytes()
        bound = (boxes - int(key, 16).bit_count()) * 2.0**-24 * largest
        np.testing.assert_allclose(block, exact[key], rtol=0, atol=bound * (1 + 1e-9))
    root = game.root()
    assert abs(single[root][0, 0, 0] - exact[root][0, 0, 0]) <= 1e-4 * exact[root][0, 0, 0]
    assert_round_trips(game, single)


def test_float32_blocks_take_four_bytes_a_value() -> None:
    """The same values kept (the NaN bitmap alike), at half the bytes; read back as float64."""
    plain = YahtzeeGame(parse_rule_set(FEW_BOXES))
    single = YahtzeeGame(parse_rule_set(dict(FEW_BOXES, precision="float32")))
    key = block_key(0b00111)
    wide = encode_game_block(plain, key, solve_game(plain)[key])
    narrow = encode_game_block(single, key, solve_game(single)[key])
    (header, wide_values), (narrow_header, narrow_values) = map(msgpack.unpackb, (wide, narrow))
    assert "w" not in header
    assert narrow_header["w"] == 4
    assert narrow_header["p"] == header["p"]
    bitmap = (int(np.prod(header["p"])) + 7) // 8
    assert wide_values[:bitmap] == narrow_values[:bitmap]
    kept = (len(wide_values) - bitmap) // 8
    assert kept > 0
    assert len(narrow_values) == bitmap + 4 * kept
    back = decode_game_block(single, key, narrow)
    assert back is not None
    assert back.dtype == np.float64


async def test_the_engine_stores_what_the_game_packs_and_reads_it_back() -> None:
    """A second engine on the same store fetches every block (none computed again), each
    the first engine's to the bit, saved rolls and float32 alike."""
    for document in (FEW_BOXES, dict(CAPPED_WITH_FIFTY, precision="float32")):
        game = YahtzeeGame(parse_rule_set(document))
        store = MemoryStore()
        async with open_engine(game, store) as first:
            root = await first.solve_layers(game.root())
        stored = await store.get_many(namespace(game), [game.root(), block_key(0b00111)])
        assert "p" in msgpack.unpackb(stored[block_key(0b00111)])[0]
        async with open_engine(game, store) as second:
            again = await second.block(game.root())
            deep = await second.block(block_key(0b00111))
        assert second.counters.computed == 0
        assert again.tobytes() == root.tobytes()
        assert deep.tobytes() == solve_game(game)[block_key(0b00111)].tobytes()
