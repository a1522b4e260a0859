"""What scoring a roll in a box does to the scorecard: the two forms agree, and the rules a
player can check by hand hold (the upper bonus once at 63, the Joker, the +100).

The scalar form (:func:`score`, :func:`after`) is what advice, review and play show; the
vectorized form (:func:`points`, :func:`land`) is what the turn math, the distribution and
the simulation compute with. They are compared on every roll, box and scorecard of small
rule sets, and on random states of every built-in rule set, through the turn math too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from memo_solver.games.yahtzee.rules.catalog import RULE_SETS, get_rule_set
from memo_solver.games.yahtzee.rules.rule_set import Joker, RuleSet
from memo_solver.games.yahtzee.rules.state import State, guidepost, parse_state
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve.scoring import (
    Scored,
    land,
    next_turn_start,
    points,
    roll_points,
    score,
)
from memo_solver.games.yahtzee.solve.turn import Guideposts, turn_tables

YAHTZEE = RULE_SETS["yahtzee"]
JOKERS: tuple[Joker, ...] = ("forced", "free", "none")


def _small(name: str, boxes: tuple[str, ...], threshold: int, joker: Joker = "none") -> RuleSet:
    """Some of Yahtzee's boxes, the upper bonus 35 at ``threshold``, the +100 if the Yahtzee
    box is among them: small enough to try every scorecard."""
    categories = tuple(YAHTZEE.categories[YAHTZEE.category_index(box)] for box in boxes)
    return RuleSet(
        name,
        "a test rule set",
        categories,
        0.0,
        upper_threshold=threshold,
        upper_bonus=35,
        yahtzee_bonus=100 if "yahtzee" in boxes else 0,
        joker=joker,
    )


SMALL = {
    # Every rule of the full game: bonus, 50, +100 and each Joker, in 32 scorecards.
    **{
        f"small-{joker}": _small(
            f"small-{joker}", ("fives", "sixes", "full_house", "yahtzee", "chance"), 30, joker
        )
        for joker in JOKERS
    },
    "small-upper": _small("small-upper", ("fours", "fives", "sixes"), 40),
    "yahtzee-lower": RULE_SETS["yahtzee-lower"],
}


def scorecards(rules: RuleSet) -> Iterator[State]:
    """Every turn start a game can reach: each filled mask but the full one, each real upper
    total those boxes can make, the 50 recorded or not once the Yahtzee box is filled."""
    yahtzee = rules.yahtzee_box
    for filled in range(rules.all_filled):
        flags = [False, True] if yahtzee is not None and filled >> yahtzee & 1 else [False]
        for upper in np.flatnonzero(rules.upper_totals(filled)).tolist():
            for flag in flags:
                yield State(filled, upper, flag, None, None)


def rolled(rules: RuleSet, state: State, roll: int) -> State:
    return State(state.filled, state.upper, state.yahtzee_bonus, 0, rules.universe.rolls[roll])


def assert_forms_agree(rules: RuleSet, state: State, box: int) -> None:
    """The scalar form of every roll in ``box`` against the vectorized form of all 252."""
    boxes = rules.open_boxes(state.filled)
    table = points(rules, state.filled, boxes)[boxes.index(box)]
    upper, flag = guidepost(state, rules)[:2]  # the levels: the bank is not the score's
    legal = np.isfinite(table)
    landing = land(
        rules,
        box,
        np.where(legal, table, 0).astype(np.int64),
        rules.universe.all_alike,
        np.array(upper),
        np.array(flag),
    )
    # Each result is as large as what it depends on: one value, or one per roll.
    fields = ("upper", "flag", "upper_bonus", "extra", "fifty")
    arrays = np.broadcast_arrays(table, *(getattr(landing, f) for f in fields))[1:]
    by_roll = dict(zip(fields, arrays, strict=True))
    for roll in range(rules.universe.n_rolls):
        here = rolled(rules, state, roll)
        scored = score(rules, here, box)
        assert roll_points(rules, state.filled, box, roll) == (
            None if scored is None else scored.points
        )
        if not legal[roll]:
            assert scored is None, (here, box)
            continue
        banked = (by_roll["upper_bonus"][roll], by_roll["extra"][roll])
        assert scored == Scored(int(table[roll]), *map(int, banked)), (here, box)
        following = next_turn_start(rules, here, box, scored.points)
        assert guidepost(following, rules)[:2] == (by_roll["upper"][roll], by_roll["flag"][roll])
        fifty = following.yahtzee_bonus and not state.yahtzee_bonus
        assert by_roll["fifty"][roll] == fifty


@pytest.mark.parametrize("name", SMALL)
def test_the_two_forms_agree_on_every_roll_box_and_scorecard(name: str) -> None:
    rules = SMALL[name]
    for state in scorecards(rules):
        for box in rules.open_boxes(state.filled):
            assert_forms_agree(rules, state, box)


def assert_turn_agrees(rules: RuleSet, state: State, seed: int) -> None:
    """The turn math's value of scoring each roll in each open box is its points, its
    bonuses and the value of the guidepost it lands on, as the scalar form says.

    The successor blocks hold random whole numbers, so that every sum is exact."""
    rng = np.random.default_rng(seed)
    successors = {
        box: rng.integers(0, 1000, rules.block_shape).astype(np.float64)
        for box in rules.open_boxes(state.filled)
    }
    upper, flag = guidepost(state, rules)[:2]  # the levels: the bank is not the score's
    tables = turn_tables(
        rules, state.filled, successors.__getitem__, Guideposts.one(rules, upper, flag), 0
    )
    boxes, values = tables.boxes, tables.scores[0]
    for i, box in enumerate(boxes):
        for roll in range(rules.universe.n_rolls):
            here = rolled(rules, state, roll)
            scored = score(rules, here, box)
            if scored is None:
                assert values[i, roll, 0] == -np.inf
                continue
            landed = guidepost(next_turn_start(rules, here, box, scored.points), rules)[:2]
            expected = scored.points + scored.bonus + successors[box][landed]
            assert values[i, roll, 0] == expected, (here, box)


@pytest.mark.parametrize("name", SMALL)
def test_the_turn_math_scores_as_the_scalar_form_on_small_rule_sets(name: str) -> None:
    rules = SMALL[name]
    for number, state in enumerate(scorecards(rules)):
        if number % 7 == 0:  # a sample: the turn math is checked whole on random states below
            assert_turn_agrees(rules, state, number)


# --- random states of every built-in rule set -------------------------------------------------


@st.composite
def _cases(draw: st.DrawFn) -> tuple[RuleSet, State, int]:
    """A built-in rule set, a reachable scorecard with all dice alike often, an open box."""
    rules = RULE_SETS[draw(st.sampled_from(sorted(RULE_SETS)))]
    filled = draw(st.integers(0, rules.all_filled - 1))
    upper = draw(st.sampled_from(np.flatnonzero(rules.upper_totals(filled)).tolist()))
    yahtzee = rules.yahtzee_box
    flag = yahtzee is not None and filled >> yahtzee & 1 == 1 and draw(st.booleans())
    alike = st.integers(1, 6).map(lambda face: (face,) * rules.dice)
    dice = st.lists(st.integers(1, 6), min_size=rules.dice, max_size=rules.dice)
    faces = draw(st.one_of(alike, dice))
    box = draw(st.sampled_from(rules.open_boxes(filled)))
    return rules, State(filled, upper, flag, 0, tuple(sorted(faces))), box


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_the_two_forms_agree_on_random_states_of_every_rule_set(
    case: tuple[RuleSet, State, int],
) -> None:
    rules, state, box = case
    assert_forms_agree(rules, dataclasses.replace(state, rerolls_left=None, dice=None), box)


@settings(max_examples=60, deadline=None)
@given(_cases(), st.integers(0, 2**32 - 1))
def test_the_turn_math_scores_as_the_scalar_form_on_random_states(
    case: tuple[RuleSet, State, int], seed: int
) -> None:
    rules, state, _ = case
    assert_turn_agrees(rules, dataclasses.replace(state, rerolls_left=None, dice=None), seed)


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_scoring_moves_the_scorecard_as_a_player_adds_it_up(
    case: tuple[RuleSet, State, int],
) -> None:
    rules, state, box = case
    scored = score(rules, state, box)
    if scored is None:  # only the Joker forbids a box, and only for five of a kind
        assert rules.joker == "forced"
        assert state.dice is not None
        assert len(set(state.dice)) == 1
        return
    category = rules.categories[box]
    following = next_turn_start(rules, state, box, scored.points)
    assert following.filled == state.filled | 1 << box
    assert following.upper == state.upper + (scored.points if category.upper_face else 0)
    assert following.dice is None
    assert following.rerolls_left is None
    crossed = state.upper < rules.upper_threshold <= following.upper
    assert scored.upper_bonus == (rules.upper_bonus if crossed else 0)
    assert scored.extra in (0, rules.yahtzee_bonus)
    assert scored.bonus == scored.upper_bonus + scored.extra


# --- by hand: the upper bonus -----------------------------------------------------------------


def test_reaching_63_banks_the_upper_bonus_once() -> None:
    state = parse_state("open=fives,sixes,chance upper=48 dice=55512 rerolls=0", YAHTZEE)
    fives = YAHTZEE.category_index("fives")
    assert score(YAHTZEE, state, fives) == Scored(15, 35, 0)  # 48 + 15 = 63 exactly
    at_63 = next_turn_start(YAHTZEE, state, fives, 15)
    assert at_63.upper == 63
    sixes = dataclasses.replace(at_63, dice=(1, 6, 6, 6, 6), rerolls_left=0)
    assert score(YAHTZEE, sixes, YAHTZEE.category_index("sixes")) == Scored(24, 0, 0)
    # The solver's guideposts cap the total at 63: past it, nothing is left to bank.
    sixes_box = YAHTZEE.category_index("sixes")
    landing = land(YAHTZEE, sixes_box, np.array(24), False, np.array(63), np.array(0))
    assert (int(landing.upper), int(landing.upper_bonus)) == (63, 0)


def test_falling_short_of_63_banks_nothing_and_a_lower_box_never_does() -> None:
    state = parse_state("open=fives,sixes,chance upper=48 dice=55412 rerolls=0", YAHTZEE)
    assert score(YAHTZEE, state, YAHTZEE.category_index("fives")) == Scored(10, 0, 0)
    at_62 = parse_state("open=sixes,chance upper=62 dice=66665 rerolls=0", YAHTZEE)
    assert score(YAHTZEE, at_62, YAHTZEE.category_index("chance")) == Scored(29, 0, 0)
    assert next_turn_start(YAHTZEE, at_62, YAHTZEE.category_index("chance"), 29).upper == 62


def test_the_guidepost_lands_on_the_capped_total_with_the_bonus_on_the_crossing() -> None:
    fives = YAHTZEE.category_index("fives")
    landing = land(YAHTZEE, fives, np.array([0, 5, 10, 15]), False, np.array(50), np.array(0))
    assert landing.upper.tolist() == [50, 55, 60, 63]
    assert landing.upper_bonus.tolist() == [0, 0, 0, 35]


# --- by hand: the Joker and the +100 ---------------------------------------------------------


def _five_fours(text: str, rules: RuleSet = YAHTZEE) -> dict[str, Scored | None]:
    state = parse_state(f"{text} dice=44444 rerolls=0", rules)
    return {
        rules.categories[box].name: score(rules, state, box)
        for box in rules.open_boxes(state.filled)
    }


def test_a_second_yahtzee_with_fours_open_must_go_in_fours_and_banks_100() -> None:
    got = _five_fours("open=fours,full_house,chance bonus=yes")
    assert got == {"fours": Scored(20, 0, 100), "full_house": None, "chance": None}


def test_with_fours_filled_the_joker_scores_the_lower_boxes_in_full() -> None:
    got = _five_fours("open=full_house,large_straight,chance,sixes bonus=yes")
    assert got == {
        "sixes": None,  # a lower box is open: the Joker must go there
        "full_house": Scored(25, 0, 100),
        "large_straight": Scored(40, 0, 100),
        "chance": Scored(20, 0, 100),
    }


def test_with_the_lower_section_full_the_joker_scratches_an_upper_box() -> None:
    assert _five_fours("open=ones,sixes bonus=yes") == {
        "ones": Scored(0, 0, 100),
        "sixes": Scored(0, 0, 100),
    }


def test_a_scratched_yahtzee_box_keeps_the_joker_but_banks_no_100() -> None:
    assert _five_fours("open=full_house,chance") == {
        "full_house": Scored(25, 0, 0),
        "chance": Scored(20, 0, 0),
    }


def test_the_free_joker_allows_every_box_and_its_points_once_the_upper_box_is_filled() -> None:
    free = RULE_SETS["yahtzee-free-joker"]
    assert _five_fours("open=fours,full_house bonus=yes", free) == {
        "fours": Scored(20, 0, 100),
        "full_house": Scored(0, 0, 100),  # fours open: no Joker points
    }
    assert _five_fours("open=sixes,full_house bonus=yes", free) == {
        "sixes": Scored(0, 0, 100),
        "full_house": Scored(25, 0, 100),
    }


def test_a_yahtzee_in_its_upper_box_can_bank_both_bonuses() -> None:
    state = parse_state("open=sixes,chance upper=40 bonus=yes dice=66666 rerolls=0", YAHTZEE)
    sixes = YAHTZEE.category_index("sixes")
    scored = score(YAHTZEE, state, sixes)
    assert scored is not None
    assert scored == Scored(30, 35, 100)
    assert scored.bonus == 135


def test_50_in_the_yahtzee_box_is_recorded_and_a_scratch_is_not() -> None:
    state = parse_state("open=yahtzee,chance dice=33333 rerolls=0", YAHTZEE)
    box = YAHTZEE.category_index("yahtzee")
    assert score(YAHTZEE, state, box) == Scored(50, 0, 0)  # the first one banks no +100
    assert next_turn_start(YAHTZEE, state, box, 50).yahtzee_bonus
    scratch = dataclasses.replace(state, dice=(1, 2, 3, 3, 3))
    assert score(YAHTZEE, scratch, box) == Scored(0, 0, 0)
    assert not next_turn_start(YAHTZEE, scratch, box, 0).yahtzee_bonus


def test_without_a_bonus_rule_a_second_yahtzee_banks_nothing_more() -> None:
    rules = get_rule_set("yahtzee-no-joker-no-bonus")
    state = parse_state("open=fours,chance bonus=yes dice=44444 rerolls=0", rules)
    assert score(rules, state, rules.category_index("chance")) == Scored(20, 0, 0)
    # The 50 stays on the scorecard, but the solver's guidepost has no flag to set.
    assert guidepost(state, rules) == (0, 0)


# --- the tie rule and the roll properties ----------------------------------------------------


def test_values_equal_to_1e_9_tie() -> None:
    keys = tie(np.array([10.0, 10.0 + 1e-12, 10.0 - 1e-12, 10.0 + 3e-9]))
    assert keys[0] == keys[1] == keys[2] < keys[3]
