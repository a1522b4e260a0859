"""A brute force of the Yahtzee family with saved rolls, written from the rule alone.

Official Maxi Yatzy saves the rolls a turn leaves unused for the turns after it. A turn starts
with ``saved`` rolls in the bank (none at the start of the game) and adds its own ``rerolls +
1``; the first roll of all the dice is made, leaving ``R = saved + rerolls``; while R > 0 the
player may reroll any dice (R goes down by one) or stop; then one open box is scored, and the
next turn starts with ``saved' = R``, or ``min(R, max_saved)`` under a cap. Rolls left when the
game ends are worth nothing. Without the rule the cap is 0: that is the game
``rulebook_brute_force.py`` plays.

The turn is played here on its own terms, sharing nothing with the solver and nothing with the
rule-book brute force's turn: the dice are a row of positions, a keep is a set of positions
(every proper one, at least one die rerolled), a reroll averages over every ordered throw of
the rerolled dice, and the bank is a number carried from one turn start to the next. Only what
a score banks comes from the rule book (:func:`~rulebook_brute_force.legal_points` and
:func:`~rulebook_brute_force.scored`): the boxes, the bonuses and the Joker are the same in
both games. It is plain Python with :func:`functools.cache`, meant for a few dice and boxes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from support.rulebook_brute_force import Game, game_of, keep_name, legal_points, scored

Roll = tuple[int, ...]
Rules = Mapping[str, Any]
FACES = range(1, 7)


@dataclass(frozen=True, eq=False)
class SavedGame:
    """The rule set with its bank: one object per rule set (:func:`saved_game_of`), so that the
    cached functions below key on it by identity, cheaply."""

    board: Game
    """The rule book's game: the boxes, what they score and the bonuses."""
    dice: int
    rerolls: int
    cap: int | None
    """The most rolls a turn carries into the next; None for no cap, 0 without the rule."""

    def carried(self, rolls_left: int) -> int:
        return rolls_left if self.cap is None else min(rolls_left, self.cap)


def saved_game_of(rules: Rules) -> SavedGame:
    return _saved_game(json.dumps(rules, sort_keys=True))


@cache
def _saved_game(text: str) -> SavedGame:
    rules = json.loads(text)
    cap = rules.get("max_saved") if rules.get("saved_rolls", False) else 0
    return SavedGame(game_of(rules), int(rules.get("dice", 5)), int(rules.get("rerolls", 2)), cap)


class Card(NamedTuple):
    """The scorecard between turns: what the bank does not cover."""

    filled: frozenset[int]
    upper: int
    """The raw total of the filled upper boxes."""
    fifty: bool
    """The ``all_alike`` box holds its points: a later roll of all dice alike banks the bonus."""


@cache
def _throws_after(kept: Roll, dice: int) -> tuple[Roll, ...]:
    """The sorted dice after keeping ``kept`` and throwing the rest, once per ordered throw of
    the rest: each as likely as the others."""
    rest = dice - len(kept)
    return tuple(tuple(sorted(kept + throw)) for throw in itertools.product(FACES, repeat=rest))


@cache
def _throw_value(game: SavedGame, card: Card, kept: Roll, rolls_left: int) -> float:
    """Keeping the faces ``kept`` and throwing the other dice, with ``rolls_left`` after the
    throw: the mean over the throws."""
    after = _throws_after(kept, game.dice)
    return sum(_best(game, card, dice, rolls_left) for dice in after) / len(after)


@cache
def _turn_start(game: SavedGame, card: Card, saved: int) -> float:
    """The first roll, of all the dice, is made from the bank plus the turn's own rolls."""
    if len(card.filled) == len(game.board.boxes):
        return 0.0
    return _throw_value(game, card, (), saved + game.rerolls)


def _score_values(game: SavedGame, card: Card, dice: Roll, rolls_left: int) -> dict[int, float]:
    """Each legal box's worth: what it banks now and the next turn start, with the rolls left
    carried (up to the cap)."""
    worth = {}
    for box, points in legal_points(game.board, card.filled, dice).items():
        gain, after = scored(game.board, card.filled, card.upper, card.fifty, dice, box, points)
        worth[box] = gain + _turn_start(game, Card(*after), game.carried(rolls_left))
    return worth


def _proper_keeps(dice: Roll) -> list[tuple[int, ...]]:
    """Every set of dice positions that leaves at least one die to reroll."""
    positions = range(len(dice))
    return [kept for n in range(len(dice)) for kept in itertools.combinations(positions, n)]


def _faces(dice: Roll, positions: tuple[int, ...]) -> Roll:
    return tuple(sorted(dice[position] for position in positions))


@cache
def _kept_faces(dice: Roll) -> frozenset[Roll]:
    """The faces each proper keep of ``dice`` holds (keeps of the same faces are one)."""
    return frozenset(_faces(dice, kept) for kept in _proper_keeps(dice))


@cache
def _best(game: SavedGame, card: Card, dice: Roll, rolls_left: int) -> float:
    """The value of sorted ``dice`` with ``rolls_left``: its best action's worth, a reroll
    spending one of the rolls."""
    best = max(_score_values(game, card, dice, rolls_left).values())
    if rolls_left > 0:
        for kept in _kept_faces(dice):
            best = max(best, _throw_value(game, card, kept, rolls_left - 1))
    return best


# --- the interface the tests use ------------------------------------------------------------------


def _card(game: SavedGame, filled: Iterable[int], upper: int, fifty: bool) -> Card:
    card = Card(frozenset(filled), upper, fifty)
    if not card.filled <= set(range(len(game.board.boxes))):
        raise ValueError(f"no such box among {sorted(card.filled)}")
    return card


def value(rules: Rules, filled: Iterable[int], upper: int, fifty: bool, saved: int) -> float:
    """A turn start's value with ``saved`` rolls in the bank: the expected points still to
    come, bonuses included."""
    if saved < 0:
        raise ValueError(f"a bank holds 0 rolls or more, not {saved}")
    game = saved_game_of(rules)
    return _turn_start(game, _card(game, filled, upper, fifty), saved)


def actions(
    rules: Rules, filled: Iterable[int], upper: int, fifty: bool, dice: Roll, rolls_left: int
) -> dict[str, float]:
    """Every legal action's value mid-turn: ``keep 1 2`` (the kept faces), ``keep nothing``,
    ``score NAME``.

    With rolls left every distinct keep that rerolls a die is offered; keeping every die would
    only throw a roll of the bank away. A box the forced order or the Joker rule forbids is
    absent.
    """
    game = saved_game_of(rules)
    card = _card(game, filled, upper, fifty)
    if len(dice) != game.dice or not set(dice) <= set(FACES):
        raise ValueError(f"expected {game.dice} dice of faces 1-6, got {dice}")
    if len(card.filled) == len(game.board.boxes):
        raise ValueError("the game is over: every box is filled")
    if rolls_left < 0:
        raise ValueError(f"0 rolls left or more, not {rolls_left}")
    named = {}
    if rolls_left > 0:
        for kept in _proper_keeps(dice):
            faces = _faces(dice, kept)
            named[keep_name(faces)] = _throw_value(game, card, faces, rolls_left - 1)
    boxes = game.board.boxes
    for box, worth in _score_values(game, card, tuple(sorted(dice)), rolls_left).items():
        named["score " + boxes[box]["name"]] = worth
    return named


def state_value(
    rules: Rules, filled: Iterable[int], upper: int, fifty: bool, dice: Roll | None, rolls: int
) -> float:
    """Any state's value: before the turn's first roll (``dice`` None) the turn start's with
    ``rolls`` saved in the bank, else the best action's with ``rolls`` left."""
    if dice is None:
        return value(rules, filled, upper, fifty, rolls)
    return max(actions(rules, filled, upper, fifty, dice, rolls).values())
