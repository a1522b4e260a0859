"""Typed game states: the three input forms agree, and every unreachable state is refused."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support.dice_variants import FORCED, MAXI, THREE_DICE
from support.random_states import random_state

from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import (
    State,
    StateError,
    format_state,
    guidepost,
    parse_state,
    start_state,
    state_from_json,
    state_to_json,
)

YAHTZEE = RULE_SETS["yahtzee"]
RULES = {**RULE_SETS, **{r.name: r for r in (THREE_DICE, FORCED)}}
HASKELL_EXAMPLE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"


def mask(rules: RuleSet, *names: str) -> int:
    return sum(1 << rules.category_index(name) for name in names)


def reference_line(state: State, rules: RuleSet) -> str:
    """The Haskell program's form, written here since the package only reads it."""
    marks = ["x" if state.filled >> i & 1 else "-" for i in range(len(rules.categories))]
    words = [*marks, str(state.upper), str(state.yahtzee_bonus)]
    if state.dice is not None:
        words += [str(state.rerolls_left), *map(str, state.dice)]
    return " ".join(words)


# --- reading -----------------------------------------------------------------------------------


def test_haskell_example_has_ones_and_yahtzee_open_and_a_turn_under_way() -> None:
    state = parse_state(HASKELL_EXAMPLE, YAHTZEE)

    assert state.filled == YAHTZEE.all_filled & ~mask(YAHTZEE, "ones", "yahtzee")
    assert state.upper == 62
    assert state.yahtzee_bonus is False
    assert state.rerolls_left == 2
    assert state.dice == (1, 2, 2, 2, 6)


def test_the_three_forms_say_the_same_state() -> None:
    as_json = """{"filled": ["twos", "threes", "fours", "fives", "sixes", "three_of_a_kind",
        "four_of_a_kind", "full_house", "small_straight", "large_straight", "chance"],
        "upper": 62, "yahtzee_bonus": false, "rerolls_left": 2, "dice": [6, 2, 1, 2, 2]}"""
    short = "open=ones,yahtzee upper=62 bonus=no dice=1,2,2,2,6 rerolls=2"

    expected = parse_state(HASKELL_EXAMPLE, YAHTZEE)
    assert parse_state(as_json, YAHTZEE) == expected
    assert parse_state(short, YAHTZEE) == expected


@pytest.mark.parametrize("name", ["Three of a Kind", "three-of-a-kind", "THREE_OF_A_KIND"])
def test_box_names_ignore_case_spaces_and_hyphens(name: str) -> None:
    state = state_from_json({"filled": [name]}, YAHTZEE)

    assert state.filled == mask(YAHTZEE, "three_of_a_kind")


def test_yazy_states_take_the_box_names_of_its_post() -> None:
    yazy = RULE_SETS["yazy"]
    named = mask(yazy, "ones", "full_house", "straight")

    assert state_from_json({"filled": ["Count 1s", "3 + 2", "Sequence of 5"]}, yazy).filled == named
    assert parse_state("filled=count-1s,3_+_2,sequence_of_5", yazy).filled == named
    with pytest.raises(StateError, match="'Count 1s' for rule set yahtzee"):
        parse_state('{"filled": ["Count 1s"]}', YAHTZEE)


def test_defaults_are_the_empty_scorecard_and_the_first_roll_of_a_turn() -> None:
    assert parse_state("{}", YAHTZEE) == start_state()
    assert parse_state("start", YAHTZEE) == start_state()
    assert parse_state("  START ", YAHTZEE) == start_state()
    assert parse_state("dice=66666", YAHTZEE).rerolls_left == YAHTZEE.rerolls
    assert state_from_json({"dice": [6] * 5, "upper": None}, YAHTZEE).rerolls_left == 2


@pytest.mark.parametrize(
    "text",
    [
        '{"dice": null, "rerolls_left": 2}',
        '{"filled": [], "upper": 0, "yahtzee_bonus": false, "rerolls_left": 2, "dice": null}',
        '{"rerolls_left": 2}',
        "rerolls=2",
    ],
)
def test_all_the_rerolls_without_dice_is_a_turn_start(text: str) -> None:
    """What a form sends that always sends every field: the turn has not started yet."""
    assert parse_state(text, YAHTZEE) == start_state()


def test_a_turn_start_with_its_rerolls_keeps_its_scorecard() -> None:
    state = parse_state("filled=chance rerolls=2", YAHTZEE)

    assert (state.filled, state.dice, state.rerolls_left) == (mask(YAHTZEE, "chance"), None, None)


def test_dice_come_in_any_order_and_are_kept_sorted() -> None:
    assert parse_state("dice=62531", YAHTZEE).dice == (1, 2, 3, 5, 6)


def test_open_lists_the_boxes_left_and_fills_the_rest() -> None:
    state = parse_state("open=ones,yahtzee", YAHTZEE)

    assert state.filled == YAHTZEE.all_filled & ~mask(YAHTZEE, "ones", "yahtzee")
    assert parse_state("open=none", YAHTZEE).filled == YAHTZEE.all_filled


def test_bonus_words() -> None:
    for word in ("yes", "True", "1"):
        assert parse_state(f"filled=yahtzee bonus={word}", YAHTZEE).yahtzee_bonus is True
    for word in ("no", "FALSE", "0"):
        assert parse_state(f"filled=yahtzee bonus={word}", YAHTZEE).yahtzee_bonus is False


def test_a_bonus_flag_is_kept_under_rules_without_the_bonus() -> None:
    rules = RULE_SETS["yatzy"]

    assert state_from_json({"filled": ["yatzy"], "yahtzee_bonus": True}, rules).yahtzee_bonus


def test_rules_without_an_upper_bonus_still_check_the_upper_total() -> None:
    with pytest.raises(StateError, match="upper total 7 cannot be made"):
        parse_state("filled=sixes upper=7", RULE_SETS["yahtzee-upper-no-bonus"])
    assert parse_state("filled=sixes upper=24", RULE_SETS["yazy"]).upper == 24


def test_six_dice_in_every_form() -> None:
    """Maxi Yatzy's six dice typed as digits, with commas, as JSON and in the reference line."""
    marks = " ".join("x" if i < 10 else "-" for i in range(len(MAXI.categories)))
    forms = [
        "filled=ones,twos upper=6 dice=626153 rerolls=1",
        "filled=ones,twos upper=6 dice=6,2,6,1,5,3 rerolls=1",
        '{"filled": ["ones", "twos"], "upper": 6, "dice": [6, 2, 6, 1, 5, 3], "rerolls_left": 1}',
    ]
    states = {parse_state(text, MAXI) for text in forms}
    assert len(states) == 1
    (state,) = states
    assert state.dice == (1, 2, 3, 5, 6, 6)
    assert parse_state("dice=123456", MAXI).dice == (1, 2, 3, 4, 5, 6)
    assert format_state(state, MAXI) == "filled=ones,twos upper=6 dice=123566 rerolls=1"
    line = parse_state(f"{marks} 30 False 0 6 6 6 6 6 6", MAXI)
    assert (line.filled, line.dice) == ((1 << 10) - 1, (6,) * 6)


def test_forced_order_states_are_scorecard_prefixes() -> None:
    state = parse_state("filled=ones,threes upper=4 dice=1133", FORCED)
    assert state.filled == 0b11
    assert parse_state(format_state(state, FORCED), FORCED) == state
    assert parse_state("dice=666", THREE_DICE).dice == (6, 6, 6)


# --- refusing ----------------------------------------------------------------------------------

REJECTIONS = [
    # (rule set, text, field, fragment of the message)
    ("yahtzee", '{"dice": [1, 2, 3, 4]}', "dice", "expected 5 dice, got 4"),
    ("yahtzee", "dice=123456", "dice", "expected 5 dice, got 6"),
    ("yahtzee", "- - - - - - - - - - - - - 0 False 2 1 2 3 4", "dice", "expected 5 dice, got 4"),
    ("yahtzee", "- - - - - - - - - - - - - 0 False 2", "dice", "expected 5 dice, got 0"),
    ("yahtzee", "dice=12347", "dice", "face 7 is outside 1..6"),
    ("yahtzee", '{"dice": [0, 1, 1, 1, 1]}', "dice", "face 0 is outside 1..6"),
    ("yahtzee", "dice=abcde", "dice", "expected faces like 12226"),
    ("yahtzee", '{"dice": 5}', "dice", "expected a list of 5 faces or null, got 5"),
    ("yahtzee", '{"dice": [1, 2, 3, 4, true]}', "dice", "expected a list"),
    ("yahtzee", "open=none dice=12345", "dice", "the game is over: every box is filled"),
    ("yahtzee", "filled=onez", "filled", "unknown box 'onez' for rule set yahtzee (boxes: ones,"),
    ("yahtzee", "filled=one_pair", "filled", "unknown box 'one_pair'"),
    ("yahtzee", "open=one_pair", "filled", "unknown box 'one_pair'"),
    ("yatzy", '{"filled": ["yahtzee"]}', "filled", "unknown box 'yahtzee' for rule set yatzy"),
    ("yahtzee", "filled=ones,twos,Ones", "filled", "'ones' is listed twice"),
    ("yahtzee", '{"filled": ["chance", "Chance"]}', "filled", "'chance' is listed twice"),
    ("yahtzee", '{"filled": "ones"}', "filled", "expected a list of box names"),
    ("yahtzee", "filled=ones open=twos", "filled", "not both"),
    ("yahtzee", "upper=-1", "upper", "must be 0 or more, got -1"),
    (
        "yahtzee",
        "filled=twos upper=3",
        "upper",
        "upper total 3 cannot be made with twos filled (possible: 0, 2, 4, 6, 8, 10)",
    ),
    ("yahtzee", "filled=ones upper=40", "upper", "with ones filled (possible: 0..5)"),
    ("yahtzee", "filled=chance upper=5", "upper", "with no upper box filled (possible: 0)"),
    ("yahtzee", "filled=ones,twos upper=16", "upper", "(possible: 0..15)"),
    ("yahtzee", '{"upper": "abc"}', "upper", "expected a whole number, got 'abc'"),
    ("yahtzee", '{"upper": true}', "upper", "expected a whole number, got true"),
    ("yahtzee", '{"upper": 6.0}', "upper", "expected a whole number, got 6.0"),
    ("yahtzee", "upper=six", "upper", "expected a whole number, got 'six'"),
    ("yahtzee", "dice=12345 rerolls=3", "rerolls_left", "must be 0..2 for rule set yahtzee"),
    ("yahtzee", '{"dice": [1, 2, 3, 4, 5], "rerolls_left": -1}', "rerolls_left", "got -1"),
    ("yahtzee", '{"rerolls_left": 1}', "rerolls_left", "rerolls left can only be 2"),
    ("yahtzee", '{"dice": null, "rerolls_left": 0}', "rerolls_left", "got 0; give the dice"),
    ("yahtzee", "rerolls=1", "rerolls_left", "turn has not started, so rerolls left can only be 2"),
    ("yahtzee", "bonus=yes", "yahtzee_bonus", "the yahtzee box is open"),
    ("yatzy", "filled=ones bonus=yes", "yahtzee_bonus", "the yatzy box is open"),
    ("yahtzee-upper", "open=ones bonus=yes", "yahtzee_bonus", "has no yahtzee box"),
    ("yahtzee", '{"yahtzee_bonus": 1}', "yahtzee_bonus", "expected true or false, got 1"),
    ("yahtzee", "bonus=maybe", "yahtzee_bonus", "expected yes or no, got 'maybe'"),
    ("yahtzee", "x x x x x x x x x x x x 62 False", "marks", "expected 13 marks"),
    ("yahtzee", "x x x x x x x x x x x x 62 False", "marks", "for rule set yahtzee, got 12"),
    ("yatzy", "- - - - - - - - - - - - - 0 False", "marks", "expected 15 marks"),
    ("yahtzee", "- - - - - - - - - - - - -", "upper", "missing"),
    ("yahtzee", "- - - - - - - - - - - - - 0", "yahtzee_bonus", "missing"),
    ("yahtzee", "- - - - - - - - - - - - - 0 maybe", "yahtzee_bonus", "expected True or False"),
    ("yahtzee", '{"upper": 5,}', "state", "malformed JSON: Expecting property name"),
    ("yahtzee", "[1, 2, 2, 2, 6]", "state", "expected a JSON object, got [1, 2, 2, 2, 6]"),
    ("yahtzee", "[1, 2", "state", "malformed JSON"),
    ("yahtzee", '{"upper": 1, "upper": 2}', "upper", "given twice"),
    ("yahtzee", "upper=1 upper=2", "upper", "upper= is given twice"),
    ("yahtzee", '{"colour": "red"}', "colour", "unknown key; the keys are filled, upper,"),
    ("yahtzee", "colour=red", "colour", "unknown key; the keys are filled, open,"),
    ("yahtzee", "start dice=12345", "state", "expected key=value, got 'start'"),
    ("yahtzee", "   ", "state", "empty"),
    ("maxi-yatzy", "dice=12345", "dice", "expected 6 dice, got 5"),
    ("maxi-yatzy", '{"dice": [1, 2, 3, 4, 5, 6, 6]}', "dice", "expected 6 dice, got 7"),
    ("maxi-yatzy", '{"dice": 6}', "dice", "expected a list of 6 faces or null, got 6"),
    ("maxi-yatzy", "dice=abcdef", "dice", "expected faces like 122266 or 1,2,2,2,6,6"),
    ("maxi-yatzy", "dice=123457", "dice", "face 7 is outside 1..6"),
    ("three-dice", "dice=1234", "dice", "expected 3 dice, got 4"),
    ("three-dice", "dice=ab", "dice", "expected faces like 122 or 1,2,2, got 'ab'"),
    ("forced-four", "filled=threes", "filled", "fills its boxes in scorecard order"),
    ("forced-four", "filled=threes", "filled", "ones is open"),
]


@pytest.mark.parametrize(("rule_set", "text", "field", "fragment"), REJECTIONS)
def test_rejections_name_the_field(rule_set: str, text: str, field: str, fragment: str) -> None:
    with pytest.raises(StateError) as caught:
        parse_state(text, RULES[rule_set])

    assert caught.value.field == field
    assert fragment in caught.value.message
    assert str(caught.value) == f"{field}: {caught.value.message}"
    assert "\n" not in str(caught.value)


def test_state_from_json_wants_an_object() -> None:
    with pytest.raises(StateError, match=r"^state: expected a JSON object, got \[1, 2\]$"):
        state_from_json([1, 2], YAHTZEE)


def test_errors_survive_pickling_whole() -> None:
    error = pickle.loads(pickle.dumps(StateError("dice", "face 7 is outside 1..6")))

    assert (error.field, error.message) == ("dice", "face 7 is outside 1..6")


# --- writing and guideposts --------------------------------------------------------------------


def test_the_short_form_leaves_out_defaults_and_lists_the_fewer_boxes() -> None:
    assert format_state(start_state(), YAHTZEE) == "start"
    state = parse_state(HASKELL_EXAMPLE, YAHTZEE)
    assert format_state(state, YAHTZEE) == "open=ones,yahtzee upper=62 dice=12226 rerolls=2"
    early = parse_state('{"filled": ["yahtzee"], "yahtzee_bonus": true}', YAHTZEE)
    assert format_state(early, YAHTZEE) == "filled=yahtzee bonus=yes"
    assert format_state(parse_state("open=none", YAHTZEE), YAHTZEE) == "open=none"


def test_the_json_form_names_every_field() -> None:
    assert state_to_json(parse_state("filled=chance,ones dice=11111", YAHTZEE), YAHTZEE) == {
        "filled": ["ones", "chance"],
        "upper": 0,
        "yahtzee_bonus": False,
        "rerolls_left": 2,
        "dice": [1, 1, 1, 1, 1],
    }


def test_guidepost_caps_the_upper_total_and_drops_levels_the_rules_lack() -> None:
    state = parse_state("open=chance upper=80 bonus=yes", YAHTZEE)

    assert guidepost(state, YAHTZEE) == (63, 1)
    assert guidepost(state, RULE_SETS["yahtzee-no-joker-no-bonus"]) == (63, 0)
    assert guidepost(parse_state("filled=ones upper=3", YAHTZEE), YAHTZEE) == (3, 0)
    yazy = RULE_SETS["yazy"]
    assert guidepost(parse_state("filled=sixes upper=30", yazy), yazy) == (0, 0)


@pytest.mark.parametrize(
    "text",
    [HASKELL_EXAMPLE, "start", "open=none upper=105", "filled=yahtzee bonus=yes dice=66666"],
)
def test_examples_round_trip(text: str) -> None:
    state = parse_state(text, YAHTZEE)

    assert parse_state(format_state(state, YAHTZEE), YAHTZEE) == state
    assert state_from_json(state_to_json(state, YAHTZEE), YAHTZEE) == state


@st.composite
def valid_states(draw: st.DrawFn) -> tuple[RuleSet, State]:
    rules = draw(st.sampled_from(list(RULE_SETS.values())))
    filled = draw(st.integers(0, rules.all_filled))
    upper = draw(st.sampled_from([int(t) for t in np.flatnonzero(rules.upper_totals(filled))]))
    box = rules.yahtzee_box
    bonus = box is not None and filled >> box & 1 == 1 and draw(st.booleans())
    rolled = filled != rules.all_filled and draw(st.booleans())
    dice = tuple(
        sorted(draw(st.lists(st.integers(1, 6), min_size=rules.dice, max_size=rules.dice)))
    )
    rerolls = draw(st.integers(0, rules.rerolls))
    state = State(filled, upper, bonus, rerolls if rolled else None, dice if rolled else None)
    return rules, state


@settings(database=None, max_examples=200)
@given(valid_states())
def test_valid_states_round_trip_through_every_form(case: tuple[RuleSet, State]) -> None:
    rules, state = case

    assert parse_state(format_state(state, rules), rules) == state
    assert parse_state(json.dumps(state_to_json(state, rules)), rules) == state
    assert state_from_json(state_to_json(state, rules), rules) == state
    assert parse_state(reference_line(state, rules), rules) == state


@pytest.mark.parametrize("rules", RULES.values(), ids=lambda rules: rules.name)
def test_a_random_state_of_any_dice_count_is_one_the_rules_accept(rules: RuleSet) -> None:
    """The tests' and the benchmarks' random states (tests/support/random_states.py) roll the
    rule set's own dice, and every one reads back through the JSON form unchanged."""
    rng = random.Random(30)
    for _ in range(100):
        filled = rng.randrange(rules.all_filled)
        while not rules.is_reachable(filled):  # forced order: only the prefixes
            filled = rng.randrange(rules.all_filled)
        state = random_state(rules, rng, filled, rolled=rng.random() < 0.9)
        assert state.dice is None or len(state.dice) == rules.dice
        assert state_from_json(state_to_json(state, rules), rules) == state
