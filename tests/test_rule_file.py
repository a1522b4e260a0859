"""Rule-set files: the format read and written back, every scoring kind on rolls a player
checks by hand, and one clear error naming the field for every bad definition."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from support.cli_support import USAGE
from support.rulebook_brute_force import value as rulebook_value

from memo_solver.cli import main as memo_cli
from memo_solver.core.engine import open_engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.kinds import MAX_POINTS, RuleFileError
from memo_solver.games.yahtzee.rules.rule_file import (
    MAX_BOXES,
    format_rule_document,
    parse_rule_set,
    parse_rule_text,
    read_rule_file,
    rule_set_document,
    rule_text,
)
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.need import NeedGame, reach
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
PACKAGED = (
    Path(__file__).parent.parent / "memo_solver" / "games" / "yahtzee" / "rules" / "rule_sets"
)


def score(rules: RuleSet, box: str, *faces: int) -> float:
    category = rules.categories[rules.category_index(box)]
    return float(category.scores[rules.universe.roll_index[tuple(sorted(faces))]])


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(RULE_SETS))
def test_every_built_in_reads_back_as_itself(name: str) -> None:
    rules = RULE_SETS[name]
    text = format_rule_document(rule_set_document(rules))
    again = parse_rule_text(text)
    assert again.fingerprint == rules.fingerprint
    assert [c.name for c in again.categories] == [c.name for c in rules.categories]
    assert [c.label for c in again.categories] == [c.label for c in rules.categories]
    assert np.array_equal(again.scores, rules.scores)
    assert dict(again.aliases) == dict(rules.aliases)
    # The packaged file is what `rules show` prints.
    assert (PACKAGED / f"{name}.json").read_text() == text


def test_the_maxi_yatzy_example_is_the_built_in() -> None:
    example = read_rule_file(EXAMPLES / "maxi-yatzy.json")
    assert example.fingerprint == RULE_SETS["maxi-yatzy"].fingerprint


def test_new_fields_enter_the_fingerprint_only_away_from_their_defaults() -> None:
    document = rule_set_document(RULE_SETS["yatzy"])
    spelled = dict(document, dice=5, order="free")
    assert parse_rule_set(spelled).fingerprint == RULE_SETS["yatzy"].fingerprint
    short = {k: v for k, v in document.items() if k not in ("dice", "order", "rerolls")}
    assert parse_rule_set(short).fingerprint == RULE_SETS["yatzy"].fingerprint
    forced = parse_rule_set(dict(document, order="forced"))
    assert forced.fingerprint != RULE_SETS["yatzy"].fingerprint


def test_saved_rolls_and_their_cap_enter_the_fingerprint_only_when_set() -> None:
    document = rule_set_document(RULE_SETS["maxi-yatzy"])
    assert "saved_rolls" not in document
    assert "max_saved" not in document
    unset = parse_rule_set(dict(document, saved_rolls=False, max_saved=None))
    assert unset.fingerprint == RULE_SETS["maxi-yatzy"].fingerprint
    saved = parse_rule_set(dict(document, saved_rolls=True))
    capped = parse_rule_set(dict(document, saved_rolls=True, max_saved=4))
    fingerprints = {RULE_SETS["maxi-yatzy"].fingerprint, saved.fingerprint, capped.fingerprint}
    assert len(fingerprints) == 3
    again = parse_rule_text(format_rule_document(rule_set_document(capped)))
    assert (again.saved_rolls, again.max_saved) == (True, 4)
    assert again.fingerprint == capped.fingerprint


def test_a_bank_grows_by_the_rerolls_of_each_turn_before_up_to_its_cap() -> None:
    """Maxi Yatzy has two rerolls a turn: after three turns a bank holds 0..6 rolls."""
    document = rule_set_document(RULE_SETS["maxi-yatzy"])
    saved = parse_rule_set(dict(document, saved_rolls=True))
    capped = parse_rule_set(dict(document, saved_rolls=True, max_saved=4))
    assert [saved.saved_levels(n) for n in (0, 1, 3, 19)] == [1, 3, 7, 39]
    assert [capped.saved_levels(n) for n in (0, 1, 3, 19)] == [1, 3, 5, 5]
    assert saved.block_shape_of(0b111) == (85, 1, 7)
    assert RULE_SETS["maxi-yatzy"].block_shape_of(0b111) == (85, 1)
    assert (saved.carried(9), capped.carried(9), RULE_SETS["yatzy"].carried(9)) == (9, 4, 0)


def test_labels_aliases_names_and_descriptions_stay_out_of_the_fingerprint() -> None:
    document: dict[str, Any] = rule_set_document(RULE_SETS["yahtzee"])
    relabelled = copy.deepcopy(document)
    relabelled["name"] = "family-yahtzee"
    relabelled["description"] = "ours"
    boxes = relabelled["boxes"]
    boxes[0]["label"] = "Aces"
    boxes[0]["aliases"] = ["Aces", "1s"]
    rules = parse_rule_set(relabelled)
    assert rules.fingerprint == RULE_SETS["yahtzee"].fingerprint
    assert rules.category_index("aces") == rules.category_index("1s") == 0
    assert rules.categories[0].label == "Aces"


# --- the vocabulary on rolls a player checks by hand ---------------------------------------------

MAXI_CASES = [
    ("threes", (3, 3, 3, 1, 2, 4), 9),
    ("one_pair", (1, 1, 2, 2, 6, 6), 12),
    ("two_pairs", (1, 1, 2, 2, 6, 6), 16),
    ("two_pairs", (4, 4, 4, 4, 5, 5), 18),
    ("two_pairs", (4, 4, 4, 4, 4, 4), 0),
    ("three_pairs", (1, 1, 2, 2, 6, 6), 18),
    ("three_pairs", (4, 4, 4, 4, 5, 5), 0),
    ("three_pairs", (3, 3, 3, 4, 4, 4), 0),
    ("three_of_a_kind", (3, 3, 3, 4, 4, 4), 12),
    ("four_of_a_kind", (2, 2, 2, 2, 2, 6), 8),
    ("five_of_a_kind", (2, 2, 2, 2, 2, 6), 10),
    ("five_of_a_kind", (2, 2, 2, 2, 6, 6), 0),
    ("small_straight", (1, 2, 3, 4, 5, 5), 15),
    ("small_straight", (2, 3, 4, 5, 6, 6), 0),
    ("large_straight", (2, 3, 4, 5, 6, 6), 20),
    ("full_straight", (1, 2, 3, 4, 5, 6), 21),
    ("full_straight", (1, 2, 3, 4, 5, 5), 0),
    ("full_house", (3, 4, 4, 6, 6, 6), 26),
    ("full_house", (3, 3, 3, 4, 4, 4), 18),
    ("full_house", (5, 5, 5, 5, 5, 5), 0),
    ("villa", (3, 3, 3, 4, 4, 4), 21),
    ("villa", (1, 1, 1, 1, 6, 6), 0),
    ("tower", (2, 2, 2, 2, 5, 5), 18),
    ("tower", (4, 4, 4, 4, 4, 4), 0),
    ("chance", (1, 2, 3, 4, 5, 6), 21),
    ("maxi_yatzy", (6, 6, 6, 6, 6, 6), 100),
    ("maxi_yatzy", (6, 6, 6, 6, 6, 5), 0),
]


@pytest.mark.parametrize(("box", "faces", "points"), MAXI_CASES)
def test_maxi_yatzy_scores_as_its_sheet_says(box: str, faces: tuple[int, ...], points: int) -> None:
    assert score(RULE_SETS["maxi-yatzy"], box, *faces) == points


def test_maxi_yatzy_sheet() -> None:
    rules = RULE_SETS["maxi-yatzy"]
    assert (rules.dice, rules.rerolls, len(rules.categories)) == (6, 2, 20)
    assert (rules.upper_threshold, rules.upper_bonus, rules.joker) == (84, 100, "none")
    assert rules.block_shape == (85, 1)
    assert rules.universe.n_rolls == 462


def test_the_house_rule_modifiers() -> None:
    fh5 = read_rule_file(EXAMPLES / "yatzy-fh5.json")
    assert score(fh5, "full_house", 4, 4, 4, 4, 4) == 20
    assert score(RULE_SETS["yatzy"], "full_house", 4, 4, 4, 4, 4) == 0
    assert score(fh5, "full_house", 2, 2, 3, 3, 3) == 13
    tp4 = read_rule_file(EXAMPLES / "yatzy-tp4.json")
    assert score(tp4, "two_pairs", 3, 3, 3, 3, 5) == 12
    assert score(RULE_SETS["yatzy"], "two_pairs", 3, 3, 3, 3, 5) == 0
    assert score(tp4, "two_pairs", 3, 3, 5, 5, 5) == 16
    assert score(tp4, "two_pairs", 6, 6, 6, 6, 6) == 24


def _one_box(box: dict[str, Any], dice: int = 5) -> RuleSet:
    return parse_rule_set({"name": "t", "dice": dice, "boxes": [{"name": "b", **box}]})


def test_fixed_points_and_sums() -> None:
    assert (
        score(_one_box({"kind": "of_a_kind", "count": 3, "points": 25}), "b", 2, 2, 2, 5, 6) == 25
    )
    assert (
        score(_one_box({"kind": "of_a_kind", "count": 3, "points": "all"}), "b", 2, 2, 2, 5, 6)
        == 17
    )
    straight = _one_box({"kind": "straight", "faces": [[1, 2, 3], [4, 5, 6]], "points": "sum"})
    assert score(straight, "b", 1, 2, 3, 4, 5) == 6
    assert score(straight, "b", 1, 2, 4, 5, 6) == 15
    assert score(straight, "b", 1, 2, 4, 5, 5) == 0
    assert score(_one_box({"kind": "all_alike", "points": 7}, dice=1), "b", 4) == 7
    assert score(_one_box({"kind": "tower", "points": 40}, dice=6), "b", 1, 1, 1, 1, 2, 2) == 40


# --- one clear error naming the field ------------------------------------------------------

BASE: dict[str, Any] = {
    "name": "house",
    "upper_bonus": 35,
    "boxes": [
        {"name": "ones", "kind": "upper", "face": 1},
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "yahtzee", "kind": "all_alike", "points": 50},
    ],
    "upper_threshold": 20,
}


def _with(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    for path, value in changes.items():
        target: Any = document
        *parents, last = path.split("__")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DROP:
            del target[int(last) if last.isdigit() else last]
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
    return document


_DROP = object()

BAD = [
    ("not an object", [1, 2], "rules", "expected a JSON object"),
    ("unknown key", _with(bonus=5), "bonus", "unknown key"),
    ("no name", _with(name=_DROP), "name", "expected a string"),
    ("name with spaces", _with(name="My Rules"), "name", "lowercase"),
    ("name like a fingerprint", _with(name="89113611c1a85da2"), "name", "16 hex digits"),
    ("0 dice", _with(dice=0), "dice", "1..6, got 0"),
    ("7 dice", _with(dice=7), "dice", "1..6, got 7"),
    ("dice as text", _with(dice="5"), "dice", "got '5'"),
    ("no boxes", _with(boxes=[]), "boxes", "1..20 boxes"),
    (
        "21 boxes",
        _with(boxes=[{"name": f"c{i}", "kind": "chance"} for i in range(21)]),
        "boxes",
        "1..20",
    ),
    ("a box twice", _with(boxes__1__name="ones"), "boxes[1].name", "taken already (box ones)"),
    ("box named quit", _with(boxes__1__name="quit"), "boxes[1].name", "play command"),
    ("box named all", _with(boxes__1__name="all"), "boxes[1].name", "play command"),
    ("box name not snake", _with(boxes__1__name="Full House"), "boxes[1].name", "snake_case"),
    ("unknown kind", _with(boxes__1__kind="sevens"), "boxes[1].kind", "unknown kind 'sevens'"),
    ("unknown box key", _with(boxes__1__count=3), "boxes[1].count", "unknown key for kind upper"),
    ("face 7", _with(boxes__1__face=7), "boxes[1].face", "1..6, got 7"),
    (
        "two upper boxes of a face",
        _with(boxes__1__face=1),
        "boxes[1].face",
        "face 1 has an upper box",
    ),
    ("negative points", _with(boxes__2__points=-5), "boxes[2].points", "0..10000, got -5"),
    ("points past the bound", _with(boxes__2__points=10_001), "boxes[2].points", "0..10000"),
    ("points of 2**63", _with(boxes__2__points=2**63), "boxes[2].points", "0..10000"),
    ("negative bonus", _with(upper_bonus=-1), "upper_bonus", "0..10000, got -1"),
    (
        "unreachable threshold",
        _with(upper_threshold=40),
        "upper_threshold",
        "at most 35 with 5 dice",
    ),
    (
        "joker without all alike",
        _with(joker="free", boxes__2=_DROP),
        "joker",
        "needs an all_alike box",
    ),
    (
        "bonus without all alike",
        _with(yahtzee_bonus=100, boxes__2=_DROP),
        "yahtzee_bonus",
        "all_alike",
    ),
    ("joker in forced order", _with(joker="forced", order="forced"), "joker", "forced"),
    ("saved rolls not a flag", _with(saved_rolls="yes"), "saved_rolls", "true or false"),
    ("saved rolls as a number", _with(saved_rolls=1), "saved_rolls", "got 1"),
    ("a negative cap", _with(saved_rolls=True, max_saved=-1), "max_saved", "0..100, got -1"),
    ("a cap of a fraction", _with(saved_rolls=True, max_saved=2.5), "max_saved", "got 2.5"),
    ("a cap without the rule", _with(max_saved=2), "max_saved", '"saved_rolls": true'),
    ("bad order", _with(order="random"), "order", "free, forced"),
    (
        "a box no roll scores",
        _with(
            boxes__2={"name": "s", "kind": "straight", "faces": [1, 2, 3, 4, 5, 6], "points": 30}
        ),
        "boxes[2]",
        "no roll of 5 dice scores",
    ),
    (
        "pairs beyond the dice",
        _with(dice=3, boxes__2={"name": "p", "kind": "pairs", "count": 2}),
        "boxes[2]",
        "no roll of 3 dice",
    ),
    (
        "of a kind beyond the dice",
        _with(boxes__2={"name": "k", "kind": "of_a_kind", "count": 6, "points": 5}),
        "boxes[2].count",
        "2..5, got 6",
    ),
    (
        "points missing",
        _with(boxes__2={"name": "fh", "kind": "full_house"}),
        "boxes[2].points",
        'expected "sum" or fixed points',
    ),
    (
        "straight faces",
        _with(boxes__2={"name": "s", "kind": "straight", "faces": [1, 1, 2], "points": 5}),
        "boxes[2].faces",
        "distinct faces",
    ),
    (
        "alias of another box",
        _with(boxes__0__aliases=["Sixes"]),
        "boxes[0].aliases",
        "taken already (box sixes)",
    ),
    (
        "alias twice",
        _with(boxes__0__aliases=["Aces"], boxes__1__aliases=["aces"]),
        "boxes[1].aliases",
        "taken already (box ones's alias)",
    ),
    ("alias like a command", _with(boxes__0__aliases=["Undo"]), "boxes[0].aliases", "play command"),
    ("aliases not a list", _with(boxes__0__aliases="Aces"), "boxes[0].aliases", "list of names"),
    (
        "joker points on an upper box",
        _with(boxes__0__joker_points=25),
        "boxes[0].joker_points",
        "upper box",
    ),
    (
        "two all alike boxes",
        _with(boxes__0={"name": "y2", "kind": "all_alike", "points": 10}),
        "boxes",
        "at most one all_alike",
    ),
    (
        "four as two pairs on one pair",
        _with(boxes__1={"name": "p", "kind": "pairs", "count": 1, "four_as_two_pairs": True}),
        "boxes[1].four_as_two_pairs",
        "two or three pairs",
    ),
]


@pytest.mark.parametrize(("case", "document", "field", "words"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_definition_names_its_field(
    case: str, document: object, field: str, words: str
) -> None:
    with pytest.raises(RuleFileError) as info:
        parse_rule_set(document)
    assert info.value.field == field, case
    assert words in info.value.message, info.value.message
    assert str(info.value).startswith(f"{field}: ")


def test_the_base_of_the_bad_cases_is_good() -> None:
    rules = parse_rule_set(BASE)
    assert [c.name for c in rules.categories] == ["ones", "sixes", "yahtzee"]


def test_text_that_is_no_json_says_so(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match="not JSON") as info:
        parse_rule_text("{name: house")
    assert info.value.field == "rules"
    missing = tmp_path / "missing.json"
    with pytest.raises(RuleFileError, match="cannot read") as unreadable:
        read_rule_file(missing)
    assert unreadable.value.field == "rules_file"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with(dice=9)))
    with pytest.raises(RuleFileError, match=r"1\.\.6, got 9 \(in .*bad\.json\)") as in_file:
        read_rule_file(bad)
    assert in_file.value.field == "dice"
    with pytest.raises(RuleFileError, match="at most 65536 bytes"):
        parse_rule_text(" " * 70_000)


def test_json_nested_deeper_than_the_parser_goes_names_rules() -> None:
    """Python's JSON parser stops with a RecursionError: a rule set is four levels deep."""
    deep = "[" * 30_000 + "]" * 30_000
    for text in (deep, f'{{"name": "deep", "boxes": {deep}}}'):
        with pytest.raises(RuleFileError, match="nested deeper than a rule set is") as info:
            parse_rule_text(text)
        assert info.value.field == "rules"
    nested: list[Any] = []
    for _ in range(100_000):  # what a request's own parser may hand on, already parsed
        nested = [nested]
    with pytest.raises(RuleFileError, match="nested deeper than a rule set is") as parsed:
        rule_text({"name": "deep", "boxes": nested})
    assert parsed.value.field == "rules"


# --- the bounds: every number a file writes, and the values at their extremes ----------------

P = MAX_POINTS
MAXIMAL: dict[str, Any] = {
    "name": "maximal",
    "dice": 6,
    "rerolls": 5,
    "upper_threshold": 6 * 21,  # the most six dice in every upper box make
    "upper_bonus": P,
    "yahtzee_bonus": P,
    "joker": "free",
    "boxes": [
        *({"name": f"upper_{face}", "kind": "upper", "face": face} for face in range(1, 7)),
        {"name": "all_alike", "kind": "all_alike", "points": P},
        {"name": "house", "kind": "full_house", "points": P, "five_alike": True, "joker_points": P},
        {
            "name": "pairs",
            "kind": "pairs",
            "count": 3,
            "four_as_two_pairs": True,
            "joker_points": P,
        },
        {"name": "villa", "kind": "villa", "points": P, "joker_points": P},
        {"name": "tower", "kind": "tower", "points": P, "joker_points": P},
        {
            "name": "straight",
            "kind": "straight",
            "faces": [1, 2, 3, 4, 5, 6],
            "points": P,
            "joker_points": P,
        },
        {"name": "chance", "kind": "chance", "joker_points": P},
        *(
            {"name": f"six_{i}", "kind": "of_a_kind", "count": 6, "points": P, "joker_points": P}
            for i in range(7)
        ),
    ],
}
"""Every number of the format at its largest: 20 boxes, six dice, five rerolls, every
fixed point, bonus and Joker point at the bound, the highest threshold six dice reach."""
MAXIMAL_REACH = 6 * 21 + 6 * P + 14 * (P + P) + P
"""The most a game of it could bank: the upper boxes at their best with a Yahtzee bonus
each, every other box's points with one, and the upper bonus."""


Where = tuple[str | int, ...]


def _integers(value: object, at: Where = ()) -> list[tuple[Where, str]]:
    """Every integer of a document: where it is, and the field an error about it names (a
    list of numbers is one field)."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _integers(item, (*at, key))]
    if isinstance(value, list):
        inner = [found for i, item in enumerate(value) for found in _integers(item, (*at, i))]
        numbers = all(isinstance(item, int) for item in value)
        return [(where, _field(at)) for where, _ in inner] if numbers else inner
    return [(at, _field(at))] if isinstance(value, int) and not isinstance(value, bool) else []


def _field(at: Where) -> str:
    """``("boxes", 3, "count")`` as the errors spell it: ``boxes[3].count``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in at).lstrip(".")


def _with_number(at: Where, number: int) -> dict[str, Any]:
    document = copy.deepcopy(MAXIMAL)
    target: Any = document
    for part in at[:-1]:
        target = target[part]
    target[at[-1]] = number
    return document


def _number(at: Where) -> int:
    found: Any = MAXIMAL
    for part in at:
        found = found[part]
    return int(found)


NUMBERS = _integers(MAXIMAL)


def test_the_maximal_rule_set_is_one_a_file_may_write() -> None:
    rules = parse_rule_set(MAXIMAL)
    assert len(rules.categories) == MAX_BOXES
    assert reach(rules, 0) == MAXIMAL_REACH == 350_126
    assert len(NUMBERS) > 40  # every box's numbers were found


@pytest.mark.parametrize(("at", "field"), NUMBERS, ids=[_field(at) for at, _ in NUMBERS])
def test_every_number_a_file_writes_has_a_bound_that_the_maximal_one_reaches(
    at: Where, field: str
) -> None:
    """One more than the maximal file writes is refused, and so is a number far past any
    bound (fixed points of 2**63 once came back as a negative value), in one line naming
    the field."""
    with pytest.raises(RuleFileError):
        parse_rule_set(_with_number(at, _number(at) + 1))
    for past in (-1, 2**63, 10**30):
        with pytest.raises(RuleFileError) as info:
            parse_rule_set(_with_number(at, past))
        assert info.value.field == field, (past, str(info.value))
        assert str(info.value).startswith(f"{field}: ")


def test_a_file_past_a_bound_is_one_line_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    house = tmp_path / "house.json"
    house.write_text(json.dumps(_with(boxes__2__points=2**63 - 2)))
    store = str(tmp_path / "memo.sqlite")
    assert memo_cli.main(["--store", store, "value", "--rules-file", str(house)]) == USAGE
    assert capsys.readouterr().err == (
        "memo-solver: error: boxes[2].points: expected fixed points 0..10000, got "
        f"9223372036854775806 (in {house})\n"
    )


NEED_CAP = 100
"""Far below one box's 10,000 points, so that most scores jump past the need table's width
(a cap of 2,000, the largest, costs 9 CPU s here and checks nothing more)."""


# 4 CPU s: the brute force plays a turn start of six dice, five rerolls; under -m full for the
# suite's growth budget (hardening 4)
@pytest.mark.full
def test_the_values_of_the_maximal_rule_set_are_exact_and_within_what_a_game_can_score() -> None:
    """The last three boxes of the maximal rule set (sixes, a Joker's 10,000 in the full
    house and in chance; the Yahtzee box filled, so every five alike banks 10,000 more):
    every turn start's value is finite, at least 0 and at most what the open boxes could
    bank; every chance of the need table is a probability, falling as the need grows; and
    the value the bonus and the Joker are still open for is the brute force's, played from
    the rule book."""
    rules = parse_rule_set(MAXIMAL)
    names = [c.name for c in rules.categories]
    still_open = [names.index(name) for name in ("upper_6", "house", "chance")]
    filled = rules.all_filled & ~sum(1 << box for box in still_open)
    masks = rules.reachable_masks(filled)

    async def solved() -> tuple[list[Block], list[Block]]:
        store = MemoryStore()
        async with (
            open_engine(YahtzeeGame(rules), store) as mean,
            open_engine(NeedGame(rules, NEED_CAP), store) as need,
        ):
            keys = [block_key(mask) for mask in masks]
            means, needs = await mean.blocks(keys), await need.blocks(keys)
            return [means[key] for key in keys], [needs[key] for key in keys]

    means, needs = anyio.run(solved)
    for mask, mean, need in zip(masks, means, needs, strict=True):
        lanes = Guideposts.reachable(rules, mask).flat
        values = mean.ravel()[lanes]
        assert np.isfinite(values).all()
        assert (values >= 0).all(), mask
        assert (values <= reach(rules, mask)).all(), mask
        chances = need.reshape(-1, need.shape[-1])[lanes]
        assert np.isfinite(chances).all()
        assert (chances >= 0).all(), mask
        assert (chances <= 1 + 1e-12).all(), mask
        assert (np.diff(chances, axis=1) <= 1e-12).all(), mask
    upper = 5 * (1 + 2 + 3 + 4 + 5)  # the bonus needs six sixes now
    exact = rulebook_value(MAXIMAL, [b for b in range(len(names)) if filled >> b & 1], upper, True)
    assert float(means[0][upper, 1]) == pytest.approx(exact, rel=1e-12)
