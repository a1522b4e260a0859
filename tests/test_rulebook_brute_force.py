"""The rule-book brute force against games a player works out by hand.

Before the brute force may judge the solver on random tiny variants
(``test_rulebook_variants.py``), it has to get right the games whose values fit on a napkin:
each test's docstring does the arithmetic.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support.brute_force import HASKELL_PUBLISHED, HASKELL_TURN_START
from support.rule_strategies import tiny_rule_sets, tiny_states
from support.rulebook_brute_force import (
    actions,
    keep_name,
    outcomes,
    plain_points,
    state_value,
    value,
)

TOL = 1e-9


def rules(dice: int, rerolls: int, *boxes: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "hand", "dice": dice, "rerolls": rerolls, **top, "boxes": list(boxes)}


CHANCE = {"name": "chance", "kind": "chance"}
ONES = {"name": "ones", "kind": "upper", "face": 1}
TWOS = {"name": "twos", "kind": "upper", "face": 2}
FIVES = {"name": "fives", "kind": "upper", "face": 5}
SIXES = {"name": "sixes", "kind": "upper", "face": 6}


# --- one box, one die ------------------------------------------------------------------------


def test_one_die_in_chance_without_a_reroll_is_worth_its_average() -> None:
    """(1 + 2 + ... + 6) / 6 = 3.5."""
    assert value(rules(1, 0, CHANCE), [], 0, False) == pytest.approx(3.5, abs=TOL)


def test_one_reroll_keeps_four_five_six_and_rerolls_the_rest() -> None:
    """A 4, 5 or 6 beats the 3.5 a reroll is worth, so: 1/2 x 5 + 1/2 x 3.5 = 4.25. With a 4
    in hand, keeping it or scoring it is worth 4, rerolling it 3.5."""
    game = rules(1, 1, CHANCE)

    assert value(game, [], 0, False) == pytest.approx(4.25, abs=TOL)
    assert actions(game, [], 0, False, (4,), 1) == pytest.approx(
        {"keep 4": 4.0, "keep nothing": 3.5, "score chance": 4.0}, abs=TOL
    )


def test_two_rerolls_keep_only_five_and_six_first() -> None:
    """The first roll is kept only above the 4.25 of one reroll: 2/6 x 5.5 + 4/6 x 4.25 = 14/3."""
    assert value(rules(1, 2, CHANCE), [], 0, False) == pytest.approx(14 / 3, abs=TOL)


def test_one_die_in_sixes_scores_six_once_in_six() -> None:
    """6 x 1/6 = 1."""
    assert value(rules(1, 0, SIXES), [], 0, False) == pytest.approx(1.0, abs=TOL)


def test_two_dice_alike_come_once_in_six() -> None:
    """The second die matches the first with chance 1/6: 10 x 1/6 = 10/6."""
    alike = {"name": "pair", "kind": "all_alike", "points": 10}

    assert value(rules(2, 0, alike), [], 0, False) == pytest.approx(10 / 6, abs=TOL)


def test_a_score_is_its_points_and_the_turns_after_it() -> None:
    """Two dice 1 1, no reroll, chance and sixes open: chance banks 2 and leaves sixes (2 x 1/6
    sixes a turn x 6 = 2); sixes banks 0 and leaves chance (7)."""
    game = rules(2, 0, CHANCE, SIXES)

    assert actions(game, [], 0, False, (1, 1), 0) == pytest.approx(
        {"score chance": 4.0, "score sixes": 7.0}, abs=TOL
    )


def test_the_keeps_offered_are_the_distinct_ones_keeping_all_included() -> None:
    """Dice 1 1 3 with a reroll: nothing, 1, 3, 1 1, 1 3, 1 1 3 (the two ones are one keep)."""
    keeps = actions(rules(3, 1, CHANCE), [], 0, False, (1, 1, 3), 1)

    assert sorted(k for k in keeps if k.startswith("keep")) == sorted(
        ["keep nothing", "keep 1", "keep 3", "keep 1 1", "keep 1 3", "keep 1 1 3"]
    )


def test_the_reference_example_has_its_published_digits() -> None:
    """Yahtzee's two-box end game (ones and yahtzee open, upper total 62, bonus 35 at 63, a
    +100 bonus, forced Joker), dice 1 2 2 2 6 with two rerolls: the digits that the reference
    Haskell program publishes, from five dice in the rule-file format."""
    yahtzee = {"name": "yahtzee", "kind": "all_alike", "points": 50}
    game = rules(5, 2, ONES, yahtzee, upper_bonus=35, yahtzee_bonus=100, joker="forced")
    named = actions(game, [], 62, False, (1, 2, 2, 2, 6), 2)

    assert len(named) == 18  # 16 distinct keeps, 2 boxes
    for action, worth in HASKELL_PUBLISHED.items():
        assert named[action] == pytest.approx(worth, abs=TOL), action
    assert value(game, [], 62, False) == pytest.approx(HASKELL_TURN_START, abs=TOL)


# --- each kind's own rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("box", "dice", "points"),
    [
        ({"kind": "upper", "face": 3}, (3, 3, 5), 6),
        ({"kind": "of_a_kind", "count": 2, "points": "those"}, (3, 3, 5, 5), 10),
        ({"kind": "of_a_kind", "count": 2, "points": "all"}, (3, 3, 5), 11),
        ({"kind": "of_a_kind", "count": 3, "points": 7}, (3, 3, 5), 0),
        ({"kind": "of_a_kind", "count": 3, "points": 7}, (3, 3, 3), 7),
        ({"kind": "pairs", "count": 1}, (2, 2, 6, 6, 1), 12),
        ({"kind": "pairs", "count": 2}, (2, 2, 5, 5, 6, 6), 22),
        ({"kind": "pairs", "count": 2}, (4, 4, 4, 4, 1), 0),
        ({"kind": "pairs", "count": 2, "four_as_two_pairs": True}, (4, 4, 4, 4, 1), 16),
        ({"kind": "pairs", "count": 3, "four_as_two_pairs": True}, (4, 4, 4, 4, 1, 1), 18),
        ({"kind": "pairs", "count": 3, "four_as_two_pairs": True}, (4, 4, 4, 4, 4, 4), 0),
        ({"kind": "full_house", "points": "sum"}, (2, 2, 2, 5, 5), 16),
        ({"kind": "full_house", "points": "sum"}, (3, 4, 4, 6, 6, 6), 26),
        ({"kind": "full_house", "points": 25}, (4, 4, 4, 4, 4), 0),
        ({"kind": "full_house", "points": "sum", "five_alike": True}, (4, 4, 4, 4, 4), 20),
        ({"kind": "villa", "points": "sum"}, (1, 1, 1, 6, 6, 6), 21),
        ({"kind": "villa", "points": 30}, (1, 1, 6, 6, 6, 6), 0),
        ({"kind": "tower", "points": "sum"}, (2, 2, 2, 2, 6, 6), 20),
        ({"kind": "tower", "points": "sum"}, (6, 6, 6, 6, 2, 2), 28),
        ({"kind": "straight", "faces": [1, 2, 3], "points": 15}, (3, 1, 2), 15),
        ({"kind": "straight", "faces": [1, 2, 3], "points": 15}, (1, 2, 2), 0),
        ({"kind": "straight", "faces": [[1, 2, 3], [2, 3, 4]], "points": "sum"}, (1, 2, 3, 4), 9),
        ({"kind": "chance"}, (1, 5, 6), 12),
        ({"kind": "all_alike", "points": 50}, (2, 2, 2), 50),
        ({"kind": "all_alike", "points": 50}, (2, 2, 3), 0),
    ],
)
def test_each_kind_scores_by_its_rule(
    box: dict[str, Any], dice: tuple[int, ...], points: int
) -> None:
    assert plain_points(box, tuple(sorted(dice))) == points


# --- the scorecard rules ------------------------------------------------------------------------


def test_forced_order_scores_the_first_open_box_only() -> None:
    """One die, no reroll, ones then sixes in forced order: 1/6 + 6/6 = 7/6, and a 6 must go
    in ones (0 now, sixes' 1 to come). In free order a 6 goes in sixes and a 1 in ones:
    1/6 x (6 + 1/6) + 1/6 x (1 + 1) + 4/6 x (0 + 1) = 73/36."""
    forced = rules(1, 0, ONES, SIXES, order="forced")
    free = rules(1, 0, ONES, SIXES)

    assert value(forced, [], 0, False) == pytest.approx(7 / 6, abs=TOL)
    assert actions(forced, [], 0, False, (6,), 0) == pytest.approx({"score ones": 1.0}, abs=TOL)
    assert value(free, [], 0, False) == pytest.approx(73 / 36, abs=TOL)


def test_the_upper_bonus_comes_once_with_the_score_that_reaches_the_threshold() -> None:
    """One die in fives then sixes (forced), 10 points at 5: fives banks 5 + 10 with a 5
    (1/6 x 15); sixes banks its 6 (1/6 x 6), and the bonus too when fives took 0 (5/6 x 1/6 x
    10): 15/6 + 1 + 50/36 = 44/9."""
    game = rules(1, 0, FIVES, SIXES, order="forced", upper_threshold=5, upper_bonus=10)

    assert value(game, [], 0, False) == pytest.approx(44 / 9, abs=TOL)
    assert value(game, [0], 5, False) == pytest.approx(1.0, abs=TOL)
    assert value(game, [0], 0, False) == pytest.approx(1 + 10 / 6, abs=TOL)


def test_the_yahtzee_bonus_follows_points_in_the_all_alike_box() -> None:
    """One die is always all alike. Scoring the all-alike box first banks 10 and puts the
    flag up, so chance then banks its 3.5 and 100: 113.5. Two dice 1 2: scratching the
    all-alike box puts no flag up (0 + chance's 7 to come), chance banks 3 and leaves the
    all-alike box (10 x 1/6); with the flag up, chance to come is worth 7 + 100 x 1/6."""
    alike = {"name": "alike", "kind": "all_alike", "points": 10}
    two_dice = rules(2, 0, alike, CHANCE, yahtzee_bonus=100)

    assert value(rules(1, 0, alike, CHANCE, yahtzee_bonus=100), [], 0, False) == pytest.approx(
        113.5, abs=TOL
    )
    assert actions(two_dice, [], 0, False, (1, 2), 0) == pytest.approx(
        {"score alike": 7.0, "score chance": 3 + 10 / 6}, abs=TOL
    )
    assert value(two_dice, [0], 0, True) == pytest.approx(7 + 100 / 6, abs=TOL)


# Two dice, no reroll; the all-alike box is filled (the Joker's condition), twos and a
# straight of 1 2 worth 20 (20 too as a Joker) are open.
ALIKE = {"name": "alike", "kind": "all_alike", "points": 10}
STRAIGHT = {
    "name": "straight",
    "kind": "straight",
    "faces": [1, 2],
    "points": 20,
    "joker_points": 20,
}
STRAIGHT_LEFT = 20 * 8 / 36
"""Straight alone open, Joker on: 1 2 (2/36) scores 20, and so does every double (6/36), twos
being filled."""
TWOS_LEFT = 2 / 3
"""Twos alone open: 2 x 2/6 twos a turn (a double 2 scores its plain 4 there)."""


def test_the_free_joker_scores_joker_points_anywhere_once_its_upper_box_is_gone() -> None:
    """3 3 with no threes box: any open box, at its Joker points: straight 20 + 2/3, twos 0
    + 20 x 8/36. 2 2 with twos open: plain points anywhere: twos 4 + 20 x 8/36, straight
    0 + 2/3."""
    game = rules(2, 0, ALIKE, TWOS, STRAIGHT, joker="free")

    assert actions(game, [0], 0, False, (3, 3), 0) == pytest.approx(
        {"score straight": 20 + TWOS_LEFT, "score twos": STRAIGHT_LEFT}, abs=TOL
    )
    assert actions(game, [0], 0, False, (2, 2), 0) == pytest.approx(
        {"score twos": 4 + STRAIGHT_LEFT, "score straight": TWOS_LEFT}, abs=TOL
    )


def test_the_forced_joker_takes_the_upper_box_else_a_lower_box() -> None:
    """2 2 with twos open: twos only (4 + 20 x 8/36). 3 3 with no threes box: the open lower
    boxes only, at Joker points (straight 20 + 2/3). Straight filled, 3 3: no lower box is
    open, so twos, at its plain 0."""
    game = rules(2, 0, ALIKE, TWOS, STRAIGHT, joker="forced")

    assert actions(game, [0], 0, False, (2, 2), 0) == pytest.approx(
        {"score twos": 4 + STRAIGHT_LEFT}, abs=TOL
    )
    assert actions(game, [0], 0, False, (3, 3), 0) == pytest.approx(
        {"score straight": 20 + TWOS_LEFT}, abs=TOL
    )
    assert actions(game, [0, 2], 0, False, (3, 3), 0) == pytest.approx({"score twos": 0}, abs=TOL)


def test_without_a_joker_a_double_scores_plain_points() -> None:
    """3 3: straight 0 + 2/3, twos 0 + 20 x 2/36 (a double is no straight then)."""
    game = rules(2, 0, ALIKE, TWOS, STRAIGHT)

    assert actions(game, [0], 0, False, (3, 3), 0) == pytest.approx(
        {"score straight": TWOS_LEFT, "score twos": 20 * 2 / 36}, abs=TOL
    )


def test_the_joker_waits_for_the_all_alike_box() -> None:
    """All-alike box open: 3 3 scores plain points in every open box; the all-alike box
    takes 10 and leaves twos and the straight to play."""
    game = rules(2, 0, ALIKE, TWOS, STRAIGHT, joker="forced")

    assert set(actions(game, [], 0, False, (3, 3), 0)) == {
        "score alike",
        "score twos",
        "score straight",
    }


# --- on the tiny variants the tests draw --------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_tiny_variants_values_hang_together(data: st.DataObject) -> None:
    """The turn start is the average of the first roll's values; keeping every die is the same
    roll with one reroll fewer; a scoring move is always on offer."""
    game = data.draw(tiny_rule_sets())
    state = data.draw(tiny_states(game))
    filled, upper, fifty = state.filled, state.upper, state.fifty
    rerolls = game.get("rerolls", 2)

    start = value(game, filled, upper, fifty)
    rolls = outcomes(game["dice"])
    assert start == pytest.approx(
        sum(p * state_value(game, filled, upper, fifty, roll, rerolls) for roll, p in rolls),
        abs=TOL,
    )
    if state.dice is None or state.rerolls_left is None:
        return
    named = actions(game, filled, upper, fifty, state.dice, state.rerolls_left)
    assert any(action.startswith("score ") for action in named)
    if state.rerolls_left:
        fewer = state_value(game, filled, upper, fifty, state.dice, state.rerolls_left - 1)
        assert named[keep_name(state.dice)] == pytest.approx(fewer, abs=TOL)
