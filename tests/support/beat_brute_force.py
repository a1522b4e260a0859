"""The best chance of finishing strictly above an opponent, brute-forced from the rule book.

The opponent plays for points: their points to come have the exact distribution of
:func:`need_brute_force.mean_policy_distribution`. The player, ``behind`` points behind on
the banked scores (negative when ahead), wins with points to come x when x > behind + y for
the opponent's y: a chance ``P(Y < x - behind)`` once every box is filled. The recursion is
the rule book's (:mod:`rulebook_brute_force`: the rolls, the legal boxes, what a score
banks) over states that also carry the points banked since the question, maximising that
chance at every choice, with tuples, loops and :func:`functools.cache`; nothing of the
solver and no numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from support.need_brute_force import mean_policy_distribution
from support.rulebook_brute_force import (
    Game,
    Roll,
    Rules,
    game_of,
    keep_name,
    keeps_in,
    legal_points,
    outcomes,
    scored,
)

Odds = tuple[tuple[int, float], ...]
"""The opponent's points to come and their chances, sorted: hashable for the caches."""


def _win(odds: Odds, behind: int, banked: int) -> float:
    return sum(chance for points, chance in odds if banked > behind + points)


@cache
def _turn(
    game: Game,
    filled: frozenset[int],
    upper: int,
    fifty: bool,
    banked: int,
    odds: Odds,
    behind: int,
) -> float:
    if len(filled) == len(game.boxes):
        return _win(odds, behind, banked)
    rolls = _rolls(game, filled, upper, fifty, game.rerolls, banked, odds, behind)
    return sum(chance * rolls[roll] for roll, chance in outcomes(game.dice))


@cache
def _rolls(
    game: Game,
    filled: frozenset[int],
    upper: int,
    fifty: bool,
    rerolls_left: int,
    banked: int,
    odds: Odds,
    behind: int,
) -> dict[Roll, float]:
    return {
        roll: max(
            _actions(game, filled, upper, fifty, roll, rerolls_left, banked, odds, behind).values()
        )
        for roll, _ in outcomes(game.dice)
    }


def _actions(
    game: Game,
    filled: frozenset[int],
    upper: int,
    fifty: bool,
    roll: Roll,
    rerolls_left: int,
    banked: int,
    odds: Odds,
    behind: int,
) -> dict[str, float]:
    named: dict[str, float] = {}
    if rerolls_left:
        after = _rolls(game, filled, upper, fifty, rerolls_left - 1, banked, odds, behind)
        for kept in keeps_in(roll):
            named[keep_name(kept)] = sum(
                chance * after[tuple(sorted(kept + rolled))]
                for rolled, chance in outcomes(game.dice - len(kept))
            )
    for box, points in legal_points(game, filled, roll).items():
        gain, (new_filled, new_upper, new_fifty) = scored(
            game, filled, upper, fifty, roll, box, points
        )
        named["score " + game.boxes[box]["name"]] = _turn(
            game, new_filled, new_upper, new_fifty, banked + gain, odds, behind
        )
    return named


def forget() -> None:
    _turn.cache_clear()
    _rolls.cache_clear()


def opponent_odds(rules: Rules, filled: Iterable[int], upper: int, fifty: bool) -> Odds:
    """The opponent's points to come from a turn start, playing for points."""
    return tuple(sorted(mean_policy_distribution(rules, filled, upper, fifty).items()))


def beat_chance(
    rules: Rules, filled: Iterable[int], upper: int, fifty: bool, odds: Odds, behind: int
) -> float:
    """A turn start's best chance of finishing above an opponent with ``odds``."""
    return _turn(game_of(rules), frozenset(filled), upper, fifty, 0, odds, behind)


def beat_actions(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll,
    rerolls_left: int,
    odds: Odds,
    behind: int,
) -> dict[str, float]:
    """Every legal action's chance mid-turn, under :func:`rulebook_brute_force.actions`'s
    names."""
    game = game_of(rules)
    roll = tuple(sorted(dice))
    return _actions(game, frozenset(filled), upper, fifty, roll, rerolls_left, 0, odds, behind)
