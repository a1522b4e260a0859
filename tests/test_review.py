"""Reviews of played games: known mistakes cost what advice says, scores add up, bad games fail.

The example games in tests/data were played by the optimal strategy except where a mistake
was put in on purpose, so a review must find exactly those mistakes. Their costs are
checked against :func:`memo_solver.games.yahtzee.advice.mean_advice.advise` on states written out by
hand, and the
final scores against a scorer written here from the printed rules (Joker and bonuses
included), not the solver's tables.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from support.api_support import api_client
from support.dice_variants import FORCED, SIX_DICE
from support.portal_engines import PortalEngines

from memo_solver.games.yahtzee.advice.mean_advice import Advice, advise
from memo_solver.games.yahtzee.advice.review import GameError, Review, read_game, review_game
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import parse_state

DATA = Path(__file__).parent / "data"
CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")},
    "OPENBLAS_NUM_THREADS": "1",
}
TOL = 1e-9
LOWER = RULE_SETS["yahtzee-lower"]
UPPER = RULE_SETS["yahtzee-upper"]
YAHTZEE = RULE_SETS["yahtzee"]


def load(name: str) -> dict[str, Any]:
    game: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return game


class Solver(PortalEngines):
    """Engines on memory stores, one per rule set, in one event loop for the module."""

    def review(self, rules: RuleSet, game: object) -> Review:
        return self.call(review_game, rules, game)

    def advise(self, rules: RuleSet, text: str) -> Advice:
        return self.call(advise, rules, parse_state(text, rules))


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        yield Solver(portal, stack)


# --- an independent scorer -------------------------------------------------------------------


def hand_score(rules: RuleSet, game: dict[str, Any]) -> int:
    """The final score from the printed rules: what a player adds up on paper."""
    upper_faces = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
    total = upper = 0
    fifty = False
    filled: set[str] = set()
    for turn in game["turns"]:
        dice = turn["rolls"][-1]
        box = turn["box"]
        counts = sorted(Counter(dice).values())
        faces = set(dice)
        five = counts == [5]
        joker = five and "yahtzee" in filled and rules.joker != "none"
        if box in upper_faces:
            points = dice.count(upper_faces[box]) * upper_faces[box]
            upper += points
        elif box == "three_of_a_kind":
            points = sum(dice) if counts[-1] >= 3 else 0
        elif box == "four_of_a_kind":
            points = sum(dice) if counts[-1] >= 4 else 0
        elif box == "full_house":
            points = 25 if counts == [2, 3] or joker else 0
        elif box == "small_straight":
            runs = ({1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6})
            points = 30 if any(r <= faces for r in runs) or joker else 0
        elif box == "large_straight":
            points = 40 if faces in ({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}) or joker else 0
        elif box == "yahtzee":
            points = 50 if five else 0
        else:
            assert box == "chance"
            points = sum(dice)
        if five and fifty and rules.yahtzee_bonus:
            total += rules.yahtzee_bonus
        fifty = fifty or (box == "yahtzee" and points == 50)
        filled.add(box)
        total += points
    if rules.upper_bonus and upper >= rules.upper_threshold:
        total += rules.upper_bonus
    return total


# --- known mistakes ----------------------------------------------------------------------------


def test_a_game_with_two_known_mistakes_reports_exactly_their_losses(solver: Solver) -> None:
    game = load("review_lower_mistakes.json")
    review = solver.review(LOWER, game)

    # Turn 1: 1 2 3 4 5 on the first roll, a large straight, scored as Chance.
    straight = solver.advise(LOWER, "dice=12345 rerolls=2")
    as_chance = next(a for a in straight.actions if a.category == "chance")
    # Turn 2: a Yahtzee on the first roll, and the player keeps three sixes and rerolls.
    yahtzee = solver.advise(LOWER, "filled=chance dice=66666 rerolls=2")
    rerolled = next(a for a in yahtzee.actions if a.kind == "keep" and a.keep == (6, 6, 6))
    assert straight.actions[0].words() == "score 40 in Large Straight"
    assert yahtzee.actions[0].words() == "score 50 in Yahtzee"

    mistakes = [d for d in review.decisions if d.loss > TOL]
    assert [(d.turn, d.step) for d in mistakes] == [(1, "box"), (2, "keep 1")]
    assert mistakes[0].loss == pytest.approx(straight.value - as_chance.value, abs=TOL)
    assert mistakes[1].loss == pytest.approx(yahtzee.value - rerolled.value, abs=TOL)
    assert as_chance.loss > 20
    assert rerolled.loss > 20
    assert review.total_loss == pytest.approx(as_chance.loss + rerolled.loss, abs=TOL)
    worst = review.to_json()["worst_mistakes"]
    assert [w["turn"] for w in worst] == [1, 2]  # the straight costs more
    assert "score 15 in Chance" in worst[0]["words"]
    assert "score 40 in Large Straight" in worst[0]["words"]
    assert "keep 6 6 6 and reroll 2 dice" in worst[1]["words"]


def test_every_decision_is_reported_with_the_choice_and_the_best(solver: Solver) -> None:
    game = load("review_lower_mistakes.json")
    review = solver.review(LOWER, game).to_json()

    expected_steps = []
    for number, turn in enumerate(game["turns"], start=1):
        expected_steps += [(number, f"keep {i}") for i in range(1, len(turn["rolls"]))]
        expected_steps.append((number, "box"))
    assert [(d["turn"], d["step"]) for d in review["decisions"]] == expected_steps
    for decision in review["decisions"]:
        assert decision["loss"] == decision["chosen"]["loss"]
        assert decision["best"]["loss"] == 0
        assert decision["chosen"]["value"] + decision["loss"] == pytest.approx(
            decision["best"]["value"], abs=TOL
        )
    turn2 = [d for d in review["decisions"] if d["turn"] == 2]
    assert turn2[0]["chosen"]["words"] == "keep 6 6 6 and reroll 2 dice"
    assert turn2[0]["state"] == "filled=chance dice=66666 rerolls=2"
    assert turn2[1]["dice"] == [2, 3, 6, 6, 6]  # sorted, as states are
    assert turn2[1]["rerolls_left"] == 1


@pytest.mark.parametrize(
    ("rules", "name"),
    [(LOWER, "review_lower_mistakes.json"), (UPPER, "review_upper.json")],
    ids=["lower", "upper"],
)
def test_expected_plus_skill_plus_luck_is_the_final_score(
    solver: Solver, rules: RuleSet, name: str
) -> None:
    game = load(name)
    review = solver.review(rules, game)

    assert review.complete
    assert review.remaining_value == 0
    assert review.banked == hand_score(rules, game)
    assert review.expected_score == pytest.approx(rules.start_value, abs=TOL)
    assert review.skill == -review.total_loss
    assert review.expected_score + review.skill + review.luck == pytest.approx(
        review.banked, abs=1e-9
    )
    out = review.to_json()
    assert out["final_score"] == review.banked
    assert out["luck"] == pytest.approx(review.banked - review.expected_score + review.total_loss)


def test_the_upper_bonus_is_banked_by_the_box_that_reaches_63(solver: Solver) -> None:
    review = solver.review(UPPER, load("review_upper.json"))

    assert [s.bonus for s in review.scored] == [0, 0, 0, 0, 0, 35]
    assert review.banked == 63 + 35


def test_a_game_stopped_early_counts_the_expected_rest(solver: Solver) -> None:
    game = load("review_lower_mistakes.json")
    game["turns"] = game["turns"][:2]
    review = solver.review(LOWER, game)

    rest = solver.advise(LOWER, "filled=chance,three_of_a_kind")
    assert not review.complete
    assert review.remaining_value == pytest.approx(rest.value, abs=TOL)
    assert review.banked == 15 + 23
    assert review.final_score == pytest.approx(38 + rest.value)
    assert review.expected_score + review.skill + review.luck == pytest.approx(review.final_score)


@pytest.mark.slow
def test_a_whole_yahtzee_game_with_two_bonus_yahtzees_and_jokers(solver: Solver) -> None:
    """The full game (about 10 s to solve): 50, then two Joker Yahtzees worth +100 each."""
    game = load("review_yahtzee.json")
    review = solver.review(YAHTZEE, game)

    boxes = {s.box: (s.points, s.bonus) for s in review.scored}
    assert boxes["yahtzee"] == (50, 0)
    assert boxes["sixes"] == (30, 100)  # 6 6 6 6 6: the Joker forces Sixes while it is open
    assert boxes["four_of_a_kind"] == (20, 100)  # 4 4 4 4 4 with Fours filled: any lower box
    assert sum(bonus for _, bonus in boxes.values()) == 235  # the upper bonus came too
    assert review.banked == hand_score(YAHTZEE, game) == 517
    assert review.total_loss < TOL  # played by the optimal strategy throughout
    assert review.expected_score == pytest.approx(YAHTZEE.start_value, abs=TOL)
    assert review.luck == pytest.approx(517 - review.expected_score + review.total_loss)


# --- games that break the rules ----------------------------------------------------------------


def _lower_game() -> dict[str, Any]:
    return load("review_lower_mistakes.json")


def _edit(change: Any) -> dict[str, Any]:
    game = _lower_game()
    change(game["turns"])
    return game


def _deep(depth: int) -> list[Any]:
    nested: list[Any] = []
    for _ in range(depth):
        nested = [nested]
    return nested


BAD_GAMES = {
    "box filled twice": (
        _edit(lambda t: t[2].update(box="chance")),
        "turn 3, box: chance is already filled (turn 1)",
    ),
    "unknown box": (
        _edit(lambda t: t[0].update(box="sixes")),
        "turn 1, box: unknown box 'sixes' for rule set yahtzee-lower",
    ),
    "kept dice not rolled": (
        _edit(lambda t: t[1]["keeps"].__setitem__(0, [6, 6, 6, 6, 5])),
        "turn 2, roll 1: kept 5 6 6 6 6, which is not in the roll 6 6 6 6 6",
    ),
    "later roll lacks the kept dice": (
        _edit(lambda t: t[1]["rolls"].__setitem__(1, [1, 2, 3, 4, 6])),
        "turn 2, roll 2: kept 6 6 6 but the roll was 1 2 3 4 6",
    ),
    "four dice": (
        _edit(lambda t: t[0]["rolls"].__setitem__(0, [1, 2, 3, 4])),
        "turn 1, roll 1: expected 5 dice, got 4",
    ),
    "six dice": (
        _edit(lambda t: t[0]["rolls"].__setitem__(0, [1, 2, 3, 4, 5, 6])),
        "turn 1, roll 1: roll: expected at most 5 dice, got 6",
    ),
    "face 7": (
        _edit(lambda t: t[0]["rolls"].__setitem__(0, [1, 2, 3, 4, 7])),
        "turn 1, roll 1: roll: face 7 is outside 1..6",
    ),
    "four rolls": (
        _edit(lambda t: t[1].update(rolls=[*t[1]["rolls"], [6, 6, 6, 1, 1]], keeps=[[6]] * 3)),
        "turn 2, roll 4: too many rolls: 4, but yahtzee-lower allows 3 per turn",
    ),
    "keeps missing": (
        _edit(lambda t: t[1].update(keeps=[[6, 6, 6]])),
        "turn 2: keeps has 1 entries, but 3 rolls need 2",
    ),
    "too many turns": (
        _edit(lambda t: t.append({"rolls": [[1, 1, 1, 1, 1]], "box": "chance"})),
        "turn 8: too many turns: yahtzee-lower has 7 boxes, so 7 turns",
    ),
    "no turns list": ({"turns": {}}, "turns: expected a list of turns"),
    "unknown key": ({"turns": [], "players": 2}, "unknown key 'players'"),
    "other rules": (
        {"rules": "yatzy", "turns": []},
        "the game is played under 'yatzy' but the review runs under yahtzee-lower",
    ),
    "a turn not an object": ({"turns": [[1, 2, 3, 4, 5]]}, "turn 1: expected an object"),
    "a turn nested too deep to echo": (
        {"turns": [_deep(3000)]},
        "turn 1: expected an object with rolls, keeps and box, got a list nested too deep",
    ),
    "a bool as a face": (
        _edit(lambda t: t[0]["rolls"].__setitem__(0, [True, 2, 3, 4, 5])),
        "turn 1, roll 1: roll: expected a list of faces",
    ),
}


@pytest.mark.parametrize(("game", "message"), BAD_GAMES.values(), ids=list(BAD_GAMES))
def test_a_game_that_breaks_the_rules_is_refused_naming_turn_and_step(
    game: object, message: str
) -> None:
    with pytest.raises(GameError) as caught:
        read_game(game, LOWER)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_joker_rule_is_enforced_naming_the_boxes_allowed() -> None:
    """Under the forced Joker a Yahtzee after a 50 goes in its upper box while that is open."""
    game = {
        "turns": [
            {"rolls": [[5, 5, 5, 5, 5]], "box": "yahtzee"},
            {"rolls": [[6, 6, 6, 6, 6]], "box": "chance"},
        ]
    }
    with pytest.raises(GameError, match=r"^turn 2, box: the Joker rule does not allow chance "):
        read_game(game, YAHTZEE)
    with pytest.raises(GameError, match=r"\(allowed: sixes\)$"):
        read_game(game, YAHTZEE)
    read_game(game, RULE_SETS["yahtzee-free-joker"])  # any open box under the free Joker
    game["turns"][1]["box"] = "sixes"
    read_game(game, YAHTZEE)


def test_the_format_documented_in_the_readme_is_accepted() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Reviewing a played game", 1)[1]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    documented = json.loads(block)
    assert len(read_game(documented, YAHTZEE)) == 2


# --- other dice counts and forced order -------------------------------------------------------

SIX_DICE_GAME: dict[str, Any] = {
    "rules": "six-dice",
    "turns": [
        {
            "rolls": [[5, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6]],
            "keeps": [[1, 2, 3, 4, 5]],
            "box": "full_straight",
        },
        {"rolls": [[6, 6, 6, 6, 6, 6]], "box": "maxi"},
        {"rolls": [[6, 6, 6, 6, 6, 6]], "box": "sixes"},
    ],
}


def test_a_six_dice_game_is_reviewed_with_its_bonuses(solver: Solver) -> None:
    """21 for the straight, 100 for six alike, then six sixes again: the forced Joker puts
    them in Sixes (36), which banks the all-alike bonus and reaches the upper bonus."""
    review = solver.review(SIX_DICE, SIX_DICE_GAME)

    scored = [(s.box, s.points, s.bonus) for s in review.scored]
    assert scored == [("full_straight", 21, 0), ("maxi", 100, 0), ("sixes", 36, 50 + 25)]
    assert [d.step for d in review.decisions] == ["keep 1", "box", "box", "box"]
    assert review.decisions[0].chosen.words() == "keep 1 2 3 4 5 and reroll 1 die"
    start = solver.call(advise, SIX_DICE, parse_state("start", SIX_DICE))
    assert review.expected_score == pytest.approx(start.value, abs=TOL)
    rest = solver.advise(SIX_DICE, "open=fours,three_pairs,tower upper=36 bonus=yes")
    assert review.remaining_value == pytest.approx(rest.value, abs=TOL)
    assert review.expected_score + review.skill + review.luck == pytest.approx(review.final_score)


def test_a_six_dice_game_is_checked_against_its_dice_and_joker() -> None:
    five = copy.deepcopy(SIX_DICE_GAME)
    five["turns"][0]["rolls"][0] = [1, 2, 3, 4, 5]
    with pytest.raises(GameError, match=r"^turn 1, roll 1: expected 6 dice, got 5$"):
        read_game(five, SIX_DICE)
    tower = copy.deepcopy(SIX_DICE_GAME)
    tower["turns"][2]["box"] = "tower"
    with pytest.raises(GameError, match=r"^turn 3, box: the Joker rule .*\(allowed: sixes\)$"):
        read_game(tower, SIX_DICE)


def test_a_forced_order_game_scores_each_box_in_its_turn(solver: Solver) -> None:
    game = {
        "turns": [
            {"rolls": [[1, 1, 1, 2]], "box": "ones"},
            {"rolls": [[3, 3, 3, 3]], "box": "threes"},
        ]
    }
    review = solver.review(FORCED, game)
    assert [(s.box, s.points) for s in review.scored] == [("ones", 3), ("threes", 12)]

    game["turns"][1]["box"] = "chance"
    with pytest.raises(
        GameError,
        match=r"^turn 2, box: forced-four fills its boxes in scorecard order: this turn "
        r"scores in threes, not chance$",
    ):
        read_game(game, FORCED)


# --- the command and the API -------------------------------------------------------------------


def run_cli(
    tmp_path: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(tmp_path / "store.sqlite3"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )


def test_cli_review_json_and_words(tmp_path: Path, solver: Solver) -> None:
    path = DATA / "review_lower_mistakes.json"
    as_json = run_cli(tmp_path, "review", "--rules", "yahtzee-lower", str(path), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == solver.review(LOWER, load(path.name)).to_json()

    words = run_cli(tmp_path, "review", "--rules", "yahtzee-lower", "-", stdin=path.read_text())
    assert words.returncode == 0, words.stderr
    assert "worst mistakes:" in words.stdout
    assert "1. turn 1, after roll 1 (1 2 3 4 5): you chose to score 15 in Chance" in words.stdout
    assert "final score 133" in words.stdout


def test_cli_review_of_a_bad_game_is_one_line_and_exit_2(tmp_path: Path) -> None:
    game, message = BAD_GAMES["later roll lacks the kept dice"]
    result = run_cli(tmp_path, "review", "--rules", "yahtzee-lower", "-", stdin=json.dumps(game))
    assert result.returncode == 2
    assert result.stderr == f"memo-solver: error: {message}\n"
    assert result.stdout == ""

    for text, said in [("{not json", "not valid JSON"), ("", "not valid JSON")]:
        result = run_cli(tmp_path, "review", "--rules", "yahtzee-lower", "-", stdin=text)
        assert result.returncode == 2
        assert said in result.stderr
    missing = run_cli(tmp_path, "review", str(tmp_path / "nowhere.json"))
    assert missing.returncode == 2
    assert "cannot read the game" in missing.stderr


async def test_api_review_answers_as_the_cli_does(tmp_path: Path) -> None:
    game = load("review_lower_mistakes.json")
    async with api_client(tmp_path / "store.sqlite3") as client:
        by_game = await client.post("/v1/review", json={"game": game})  # rules from the game
        named = await client.post("/v1/review", json={"rules": "yahtzee-lower", "game": game})
        engine = client.app.state.service.peek(entry_for(LOWER))  # type: ignore[attr-defined]
        expected = (await review_game(engine, LOWER, game)).to_json()
    assert by_game.status_code == 200, by_game.text
    assert by_game.json() == named.json() == expected


@pytest.mark.parametrize("case", ["later roll lacks the kept dice", "box filled twice"])
async def test_api_review_of_a_bad_game_is_422_naming_turn_and_step(
    tmp_path: Path, case: str
) -> None:
    game, message = BAD_GAMES[case]
    async with api_client(tmp_path / "store.sqlite3") as client:
        response = await client.post("/v1/review", json={"rules": "yahtzee-lower", "game": game})
    assert response.status_code == 422
    assert response.json() == {"error": {"field": "game", "message": message}}


async def test_api_review_other_errors_name_their_field(tmp_path: Path) -> None:
    game = _lower_game()
    async with api_client(tmp_path / "store.sqlite3") as client:
        unknown = await client.post("/v1/review", json={"rules": "nope", "game": game})
        bad_game_rules = await client.post("/v1/review", json={"game": {**game, "rules": "x"}})
        clash = await client.post("/v1/review", json={"rules": "yahtzee", "game": game})
        not_object = await client.post("/v1/review", json={"game": [1, 2]})
    assert unknown.status_code == 422
    assert unknown.json()["error"]["field"] == "rules"
    assert bad_game_rules.status_code == 422
    assert bad_game_rules.json()["error"]["field"] == "game"
    assert clash.status_code == 422
    assert clash.json()["error"]["field"] == "game"
    assert "played under 'yahtzee-lower'" in clash.json()["error"]["message"]
    assert not_object.status_code == 422
    assert not_object.json()["error"]["field"] == "game"


def test_review_does_not_change_the_game_it_reads(solver: Solver) -> None:
    game = _lower_game()
    before = copy.deepcopy(game)
    solver.review(LOWER, game)
    assert game == before
