"""``review --risk``: a played game graded against the strategy of a risk theta.

A decision's risk loss is the certainty-equivalent points between the best action at theta
and the one chosen. The games here are played on Hypothesis-drawn tiny rule sets by moves
the brute force of the risk dial (``risk_brute_force.py``, sharing no code with the solver)
names, and its certainty equivalents are the reference: the review's must be theirs to 1e-9
relative. A game played by the risk advice's own first action loses nothing at its risk.
The HTTP side is in ``test_api_risk.py``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from support import risk_brute_force as brute
from support.cli_support import TINY_RULES, answer, memo_solver, one_error_line
from support.rule_strategies import tiny_rule_sets, tiny_saved_rule_sets
from support.rulebook_brute_force import game_of, legal_points, scored

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.review import AtRisk, Review, review_game
from memo_solver.games.yahtzee.advice.risk_advice import advise_risk
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import State, start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.risk import RiskGame
from memo_solver.games.yahtzee.solve.scoring import next_turn_start
from memo_solver.stores.memory import MemoryStore

REL = 1e-9
THETAS = st.integers(-500, 500).filter(bool).map(lambda milli: milli / 1000)
"""Every risk the dial takes but 0 (the mean game), the ends of the dial among them."""
Rules = dict[str, Any]
SCORED_AT_ONCE = {"turns": [{"rolls": [[4]], "box": "chance"}]}
"""The tiny game (one die, one chance box, one reroll): a 4 scored at once. For points that
is best (4 against 3.5 for the reroll); at theta 0.5 the reroll is worth more."""


class Played:
    """A game record and, for each of its decisions, the brute force's certainty
    equivalents of the chosen action and of the best."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.certain: list[tuple[float, float]] = []


def play_by_brute_force(data: st.DataObject, rules: Rules, theta: float) -> Played:
    """A whole game: dice drawn, each move drawn among the brute force's actions (every box
    the order and the Joker allow, every keep that rerolls a die), the scorecard and the
    bank kept by the rule book's own scoring."""
    board = game_of(rules)
    rerolls = rules.get("rerolls", 2)
    saved = rules.get("saved_rolls", False)
    cap = rules.get("max_saved") if saved else 0
    played = Played()
    filled: frozenset[int] = frozenset()
    upper, fifty, bank = 0, False, 0
    faces = st.integers(1, 6)
    while len(filled) < len(board.boxes):
        left = bank + rerolls
        dice = tuple(sorted(data.draw(st.lists(faces, min_size=board.dice, max_size=board.dice))))
        turn: dict[str, Any] = {"rolls": [list(dice)], "keeps": []}
        while True:
            worth = brute.actions(rules, theta, filled, upper, fifty, dice, left)
            move = data.draw(st.sampled_from(sorted(worth)))
            played.certain.append((worth[move], max(worth.values())))
            if move.startswith("keep "):
                kept = () if move == "keep nothing" else tuple(map(int, move[5:].split()))
                rest = board.dice - len(kept)
                thrown = data.draw(st.lists(faces, min_size=rest, max_size=rest))
                dice = tuple(sorted(kept + tuple(thrown)))
                turn["keeps"].append(list(kept))
                turn["rolls"].append(list(dice))
                left -= 1
                continue
            box = next(i for i, b in enumerate(board.boxes) if b["name"] == move[6:])
            points = legal_points(board, filled, dice)[box]
            _, (filled, upper, fifty) = scored(board, filled, upper, fifty, dice, box, points)
            bank = left if cap is None else min(left, cap)
            turn["box"] = move[6:]
            break
        played.turns.append(turn)
    return played


async def review_at_risk(rules: Rules, game: object, theta: float) -> Review:
    """The solver's review at ``theta``, on fresh engines for the rule set."""
    rule_set = parse_rule_set(rules)
    store = MemoryStore()
    async with (
        open_engine(YahtzeeGame(rule_set), store) as mean,
        open_engine(RiskGame(rule_set, theta), store) as risky,
    ):
        return await review_game(mean, rule_set, game, AtRisk(risky, theta))


def check_review(data: st.DataObject, rules: Rules, theta: float) -> None:
    import anyio

    played = play_by_brute_force(data, rules, theta)
    review = anyio.run(review_at_risk, rules, {"turns": played.turns}, theta)
    assert len(review.decisions) == len(played.certain)
    for decision, (chosen, best) in zip(review.decisions, played.certain, strict=True):
        assert decision.certain is not None
        assert decision.certain.chosen == pytest.approx(chosen, rel=REL)
        assert decision.certain.best == pytest.approx(best, rel=REL)
        assert decision.certain.loss == pytest.approx(best - chosen, abs=REL * max(1, abs(best)))
    start = brute.value(rules, theta, (), 0, False)
    assert review.certainty_equivalent == pytest.approx(start, rel=REL)


@settings(max_examples=25, deadline=None)
@given(st.data(), tiny_rule_sets(max_dice=2), THETAS)
def test_each_decisions_risk_loss_is_the_brute_forces(
    data: st.DataObject, rules: Rules, theta: float
) -> None:
    """Best certainty equivalent at theta minus the chosen move's, for every decision."""
    check_review(data, rules, theta)


@settings(max_examples=15, deadline=None)
@given(st.data(), tiny_saved_rule_sets(max_dice=2, max_boxes=2), THETAS)
def test_with_saved_rolls_each_decisions_risk_loss_is_the_brute_forces(
    data: st.DataObject, rules: Rules, theta: float
) -> None:
    check_review(data, rules, theta)


@pytest.mark.parametrize(("theta", "best"), [(0.5, "keep nothing"), (-0.5, "score chance")])
def test_a_4_scored_at_once_loses_the_bold_reroll_but_nothing_carefully(
    theta: float, best: str
) -> None:
    """The tiny game (one die, one chance box, one reroll): the 4 scored is best for points,
    and for a careful player; a bold one loses the reroll's certainty equivalent less 4."""
    import anyio

    review = anyio.run(review_at_risk, TINY_RULES, SCORED_AT_ONCE, theta)
    worth = brute.actions(TINY_RULES, theta, (), 0, False, (4,), 1)
    [decision] = review.decisions
    assert decision.loss == 0.0
    assert decision.certain is not None
    assert decision.certain.loss == pytest.approx(worth[best] - 4, abs=REL)
    assert [d.certain for d in review.worst] == ([decision.certain] if theta > 0 else [])


async def play_by_risk_advice(rules: Rules, theta: float, rolls: list[int]) -> Review:
    """A game of ``rules`` whose dice are ``rolls`` in turn (cycled), every move the risk
    advice's first, reviewed at the same risk."""
    rule_set = parse_rule_set(rules)
    store = MemoryStore()
    throws = iter(rolls * 100)
    async with (
        open_engine(YahtzeeGame(rule_set), store) as mean,
        open_engine(RiskGame(rule_set, theta), store) as risky,
    ):
        turns: list[dict[str, Any]] = []
        state = start_state()
        while state.filled != rule_set.all_filled:
            left = state.saved + rule_set.rerolls
            dice = tuple(sorted(next(throws) for _ in range(rule_set.dice)))
            turn: dict[str, Any] = {"rolls": [list(dice)], "keeps": []}
            while True:
                here = State(state.filled, state.upper, state.yahtzee_bonus, left, dice)
                best = (await advise_risk(risky, mean, rule_set, here, theta)).actions[0].action
                if best.kind == "score":
                    turn["box"] = best.category
                    box = rule_set.category_index(best.category)
                    state = next_turn_start(rule_set, here, box, best.points)
                    break
                kept = best.keep
                dice = tuple(
                    sorted(kept + tuple(next(throws) for _ in range(len(dice) - len(kept))))
                )
                turn["keeps"].append(list(kept))
                turn["rolls"].append(list(dice))
                left -= 1
            turns.append(turn)
        return await review_game(mean, rule_set, {"turns": turns}, AtRisk(risky, theta))


@settings(max_examples=10, deadline=None)
@given(tiny_rule_sets(max_dice=2), THETAS, st.lists(st.integers(1, 6), min_size=1, max_size=12))
def test_a_game_played_by_the_risk_advice_loses_nothing_at_its_risk(
    rules: Rules, theta: float, rolls: list[int]
) -> None:
    import anyio

    review = anyio.run(play_by_risk_advice, rules, theta, rolls)
    assert [d.certain.loss for d in review.decisions if d.certain] == [0.0] * len(review.decisions)
    assert review.worst == ()
    assert review.total_risk_loss == 0.0


async def advice_both_ways(theta: float) -> tuple[list[str], list[tuple[str, float]]]:
    """yahtzee-lower with Three of a Kind, Full House and Large Straight filled, 2 3 3 5 5
    and one reroll left: the mean advice's moves in its order, and the risk advice's with
    their certainty equivalents."""
    rules = get_rule_set("yahtzee-lower")
    filled = sum(
        1 << rules.category_index(name)
        for name in ("three_of_a_kind", "full_house", "large_straight")
    )
    state = State(filled, 0, False, 1, (2, 3, 3, 5, 5))
    async with (
        open_engine(YahtzeeGame(rules), MemoryStore()) as mean,
        open_engine(RiskGame(rules, theta), MemoryStore()) as risky,
    ):
        advice = await advise_risk(risky, mean, rules, state, theta)
    return [a.words() for a in advice.mean.actions], [
        (a.action.words(), a.certainty_equivalent) for a in advice.actions
    ]


def test_moves_tied_at_a_risk_keep_the_mean_advices_order_and_no_risk_rerolls_nothing() -> None:
    """Keeping all five dice is worth the best box one roll later, at any risk: at 0.1 that
    is the 18 in Chance, a tie a player sees by hand. For points the best box is another
    (keeping all five is worth more than Chance), so the mean advice lists the keep first;
    the risk advice lists Chance first and the keep right after it, as the mean advice does
    where keeping everything ties a score: a player is never told to reroll nothing. Every
    other tie keeps the mean advice's order."""
    import anyio

    mean, risky = anyio.run(advice_both_ways, 0.1)
    tied = ("keep all five dice", "score 18 in Chance")
    certain = dict(risky)
    assert certain[tied[0]] == pytest.approx(certain[tied[1]], abs=1e-9)
    assert mean.index(tied[0]) < mean.index(tied[1])
    shown = [words for words, _ in risky]
    assert shown.index(tied[0]) == shown.index(tied[1]) + 1
    rest = [(words, round(value, 9)) for words, value in risky if words != tied[0]]
    for (first, a), (second, b) in itertools.pairwise(rest):
        if a == b:
            assert mean.index(first) < mean.index(second)


def test_keeping_every_die_never_tops_the_move_it_ties_by_a_rounding_hair() -> None:
    """yahtzee, Full House and Small Straight open, 19 in the upper section, 3 3 3 3 3 with
    two rerolls, at -0.1: keeping all five is worth the Small Straight's 30 (the Joker) one
    roll later, and its exponential steps once rounded it a hair above: the advice said to
    reroll nothing."""
    import anyio

    rules = get_rule_set("yahtzee")
    filled = rules.all_filled & ~sum(
        1 << rules.category_index(name) for name in ("full_house", "small_straight")
    )

    async def best() -> str:
        async with (
            open_engine(YahtzeeGame(rules), MemoryStore()) as mean,
            open_engine(RiskGame(rules, -0.1), MemoryStore()) as risky,
        ):
            state = State(filled, 19, False, 2, (3, 3, 3, 3, 3))
            advice = await advise_risk(risky, mean, rules, state, -0.1)
        return advice.actions[0].action.words()

    assert anyio.run(best) == "score 30 in Small Straight"


# --- the command -------------------------------------------------------------------


@pytest.mark.slow  # each test starts a process
def test_cli_review_at_a_risk_grades_by_certainty_equivalent(
    tmp_path: Path, tiny_rules_file: Path
) -> None:
    """Scoring the 4 loses nothing for points, and at 0.5 the reroll's certainty equivalent
    less 4: the brute force's, in JSON and in words."""
    game = tmp_path / "game.json"
    game.write_text(json.dumps(SCORED_AT_ONCE))
    store = tmp_path / "store.sqlite3"
    args = ("review", "--rules-file", str(tiny_rules_file), str(game))
    graded = answer(memo_solver(store, *args, "--risk", "0.5", "--json"))
    reroll = brute.actions(TINY_RULES, 0.5, (), 0, False, (4,), 1)["keep nothing"]
    assert graded["risk"] == 0.5
    [decision] = graded["decisions"]
    assert decision["loss"] == 0.0
    assert decision["best"]["words"] == "reroll the die"
    assert decision["chosen_certainty_equivalent"] == 4.0
    assert decision["risk_loss"] == pytest.approx(reroll - 4, rel=REL)
    assert graded["worst_mistakes"][0]["risk_loss"] == decision["risk_loss"]
    assert graded["certainty_equivalent"] == pytest.approx(
        brute.value(TINY_RULES, 0.5, (), 0, False), rel=REL
    )
    words = memo_solver(store, *args, "--risk", "0.5")
    assert words.returncode == 0, words.stderr
    assert (
        "you chose to score 4 in Chance; best at risk 0.5 was to reroll the die "
        "(-0.1798 certainty-equivalent points, no expected points)"
    ) in words.stdout
    refused = memo_solver(store, *args, "--risk", "0.6")
    assert "0.6" in one_error_line(refused)
