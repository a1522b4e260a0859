"""A brute force of the risk dial (exponential utility), written from its definition alone.

For a risk theta the player maximises E[exp(theta X)] of the points X still to come when
theta > 0 and minimises it when theta < 0; the value reported is the certainty equivalent,
(1/theta) ln E[exp(theta X)], in points. Because exp(theta (a + X)) = exp(theta a)
exp(theta X), scoring ``gain`` points and moving on multiplies by exp(theta gain), and a
throw averages the throws' utilities: the recursion is the mean's with a product for the sum
and the sign of theta choosing max or min. Nothing here is in certainty equivalents but the
last line: the utilities themselves are plain floats (the tiny games' points keep them within
exp(+-250)).

The game is played on its own terms as in ``saved_brute_force.py`` (keeps as sets of dice
positions, every ordered throw of the rerolled dice, the bank of saved rolls counted
explicitly; without the rule its cap is 0, the rule book's game), sharing no code with it or
with the solver. Only what a score banks comes from the rule book
(:func:`~rulebook_brute_force.legal_points` and :func:`~rulebook_brute_force.scored`). Plain
Python with :func:`functools.cache`, for a few dice and boxes. :func:`distribution` plays
the strategy: the exact distribution of the points to come, by the best certainty equivalent
at each roll.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from support.rulebook_brute_force import Game, game_of, keep_name, legal_points, scored

Roll = tuple[int, ...]
Rules = Mapping[str, Any]
Card = tuple[frozenset[int], int, bool]
"""Between turns: the filled boxes, the raw upper total, the fifty flag."""
FACES = range(1, 7)


@dataclass(frozen=True, eq=False)
class RiskGame:
    """The rule set at one theta: one object per pair (:func:`_game`), keyed by identity."""

    board: Game
    dice: int
    rerolls: int
    cap: int | None
    """The most rolls a turn carries on; None for no cap, 0 without saved rolls."""
    theta: float

    def better(self, a: float, b: float) -> float:
        """The utility the player prefers: the larger E[exp] for theta > 0, the smaller
        for theta < 0."""
        return max(a, b) if self.theta > 0 else min(a, b)

    def carried(self, rolls_left: int) -> int:
        return rolls_left if self.cap is None else min(rolls_left, self.cap)


@cache
def _game(text: str, theta: float) -> RiskGame:
    if theta == 0:
        raise ValueError("theta 0 is the mean game: the brute forces of the mean play it")
    rules = json.loads(text)
    cap = rules.get("max_saved") if rules.get("saved_rolls", False) else 0
    dice, rerolls = int(rules.get("dice", 5)), int(rules.get("rerolls", 2))
    return RiskGame(game_of(rules), dice, rerolls, cap, theta)


def _game_of(rules: Rules, theta: float) -> RiskGame:
    return _game(json.dumps(rules, sort_keys=True), theta)


def _throws(kept: Roll, dice: int) -> list[Roll]:
    return [
        tuple(sorted(kept + throw)) for throw in itertools.product(FACES, repeat=dice - len(kept))
    ]


@cache
def _throw(game: RiskGame, card: Card, kept: Roll, rolls_left: int) -> float:
    """E[exp(theta X)] keeping ``kept`` and throwing the rest, ``rolls_left`` after it."""
    after = _throws(kept, game.dice)
    return sum(_best(game, card, dice, rolls_left) for dice in after) / len(after)


@cache
def _start(game: RiskGame, card: Card, saved: int) -> float:
    if len(card[0]) == len(game.board.boxes):
        return 1.0  # no points to come: exp(0)
    return _throw(game, card, (), saved + game.rerolls)


def _scores(game: RiskGame, card: Card, dice: Roll, rolls_left: int) -> dict[int, float]:
    """Each legal box's utility: exp(theta gain) times the next turn start's."""
    worth = {}
    for box, points in legal_points(game.board, card[0], dice).items():
        gain, after = scored(game.board, *card, dice, box, points)
        worth[box] = math.exp(game.theta * gain) * _start(game, after, game.carried(rolls_left))
    return worth


def _keeps(dice: Roll) -> dict[str, Roll]:
    """Every keep of positions that rerolls a die, by its faces' name."""
    kept = (
        tuple(sorted(dice[p] for p in positions))
        for n in range(len(dice))
        for positions in itertools.combinations(range(len(dice)), n)
    )
    return {keep_name(faces): faces for faces in kept}


@cache
def _best(game: RiskGame, card: Card, dice: Roll, rolls_left: int) -> float:
    utilities = list(_scores(game, card, dice, rolls_left).values())
    if rolls_left > 0:
        utilities += [_throw(game, card, faces, rolls_left - 1) for faces in _keeps(dice).values()]
    best = utilities[0]
    for utility in utilities[1:]:
        best = game.better(best, utility)
    return best


def _certain(game: RiskGame, utility: float) -> float:
    return math.log(utility) / game.theta


# --- the interface the tests use ------------------------------------------------------------------


def value(
    rules: Rules, theta: float, filled: Iterable[int], upper: int, fifty: bool, saved: int = 0
) -> float:
    """A turn start's certainty equivalent, ``saved`` rolls in the bank."""
    game = _game_of(rules, theta)
    return _certain(game, _start(game, (frozenset(filled), upper, fifty), saved))


def actions(
    rules: Rules,
    theta: float,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll,
    rolls_left: int,
) -> dict[str, float]:
    """Every legal action's certainty equivalent mid-turn (``keep 1 2``, ``keep nothing``,
    ``score NAME``; keeps that reroll a die), a box the order or the Joker forbids absent."""
    game = _game_of(rules, theta)
    card = (frozenset(filled), upper, fifty)
    named = {}
    if rolls_left > 0:
        for name, faces in _keeps(dice).items():
            named[name] = _certain(game, _throw(game, card, faces, rolls_left - 1))
    boxes = game.board.boxes
    for box, utility in _scores(game, card, tuple(sorted(dice)), rolls_left).items():
        named["score " + boxes[box]["name"]] = _certain(game, utility)
    return named


# --- the strategy played: its exact distribution --------------------------------------------

Chances = dict[int, float]
"""P(points still to come == total), by total."""


def distribution(
    rules: Rules, theta: float, filled: Iterable[int], upper: int, fifty: bool, saved: int = 0
) -> Chances:
    """The points to come from a turn start when every roll is played by the best certainty
    equivalent, ties broken by the one rule (certainty equivalents equal to 1e-9: scoring
    now before rerolling, among boxes the first in scorecard order, among keeps the one
    holding more dice, then the first in keep order: the sorted faces of a size
    lexicographically)."""
    game = _game_of(rules, theta)
    return _turn_chances(game, (frozenset(filled), upper, fifty), saved)


@cache
def _turn_chances(game: RiskGame, card: Card, saved: int) -> Chances:
    if len(card[0]) == len(game.board.boxes):
        return {0: 1.0}
    throws = _throws((), game.dice)
    return _mixed(
        (1 / len(throws), _roll_chances(game, card, dice, saved + game.rerolls)) for dice in throws
    )


def _choice(game: RiskGame, card: Card, dice: Roll, rolls_left: int) -> tuple[int | None, Roll]:
    """The action played: (box, ()) to score, or (None, the faces kept) to reroll the rest."""
    ranked: list[tuple[tuple[float, int, int, Roll], tuple[int | None, Roll]]] = []
    for box, utility in _scores(game, card, dice, rolls_left).items():
        ranked.append(((-round(_certain(game, utility), 9), 0, 0, (box,)), (box, ())))
    if rolls_left > 0:
        for faces in _keeps(dice).values():
            worth = _certain(game, _throw(game, card, faces, rolls_left - 1))
            ranked.append(((-round(worth, 9), 1, -len(faces), faces), (None, faces)))
    return min(ranked)[1]


@cache
def _roll_chances(game: RiskGame, card: Card, dice: Roll, rolls_left: int) -> Chances:
    box, kept = _choice(game, card, dice, rolls_left)
    if box is not None:
        points = legal_points(game.board, card[0], dice)[box]
        gain, after = scored(game.board, *card, dice, box, points)
        rest = _turn_chances(game, after, game.carried(rolls_left))
        return {gain + total: chance for total, chance in rest.items()}
    throws = _throws(kept, game.dice)
    return _mixed(
        (1 / len(throws), _roll_chances(game, card, roll, rolls_left - 1)) for roll in throws
    )


def _mixed(parts: Iterable[tuple[float, Chances]]) -> Chances:
    """The mixture of distributions, each with its weight."""
    mixed: Chances = {}
    for weight, chances in parts:
        for total, chance in chances.items():
            mixed[total] = mixed.get(total, 0.0) + weight * chance
    return mixed
