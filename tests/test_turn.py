"""One turn's math: the Joker rules and small end games whose values a player can check."""

from __future__ import annotations

import numpy as np
import pytest
from support.bottom_up import solve_all

from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.dice import dice_universe
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.scoring import points
from memo_solver.games.yahtzee.solve.turn import Guideposts, solve_block, turn_tables

INF = float("inf")
FIVE = dice_universe(5)
FOURS_YAHTZEE = FIVE.roll_index[(4, 4, 4, 4, 4)]


def box(rules: RuleSet, name: str) -> int:
    return rules.category_index(name)


def mask(rules: RuleSet, *names: str) -> int:
    out = 0
    for name in names:
        out |= 1 << box(rules, name)
    return out


def only_open(rules: RuleSet, *names: str) -> int:
    """The filled mask with every box filled except ``names``."""
    return rules.all_filled & ~mask(rules, *names)


def joker_points(rules: RuleSet, filled: int, roll: tuple[int, ...]) -> dict[str, float]:
    """What scoring ``roll`` in each open box gives, by box name."""
    boxes = rules.open_boxes(filled)
    table = points(rules, filled, boxes)
    assert table.shape == (len(boxes), FIVE.n_rolls)
    column = table[:, FIVE.roll_index[roll]]
    return {rules.categories[c].name: float(v) for c, v in zip(boxes, column, strict=True)}


def assert_only_yahtzee_rolls_change(rules: RuleSet, filled: int) -> None:
    boxes = rules.open_boxes(filled)
    table = points(rules, filled, boxes)
    plain = rules.scores[boxes]
    other = np.ones(FIVE.n_rolls, dtype=bool)
    other[FIVE.alike_rolls] = False
    assert np.array_equal(table[:, other], plain[:, other])
    # points() must not write into the rule set's own tables.
    assert np.array_equal(rules.scores, np.stack([c.scores for c in rules.categories]))


# --- the Joker ------------------------------------------------------------------------------


def test_forced_joker_goes_in_the_matching_upper_box() -> None:
    rules = get_rule_set("yahtzee")
    filled = mask(rules, "yahtzee")
    got = joker_points(rules, filled, (4, 4, 4, 4, 4))
    assert got.pop("fours") == 20
    assert len(got) == 11
    assert all(v == -INF for v in got.values()), got
    assert_only_yahtzee_rolls_change(rules, filled)


def test_forced_joker_any_open_lower_box_when_upper_box_filled() -> None:
    rules = get_rule_set("yahtzee")
    filled = mask(rules, "yahtzee", "fours")
    got = joker_points(rules, filled, (4, 4, 4, 4, 4))
    assert got == {
        "ones": -INF,
        "twos": -INF,
        "threes": -INF,
        "fives": -INF,
        "sixes": -INF,
        "three_of_a_kind": 20,
        "four_of_a_kind": 20,
        "full_house": 25,
        "small_straight": 30,
        "large_straight": 40,
        "chance": 20,
    }
    assert_only_yahtzee_rolls_change(rules, filled)


def test_forced_joker_single_open_lower_box_still_wins_over_upper() -> None:
    rules = get_rule_set("yahtzee")
    filled = only_open(rules, "ones", "sixes", "full_house")
    got = joker_points(rules, filled, (4, 4, 4, 4, 4))
    assert got == {"ones": -INF, "sixes": -INF, "full_house": 25}


def test_forced_joker_upper_boxes_for_zero_when_no_lower_box_open() -> None:
    rules = get_rule_set("yahtzee")
    filled = only_open(rules, "ones", "sixes")
    assert joker_points(rules, filled, (4, 4, 4, 4, 4)) == {"ones": 0, "sixes": 0}
    # A Yahtzee of an open upper face still must go there.
    assert joker_points(rules, filled, (6, 6, 6, 6, 6)) == {"ones": -INF, "sixes": 30}
    assert joker_points(rules, filled, (1, 1, 1, 1, 1)) == {"ones": 5, "sixes": -INF}


def test_no_joker_while_the_yahtzee_box_is_open() -> None:
    for name in ("yahtzee", "yahtzee-free-joker"):
        rules = get_rule_set(name)
        filled = mask(rules, "fours")
        boxes = rules.open_boxes(filled)
        assert np.array_equal(points(rules, filled, boxes), rules.scores[boxes])
        got = joker_points(rules, filled, (4, 4, 4, 4, 4))
        assert (got["full_house"], got["yahtzee"], got["chance"]) == (0, 50, 20)


def test_free_joker_any_open_box() -> None:
    rules = get_rule_set("yahtzee-free-joker")
    # Fours open: any box is legal, but FH/SS/LS get no Joker points.
    got = joker_points(rules, mask(rules, "yahtzee"), (4, 4, 4, 4, 4))
    assert got == {
        "ones": 0,
        "twos": 0,
        "threes": 0,
        "fours": 20,
        "fives": 0,
        "sixes": 0,
        "three_of_a_kind": 20,
        "four_of_a_kind": 20,
        "full_house": 0,
        "small_straight": 0,
        "large_straight": 0,
        "chance": 20,
    }
    # Fours filled: the Joker scores 25/30/40 and upper boxes stay legal for 0.
    filled = mask(rules, "yahtzee", "fours")
    got = joker_points(rules, filled, (4, 4, 4, 4, 4))
    assert got == {
        "ones": 0,
        "twos": 0,
        "threes": 0,
        "fives": 0,
        "sixes": 0,
        "three_of_a_kind": 20,
        "four_of_a_kind": 20,
        "full_house": 25,
        "small_straight": 30,
        "large_straight": 40,
        "chance": 20,
    }
    assert_only_yahtzee_rolls_change(rules, filled)
    # The Joker depends on the upper box of the rolled face only.
    got = joker_points(rules, filled, (6, 6, 6, 6, 6))
    assert (got["sixes"], got["full_house"], got["large_straight"]) == (30, 0, 0)


def test_no_joker_rule_set_uses_plain_tables() -> None:
    rules = get_rule_set("yahtzee-no-joker")
    for filled in (mask(rules, "yahtzee"), mask(rules, "yahtzee", "fours"), 0):
        boxes = rules.open_boxes(filled)
        assert np.array_equal(points(rules, filled, boxes), rules.scores[boxes])
    got = joker_points(rules, mask(rules, "yahtzee", "fours"), (4, 4, 4, 4, 4))
    assert (got["full_house"], got["small_straight"], got["large_straight"]) == (0, 0, 0)
    assert (got["ones"], got["chance"]) == (0, 20)


# --- small end games checked by hand --------------------------------------------------------

P_YAHTZEE = 2783176 / 60466176  # a Yahtzee within three rolls, keeping the most common face


def test_all_filled_block_is_zero_at_reachable_guideposts() -> None:
    rules = get_rule_set("yahtzee")
    block = solve_block(rules, rules.all_filled, {})
    assert block.shape == rules.block_shape == (64, 2)
    assert np.all(block == 0.0)  # every upper level and both flags are reachable
    partial = mask(rules, "threes", "fives", "yahtzee")
    # Zero successors are enough to see which guideposts the block pass fills in.
    zeros = {partial | 1 << c: np.zeros(rules.block_shape) for c in rules.open_boxes(partial)}
    block = solve_block(rules, partial, zeros)
    reachable = set(rules.reachable_upper(partial).tolist())
    for level in range(64):
        assert np.all(np.isnan(block[level])) == (level not in reachable)


def test_solve_all_covers_every_superset() -> None:
    rules = get_rule_set("yahtzee")
    below = only_open(rules, "ones", "chance", "yahtzee")
    blocks = solve_all(rules, below=below)
    assert len(blocks) == 8
    assert all(m & below == below for m in blocks)
    assert all(b.shape == rules.block_shape for b in blocks.values())


@pytest.mark.parametrize("name", ["yahtzee", "yahtzee-free-joker", "yahtzee-no-joker"])
def test_only_chance_open(name: str) -> None:
    rules = get_rule_set(name)
    filled = only_open(rules, "chance")
    block = solve_all(rules, below=filled)[filled]
    # No bonus flag: the same 70/3 at every reachable upper level.
    levels = rules.reachable_upper(filled)
    assert levels.tolist() == list(range(64))
    assert block[levels, 0] == pytest.approx(np.full(64, 70 / 3), abs=1e-9)
    assert block[0, 0] == pytest.approx(23.3333333333, abs=1e-9)


@pytest.mark.parametrize(
    "name", ["yahtzee", "yahtzee-free-joker", "yahtzee-no-joker", "yahtzee-no-joker-no-bonus"]
)
def test_only_yahtzee_open(name: str) -> None:
    rules = get_rule_set(name)
    filled = only_open(rules, "yahtzee")
    block = solve_all(rules, below=filled)[filled]
    assert block[0, 0] == pytest.approx(50 * P_YAHTZEE, abs=1e-9)
    assert block[0, 0] == pytest.approx(2.3014321263, abs=1e-9)
    assert block[63, 0] == pytest.approx(50 * P_YAHTZEE, abs=1e-9)
    if rules.n_bonus_levels == 2:
        # The bonus flag is unreachable while the Yahtzee box is open.
        assert np.all(np.isnan(block[:, 1]))


def test_only_sixes_open_with_bonus_secured() -> None:
    rules = get_rule_set("yahtzee")
    filled = only_open(rules, "sixes")
    block = solve_all(rules, below=filled)[filled]
    p_six = 1 - (5 / 6) ** 3
    assert block[63, 0] == pytest.approx(30 * p_six, abs=1e-9)
    assert block[63, 0] == pytest.approx(12.6388888889, abs=1e-9)
    # With the +100 flag set any Yahtzee adds 100 (five sixes in Sixes, others there for 0):
    # at least what keeping sixes gets, at most the best of each goal on its own.
    assert 30 * p_six + 100 * p_six**5 < block[63, 1] < 30 * p_six + 100 * P_YAHTZEE


def test_only_sixes_open_bonus_within_reach() -> None:
    # Upper bonus-only game: at 57 one six is worth 6 + 35; at 63 nothing is left to gain.
    rules = get_rule_set("yahtzee-upper")
    filled = only_open(rules, "sixes")
    block = solve_all(rules, below=filled)[filled]
    p_six = 1 - (5 / 6) ** 3
    p_none = (1 - p_six) ** 5
    assert block[63, 0] == pytest.approx(30 * p_six, abs=1e-9)
    assert block[57, 0] == pytest.approx(30 * p_six + 35 * (1 - p_none), abs=1e-9)


# --- the reference Haskell program's example -----------------------------------------------

EXAMPLE_ROLL = FIVE.roll_index[(1, 2, 2, 2, 6)]


Example = tuple[RuleSet, int, dict[int, np.ndarray]]


@pytest.fixture(scope="module", params=["yahtzee", "yahtzee-no-joker"])
def example(request: pytest.FixtureRequest) -> Example:
    rules = get_rule_set(request.param)
    filled = only_open(rules, "ones", "yahtzee")
    return rules, filled, solve_all(rules, below=filled)


def test_example_turn_start_value(example: Example) -> None:
    rules, filled, blocks = example
    assert len(blocks) == 4
    assert blocks[filled][62, 0] == pytest.approx(40.430844806, abs=1e-9)
    # The turn tables for one guidepost agree with the block pass.
    tables = turn_tables(
        rules,
        filled,
        lambda c: blocks[filled | 1 << c],
        Guideposts.one(rules, 62, 0),
        rules.rerolls,
    )
    assert tables.start[0, 0] == pytest.approx(blocks[filled][62, 0], abs=1e-12)


def test_example_per_action_values(example: Example) -> None:
    rules, filled, blocks = example
    tables = turn_tables(
        rules,
        filled,
        lambda c: blocks[filled | 1 << c],
        Guideposts.one(rules, 62, 0),
        rules.rerolls,
    )
    assert len(tables.keeps) == len(tables.rolls) == 3
    keeps = tables.keeps[2]
    assert keeps.shape == (FIVE.n_keeps, 1)
    assert keeps[FIVE.keep_index[(2, 2, 2)], 0] == pytest.approx(40.998025624, abs=1e-9)
    assert keeps[FIVE.keep_index[(1, 2, 2, 2)], 0] == pytest.approx(40.001351082, abs=1e-9)
    assert keeps[FIVE.keep_index[(1,)], 0] == pytest.approx(39.926679721, abs=1e-9)
    # Keep 2 2 2 is the best keep inside this roll.
    inside = FIVE.sub_keeps((1, 2, 2, 2, 6))
    assert max(inside, key=lambda k: keeps[k, 0]) == FIVE.keep_index[(2, 2, 2)]
    assert tables.rolls[2][EXAMPLE_ROLL, 0] == pytest.approx(40.998025624, abs=1e-9)

    assert tables.boxes == [box(rules, "ones"), box(rules, "yahtzee")]
    ones, yahtzee = tables.scores[0, :, EXAMPLE_ROLL, 0]
    assert ones == pytest.approx(38.301432126, abs=1e-9)
    assert yahtzee == pytest.approx(34.834789978, abs=1e-9)


def test_example_scoring_ones_banks_the_upper_bonus(example: Example) -> None:
    rules, filled, blocks = example
    tables = turn_tables(
        rules,
        filled,
        lambda c: blocks[filled | 1 << c],
        Guideposts.one(rules, 62, 0),
        rules.rerolls,
    )
    after_ones = blocks[filled | 1 << box(rules, "ones")]
    ones = tables.scores[0, 0, EXAMPLE_ROLL, 0]
    # 1 point in Ones takes the upper total from 62 to 63: the 35 bonus is banked now, and
    # only the Yahtzee box is left (worth 50 x P(Yahtzee)).
    assert after_ones[63, 0] == pytest.approx(50 * P_YAHTZEE, abs=1e-9)
    assert ones == pytest.approx(1 + 35 + after_ones[63, 0], abs=1e-12)
    # No one in the roll: 0 points, no bonus, upper total stays at 62.
    no_ones = FIVE.roll_index[(2, 2, 2, 3, 6)]
    assert tables.scores[0, 0, no_ones, 0] == pytest.approx(after_ones[62, 0], abs=1e-12)
    # Scoring the Yahtzee box leaves Ones to play for at 62, where any one banks the bonus.
    after_yahtzee = blocks[filled | 1 << box(rules, "yahtzee")]
    assert tables.scores[0, 1, EXAMPLE_ROLL, 0] == pytest.approx(after_yahtzee[62, 0], abs=1e-12)


# --- whole small games ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("yahtzee-upper-no-bonus", 59.1632004354),
        ("yahtzee-upper", 71.9515297337),
        ("yahtzee-lower", 139.9712924424),
        ("yazy", 165.7573187094),
    ],
)
def test_small_rule_sets_start_values(name: str, value: float) -> None:
    rules = get_rule_set(name)
    blocks = solve_all(rules)
    assert len(blocks) == 1 << len(rules.categories)
    assert blocks[0][0, 0] == pytest.approx(value, abs=1e-9)
    assert blocks[0][0, 0] == pytest.approx(rules.start_value, abs=1e-9)
