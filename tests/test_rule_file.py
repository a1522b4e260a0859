"""Rule-set files: the format read and written back, every scoring kind on rolls a player
checks by hand, and one clear error naming the field for every bad definition."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memo_solver.games.yahtzee.catalog import RULE_SETS
from memo_solver.games.yahtzee.kinds import RuleFileError
from memo_solver.games.yahtzee.rule_file import (
    format_rule_document,
    parse_rule_set,
    parse_rule_text,
    read_rule_file,
    rule_set_document,
    rule_text,
)
from memo_solver.games.yahtzee.rules import RuleSet

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
PACKAGED = Path(__file__).parent.parent / "memo_solver" / "games" / "yahtzee" / "rule_sets"


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
    ("negative points", _with(boxes__2__points=-5), "boxes[2].points", "0 or more, got -5"),
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
