"""The saved-rolls brute force against games a player works out by hand.

Before the brute force (``saved_brute_force.py``) may judge the solver on saved rolls, it has
to get right the games whose values fit on a napkin, each test's docstring doing the
arithmetic; with the rule off it has to play the game of the rule-book brute force, written
apart from it; and its values have to hang together the way the bank says they must.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support import rulebook_brute_force as rulebook
from support.closed_forms import chance_by_rolls
from support.rule_strategies import (
    TinySavedState,
    tiny_rule_sets,
    tiny_saved_rule_sets,
    tiny_saved_states,
    tiny_states,
)
from support.saved_brute_force import actions, state_value, value

from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set

TOL = 1e-9


def saved(dice: int, rerolls: int, *boxes: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A rule set with saved rolls (no cap unless ``max_saved`` is given)."""
    top = {"dice": dice, "rerolls": rerolls, "saved_rolls": True, **top}
    return {"name": "hand", **top, "boxes": list(boxes)}


CHANCE = {"name": "chance", "kind": "chance"}
CHANCE_2 = {"name": "chance2", "kind": "chance"}
SIXES = {"name": "sixes", "kind": "upper", "face": 6}
ALIKE = {"name": "alike", "kind": "all_alike", "points": 50}


# --- one chance box: the closed form ----------------------------------------------------------


def test_the_closed_form_of_one_die_in_chance() -> None:
    """e_2 = (4 + 5 + 6 + 3 x 7/2) / 6 = 17/4, e_3 = (5 + 6 + 4 x 17/4) / 6 = 14/3, e_4 =
    (5 + 6 + 4 x 14/3) / 6 = 89/18, e_5 = (5 + 6 + 4 x 89/18) / 6 = 277/54; above 5 at last,
    so a 5 is rerolled too: e_6 = (6 + 5 x 277/54) / 6 = 1709/324, e_7 = (6 + 5 x 1709/324)
    / 6 = 10489/1944."""
    assert [chance_by_rolls(n) for n in range(1, 8)] == [
        Fraction(7, 2),
        Fraction(17, 4),
        Fraction(14, 3),
        Fraction(89, 18),
        Fraction(277, 54),
        Fraction(1709, 324),
        Fraction(10489, 1944),
    ]


@pytest.mark.parametrize(("rerolls", "bank"), [(0, 0), (1, 0), (2, 0), (0, 2), (1, 3), (2, 4)])
@pytest.mark.parametrize("dice", [1, 2, 3])
def test_chance_alone_is_worth_the_closed_form_per_die(dice: int, rerolls: int, bank: int) -> None:
    """The turn has the bank and its own rerolls + 1 rolls, n in all. Each die is kept or
    rerolled on its own (chance adds them up and any dice may be rerolled), so d dice are
    worth d x e_n."""
    rolls = bank + rerolls + 1
    game = saved(dice, rerolls, CHANCE)

    assert value(game, [], 0, False, bank) == pytest.approx(
        dice * float(chance_by_rolls(rolls)), abs=TOL
    )


def test_the_bank_adds_its_rolls_to_the_turns_own() -> None:
    """One die, two rerolls and four saved: 4 + 2 + 1 = 7 rolls, e_7 = 10489/1944."""
    game = saved(1, 2, CHANCE)

    assert value(game, [], 0, False, 4) == pytest.approx(10489 / 1944, abs=TOL)
    assert state_value(game, [], 0, False, None, 4) == pytest.approx(10489 / 1944, abs=TOL)


def test_a_reroll_spends_one_roll_of_what_is_left() -> None:
    """A 4 with one roll left: scoring it is 4, rerolling it e_1 = 3.5. With two rolls left
    the reroll is worth e_2 = 4.25 and beats the 4. One die offers no keep but nothing
    (keeping it would throw a roll away)."""
    game = saved(1, 0, CHANCE)

    assert actions(game, [], 0, False, (4,), 1) == pytest.approx(
        {"keep nothing": 3.5, "score chance": 4.0}, abs=TOL
    )
    assert actions(game, [], 0, False, (4,), 2) == pytest.approx(
        {"keep nothing": 4.25, "score chance": 4.0}, abs=TOL
    )
    assert state_value(game, [], 0, False, (4,), 2) == pytest.approx(4.25, abs=TOL)


def test_the_keeps_offered_reroll_at_least_one_die() -> None:
    """Dice 1 1 3 with a roll left: nothing, 1, 3, 1 1, 1 3 (keeping the one 1 or the other
    is one keep); keeping 1 1 3 is no reroll. With no roll left: the boxes only."""
    game = saved(3, 1, CHANCE)

    assert sorted(actions(game, [], 0, False, (1, 3, 1), 1)) == sorted(
        ["keep nothing", "keep 1", "keep 3", "keep 1 1", "keep 1 3", "score chance"]
    )
    assert list(actions(game, [], 0, False, (1, 3, 1), 0)) == ["score chance"]


# --- one all-alike box: a Markov chain ------------------------------------------------------------

CHAINS: dict[int, tuple[dict[int, Fraction], dict[int, dict[int, Fraction]]]] = {
    1: ({1: Fraction(1)}, {}),
    2: (
        {2: Fraction(1, 6), 1: Fraction(5, 6)},
        {1: {2: Fraction(1, 6), 1: Fraction(5, 6)}},
    ),
    3: (
        {3: Fraction(1, 36), 2: Fraction(15, 36), 1: Fraction(20, 36)},
        {
            1: {3: Fraction(1, 36), 2: Fraction(15, 36), 1: Fraction(20, 36)},
            2: {3: Fraction(1, 6), 2: Fraction(5, 6)},
        },
    ),
}
"""Per dice count, the most dice showing one face: after the first roll, and from each count
after keeping that face and rerolling the rest. One die is always alike. Two: the second
matches the first once in six, and so does the rerolled one. Three: all alike 6/216 = 1/36,
two alike 3 x 6 x 5/216 = 15/36, none 6 x 5 x 4/216 = 20/36; keeping one and rerolling two
gives the same (both match 1/36; one matches 2 x 5/36 or the two match each other 5/36: a
pair 15/36); keeping a pair, the third matches once in six."""


def alike_within(dice: int, rolls: int) -> Fraction:
    """The chance that all ``dice`` show one face within ``rolls`` rolls, keeping the most
    common face each time."""
    first, step = CHAINS[dice]
    counts = dict(first)
    for _ in range(rolls - 1):
        after: dict[int, Fraction] = {}
        for count, chance in counts.items():
            for new, moves in step.get(count, {count: Fraction(1)}).items():
                after[new] = after.get(new, Fraction(0)) + chance * moves
        counts = after
    return counts.get(dice, Fraction(0))


def test_the_chain_of_two_dice_is_one_minus_five_sixths_to_the_n() -> None:
    """Two dice stay apart with chance 5/6 each roll: 1 - (5/6)^n."""
    assert [alike_within(2, n) for n in range(1, 5)] == [
        1 - Fraction(5, 6) ** n for n in range(1, 5)
    ]


@pytest.mark.parametrize(("rerolls", "bank"), [(0, 0), (1, 0), (2, 0), (1, 2), (2, 4)])
@pytest.mark.parametrize("dice", [1, 2, 3])
def test_all_alike_alone_is_worth_its_points_times_the_chains_chance(
    dice: int, rerolls: int, bank: int
) -> None:
    """A lone all-alike box scores 50 once the dice show one face and nothing otherwise, so
    the player rerolls toward it until it comes or the rolls run out: 50 x the chance of all
    alike within bank + rerolls + 1 rolls."""
    rolls = bank + rerolls + 1
    game = saved(dice, rerolls, ALIKE)

    assert value(game, [], 0, False, bank) == pytest.approx(
        50 * float(alike_within(dice, rolls)), abs=TOL
    )


# --- two boxes: what the bank is worth -----------------------------------------------------------

CHANCE_THEN = {0: Fraction(17, 4), 1: Fraction(14, 3)}
"""Chance alone in the last turn, one die, two rolls of its own: e_2 = 17/4; with a roll
saved e_3 = 14/3."""
SIXES_THEN = {0: 6 * (1 - Fraction(5, 6) ** 2), 1: 6 * (1 - Fraction(5, 6) ** 3)}
"""Sixes alone in the last turn: 6 x the chance of a six within its two rolls, 6 x (1 -
(5/6)^2) = 11/6, or within three with a roll saved, 6 x (1 - (5/6)^3) = 91/36."""
REROLL = (
    sum(
        (max(face + SIXES_THEN[0], 6 * (face == 6) + CHANCE_THEN[0]) for face in range(1, 7)),
        Fraction(0),
    )
    / 6
)
"""The first turn's reroll, spending its last roll: a 6 goes in sixes (6 + 17/4 = 41/4 beats
6 + 11/6), a 1 or 2 in sixes for nothing (17/4 beats 1 + 11/6 and 2 + 11/6), a 3, 4, 5 in
chance (face + 11/6): (41/4 + 17/4 + 17/4 + 29/6 + 35/6 + 41/6) / 6 = 145/24."""


def test_saving_a_roll_in_the_first_turn_helps_the_second() -> None:
    """One die, one reroll, chance and sixes. A first roll of 4 scored in chance at once
    saves the reroll for the sixes turn: 4 + 91/36 = 235/36, above the reroll's 145/24; without the
    bank it is 4 + 11/6 = 35/6, below it. Scoring at once: a 6 in sixes (6 + 14/3 = 32/3),
    a 5 in chance (5 + 91/36 = 271/36), a 4 in chance (235/36); 1 to 3 rerolled: the start
    is (32/3 + 271/36 + 235/36 + 3 x 145/24) / 6 = 3085/432. Without the bank: 6 in sixes
    (6 + 17/4 = 41/4), 5 in chance (5 + 11/6 = 41/6), 1 to 4 rerolled: (41/4 + 41/6 + 4 x
    145/24) / 6 = 55/8."""
    bank = saved(1, 1, CHANCE, SIXES)
    without = {**bank, "max_saved": 0}

    assert REROLL == Fraction(145, 24)
    assert actions(bank, [], 0, False, (4,), 1) == pytest.approx(
        {"keep nothing": 145 / 24, "score chance": 235 / 36, "score sixes": 14 / 3}, abs=TOL
    )
    assert actions(without, [], 0, False, (4,), 1) == pytest.approx(
        {"keep nothing": 145 / 24, "score chance": 35 / 6, "score sixes": 17 / 4}, abs=TOL
    )
    assert value(bank, [], 0, False, 0) == pytest.approx(3085 / 432, abs=TOL)
    assert value(without, [], 0, False, 0) == pytest.approx(55 / 8, abs=TOL)
    assert rulebook.value({**bank, "saved_rolls": False}, [], 0, False) == pytest.approx(
        55 / 8, abs=TOL
    )


def test_in_forced_order_only_a_first_six_saves_its_reroll() -> None:
    """One die, one reroll, sixes then chance in that order. A first 6 is scored at once and
    the reroll saved: 6 + e_3 = 32/3. Anything else is rerolled for a 6 (1/6 x 6, then
    chance with its own two rolls, 1 + 17/4 = 21/4), since scoring 0 to save the reroll is
    only worth e_3 = 14/3: 1/6 x 32/3 + 5/6 x 21/4 = 443/72. Without the bank the first 6
    gives 6 + 17/4 = 41/4 and the start is 73/12: the bank adds 1/6 x (14/3 - 17/4) = 5/72."""
    bank = saved(1, 1, SIXES, CHANCE, order="forced")

    assert actions(bank, [], 0, False, (2,), 1) == pytest.approx(
        {"keep nothing": 21 / 4, "score sixes": 14 / 3}, abs=TOL
    )
    assert value(bank, [], 0, False, 0) == pytest.approx(443 / 72, abs=TOL)
    assert value({**bank, "max_saved": 0}, [], 0, False, 0) == pytest.approx(73 / 12, abs=TOL)


def test_the_cap_holds_what_a_turn_carries() -> None:
    """One die, one reroll, two chance boxes; a 6 with three rolls left. Scoring it carries
    the three rolls into the last turn: 6 + e_(3 + 1 + 1) = 6 + 277/54; a cap of 1 carries
    one: 6 + e_3 = 6 + 14/3; a cap of 0 none: 6 + e_2 = 6 + 17/4. In the last box the rolls
    left are worth nothing: the 6 scores 6."""
    game = saved(1, 1, CHANCE, CHANCE_2)

    for cap, last_turn in [(None, 277 / 54), (1, 14 / 3), (0, 17 / 4)]:
        capped = game if cap is None else {**game, "max_saved": cap}
        assert actions(capped, [], 0, False, (6,), 3)["score chance"] == pytest.approx(
            6 + last_turn, abs=TOL
        ), cap
        assert actions(capped, [1], 0, False, (6,), 3)["score chance"] == pytest.approx(
            6.0, abs=TOL
        )


# --- without the rule: the rule-book game -----------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_without_the_rule_or_with_a_cap_of_0_it_is_the_rule_book_game(
    data: st.DataObject,
) -> None:
    """A bank that can hold nothing leaves every turn its own rolls, so both brute forces
    play one game: the same turn starts, and the same actions but keeping every die, which
    the rule book offers (a reroll that changes nothing) and a bank never would."""
    rules = data.draw(tiny_rule_sets(), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    card = (state.filled, state.upper, state.fifty)

    for game in (rules, {**rules, "saved_rolls": True, "max_saved": 0}):
        assert value(game, *card, 0) == pytest.approx(rulebook.value(rules, *card), abs=TOL)
        if state.dice is None or state.rerolls_left is None:
            continue
        expected = rulebook.actions(rules, *card, state.dice, state.rerolls_left)
        expected.pop(rulebook.keep_name(state.dice), None)
        named = actions(game, *card, state.dice, state.rerolls_left)
        assert named.keys() == expected.keys()
        for action, worth in expected.items():
            assert named[action] == pytest.approx(worth, abs=TOL), action


# --- the bank's properties -----------------------------------------------------------------------


def _capped(rules: dict[str, Any], cap: int | None) -> dict[str, Any]:
    bare = {key: held for key, held in rules.items() if key != "max_saved"}
    return bare if cap is None else {**bare, "max_saved": cap}


def _worth(rules: dict[str, Any], state: TinySavedState, more: int = 0) -> float:
    """The state's value, with ``more`` rolls in the bank or left."""
    card = (state.filled, state.upper, state.fifty)
    if state.dice is None or state.rolls_left is None:
        return state_value(rules, *card, None, state.saved + more)
    return state_value(rules, *card, state.dice, state.rolls_left + more)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_one_more_roll_is_never_worth_less(data: st.DataObject) -> None:
    """A roll more in the bank, or left in the turn, can always go unused."""
    rules = data.draw(tiny_saved_rule_sets(), label="rules")
    state = data.draw(tiny_saved_states(rules), label="state")

    assert _worth(rules, state, more=1) >= _worth(rules, state) - TOL


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_cap_lies_between_no_bank_and_no_cap(data: st.DataObject) -> None:
    """A cap of K carries at least what a cap of 0 does and at most what no cap does, and
    a roll more carried is never worth less."""
    rules = data.draw(tiny_saved_rule_sets(), label="rules")
    state = data.draw(tiny_saved_states(rules), label="state")
    cap = data.draw(st.integers(0, 4), label="cap")

    least, capped, most = (_worth(_capped(rules, k), state) for k in (0, cap, None))
    assert least - TOL <= capped <= most + TOL


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_turn_start_is_the_average_of_its_first_roll(data: st.DataObject) -> None:
    """The first roll is mandatory and leaves the bank plus the turn's rerolls; the rule
    book's counted chances of each sorted roll weigh it."""
    rules = data.draw(tiny_saved_rule_sets(), label="rules")
    state = data.draw(tiny_saved_states(rules), label="state")
    card = (state.filled, state.upper, state.fifty)
    left = state.saved + rules.get("rerolls", 2)

    assert value(rules, *card, state.saved) == pytest.approx(
        sum(
            p * state_value(rules, *card, roll, left)
            for roll, p in rulebook.outcomes(rules["dice"])
        ),
        abs=TOL,
    )


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_drawn_rule_sets_are_rule_files_and_their_banks_reachable(
    data: st.DataObject,
) -> None:
    """Every draw reads as a rule file, and its turn start's bank is one the rule set counts
    among the reachable ones (L boxes filled: 0..min(L x rerolls, cap))."""
    rules = data.draw(tiny_saved_rule_sets(), label="rules")
    state = data.draw(tiny_saved_states(rules), label="state")
    rule_set = parse_rule_set(rules)

    assert rule_set.saved_rolls
    assert rule_set.max_saved == rules.get("max_saved")
    assert state.saved < rule_set.saved_levels(len(state.filled))
    if state.rolls_left is not None:
        assert state.rolls_left <= state.saved + rule_set.rerolls
