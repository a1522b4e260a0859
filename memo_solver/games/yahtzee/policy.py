"""The optimal strategy as choices, and where it takes the dice within one turn.

Values say how good a state is; analysts also need *which* action the strategy takes, so
that a simulation plays it and the exact score distribution follows it. Ties between
equally good actions (values equal to 1e-9: :func:`tie`) are broken by one rule, the same
as in :mod:`memo_solver.games.yahtzee.advice`: score now before rerolling; among keeps, the
one holding more dice, then the first in keep order; among boxes, the first in scorecard
order. Keeping all five dice when scoring now is as good leads to the same box one roll
later, so both give the same distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import factorial

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.dice import (
    DICE,
    FACES,
    KEEP_COUNTS,
    KEEP_OF_ROLL,
    N_KEEPS,
    N_ROLLS,
    PARENTS,
    ROLL_COUNTS,
    SIZE_OFFSETS,
)
from memo_solver.games.yahtzee.rules import FloatArray, RuleSet
from memo_solver.games.yahtzee.turn import Guideposts, TurnTables, turn_tables

IntArray = npt.NDArray[np.int64]
TIE_DECIMALS = 9


def _transition() -> FloatArray:
    """(462, 252): the chance of each roll after keeping each keep and rolling the rest."""
    rest = ROLL_COUNTS[None, :, :] - KEEP_COUNTS[:, None, :]  # dice to roll, per face
    possible = np.all(rest >= 0, axis=2)
    rolled = DICE - KEEP_COUNTS.sum(axis=1)
    fact = np.array([factorial(n) for n in range(DICE + 1)], dtype=np.float64)
    ways = fact[rolled][:, None] / np.prod(fact[np.clip(rest, 0, DICE)], axis=2)
    return np.where(possible, ways / float(FACES) ** rolled[:, None], 0.0)


TRANSITION = _transition()
FIRST_ROLL = TRANSITION[0]
"""(252,): the chance of each roll of all five dice."""
_KEEP_SIZE = KEEP_COUNTS.sum(axis=1)


@dataclass(frozen=True)
class TurnPolicy:
    """The strategy's choices inside one turn, for B guideposts of one block."""

    tables: TurnTables
    keep: list[IntArray]
    """keep[n] (252, B): the keep chosen for each roll with n rerolls left (n >= 1)."""
    box: IntArray
    """(252, B): with no rerolls left, the position in ``tables.boxes`` of the box chosen."""


def tie(values: FloatArray) -> FloatArray:
    """The tie rule's key: values equal to 1e-9 count as tied. Equal choices reached by
    different float sums differ in the last bit, and the choice must not depend on that;
    advice ranks by the same key, so that it names the move the strategy plays."""
    rounded: FloatArray = np.round(values, TIE_DECIMALS)
    return rounded


_RANK = _KEEP_SIZE * N_KEEPS + (N_KEEPS - 1 - np.arange(N_KEEPS))
_RANKS = (DICE + 1) * N_KEEPS
_MAX_TICKS = np.iinfo(np.int64).max // _RANKS


def choose_keeps(keeps: FloatArray) -> IntArray:
    """(252, B) for each roll the best keep inside it, by the tie rule.

    Among the keeps inside a roll: the better value to 1e-9, then more dice, then the
    first keep. Rounded values are whole numbers of 1e-9 ticks, so one integer
    ``ticks * 2772 + size * 462 + (461 - keep)`` orders keeps exactly by that rule, and
    the best keep inside each roll is a running max over the parents, as in
    :func:`memo_solver.games.yahtzee.turn.best_keep` (0.3 ms for 100 guideposts, 15x faster than
    comparing values, then sizes).
    """
    ticks = np.rint(tie(keeps) * 10.0**TIE_DECIMALS)
    if not np.all((ticks >= 0) & (ticks < _MAX_TICKS)):
        raise ValueError("keep values out of the range the integer tie keys can order")
    key = ticks.astype(np.int64) * _RANKS + _RANK[:, None]
    for size in range(1, DICE + 1):
        lo, hi = SIZE_OFFSETS[size], SIZE_OFFSETS[size + 1]
        parents = key.take(PARENTS[size], axis=0)
        np.maximum(key[lo:hi], np.maximum.reduce(parents, axis=0), out=key[lo:hi])
    chosen: IntArray = (N_KEEPS - 1) - key[KEEP_OF_ROLL:] % N_KEEPS
    return chosen


def turn_policy(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
) -> TurnPolicy:
    tables = turn_tables(rules, filled, successor, guideposts, rules.rerolls)
    keep = [np.empty((0, 0), dtype=np.int64)]
    keep += [choose_keeps(tables.keeps[n]) for n in range(1, rules.rerolls + 1)]
    box: IntArray = tie(tables.scores).argmax(axis=0)  # the first best box
    return TurnPolicy(tables, keep, box)


def outcomes(policy: TurnPolicy, rolls: FloatArray, rerolls_left: int) -> FloatArray:
    """(C_open, 252, B): the chance that the turn ends scoring each roll in each open box.

    ``rolls`` (252, B) is the chance of each roll with ``rerolls_left`` rerolls to go (the
    first roll's chances at the start of a turn, or a single roll for a state with dice).
    """
    width = rolls.shape[1]
    columns = np.arange(width)[None, :]
    for n in range(rerolls_left, 0, -1):
        flat = (policy.keep[n] * width + columns).ravel()
        kept = np.bincount(flat, weights=rolls.ravel(), minlength=N_KEEPS * width)
        rolls = TRANSITION.T @ kept.reshape(N_KEEPS, width)
    ends = np.zeros((len(policy.tables.boxes), N_ROLLS, width))
    roll_index = np.arange(N_ROLLS)[:, None]
    ends[policy.box, roll_index, columns] = rolls
    return ends
