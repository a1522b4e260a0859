"""The math of one turn, vectorized over rolls, keeps and guideposts at once.

A *guidepost* is a turn-start state ``(filled boxes, upper total u, yahtzee-bonus flag y)``.
Every function here works on a batch of B guideposts that share one set of filled boxes,
laid out as ``(rolls or keeps, B)`` so that each size level of the keep lattice is a gather
of whole contiguous rows. The block pass takes all ``n_upper x n_bonus`` guideposts of a
block at once; advice for one state is the same code with B = 1.

Values exclude points already banked and include every future bonus. The upper bonus is
banked by the score that reaches the threshold, so a block whose upper total is already at
the threshold no longer counts it, and the block with every box filled is all zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.dice import FACES, Dice
from memo_solver.games.yahtzee.rules import FloatArray, RuleSet
from memo_solver.games.yahtzee.scoring import extra_bonus, land, points

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class Guideposts:
    """B turn-start states of one block: their upper levels (capped) and bonus flags.

    It also keeps the gather indices the scoring step needs, computed once: every block
    with the same upper boxes and Yahtzee box filled shares one instance.
    """

    rules: RuleSet
    upper: IntArray
    bonus: IntArray

    @classmethod
    def reachable(cls, rules: RuleSet, filled: int) -> Guideposts:
        """The block's guideposts that some game reaches (51% of all under Hasbro rules).

        The others (an upper total the filled boxes cannot make, a bonus flag while the
        Yahtzee box is open) are never asked for: the state parser rejects them.
        """
        upper_mask = sum(1 << c for c, f in enumerate(rules.upper_faces) if f and filled >> c & 1)
        yahtzee = rules.yahtzee_box
        yahtzee_filled = yahtzee is not None and bool(filled >> yahtzee & 1)
        return _reachable(rules, upper_mask, yahtzee_filled)

    @classmethod
    def one(cls, rules: RuleSet, upper: int, bonus: int) -> Guideposts:
        """A single guidepost (advice for one state), kept with its gather indices: a rule
        set has at most a few hundred."""
        return _one(rules, upper, bonus)

    @cached_property
    def flat(self) -> IntArray:
        """(B,) each guidepost's index in a raveled block: where a successor's value sits."""
        flat: IntArray = self.upper * self.rules.n_bonus_levels + self.bonus
        return flat

    def landing(self, box: int) -> tuple[IntArray, IntArray, FloatArray]:
        """Scoring ``box``, by classes of rolls with equal points: the class of each roll
        (n_rolls,), and per class where each guidepost lands in the successor block and what
        it banks (the points and the upper bonus; the Joker and the +100 come after, on the
        five-of-a-kind rolls alone), each (K, B) or, where it is the same for all, (1, B)
        or (K, 1)."""
        cached = self._landings.get(box)
        if cached is None:
            classes, index, banked = _box_landing(self.rules, box)
            index = index[:, self.flat]
            if banked.shape[1] > 1:
                banked = banked[:, self.flat]
            cached = self._landings[box] = (classes, index, banked)
        return cached

    @cached_property
    def _landings(self) -> dict[int, tuple[IntArray, IntArray, FloatArray]]:
        return {}

    @cached_property
    def extra(self) -> FloatArray:
        """(B,) the +100 each guidepost banks for a five of a kind."""
        extra: FloatArray = extra_bonus(self.rules, True, self.bonus).astype(np.float64)
        return extra


@lru_cache(maxsize=256)
def _box_landing(rules: RuleSet, box: int) -> tuple[IntArray, IntArray, FloatArray]:
    """:meth:`Guideposts.landing` for every guidepost of a block, reachable or not: the
    rolls of a box fall into a few classes of equal points (six for an upper box: the
    count of its face), so a turn moves a few rows of successor values, not every roll. Outside
    the upper section every class lands on one row (the Yahtzee box: two, for the flag)
    and banks its points wherever it starts, so the rows are kept once."""
    scores, classes = np.unique(rules.scores[box].astype(np.int64), return_inverse=True)
    levels = np.arange(rules.n_upper_levels * rules.n_bonus_levels)
    upper, flag = np.divmod(levels, rules.n_bonus_levels)
    landing = land(rules, box, scores[:, None], False, upper[None, :], flag[None, :])
    index: IntArray = landing.upper * rules.n_bonus_levels + landing.flag
    banked: FloatArray = (scores[:, None] + landing.upper_bonus).astype(np.float64)
    if (index == index[:1]).all():
        index = index[:1]
    if (banked == banked[:, :1]).all():
        banked = banked[:, :1]
    return classes.astype(np.int64).ravel(), index, banked


@lru_cache(maxsize=1024)
def _reachable(rules: RuleSet, upper_mask: int, yahtzee_filled: bool) -> Guideposts:
    levels = rules.reachable_upper(upper_mask)
    flags = rules.n_bonus_levels if yahtzee_filled else 1
    return Guideposts(
        rules, upper=np.repeat(levels, flags), bonus=np.tile(np.arange(flags), levels.size)
    )


@lru_cache(maxsize=4096)
def _one(rules: RuleSet, upper: int, bonus: int) -> Guideposts:
    return Guideposts(rules, upper=np.array([upper]), bonus=np.array([bonus]))


def score_choices(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
) -> tuple[list[int], FloatArray, FloatArray]:
    """The value of scoring each roll in each open box: points, bonuses and what follows.

    ``successor(c)`` is the block (n_upper, n_bonus) reached by filling box ``c``. Returns
    the open boxes, their points (C_open, n_rolls) and the values (C_open, n_rolls, B), -inf where
    the Joker forbids the box.
    """
    boxes = rules.open_boxes(filled)
    table = points(rules, filled, boxes)
    out = np.empty((len(boxes), rules.universe.n_rolls, guideposts.upper.size))
    for i, box in enumerate(boxes):
        # Each class of rolls (equal points) banks its points and any upper bonus and moves
        # each guidepost as much: a few rows of the successor, then one gather by class.
        classes, index, banked = guideposts.landing(box)
        landed = successor(box).ravel().take(index) + banked
        landed.take(classes, axis=0, out=out[i])
    # The Joker and the +100 bonus touch only the six all-alike rolls.
    alike = rules.universe.alike_rolls
    adjust = table[:, alike] - rules.scores[boxes][:, alike]
    extra = guideposts.extra
    if extra.any():
        out[:, alike, :] += adjust[:, :, None] + extra[None, None, :]
    elif rules.joker != "none":
        out[:, alike, :] += adjust[:, :, None]
    return boxes, table, out


def keep_values(dice: Dice, rolls: FloatArray) -> FloatArray:
    """(n_keeps, B) the value of each keep, given the value (n_rolls, B) of each roll after it.

    A keep of s dice is the average of its six children with one more die, so the whole
    lattice costs 6 row-gathers per keep instead of a 252-wide expectation.
    """
    values = np.empty((dice.n_keeps, rolls.shape[1]))
    values[dice.keep_of_roll :] = rolls
    for size in range(dice.count - 1, -1, -1):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        children = values.take(dice.children[size], axis=0)  # take: 2x faster than indexing
        np.multiply(np.add.reduce(children, axis=0), 1.0 / FACES, out=values[lo:hi])
    return values


def best_keep(dice: Dice, keeps: FloatArray) -> FloatArray:
    """(n_rolls, B) each roll's value with the best keep inside it.

    The best sub-multiset of a keep is itself or the best of one of its parents, so a max
    over at most six parents per keep, size by size, replaces a 32-way max per roll.
    """
    best = keeps.copy()
    for size in range(1, dice.count + 1):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        parents = best.take(dice.parents[size], axis=0)
        np.maximum(best[lo:hi], np.maximum.reduce(parents, axis=0), out=best[lo:hi])
    return best[dice.keep_of_roll :]


@dataclass(frozen=True)
class TurnTables:
    """Every value inside one turn for B guideposts: the per-turn local memo."""

    dice: Dice
    boxes: list[int]
    points: FloatArray
    """(C_open, n_rolls): the points of each roll in each open box, -inf where illegal."""
    scores: FloatArray
    """(C_open, n_rolls, B): the value of scoring each roll in each open box."""
    rolls: list[FloatArray]
    """rolls[n] (n_rolls, B): a roll's value with n rerolls left."""
    keeps: list[FloatArray]
    """keeps[n] (n_keeps, B): a keep's value when it is rerolled with n - 1 rerolls left
    after; keeps[0] is unused (no keep decision without a reroll)."""

    @property
    def start(self) -> FloatArray:
        """(B,) the value before the first roll."""
        start: FloatArray = keep_values(self.dice, self.rolls[-1])[0]
        return start


def turn_tables(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
    rerolls: int,
) -> TurnTables:
    dice = rules.universe
    boxes, table, scores = score_choices(rules, filled, successor, guideposts)
    rolls = [scores.max(axis=0)]
    keeps: list[FloatArray] = [np.empty((0, 0))]
    for _ in range(rerolls):
        keeps.append(keep_values(dice, rolls[-1]))
        rolls.append(best_keep(dice, keeps[-1]))
    return TurnTables(dice, boxes, table, scores, rolls, keeps)


def solve_block(rules: RuleSet, filled: int, successors: Mapping[int, FloatArray]) -> FloatArray:
    """The values (n_upper, n_bonus) of every guidepost with these boxes filled.

    Unreachable guideposts hold NaN: nothing reads them, and NaN makes a bug loud.
    """
    block = np.full(rules.block_shape, np.nan)
    guideposts = Guideposts.reachable(rules, filled)
    if filled == rules.all_filled:
        block[guideposts.upper, guideposts.bonus] = 0.0
        return block
    tables = turn_tables(
        rules, filled, lambda box: successors[filled | 1 << box], guideposts, rules.rerolls
    )
    block[guideposts.upper, guideposts.bonus] = tables.start
    return block
