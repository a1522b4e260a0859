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
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.dice import Dice
from memo_solver.games.yahtzee.rules import FloatArray, RuleSet
from memo_solver.games.yahtzee.turn import Guideposts, TurnTables, turn_tables

IntArray = npt.NDArray[np.int64]
TIE_DECIMALS = 9


@dataclass(frozen=True)
class TurnPolicy:
    """The strategy's choices inside one turn, for B guideposts of one block."""

    tables: TurnTables
    keep: list[IntArray]
    """keep[n] (n_rolls, B): the keep chosen for each roll with n rerolls left (n >= 1)."""
    box: IntArray
    """(n_rolls, B): with no rerolls left, the position in ``tables.boxes`` of the box chosen."""


def tie(values: FloatArray) -> FloatArray:
    """The tie rule's key: values equal to 1e-9 count as tied. Equal choices reached by
    different float sums differ in the last bit, and the choice must not depend on that;
    advice ranks by the same key, so that it names the move the strategy plays."""
    rounded: FloatArray = np.round(values, TIE_DECIMALS)
    return rounded


@lru_cache(maxsize=8)
def _ranks(dice: Dice) -> tuple[IntArray, int, int]:
    """Each keep's rank by the tie rule (more dice, then first), the number of ranks, and
    the most value ticks an int64 key can hold beside them."""
    n = dice.n_keeps
    rank: IntArray = dice.keep_sizes * n + (n - 1 - np.arange(n))
    ranks = (dice.count + 1) * n
    return rank, ranks, int(np.iinfo(np.int64).max // ranks)


def choose_keeps(dice: Dice, keeps: FloatArray) -> IntArray:
    """(n_rolls, B) for each roll the best keep inside it, by the tie rule.

    Among the keeps inside a roll: the better value to 1e-9, then more dice, then the
    first keep. Rounded values are whole numbers of 1e-9 ticks, so one integer
    ``ticks * ranks + size * n_keeps + (n_keeps - 1 - keep)`` orders keeps exactly by that
    rule, and the best keep inside each roll is a running max over the parents, as in
    :func:`memo_solver.games.yahtzee.turn.best_keep` (0.3 ms for 100 guideposts, 15x faster than
    comparing values, then sizes).
    """
    rank, ranks, max_ticks = _ranks(dice)
    ticks = np.rint(tie(keeps) * 10.0**TIE_DECIMALS)
    if not np.all((ticks >= 0) & (ticks < max_ticks)):
        raise ValueError("keep values out of the range the integer tie keys can order")
    key = ticks.astype(np.int64) * ranks + rank[:, None]
    for size in range(1, dice.count + 1):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        parents = key.take(dice.parents[size], axis=0)
        np.maximum(key[lo:hi], np.maximum.reduce(parents, axis=0), out=key[lo:hi])
    chosen: IntArray = (dice.n_keeps - 1) - key[dice.keep_of_roll :] % dice.n_keeps
    return chosen


def turn_policy(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
) -> TurnPolicy:
    tables = turn_tables(rules, filled, successor, guideposts, rules.rerolls)
    keep = [np.empty((0, 0), dtype=np.int64)]
    keep += [choose_keeps(rules.universe, tables.keeps[n]) for n in range(1, rules.rerolls + 1)]
    box: IntArray = tie(tables.scores).argmax(axis=0)  # the first best box
    return TurnPolicy(tables, keep, box)


def outcomes(policy: TurnPolicy, rolls: FloatArray, rerolls_left: int) -> FloatArray:
    """(C_open, n_rolls, B): the chance that the turn ends scoring each roll in each open box.

    ``rolls`` (n_rolls, B) is the chance of each roll with ``rerolls_left`` rerolls to go (the
    first roll's chances at the start of a turn, or a single roll for a state with dice).
    """
    dice = policy.tables.dice
    width = rolls.shape[1]
    columns = np.arange(width)[None, :]
    for n in range(rerolls_left, 0, -1):
        flat = (policy.keep[n] * width + columns).ravel()
        kept = np.bincount(flat, weights=rolls.ravel(), minlength=dice.n_keeps * width)
        rolls = dice.transition.T @ kept.reshape(dice.n_keeps, width)
    ends = np.zeros((len(policy.tables.boxes), dice.n_rolls, width))
    roll_index = np.arange(dice.n_rolls)[:, None]
    ends[policy.box, roll_index, columns] = rolls
    return ends
