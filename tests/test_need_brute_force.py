"""The need brute force against games a player works out by hand, and its rules on tiny variants.

Before :mod:`need_brute_force` may judge the solver's second objective (the best chance of
scoring at least N more points), it has to get right the games whose chances fit on a
napkin (each test's docstring does the arithmetic), and obey on random tiny rule sets
(``rule_strategies.py``) what any such chance must: certain for N <= 0, never rising with N,
above 0 up to the most the open boxes can give and 0 past it, 1 up to the least they are
sure to give, and never below the mean-optimal policy's chance.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support import rulebook_brute_force as mean
from support.need_brute_force import (
    chance,
    chance_actions,
    forget,
    least_points,
    mean_policy_chance,
    mean_policy_distribution,
    most_points,
    state_chance,
)
from support.rule_strategies import TinyState, tiny_rule_sets, tiny_states
from support.rulebook_brute_force import keep_name, outcomes

TOL = 1e-9


def rules(dice: int, rerolls: int, *boxes: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "hand", "dice": dice, "rerolls": rerolls, **top, "boxes": list(boxes)}


CHANCE = {"name": "chance", "kind": "chance"}
FIVES = {"name": "fives", "kind": "upper", "face": 5}
SIXES = {"name": "sixes", "kind": "upper", "face": 6}
ALIKE = {"name": "alike", "kind": "all_alike", "points": 10}


def one_try(need: int) -> float:
    """One die reaching ``need``: (7 - need) / 6, within 0..1."""
    return min(1.0, max(0.0, (7 - need) / 6))


# --- one die ------------------------------------------------------------------------------


@pytest.mark.parametrize("need", range(-2, 9))
@pytest.mark.parametrize("rerolls", [0, 1, 2])
def test_one_die_in_chance_keeps_a_die_that_meets_the_need(rerolls: int, need: int) -> None:
    """A die showing the need or more is kept, any other rerolled: each of the rerolls + 1
    rolls meets the need with chance q = (7 - need) / 6, so the chance is 1 - (1 - q) **
    (rerolls + 1): (7 - need) / 6 without a reroll; 1 for a need of 1 or less, 0 above 6."""
    expected = 1 - (1 - one_try(need)) ** (rerolls + 1)

    assert chance(rules(1, rerolls, CHANCE), [], 0, False, need) == pytest.approx(expected, abs=TOL)


def test_a_four_in_hand_is_rerolled_for_a_five() -> None:
    """Needing 5 with a 4 and a reroll: keeping or scoring the 4 cannot make it (0), the
    reroll shows 5 or 6 once in three. Needing 4, the 4 is enough and a reroll makes it one
    time in two."""
    game = rules(1, 1, CHANCE)

    assert chance_actions(game, [], 0, False, (4,), 1, 5) == pytest.approx(
        {"keep 4": 0.0, "score chance": 0.0, "keep nothing": 1 / 3}, abs=TOL
    )
    assert chance_actions(game, [], 0, False, (4,), 1, 4) == pytest.approx(
        {"keep 4": 1.0, "score chance": 1.0, "keep nothing": 1 / 2}, abs=TOL
    )


def test_the_mean_policy_keeps_the_four_and_loses_the_need() -> None:
    """The mean keeps a 4 (worth 4 against the 3.5 of a reroll), so from a 4 it never makes
    5 (0 against 1/3). From the turn start it makes 5 with a first 5 or 6 (1/3) or a 1-3
    rerolled into a 5 or 6 (1/2 x 1/3): 1/2; the target policy rerolls the 4 too: 1/3 +
    2/3 x 1/3 = 5/9."""
    game = rules(1, 1, CHANCE)

    assert mean_policy_chance(game, [], 0, False, (4,), 1, 5) == 0.0
    assert mean_policy_chance(game, [], 0, False, None, None, 5) == pytest.approx(1 / 2, abs=TOL)
    assert chance(game, [], 0, False, 5) == pytest.approx(5 / 9, abs=TOL)


@pytest.mark.parametrize("need", range(1, 7))
def test_one_die_in_sixes_makes_any_need_up_to_six_once_in_six(need: int) -> None:
    """Only a 6 scores: 6 points with chance 1/6, else 0."""
    game = rules(1, 0, SIXES)

    assert chance(game, [], 0, False, need) == pytest.approx(1 / 6, abs=TOL)
    assert chance(game, [], 0, False, 7) == 0.0
    assert (least_points(game, [], 0, False), most_points(game, [], 0, False)) == (0, 6)


# --- the points to come: what a score banks, bonuses included ---------------------------------


@pytest.mark.parametrize(
    ("need", "by_chance", "by_sixes"),
    [
        (2, 1.0, 1.0),
        (3, 11 / 36, 35 / 36),
        (7, 11 / 36, 21 / 36),
        (12, 1 / 36, 1 / 36),
        (13, 1 / 36, 0.0),
        (15, 0.0, 0.0),
    ],
)
def test_a_score_takes_its_points_off_the_need(
    need: int, by_chance: float, by_sixes: float
) -> None:
    """Two dice 1 1, no reroll, chance and sixes open. Chance banks 2 and leaves sixes, which
    must give need - 2: at least one 6 (11/36) gives 6, two give 12 (1/36). Sixes banks 0
    and leaves chance, which must give the whole need: two dice sum to 3 or more but for
    1 1 (35/36), to 7 or more 21 times in 36, to 12 once."""
    game = rules(2, 0, CHANCE, SIXES)

    assert chance_actions(game, [], 0, False, (1, 1), 0, need) == pytest.approx(
        {"score chance": by_chance, "score sixes": by_sixes}, abs=TOL
    )


def test_the_upper_bonus_counts_toward_the_need() -> None:
    """One die, fives then sixes in forced order, 10 points at an upper total of 5: a 5 in
    fives banks 15, a 6 in sixes 6, or 16 with the bonus when fives took 0. Points to
    come: 21 (1/36), 16 (5/36), 15 (5/36), else 0 (25/36), the mean's 44/9. No choice is
    left, so the mean policy has the same chances: 16 or more one time in six."""
    game = rules(1, 0, FIVES, SIXES, order="forced", upper_threshold=5, upper_bonus=10)

    assert mean_policy_distribution(game, [], 0, False) == pytest.approx(
        {21: 1 / 36, 16: 5 / 36, 15: 5 / 36, 0: 25 / 36}, abs=TOL
    )
    for need, expected in [(15, 11 / 36), (16, 1 / 6), (21, 1 / 36), (22, 0.0)]:
        assert chance(game, [], 0, False, need) == pytest.approx(expected, abs=TOL)
        assert mean_policy_chance(game, [], 0, False, None, None, need) == pytest.approx(
            expected, abs=TOL
        )
    assert most_points(game, [], 0, False) == 21


def test_the_yahtzee_bonus_counts_toward_the_need() -> None:
    """One die (always all alike), the all-alike box worth 10 and chance, 100 per later
    all-alike roll. Scoring the all-alike box first banks 10 and makes chance worth its die
    plus 100: 111 to 116 to come, so 111 is sure, 112 comes five times in six and 116 once
    (chance first gives at most 6 + 10)."""
    game = rules(1, 0, ALIKE, CHANCE, yahtzee_bonus=100)

    assert (least_points(game, [], 0, False), most_points(game, [], 0, False)) == (111, 116)
    for need, expected in [(111, 1.0), (112, 5 / 6), (116, 1 / 6), (117, 0.0)]:
        assert chance(game, [], 0, False, need) == pytest.approx(expected, abs=TOL)
    assert chance_actions(game, [], 0, False, (6,), 0, 112) == pytest.approx(
        {"score alike": 5 / 6, "score chance": 0.0}, abs=TOL
    )


def test_the_least_is_what_the_worst_dice_leave() -> None:
    """One die in chance: any roll can show a 1, so 1 is sure and 2 misses with chance
    (1/6) ** (rerolls + 1); any can show a 6, so 6 is the most. A die in hand is sure to
    give its face (it can be kept), and with no reroll left it is all there is."""
    for rerolls in (0, 1, 2):
        game = rules(1, rerolls, CHANCE)

        assert (least_points(game, [], 0, False), most_points(game, [], 0, False)) == (1, 6)
        assert chance(game, [], 0, False, 2) == pytest.approx(1 - 6.0 ** -(rerolls + 1), abs=TOL)
    assert least_points(rules(1, 1, CHANCE), [], 0, False, (5,), 1) == 5
    assert least_points(rules(1, 1, CHANCE), [], 0, False, (3,), 1) == 3
    assert least_points(rules(1, 1, CHANCE), [], 0, False, (3,), 0) == 3
    assert most_points(rules(1, 1, CHANCE), [], 0, False, (3,), 0) == 3


LOW_PAIR = {"name": "low", "kind": "straight", "faces": [[1], [2]], "points": 3}
"""With one die: 3 points for a 1 or a 2, worth 1 a turn like sixes, spread differently."""


def test_a_tie_in_the_mean_goes_to_the_first_box_in_scorecard_order() -> None:
    """One die showing 4, no reroll, sixes and the low box open: either box takes 0 and
    leaves the other, worth 1 to come either way. The mean policy scores the first box on
    the scorecard, leaving 3 once in three (or 6 once in six, the boxes swapped); playing
    for 6, only scoring the low box can make it."""
    sixes_first, low_first = rules(1, 0, SIXES, LOW_PAIR), rules(1, 0, LOW_PAIR, SIXES)

    assert mean_policy_distribution(sixes_first, [], 0, False, (4,), 0) == pytest.approx(
        {3: 1 / 3, 0: 2 / 3}, abs=TOL
    )
    assert mean_policy_distribution(low_first, [], 0, False, (4,), 0) == pytest.approx(
        {6: 1 / 6, 0: 5 / 6}, abs=TOL
    )
    assert chance_actions(sixes_first, [], 0, False, (4,), 0, 6) == pytest.approx(
        {"score sixes": 0.0, "score low": 1 / 6}, abs=TOL
    )
    assert mean_policy_chance(sixes_first, [], 0, False, (4,), 0, 6) == 0.0
    assert mean_policy_chance(low_first, [], 0, False, (4,), 0, 6) == pytest.approx(1 / 6, abs=TOL)


def test_a_wrong_state_is_refused() -> None:
    game = rules(2, 0, CHANCE)

    with pytest.raises(ValueError, match="expected 2 dice"):
        chance_actions(game, [], 0, False, (3,), 0, 4)
    with pytest.raises(ValueError, match="the game is over"):
        chance_actions(game, [0], 0, False, (3, 3), 0, 4)
    assert chance(game, [0], 0, False, 0) == 1.0
    assert chance(game, [0], 0, False, 1) == 0.0


# --- the rules every chance obeys, on tiny variants -------------------------------------------


def needs_around(game: dict[str, Any], state: TinyState) -> range:
    """Every need from below the certain ones to past the most the state can give."""
    most = most_points(game, state.filled, state.upper, state.fifty)
    return range(-2, most + 3)


def action_chances(game: dict[str, Any], state: TinyState, need: int) -> dict[str, float]:
    """Every action's chance mid-turn; at a turn start the state's own, as the one action."""
    if state.dice is None or state.rerolls_left is None:
        return {"start": chance(game, state.filled, state.upper, state.fifty, need)}
    return chance_actions(
        game, state.filled, state.upper, state.fifty, state.dice, state.rerolls_left, need
    )


def draw_state(
    data: st.DataObject, variants: st.SearchStrategy[dict[str, Any]]
) -> tuple[dict[str, Any], TinyState]:
    """A rule set and a state in it, the brute force's caches emptied of the games before."""
    forget()
    game = data.draw(variants, label="rules")
    return game, data.draw(tiny_states(game), label="state")


def check_certain_and_never_rising(game: dict[str, Any], state: TinyState, need: int) -> None:
    """Every action's chance is 1 for a need of 0 or less, and never rises with the need
    (over six needs from ``need`` on)."""
    for certain in (-1, 0):
        named = action_chances(game, state, certain)
        assert named == pytest.approx(dict.fromkeys(named, 1.0), abs=TOL), certain
    window = range(need, need + 6)
    for n, (lower, higher) in zip(
        window, pairwise(action_chances(game, state, n) for n in window), strict=False
    ):
        for action, worth in higher.items():
            assert worth <= lower[action] + TOL, (n, action)


def check_turn_start_and_best_action(game: dict[str, Any], state: TinyState, need: int) -> None:
    """Each first roll is worth its best action's chance, and the turn start their average;
    the state is worth its best action; the actions are the mean's; keeping every die is
    the same roll with one reroll fewer."""
    filled, upper, fifty = state.filled, state.upper, state.fifty
    rerolls = game.get("rerolls", 2)

    firsts = [
        (p, max(chance_actions(game, filled, upper, fifty, roll, rerolls, need).values()))
        for roll, p in outcomes(game["dice"])
    ]
    assert chance(game, filled, upper, fifty, need) == pytest.approx(
        sum(p * best for p, best in firsts), abs=TOL
    )
    if state.dice is None or state.rerolls_left is None:
        return
    mid_turn = (state.dice, state.rerolls_left)
    named = chance_actions(game, filled, upper, fifty, *mid_turn, need)
    assert state_chance(game, filled, upper, fifty, *mid_turn, need) == max(named.values())
    assert named.keys() == mean.actions(game, filled, upper, fifty, *mid_turn).keys()
    if state.rerolls_left:
        fewer = state_chance(game, filled, upper, fifty, state.dice, state.rerolls_left - 1, need)
        assert named[keep_name(state.dice)] == pytest.approx(fewer, abs=TOL)


def check_bounds(game: dict[str, Any], state: TinyState) -> None:
    """Past the most the open boxes can give no action can make it; the most itself comes
    with some luck; the least they are sure to give is certain. Mid-turn the dice in hand
    bound the state (its own most and least), the turn start's most bounds every action."""
    filled, upper, fifty = state.filled, state.upper, state.fifty
    here = (state.dice, state.rerolls_left)
    most, least = most_points(game, filled, upper, fifty), least_points(game, filled, upper, fifty)
    most_here = most_points(game, filled, upper, fifty, *here)
    least_here = least_points(game, filled, upper, fifty, *here)

    assert 0 <= least <= most
    assert least_here <= most_here <= most
    assert least - TOL <= mean.value(game, filled, upper, fifty) <= most + TOL
    assert set(action_chances(game, state, most + 1).values()) == {0.0}
    assert state_chance(game, filled, upper, fifty, *here, most_here + 1) == 0.0
    assert state_chance(game, filled, upper, fifty, *here, most_here) > 0.0
    assert state_chance(game, filled, upper, fifty, *here, least_here) == pytest.approx(
        1.0, abs=TOL
    )
    assert chance(game, filled, upper, fifty, least) == pytest.approx(1.0, abs=TOL)


def check_mean_policy(game: dict[str, Any], state: TinyState, need: int) -> None:
    """The mean-optimal policy is one way to play for the need, so it never does better;
    its distribution of points to come holds all the chance and averages the mean value."""
    filled, upper, fifty = state.filled, state.upper, state.fifty
    here = (state.dice, state.rerolls_left)
    distribution = mean_policy_distribution(game, filled, upper, fifty, *here)

    assert sum(distribution.values()) == pytest.approx(1.0, abs=TOL)
    assert sum(p * points for points, p in distribution.items()) == pytest.approx(
        mean.state_value(game, filled, upper, fifty, *here), abs=TOL
    )
    assert max(distribution) <= most_points(game, filled, upper, fifty, *here)
    assert mean_policy_chance(game, filled, upper, fifty, *here, need) <= (
        state_chance(game, filled, upper, fifty, *here, need) + TOL
    )


def check_all(game: dict[str, Any], state: TinyState, data: st.DataObject) -> None:
    need = data.draw(st.sampled_from(needs_around(game, state)), label="need")
    check_certain_and_never_rising(game, state, need)
    check_turn_start_and_best_action(game, state, need)
    check_bounds(game, state)
    check_mean_policy(game, state, need)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_actions_chance_is_certain_for_no_need_and_never_rises_with_the_need(
    data: st.DataObject,
) -> None:
    game, state = draw_state(data, tiny_rule_sets())
    need = data.draw(st.sampled_from(needs_around(game, state)), label="need")
    check_certain_and_never_rising(game, state, need)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_turn_start_is_the_average_of_its_first_rolls_best_actions(
    data: st.DataObject,
) -> None:
    game, state = draw_state(data, tiny_rule_sets())
    need = data.draw(st.sampled_from(needs_around(game, state)), label="need")
    check_turn_start_and_best_action(game, state, need)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_the_chance_is_above_0_up_to_the_most_and_1_up_to_the_least(
    data: st.DataObject,
) -> None:
    check_bounds(*draw_state(data, tiny_rule_sets()))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_playing_for_the_need_does_at_least_as_well_as_playing_for_the_mean(
    data: st.DataObject,
) -> None:
    game, state = draw_state(data, tiny_rule_sets())
    need = data.draw(st.sampled_from(needs_around(game, state)), label="need")
    check_mean_policy(game, state, need)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_without_a_choice_the_need_and_the_mean_play_alike(data: st.DataObject) -> None:
    """In forced order with no reroll every roll has one move, so the best chance of every
    need is the tail of the one distribution of points to come: the backward recursion of
    the chances and the distribution's pass, written apart, agree."""
    drawn = data.draw(tiny_rule_sets(), label="rules")
    game = {k: v for k, v in drawn.items() if k != "joker"} | {"order": "forced", "rerolls": 0}
    state = data.draw(tiny_states(game), label="state")
    filled, upper, fifty = state.filled, state.upper, state.fifty
    here = (state.dice, state.rerolls_left)

    for need in needs_around(game, state):
        assert state_chance(game, filled, upper, fifty, *here, need) == pytest.approx(
            mean_policy_chance(game, filled, upper, fifty, *here, need), abs=TOL
        ), need


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_rule_holds_on_joker_variants(data: st.DataObject) -> None:
    """Joker variants of up to four boxes (the all-alike box, an upper box, Joker points)."""
    game, state = draw_state(data, tiny_rule_sets(max_boxes=4, joker=True))
    check_all(game, state, data)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_rule_holds_on_variants_of_up_to_six_dice(data: st.DataObject) -> None:
    """Full house, villa and tower need five or six dice."""
    game, state = draw_state(data, tiny_rule_sets(max_dice=6, max_boxes=3))
    check_all(game, state, data)
