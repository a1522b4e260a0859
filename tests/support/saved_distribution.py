"""The exact distribution of the points to come in a saved-rolls game, by brute force.

The brute force of ``saved_brute_force.py`` values every action; this one plays them: at each
roll the best action, ties broken by the one rule (values equal to 1e-9: scoring now before
rerolling, among boxes the first in scorecard order, among keeps the one holding more dice,
then the first in keep order, which lists the sorted faces of a size lexicographically),
and the chances of every total follow, roll by roll, with the bank counted explicitly: a
turn starts with its bank plus its own rolls, the first of them made at once, and what it
leaves when it scores is the next turn's bank (up to the cap). Plain Python over the rule
file's dict, sharing nothing with the solver; for a few dice and boxes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from functools import cache

from support.rulebook_brute_force import legal_points, scored
from support.saved_brute_force import FACES, Card, Roll, Rules, actions, saved_game_of

Chances = dict[int, float]
"""P(points still to come == total), by total."""


def distribution(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    saved: int,
    dice: Roll | None = None,
    rolls_left: int | None = None,
) -> Chances:
    """From a turn start with ``saved`` rolls in the bank, or (``dice`` given) from those
    dice with ``rolls_left`` rolls left."""
    text = json.dumps(rules, sort_keys=True)
    card = Card(frozenset(filled), upper, fifty)
    if dice is None or rolls_left is None:
        return _turn(text, card, saved)
    return _after_roll(text, card, tuple(sorted(dice)), rolls_left)


def _throws(dice: int) -> list[Roll]:
    """Every ordered throw of ``dice`` dice, each as likely as the others."""
    return list(itertools.product(FACES, repeat=dice))


@cache
def _turn(text: str, card: Card, saved: int) -> Chances:
    rules = json.loads(text)
    game = saved_game_of(rules)
    if len(card.filled) == len(game.board.boxes):
        return {0: 1.0}
    throws = _throws(game.dice)
    return _mixed(
        (1 / len(throws), _after_roll(text, card, tuple(sorted(throw)), saved + game.rerolls))
        for throw in throws
    )


def _choice(text: str, card: Card, dice: Roll, rolls_left: int) -> tuple[int | None, Roll]:
    """The action played: (box, ()) to score, or (None, the faces kept) to reroll the rest."""
    rules = json.loads(text)
    names = [box["name"] for box in rules["boxes"]]
    ranked: list[tuple[tuple[float, int, int, tuple[int, ...]], tuple[int | None, Roll]]] = []
    for name, worth in actions(
        rules, card.filled, card.upper, card.fifty, dice, rolls_left
    ).items():
        tick = -round(worth, 9)
        if name.startswith("score "):
            box = names.index(name.removeprefix("score "))
            ranked.append(((tick, 0, 0, (box,)), (box, ())))
        else:
            kept = tuple(int(face) for face in name.removeprefix("keep ").split() if face.isdigit())
            ranked.append(((tick, 1, -len(kept), kept), (None, kept)))
    return min(ranked)[1]


@cache
def _after_roll(text: str, card: Card, dice: Roll, rolls_left: int) -> Chances:
    game = saved_game_of(json.loads(text))
    box, kept = _choice(text, card, dice, rolls_left)
    if box is not None:
        points = legal_points(game.board, card.filled, dice)[box]
        gain, after = scored(game.board, card.filled, card.upper, card.fifty, dice, box, points)
        rest = _turn(text, Card(*after), game.carried(rolls_left))
        return {gain + total: chance for total, chance in rest.items()}
    throws = _throws(game.dice - len(kept))
    return _mixed(
        (1 / len(throws), _after_roll(text, card, tuple(sorted(kept + throw)), rolls_left - 1))
        for throw in throws
    )


def _mixed(parts: Iterable[tuple[float, Chances]]) -> Chances:
    """The mixture of distributions, each with its weight."""
    mixed: Chances = {}
    for weight, chances in parts:
        for total, chance in chances.items():
            mixed[total] = mixed.get(total, 0.0) + weight * chance
    return mixed
