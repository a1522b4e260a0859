"""Rule sets: score tables read like the rule book, fingerprints, names and upper totals."""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memo_solver.games.yahtzee.rules.catalog import (
    RULE_SETS,
    START_VALUES,
    UnknownRuleSetError,
    get_rule_set,
)
from memo_solver.games.yahtzee.rules.dice import dice_universe
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_text
from memo_solver.games.yahtzee.rules.rule_set import RuleSet, normalize_name
from memo_solver.games.yahtzee.solve.turn import Guideposts

BUILT_IN = (
    "yahtzee",
    "yahtzee-free-joker",
    "yahtzee-no-joker",
    "yahtzee-no-joker-no-bonus",
    "yazy",
    "yahtzee-upper",
    "yahtzee-upper-no-bonus",
    "yahtzee-lower",
    "yatzy",
    "maxi-yatzy",
    "maxi-yatzy-saved",
)
FIVE = dice_universe(5)


def score(rules: RuleSet, box: str, *faces: int) -> float:
    """What the score table of ``box`` gives the roll ``faces`` (any order)."""
    category = rules.categories[rules.category_index(box)]
    return float(category.scores[rules.universe.roll_index[tuple(sorted(faces))]])


# --- Hasbro Yahtzee ------------------------------------------------------------------------

YAHTZEE_CASES = [
    # upper boxes: count x face
    ("ones", (1, 1, 1, 4, 5), 3),
    ("ones", (2, 3, 4, 5, 6), 0),
    ("twos", (2, 2, 3, 4, 5), 4),
    ("threes", (3, 3, 3, 4, 5), 9),
    ("fours", (4, 4, 4, 4, 4), 20),
    ("fives", (1, 5, 2, 5, 3), 10),
    ("sixes", (6, 6, 6, 6, 1), 24),
    ("sixes", (1, 2, 3, 4, 5), 0),
    # three / four of a kind: sum of all dice
    ("three_of_a_kind", (3, 3, 3, 4, 5), 18),
    ("three_of_a_kind", (6, 6, 6, 6, 6), 30),
    ("three_of_a_kind", (3, 3, 4, 4, 5), 0),
    ("four_of_a_kind", (2, 2, 2, 2, 5), 13),
    ("four_of_a_kind", (5, 5, 5, 5, 5), 25),
    ("four_of_a_kind", (3, 3, 3, 4, 5), 0),
    # full house: 25 for three and two of different faces, not five of a kind
    ("full_house", (2, 2, 3, 3, 3), 25),
    ("full_house", (6, 6, 6, 1, 1), 25),
    ("full_house", (4, 4, 4, 4, 4), 0),
    ("full_house", (4, 4, 4, 4, 1), 0),
    ("full_house", (1, 1, 2, 2, 3), 0),
    # small straight: four in a row
    ("small_straight", (1, 2, 3, 4, 6), 30),
    ("small_straight", (1, 1, 2, 3, 4), 30),
    ("small_straight", (3, 4, 5, 6, 6), 30),
    ("small_straight", (1, 2, 3, 4, 5), 30),
    ("small_straight", (1, 2, 3, 5, 6), 0),
    # large straight: five in a row
    ("large_straight", (2, 3, 4, 5, 6), 40),
    ("large_straight", (1, 2, 3, 4, 5), 40),
    ("large_straight", (1, 2, 3, 4, 6), 0),
    # yahtzee and chance
    ("yahtzee", (5, 5, 5, 5, 5), 50),
    ("yahtzee", (5, 5, 5, 5, 6), 0),
    ("chance", (1, 2, 3, 4, 6), 16),
    ("chance", (6, 6, 6, 6, 6), 30),
]


@pytest.mark.parametrize(("box", "faces", "points"), YAHTZEE_CASES)
def test_yahtzee_score_tables(box: str, faces: tuple[int, ...], points: int) -> None:
    for name in ("yahtzee", "yahtzee-free-joker", "yahtzee-no-joker"):
        assert score(get_rule_set(name), box, *faces) == points


def test_yahtzee_boxes_and_settings() -> None:
    rules = get_rule_set("yahtzee")
    assert [c.label for c in rules.categories] == [
        "Ones",
        "Twos",
        "Threes",
        "Fours",
        "Fives",
        "Sixes",
        "Three of a Kind",
        "Four of a Kind",
        "Full House",
        "Small Straight",
        "Large Straight",
        "Yahtzee",
        "Chance",
    ]
    assert rules.upper_faces.tolist() == [1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0]
    assert [c.joker_points for c in rules.categories][8:11] == [25, 30, 40]
    assert rules.yahtzee_box == 11
    assert (rules.rerolls, rules.upper_threshold, rules.upper_bonus) == (2, 63, 35)
    assert (rules.yahtzee_bonus, rules.joker) == (100, "forced")
    assert rules.block_shape == (64, 2)
    assert rules.all_filled == (1 << 13) - 1
    assert get_rule_set("yahtzee-free-joker").joker == "free"
    assert get_rule_set("yahtzee-no-joker").joker == "none"
    no_bonus = get_rule_set("yahtzee-no-joker-no-bonus")
    assert (no_bonus.yahtzee_bonus, no_bonus.block_shape) == (0, (64, 1))


# --- independent brute-force scorers over all 252 rolls -------------------------------------


def _naive_yahtzee(box: str, roll: tuple[int, ...]) -> int:
    counts = Counter(roll)
    faces = set(roll)
    upper = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    if box in upper:
        return upper[box] * counts[upper[box]]
    if box == "three_of_a_kind":
        return sum(roll) if max(counts.values()) >= 3 else 0
    if box == "four_of_a_kind":
        return sum(roll) if max(counts.values()) >= 4 else 0
    if box == "full_house":
        return 25 if sorted(counts.values()) == [2, 3] else 0
    if box == "small_straight":
        runs = ({1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6})
        return 30 if any(run <= faces for run in runs) else 0
    if box == "large_straight":
        return 40 if faces in ({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}) else 0
    if box == "yahtzee":
        return 50 if len(faces) == 1 else 0
    assert box == "chance"
    return sum(roll)


def _naive_yatzy(box: str, roll: tuple[int, ...]) -> int:
    counts = Counter(roll)
    if box in ("ones", "twos", "threes", "fours", "fives", "sixes", "chance"):
        return _naive_yahtzee(box, roll)
    pairs = sorted((f for f, n in counts.items() if n >= 2), reverse=True)
    if box == "one_pair":
        return 2 * pairs[0] if pairs else 0
    if box == "two_pairs":
        return 2 * (pairs[0] + pairs[1]) if len(pairs) >= 2 else 0
    if box in ("three_of_a_kind", "four_of_a_kind"):
        n = 3 if box == "three_of_a_kind" else 4
        best = [f for f, c in counts.items() if c >= n]
        return n * max(best) if best else 0
    if box == "small_straight":
        return 15 if sorted(roll) == [1, 2, 3, 4, 5] else 0
    if box == "large_straight":
        return 20 if sorted(roll) == [2, 3, 4, 5, 6] else 0
    if box == "full_house":
        return sum(roll) if sorted(counts.values()) == [2, 3] else 0
    assert box == "yatzy"
    return 50 if len(counts) == 1 else 0


def _naive_yazy(box: str, roll: tuple[int, ...]) -> int:
    if box == "straight":
        return _naive_yahtzee("large_straight", roll)
    if box == "yazy":
        return _naive_yahtzee("yahtzee", roll)
    return _naive_yahtzee(box, roll)


@pytest.mark.parametrize(
    ("name", "naive"),
    [
        ("yahtzee", _naive_yahtzee),
        ("yahtzee-lower", _naive_yahtzee),
        ("yahtzee-upper", _naive_yahtzee),
        ("yatzy", _naive_yatzy),
        ("yazy", _naive_yazy),
    ],
)
def test_every_table_matches_a_naive_scorer(
    name: str, naive: Callable[[str, tuple[int, ...]], int]
) -> None:
    rules = get_rule_set(name)
    for category in rules.categories:
        assert category.scores.shape == (FIVE.n_rolls,)
        assert category.scores.dtype == np.float64
        expected = [naive(category.name, roll) for roll in FIVE.rolls]
        assert category.scores.tolist() == expected, category.name
    assert rules.scores.shape == (len(rules.categories), FIVE.n_rolls)


# --- Scandinavian Yatzy ---------------------------------------------------------------------

YATZY_CASES = [
    ("one_pair", (3, 3, 5, 5, 6), 10),
    ("one_pair", (6, 6, 6, 5, 5), 12),
    ("one_pair", (4, 4, 4, 4, 4), 8),
    ("one_pair", (1, 2, 3, 4, 6), 0),
    ("two_pairs", (3, 3, 3, 3, 5), 0),
    ("two_pairs", (2, 2, 5, 5, 6), 14),
    ("two_pairs", (3, 3, 3, 5, 5), 16),
    ("two_pairs", (6, 6, 6, 6, 6), 0),
    ("two_pairs", (1, 2, 3, 4, 4), 0),
    ("three_of_a_kind", (3, 3, 3, 4, 5), 9),
    ("three_of_a_kind", (2, 2, 2, 2, 6), 6),
    ("three_of_a_kind", (3, 3, 4, 4, 5), 0),
    ("four_of_a_kind", (2, 2, 2, 2, 5), 8),
    ("four_of_a_kind", (5, 5, 5, 5, 5), 20),
    ("four_of_a_kind", (2, 2, 2, 5, 5), 0),
    ("small_straight", (1, 2, 3, 4, 5), 15),
    ("small_straight", (1, 2, 3, 4, 6), 0),
    ("small_straight", (2, 3, 4, 5, 6), 0),
    ("large_straight", (2, 3, 4, 5, 6), 20),
    ("large_straight", (1, 2, 3, 4, 5), 0),
    ("full_house", (2, 2, 3, 3, 3), 13),
    ("full_house", (6, 6, 6, 5, 5), 28),
    ("full_house", (4, 4, 4, 4, 4), 0),
    ("chance", (1, 2, 3, 4, 6), 16),
    ("yatzy", (1, 1, 1, 1, 1), 50),
    ("yatzy", (1, 1, 1, 1, 2), 0),
    ("sixes", (6, 6, 1, 2, 3), 12),
]


@pytest.mark.parametrize(("box", "faces", "points"), YATZY_CASES)
def test_yatzy_score_tables(box: str, faces: tuple[int, ...], points: int) -> None:
    assert score(get_rule_set("yatzy"), box, *faces) == points


def test_yatzy_boxes_and_settings() -> None:
    rules = get_rule_set("yatzy")
    assert [c.name for c in rules.categories] == [
        "ones",
        "twos",
        "threes",
        "fours",
        "fives",
        "sixes",
        "one_pair",
        "two_pairs",
        "three_of_a_kind",
        "four_of_a_kind",
        "small_straight",
        "large_straight",
        "full_house",
        "chance",
        "yatzy",
    ]
    assert (rules.upper_threshold, rules.upper_bonus, rules.yahtzee_bonus) == (63, 50, 0)
    assert (rules.rerolls, rules.joker, rules.block_shape) == (2, "none", (64, 1))
    assert rules.yahtzee_box == rules.category_index("yatzy") == 14


# --- Yazy -----------------------------------------------------------------------------------

YAZY_CASES = [
    ("threes", (3, 3, 1, 2, 4), 6),
    ("three_of_a_kind", (3, 3, 3, 4, 5), 18),
    ("four_of_a_kind", (6, 6, 6, 6, 2), 26),
    ("full_house", (2, 2, 3, 3, 3), 25),
    ("full_house", (2, 2, 2, 2, 2), 0),
    ("straight", (1, 2, 3, 4, 5), 40),
    ("straight", (2, 3, 4, 5, 6), 40),
    ("straight", (1, 2, 3, 4, 6), 0),
    ("yazy", (6, 6, 6, 6, 6), 50),
    ("yazy", (6, 6, 6, 6, 5), 0),
]


@pytest.mark.parametrize(("box", "faces", "points"), YAZY_CASES)
def test_yazy_score_tables(box: str, faces: tuple[int, ...], points: int) -> None:
    assert score(get_rule_set("yazy"), box, *faces) == points


def test_yazy_boxes_and_settings() -> None:
    rules = get_rule_set("yazy")
    assert len(rules.categories) == 11
    names = [c.name for c in rules.categories]
    assert "chance" not in names
    assert "small_straight" not in names
    assert (rules.upper_bonus, rules.yahtzee_bonus, rules.joker) == (0, 0, "none")
    assert rules.rerolls == 2
    assert rules.block_shape == (1, 1)


# --- catalogue, fingerprints, names ---------------------------------------------------------


def test_built_in_catalogue() -> None:
    assert tuple(RULE_SETS) == BUILT_IN
    for name, rules in RULE_SETS.items():
        assert rules.name == name
        assert get_rule_set(name) is rules
        assert rules.start_value is None or rules.start_value > 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("yahtzee", 254.5877287345),
        ("yahtzee-free-joker", 254.5896094820),
        ("yahtzee-no-joker", 253.9702411898),
        ("yahtzee-no-joker-no-bonus", 245.8707745141),
        ("yazy", 165.7573187094),
        ("yahtzee-upper", 71.9515297337),
        ("yahtzee-upper-no-bonus", 59.1632004354),
        ("yahtzee-lower", 139.9712924424),
        ("yatzy", 248.4399893779),
    ],
)
def test_start_values_match_pins(name: str, value: float) -> None:
    assert get_rule_set(name).start_value == pytest.approx(value, abs=1e-9)


def test_fingerprints_are_distinct_16_hex() -> None:
    prints = {name: rules.fingerprint for name, rules in RULE_SETS.items()}
    for fingerprint in prints.values():
        assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert len(set(prints.values())) == len(prints)


def test_fingerprints_are_stable_and_content_based() -> None:
    rules = get_rule_set("yahtzee")
    first = rules.fingerprint
    assert rules.fingerprint == first
    # A fresh object with the same content (a deep copy of every score table) agrees...
    copy = dataclasses.replace(
        rules,
        categories=tuple(dataclasses.replace(c, scores=c.scores.copy()) for c in rules.categories),
    )
    assert copy is not rules
    assert copy.fingerprint == first
    # ...even under another name, since the name is not part of the content...
    assert dataclasses.replace(rules, name="renamed", description="x").fingerprint == first
    # ...while any change of the rules changes it.
    assert dataclasses.replace(rules, upper_bonus=50).fingerprint != first
    assert dataclasses.replace(rules, rerolls=3).fingerprint != first
    tweaked = list(rules.categories)
    scores = tweaked[12].scores.copy()
    scores[0] += 1.0
    tweaked[12] = dataclasses.replace(tweaked[12], scores=scores)
    assert dataclasses.replace(rules, categories=tuple(tweaked)).fingerprint != first


FINGERPRINTS = {
    # As main computed them before rule sets had aliases: stored blocks are keyed by these.
    "yahtzee": "89113611c1a85da2",
    "yahtzee-free-joker": "3368b410a97145e9",
    "yahtzee-no-joker": "1fb08d3fd9e9cda7",
    "yahtzee-no-joker-no-bonus": "d0cd8029c97f4aa4",
    "yazy": "2164c4ff5d8f3733",
    "yahtzee-upper": "9069ff0e71790290",
    "yahtzee-upper-no-bonus": "514c3ef9a41b97ca",
    "yahtzee-lower": "f13d8e46c0fda394",
    "yatzy": "d9197e38238c9a11",
    "maxi-yatzy": "9b299cc6ba782f20",
    "maxi-yatzy-saved": "ac98e23c8e093bad",
}


def test_every_built_in_keeps_its_fingerprint() -> None:
    assert {name: rules.fingerprint for name, rules in RULE_SETS.items()} == FINGERPRINTS


def test_aliases_are_labels_outside_the_fingerprint() -> None:
    yazy = get_rule_set("yazy")
    assert yazy.aliases
    assert dataclasses.replace(yazy, aliases={}).fingerprint == yazy.fingerprint
    other = dataclasses.replace(yazy, aliases={"Big Straight": "straight"})
    assert other.fingerprint == yazy.fingerprint


def test_unknown_rule_set_lists_the_built_in_ones() -> None:
    with pytest.raises(UnknownRuleSetError) as info:
        get_rule_set("kniffel")
    message = str(info.value)
    assert "kniffel" in message
    for name in BUILT_IN:
        assert name in message
    assert isinstance(info.value, ValueError)


def test_rule_set_names_are_case_insensitive() -> None:
    assert get_rule_set("Yahtzee") is RULE_SETS["yahtzee"]
    assert get_rule_set(" YATZY ") is RULE_SETS["yatzy"]


@pytest.mark.parametrize(
    "spelling",
    [
        "three_of_a_kind",
        "Three of a Kind",
        "three-of-a-kind",
        "THREE OF A KIND",
        " Three-Of_a kind ",
    ],
)
def test_category_index_normalizes_names(spelling: str) -> None:
    assert get_rule_set("yahtzee").category_index(spelling) == 6
    assert get_rule_set("yatzy").category_index(spelling) == 8


def test_category_index_rejects_unknown_box() -> None:
    with pytest.raises(KeyError, match="one_pair"):
        get_rule_set("yatzy").category_index("bonus")
    with pytest.raises(KeyError, match="chance"):
        get_rule_set("yahtzee").category_index("one pair")


YAZY_POST_NAMES = [
    ("Count 1s", "ones"),
    ("Count 2s", "twos"),
    ("Count 3s", "threes"),
    ("Count 4s", "fours"),
    ("Count 5s", "fives"),
    ("Count 6s", "sixes"),
    ("3 of a kind", "three_of_a_kind"),
    ("4 of a kind", "four_of_a_kind"),
    ("3 + 2", "full_house"),
    ("Sequence of 5", "straight"),
    ("5 of a kind", "yazy"),
]


@pytest.mark.parametrize(("alias", "box"), YAZY_POST_NAMES)
def test_yazy_takes_the_box_names_of_its_post(alias: str, box: str) -> None:
    rules = get_rule_set("yazy")
    for spelling in (alias, alias.upper(), normalize_name(alias), alias.replace(" ", "-")):
        assert rules.categories[rules.category_index(spelling)].name == box


def test_aliases_belong_to_their_rule_set() -> None:
    with pytest.raises(KeyError, match="unknown box 'Count 1s' for rule set yahtzee"):
        get_rule_set("yahtzee").category_index("Count 1s")


def test_an_unknown_box_lists_the_names_and_the_aliases() -> None:
    with pytest.raises(KeyError) as info:
        get_rule_set("yazy").category_index("chance")
    message = str(info.value.args[0])
    assert "boxes: ones, twos, threes, fours, fives, sixes, three_of_a_kind" in message
    assert "; or their aliases Count 1s, Count 2s," in message
    assert message.endswith("Sequence of 5, 5 of a kind)")
    with pytest.raises(KeyError) as plain:
        get_rule_set("yahtzee").category_index("nope")
    assert "aliases" not in str(plain.value)


def test_normalize_name() -> None:
    assert normalize_name("  Large  Straight ") == "large_straight"
    assert normalize_name("Full-House") == "full_house"


def test_labels_round_trip_through_category_index() -> None:
    for rules in RULE_SETS.values():
        for i, category in enumerate(rules.categories):
            assert rules.category_index(category.label) == i
            assert rules.category_index(category.name) == i


def test_upper_totals_examples() -> None:
    rules = get_rule_set("yahtzee")
    nothing = rules.upper_totals(0)
    assert nothing.shape == (106,)
    assert np.flatnonzero(nothing).tolist() == [0]
    twos = 1 << rules.category_index("twos")
    assert np.flatnonzero(rules.upper_totals(twos)).tolist() == [0, 2, 4, 6, 8, 10]
    # Lower boxes do not add upper totals.
    lower = 1 << rules.category_index("chance") | 1 << rules.category_index("yahtzee")
    assert np.flatnonzero(rules.upper_totals(twos | lower)).tolist() == [0, 2, 4, 6, 8, 10]
    ones_twos = twos | 1 << rules.category_index("ones")
    assert np.flatnonzero(rules.upper_totals(ones_twos)).tolist() == list(range(16))
    # With every upper box filled, each total 0..105 is possible.
    assert rules.upper_totals(rules.all_filled).all()
    assert rules.reachable_upper(0).tolist() == [0]
    assert rules.reachable_upper(rules.all_filled).tolist() == list(range(64))


def test_upper_totals_brute_force() -> None:
    rules = get_rule_set("yahtzee")
    threes_fives = 1 << 2 | 1 << 4
    expected = sorted({3 * a + 5 * b for a in range(6) for b in range(6)})
    assert np.flatnonzero(rules.upper_totals(threes_fives)).tolist() == expected
    assert rules.reachable_upper(threes_fives).tolist() == expected  # all below 63


def test_no_upper_bonus_means_one_upper_level() -> None:
    for name in ("yazy", "yahtzee-upper-no-bonus", "yahtzee-lower"):
        rules = get_rule_set(name)
        assert rules.n_upper_levels == 1
        assert rules.reachable_upper(rules.all_filled).tolist() == [0]


# --- the points a box can hold ----------------------------------------------------------------


def test_possible_points_read_like_the_rule_book() -> None:
    rules = get_rule_set("yahtzee")
    possible = dict(zip((c.name for c in rules.categories), rules.possible_points, strict=True))
    assert possible["twos"] == (0, 2, 4, 6, 8, 10)
    assert possible["three_of_a_kind"] == (0, *range(5, 31))
    assert possible["full_house"] == (0, 25)
    assert possible["large_straight"] == (0, 40)
    assert possible["yahtzee"] == (0, 50)
    assert possible["chance"] == tuple(range(5, 31))  # every roll scores its sum: never 0
    yatzy = get_rule_set("yatzy")
    assert yatzy.possible_points[yatzy.category_index("one_pair")] == (0, 2, 4, 6, 8, 10, 12)


def _points_a_game_can_score(rules: RuleSet) -> list[set[int]]:
    """Per box, what :func:`memo_solver.games.yahtzee.solve.scoring.points` lets some roll score in
    it on some scorecard: it depends only on which upper boxes and Yahtzee box are filled."""
    from memo_solver.games.yahtzee.solve.scoring import points

    deciding = [i for i, c in enumerate(rules.categories) if c.upper_face or c.is_yahtzee]
    scored: list[set[int]] = [set() for _ in rules.categories]
    for subset in range(1 << len(deciding)):
        filled = sum(1 << box for k, box in enumerate(deciding) if subset >> k & 1)
        boxes = rules.open_boxes(filled)
        for box, row in zip(boxes, points(rules, filled, boxes), strict=True):
            scored[box] |= {int(p) for p in row[np.isfinite(row)]}
    return scored


@pytest.mark.parametrize("name", BUILT_IN)
def test_possible_points_are_what_a_game_can_score(name: str) -> None:
    rules = get_rule_set(name)
    assert [set(p) for p in rules.possible_points] == _points_a_game_can_score(rules)
    assert all(list(p) == sorted(p) for p in rules.possible_points)


@pytest.mark.parametrize("joker", ["forced", "free", "none"])
def test_possible_points_hold_the_jokers_fixed_points(joker: str) -> None:
    """A box whose table never gives its Joker points still holds them after a Joker
    Yahtzee, under a Joker rule only (the built-in tables all give them anyway)."""
    yahtzee = get_rule_set("yahtzee")
    only_joker = dataclasses.replace(
        yahtzee.categories[yahtzee.category_index("full_house")],
        name="joker_only",
        scores=np.zeros(FIVE.n_rolls),
    )
    rules = dataclasses.replace(
        yahtzee,
        categories=(*yahtzee.categories, only_joker),
        joker=joker,  # type: ignore[arg-type]
    )
    expected = (0,) if joker == "none" else (0, 25)
    assert rules.possible_points[-1] == expected
    assert [set(p) for p in rules.possible_points] == _points_a_game_can_score(rules)


# --- sizes with saved rolls -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("yatzy", {}),
        ("yatzy", {"max_saved": 5}),
        ("yatzy", {"order": "forced"}),
        ("yahtzee", {}),
        ("yahtzee", {"saved_rolls": False}),
    ],
    ids=["yatzy", "capped", "forced", "yahtzee", "without-the-rule"],
)
def test_a_cone_counts_every_block_at_its_own_banks(name: str, changes: dict[str, Any]) -> None:
    """With saved rolls a block of L filled boxes holds ``saved_levels(L)`` banks, more as
    the game goes on: a cold cone counts each block a game reaches at its own shape, not
    at the shape of the block it starts from (without the rule every block is alike)."""
    rules = dataclasses.replace(RULE_SETS[name], **{"saved_rolls": True, **changes})
    sample = rules.reachable_masks(0)[:: max(1, rules.block_count // 6)]
    for filled in sample:
        blocks = rules.reachable_masks(filled)
        assert rules.cone_turn_starts(filled) == sum(
            math.prod(rules.block_shape_of(mask)) for mask in blocks
        ), filled


def test_maxi_yatzy_with_saved_rolls_has_1_269_658_211_reachable_turn_starts() -> None:
    """The issue's count: per block, the upper totals some game reaches (the solver's
    ``Guideposts.reachable``; Maxi Yatzy has no bonus flag) times the banks 0..2L of L boxes
    filled, over every block where a turn starts (a box open: the end of the game holds
    none). Blocks with the same upper boxes filled and as many boxes filled hold alike, so
    the million blocks are 64 upper subsets times 21 counts, each a binomial of blocks. The
    size estimate is the bound over whole block shapes (every upper level of 0..84)."""
    rules = dataclasses.replace(RULE_SETS["maxi-yatzy"], saved_rolls=True)
    assert rules.n_bonus_levels == 1
    boxes = len(rules.categories)
    uppers = [box for box, c in enumerate(rules.categories) if c.upper_face]
    subsets = np.arange(1 << len(uppers))
    masks = np.zeros_like(subsets)
    for bit, box in enumerate(uppers):
        masks |= (subsets >> bit & 1) << box
    levels = np.array([Guideposts.reachable(rules, int(mask)).upper.size for mask in masks])
    others = boxes - len(uppers)
    starts = range(boxes)  # boxes filled where a turn starts: one at least is open
    binomial = np.array(
        [
            [math.comb(others, n - k) if 0 <= n - k <= others else 0 for n in starts]
            for k in range(len(uppers) + 1)
        ]
    )
    blocks = binomial[np.bitwise_count(subsets)]  # per upper subset and boxes filled
    banks = np.array([rules.saved_levels(n) for n in starts])
    reachable = int((levels[:, None] * blocks * banks[None, :]).sum())
    assert reachable == 1_269_658_211
    # Every block at its whole shape: 85 levels times sum(C(20, L) (2L + 1)) = 21 * 2**20.
    assert rules.cone_turn_starts(0) == 85 * 21 * (1 << 20) > reachable


def test_a_built_in_is_read_when_first_named_and_then_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command on one rule set reads its one file at its start, not all eleven; each name
    stays one rule set for the process (callers compare them by identity)."""
    read: list[str] = []

    def counted(text: str, **options: Any) -> RuleSet:
        rules = parse_rule_text(text, **options)
        read.append(rules.name)
        return rules

    monkeypatch.setattr("memo_solver.games.yahtzee.rules.catalog.parse_rule_text", counted)
    built_ins = type(RULE_SETS)()
    assert list(built_ins) == list(START_VALUES)
    assert "yatzy" in built_ins
    assert "house" not in built_ins
    assert read == []
    first = built_ins["yatzy"]
    assert built_ins["yatzy"] is first
    assert read == ["yatzy"]
