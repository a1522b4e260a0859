"""The best chance of scoring at least N more points, brute-forced from the rule book.

Issue #19's second objective, for any rule set in the rule-file format: for a state and a
need N, the probability that the points still to come reach N when every choice is made to
maximise exactly that probability, and the probability of every legal action. The points to
come are counted as the mean values count them (``rulebook_brute_force.scored``): the box
points, the upper bonus with the score that reaches the threshold, and the Yahtzee bonus
with every roll of all dice alike once the fifty flag is up; the points already banked are
not counted (a player who wants a final score of T with B banked asks for N = T - B).

The rule book comes from :mod:`rulebook_brute_force` (the dice, which boxes a roll may go
in, what a score banks), itself written without the solver; the play is tuples, loops and
:func:`functools.cache` again, nothing of the solver and no numpy. The recursion takes no
shortcut from bounds: a chance is decided only when every box is filled (1 if the need is
met, n <= 0, else 0). A turn start's chance is the average over the first roll of the best
action's; a score banking g points leads to the next turn start with need n - g; a keep
averages over what the reroll shows. That N <= 0 is certain, that N above
:func:`most_points` is hopeless and at or below :func:`least_points` sure, are properties
the tests check, not rules built in. Like the mean's brute force it is for tiny games:
each need is a recursion of its own, so a game costs the mean's times the needs it meets;
:func:`forget` empties the caches between games.

Besides the chances:

- :func:`most_points` and :func:`least_points`, the two bounds of a need table: the points to
  come when every roll shows the dice best for the player, and the most the player can be
  sure of when every roll shows the worst. Both are tight: the chance is above 0 up to the
  most and 0 past it, 1 up to the least and below 1 past it.
- :func:`mean_policy_distribution` and :func:`mean_policy_chance`: the exact distribution of
  the points to come, and P(>= N), under the mean-optimal policy of
  :mod:`rulebook_brute_force`, its ties broken by the solver's documented rule (see
  :func:`_mean_choice`), the yardstick the target policy must never fall below.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import cache

from support.rulebook_brute_force import (
    FACES,
    Game,
    Roll,
    Rules,
    actions,
    game_of,
    keep_name,
    keeps_in,
    legal_points,
    outcomes,
    scored,
)

Distribution = Mapping[int, float]
"""Points to come -> their chance."""

TIE_SCALE = 1e9
"""Mean values are tied when they round to the same number of 1e-9 ticks, as in the solver."""


@cache
def _keeps(dice: int) -> tuple[Roll, ...]:
    """Every keep a turn of ``dice`` dice can make: the sorted multisets of 0..dice faces."""
    return tuple(
        kept for n in range(dice + 1) for kept in itertools.combinations_with_replacement(FACES, n)
    )


def _done(game: Game, filled: frozenset[int]) -> bool:
    return len(filled) == len(game.boxes)


# --- the chance of reaching the need --------------------------------------------------------


@cache
def _turn_chance(game: Game, filled: frozenset[int], upper: int, fifty: bool, need: int) -> float:
    if _done(game, filled):
        return 1.0 if need <= 0 else 0.0
    chances = _roll_chances(game, filled, upper, fifty, game.rerolls, need)
    return sum(chance * chances[roll] for roll, chance in outcomes(game.dice))


@cache
def _score_chances(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, roll: Roll, need: int
) -> dict[int, float]:
    """Each legal box's chance: what it banks comes off the need of the next turn start."""
    chances = {}
    for box, points in legal_points(game, filled, roll).items():
        gain, after = scored(game, filled, upper, fifty, roll, box, points)
        chances[box] = _turn_chance(game, *after, need - gain)
    return chances


@cache
def _keep_chances(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int, need: int
) -> dict[Roll, float]:
    """With ``rerolls_left`` >= 1: each keep's chance, the average over what the reroll shows."""
    after = _roll_chances(game, filled, upper, fifty, rerolls_left - 1, need)
    return {
        kept: sum(
            chance * after[tuple(sorted(kept + rolled))]
            for rolled, chance in outcomes(game.dice - len(kept))
        )
        for kept in _keeps(game.dice)
    }


@cache
def _roll_chances(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int, need: int
) -> dict[Roll, float]:
    """The chance of each roll with ``rerolls_left`` to go: its best action's."""
    return {
        roll: max(_action_chances(game, filled, upper, fifty, roll, rerolls_left, need).values())
        for roll, _ in outcomes(game.dice)
    }


def _action_chances(
    game: Game,
    filled: frozenset[int],
    upper: int,
    fifty: bool,
    roll: Roll,
    rerolls_left: int,
    need: int,
) -> dict[str, float]:
    named = {}
    if rerolls_left:
        chances = _keep_chances(game, filled, upper, fifty, rerolls_left, need)
        named = {keep_name(kept): chances[kept] for kept in keeps_in(roll)}
    for box, chance in _score_chances(game, filled, upper, fifty, roll, need).items():
        named["score " + game.boxes[box]["name"]] = chance
    return named


# --- the bounds: the dice helping, the dice fighting ------------------------------------------


@cache
def _bound_turn(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, dice_help: bool
) -> int:
    """The points to come from a turn start when the dice pick every roll, the best for the
    player (``dice_help``) or the worst, and the player picks the action whose bound is
    largest."""
    if _done(game, filled):
        return 0
    pick = max if dice_help else min
    return pick(_bound_rolls(game, filled, upper, fifty, game.rerolls, dice_help).values())


@cache
def _bound_rolls(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int, dice_help: bool
) -> dict[Roll, int]:
    """Each roll's bound with ``rerolls_left`` to go: the player's best action, a keep
    worth what the dice pick among the rerolls."""
    pick = max if dice_help else min
    keeps: dict[Roll, int] = {}
    if rerolls_left:
        after = _bound_rolls(game, filled, upper, fifty, rerolls_left - 1, dice_help)
        keeps = {
            kept: pick(
                after[tuple(sorted(kept + rolled))] for rolled, _ in outcomes(game.dice - len(kept))
            )
            for kept in _keeps(game.dice)
        }
    bounds = {}
    for roll, _ in outcomes(game.dice):
        options = [keeps[kept] for kept in keeps_in(roll)] if rerolls_left else []
        for box, points in legal_points(game, filled, roll).items():
            gain, after_score = scored(game, filled, upper, fifty, roll, box, points)
            options.append(gain + _bound_turn(game, *after_score, dice_help))
        bounds[roll] = max(options)
    return bounds


# --- the mean-optimal policy's distribution -----------------------------------------------------


def _mean_choice(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, roll: Roll, rerolls_left: int
) -> Roll | int:
    """The mean-optimal action: the dice kept, or the box scored.

    The best by :func:`rulebook_brute_force.actions`, ties broken by the solver's documented
    rule (``memo_solver/games/yahtzee/analysis/policy.py``, read, not imported): values rounding to
    the same number of 1e-9 ticks are tied; among tied actions scoring now comes first, in the
    first box in scorecard order; else the keep holding the most dice, then the first keep
    in sorted order. Keeping every die when scoring is as good would reach the same box a
    roll later, so that choice never changes the distribution; two different actions tied
    in mean can give different chances of reaching a need, which is why the rule is fixed.
    """
    worth = actions(game.rules, filled, upper, fifty, roll, rerolls_left)
    candidates: list[tuple[tuple[int, int, int, Roll], Roll | int]] = []
    for box in legal_points(game, filled, roll):
        ticks = round(worth["score " + game.boxes[box]["name"]] * TIE_SCALE)
        candidates.append(((-ticks, 0, box, ()), box))
    if rerolls_left:
        for kept in keeps_in(roll):
            ticks = round(worth[keep_name(kept)] * TIE_SCALE)
            candidates.append(((-ticks, 1, -len(kept), kept), kept))
    return min(candidates, key=lambda candidate: candidate[0])[1]


def _mix(parts: Iterable[tuple[float, Distribution]], shift: int = 0) -> dict[int, float]:
    """The mixture of distributions with the given weights, every total moved by ``shift``."""
    mixed: defaultdict[int, float] = defaultdict(float)
    for weight, distribution in parts:
        for points, chance in distribution.items():
            mixed[points + shift] += weight * chance
    return dict(mixed)


@cache
def _mean_turn(game: Game, filled: frozenset[int], upper: int, fifty: bool) -> dict[int, float]:
    if _done(game, filled):
        return {0: 1.0}
    rolls = _mean_rolls(game, filled, upper, fifty, game.rerolls)
    return _mix((chance, rolls[roll]) for roll, chance in outcomes(game.dice))


@cache
def _mean_keep(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int, kept: Roll
) -> dict[int, float]:
    after = _mean_rolls(game, filled, upper, fifty, rerolls_left - 1)
    return _mix(
        (chance, after[tuple(sorted(kept + rolled))])
        for rolled, chance in outcomes(game.dice - len(kept))
    )


@cache
def _mean_rolls(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int
) -> dict[Roll, dict[int, float]]:
    """Each roll's distribution of points to come with ``rerolls_left`` to go, playing the
    mean-optimal action."""
    rolls = {}
    for roll, _ in outcomes(game.dice):
        choice = _mean_choice(game, filled, upper, fifty, roll, rerolls_left)
        if isinstance(choice, tuple):
            rolls[roll] = _mean_keep(game, filled, upper, fifty, rerolls_left, choice)
        else:
            points = legal_points(game, filled, roll)[choice]
            gain, after = scored(game, filled, upper, fifty, roll, choice, points)
            rolls[roll] = _mix([(1.0, _mean_turn(game, *after))], shift=gain)
    return rolls


# --- the interface the tests use ------------------------------------------------------------------


_CACHES = (
    _turn_chance,
    _score_chances,
    _keep_chances,
    _roll_chances,
    _bound_turn,
    _bound_rolls,
    _mean_turn,
    _mean_keep,
    _mean_rolls,
)


def forget() -> None:
    """Drop every cached chance, bound and distribution: a game of six dice caches hundreds
    of MB over its needs, which a run drawing many games must not keep."""
    for cached in _CACHES:
        cached.cache_clear()


def _checked(game: Game, filled: frozenset[int], dice: Roll) -> Roll:
    """The dice sorted, after the checks of :func:`rulebook_brute_force.actions`."""
    if len(dice) != game.dice:
        raise ValueError(f"expected {game.dice} dice, got {dice}")
    if _done(game, filled):
        raise ValueError("the game is over: every box is filled")
    return tuple(sorted(dice))


def chance(rules: Rules, filled: Iterable[int], upper: int, fifty: bool, need: int) -> float:
    """A turn start's best chance of at least ``need`` more points, bonuses included."""
    return _turn_chance(game_of(rules), frozenset(filled), upper, fifty, need)


def chance_actions(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll,
    rerolls_left: int,
    need: int,
) -> dict[str, float]:
    """Every legal action's chance mid-turn, under the names of
    :func:`rulebook_brute_force.actions` (``keep 1 2``, ``keep nothing``, ``score NAME``),
    playing for the need from there on."""
    game, filled = game_of(rules), frozenset(filled)
    roll = _checked(game, filled, dice)
    return _action_chances(game, filled, upper, fifty, roll, rerolls_left, need)


def state_chance(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None,
    rerolls_left: int | None,
    need: int,
) -> float:
    """Any state's chance: the turn start's before the roll, else the best action's."""
    if dice is None or rerolls_left is None:
        return chance(rules, filled, upper, fifty, need)
    return max(chance_actions(rules, filled, upper, fifty, dice, rerolls_left, need).values())


def _bound(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None,
    rerolls_left: int | None,
    dice_help: bool,
) -> int:
    game, filled = game_of(rules), frozenset(filled)
    if dice is None or rerolls_left is None:
        return _bound_turn(game, filled, upper, fifty, dice_help)
    roll = _checked(game, filled, dice)
    return _bound_rolls(game, filled, upper, fifty, rerolls_left, dice_help)[roll]


def most_points(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None = None,
    rerolls_left: int | None = None,
) -> int:
    """The most the open boxes can still give, bonuses included: every roll as the player
    would wish it. From a turn start unless ``dice`` and ``rerolls_left`` say mid-turn."""
    return _bound(rules, filled, upper, fifty, dice, rerolls_left, dice_help=True)


def least_points(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None = None,
    rerolls_left: int | None = None,
) -> int:
    """The least the open boxes are sure to give, bonuses included: the most a player can
    guarantee when every roll shows the worst dice for that player's keeps and scores. From
    a turn start unless ``dice`` and ``rerolls_left`` say mid-turn."""
    return _bound(rules, filled, upper, fifty, dice, rerolls_left, dice_help=False)


def mean_policy_distribution(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None = None,
    rerolls_left: int | None = None,
) -> dict[int, float]:
    """The exact distribution of the points to come (bonuses included) under the
    mean-optimal policy (ties: :func:`_mean_choice`), from a turn start unless ``dice`` and
    ``rerolls_left`` say mid-turn; mid-turn the policy's own choice is played first."""
    game, filled = game_of(rules), frozenset(filled)
    if dice is None or rerolls_left is None:
        return _mean_turn(game, filled, upper, fifty)
    roll = _checked(game, filled, dice)
    return _mean_rolls(game, filled, upper, fifty, rerolls_left)[roll]


def mean_policy_chance(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None,
    rerolls_left: int | None,
    need: int,
) -> float:
    """P(points to come >= ``need``) under the mean-optimal policy, like :func:`state_chance`
    for any state."""
    distribution = mean_policy_distribution(rules, filled, upper, fifty, dice, rerolls_left)
    return sum((chance for points, chance in distribution.items() if points >= need), 0.0)
