"""The optimal strategy as choices, and where it takes the dice within one turn.

Values say how good a state is; analysts also need *which* action the strategy takes, so
that a simulation plays it and the exact score distribution follows it. Ties between
equally good actions (values equal to 1e-9: :mod:`memo_solver.games.yahtzee.rules.ties`) are
broken by one rule, the same as in :mod:`memo_solver.games.yahtzee.advice.mean_advice`: score now
before rerolling; among keeps, the
one holding more dice, then the first in keep order; among boxes, the first in scorecard
order. Keeping all five dice when scoring now is as good leads to the same box one roll
later, so both give the same distribution. The target policy (:func:`target_policy`: the
best chance of a need) ranks by the chance's ticks first and breaks its ties by this whole
order of the mean values, so that among equally likely actions it plays the mean policy's.

The choices and the turn's mass are loops over the dice lattices of
:class:`memo_solver.games.yahtzee.rules.dice.Dice`, compiled
(:func:`memo_solver.core.compiled.jit`): a block's policy is built thousands of times by a
simulation and the exact distribution, where the array steps they replace cost more than the turn's
values themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memo_solver.core.compiled import jit
from memo_solver.games.yahtzee.rules.dice import FACES, Dice
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.rules.ties import TIE_SCALE
from memo_solver.games.yahtzee.solve import kernel
from memo_solver.games.yahtzee.solve.turn import (
    Batch,
    Guideposts,
    TurnTables,
    kernel_tables,
    turn_tables,
)

IntArray = npt.NDArray[np.int64]
SmallArray = npt.NDArray[np.uint8]


@dataclass(frozen=True)
class TurnPolicy:
    """The strategy's choices inside one turn, for B guideposts of one block."""

    tables: TurnTables
    keep: list[IntArray]
    """keep[n] (n_rolls, B): the keep chosen for each roll with n rerolls left (n >= 1)."""
    box: IntArray
    """(n_rolls, B): with no rerolls left, the position in ``tables.boxes`` of the box chosen."""


@lru_cache(maxsize=8)
def _ranks(dice: Dice) -> tuple[IntArray, IntArray, int]:
    """Each keep's rank by the tie rule (higher wins: more dice, then the first keep), the
    keep of each rank, and the bits a rank takes in an integer key."""
    order: IntArray = np.lexsort((-np.arange(dice.n_keeps), dice.keep_sizes))  # worst first
    rank = np.empty(dice.n_keeps, dtype=np.int64)
    rank[order] = np.arange(dice.n_keeps)
    return rank, order.astype(np.int64), (dice.n_keeps - 1).bit_length()


@jit
def _best_keeps(
    keeps: FloatArray,
    n: int,
    rank: IntArray,
    keep_of_rank: IntArray,
    bits: int,
    parents: IntArray,
    n_parents: IntArray,
    key: IntArray,
    chosen: IntArray,
) -> int:
    """chosen[r, t]: the best keep inside roll r for each of the first ``n`` lanes, from
    the keeps' values ``keeps`` (n_keeps, >= n); returns how many values lie outside the
    ticks a key can hold (the choices are wrong unless none does).

    Each keep's key is ``ticks << bits | rank``, so one integer max orders keeps by value,
    then size, then first; walking the keeps smallest first, each keep's best is itself or
    its parents' best (one die fewer, done before). An integer max has no branch to
    mispredict, and a mask decodes the rank (comparing ticks then ranks, or decoding with
    a division, ran 5x slower)."""
    n_keeps = keeps.shape[0]
    first_roll = n_keeps - chosen.shape[0]
    low = (1 << bits) - 1
    outside = 0
    for k in range(n_keeps):
        outside += _own_keys(keeps, k, n, rank[k], bits, key)
        for p in range(n_parents[k]):
            parent = parents[k, p]
            for t in range(n):
                key[k, t] = max(key[k, t], key[parent, t])
    for r in range(n_keeps - first_roll):
        for t in range(n):
            chosen[r, t] = keep_of_rank[key[first_roll + r, t] & low]
    return outside


@jit
def _own_keys(keeps: FloatArray, k: int, n: int, own: int, bits: int, key: IntArray) -> int:
    """key[k, t] = keep k's own tie key ``ticks << bits | own`` for the first ``n`` lanes;
    returns how many values lie outside the ticks a key can hold."""
    limit = float(np.iinfo(np.int64).max >> bits)
    outside = 0
    for t in range(n):
        tick = np.rint(keeps[k, t] * TIE_SCALE)
        outside += not (0.0 <= tick < limit)
        key[k, t] = np.int64(tick) << bits | own
    return outside


_OUT_OF_RANGE = "keep values out of the range the integer tie keys can order"


def choose_keeps(dice: Dice, keeps: FloatArray) -> IntArray:
    """(n_rolls, B) for each roll the best keep inside it, by the tie rule: among the keeps
    inside a roll, the better value to 1e-9, then more dice, then the first keep."""
    width = keeps.shape[1]
    parents, n_parents = dice.parent_rows
    key = np.empty((dice.n_keeps, width), dtype=np.int64)
    chosen = np.empty((dice.n_rolls, width), dtype=np.int64)
    values = np.ascontiguousarray(keeps, dtype=np.float64)
    if _best_keeps(values, width, *_ranks(dice), parents, n_parents, key, chosen):
        raise ValueError(_OUT_OF_RANGE)
    return chosen


@jit
def _best_boxes(scores: FloatArray, n: int, chosen: IntArray) -> None:
    """chosen[r, t]: the first box with the most ticks for roll r, the first ``n`` lanes.
    Reading ``scores`` once is what this costs: a branch-free select ran slower."""
    n_boxes, n_rolls = scores.shape[0], scores.shape[1]
    best = np.empty(n)
    for r in range(n_rolls):
        for t in range(n):
            best[t] = np.rint(scores[0, r, t] * TIE_SCALE)
            chosen[r, t] = 0
        for i in range(1, n_boxes):
            for t in range(n):
                tick = np.rint(scores[i, r, t] * TIE_SCALE)
                if tick > best[t]:
                    best[t] = tick
                    chosen[r, t] = i


def turn_policy(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
) -> TurnPolicy:
    tables = turn_tables(rules, filled, successor, guideposts, rules.rerolls)
    keep = [np.empty((0, 0), dtype=np.int64)]
    keep += [choose_keeps(rules.universe, tables.keeps[n]) for n in range(1, rules.rerolls + 1)]
    box = np.empty((rules.universe.n_rolls, guideposts.upper.size), dtype=np.int64)
    _best_boxes(tables.scores, box.shape[1], box)
    return TurnPolicy(tables, keep, box)


# --- the target policy: the best chance of a need, ties to the mean -------------------------


@jit
def _mean_keys(keeps: FloatArray, rank: IntArray, bits: int, key: IntArray) -> int:
    """key[k, g]: keep k's own tie key under the mean values of guidepost g; returns what
    :func:`_own_keys` counts."""
    outside = 0
    for k in range(keeps.shape[0]):
        outside += _own_keys(keeps, k, keeps.shape[1], rank[k], bits, key)
    return outside


@jit
def _best_target_keeps(
    chances: FloatArray,
    n: int,
    mean_key: IntArray,
    guide: IntArray,
    keep_of_rank: IntArray,
    bits: int,
    parents: IntArray,
    n_parents: IntArray,
    tick: IntArray,
    key: IntArray,
    chosen: IntArray,
) -> int:
    """chosen[r, t]: the keep inside roll r with the best chance for lane t (its chance's
    ticks ``tick``), the tied ones ranked by the mean's own keys of lane t's guidepost
    ``guide[t]`` (``mean_key``, :func:`_mean_keys`): the mean policy's choice among them.
    The lattice walk of :func:`_best_keeps` on a pair of keys; returns how many chances lie
    outside [0, 1]."""
    n_keeps = chances.shape[0]
    first_roll = n_keeps - chosen.shape[0]
    low = (1 << bits) - 1
    outside = 0
    for k in range(n_keeps):
        for t in range(n):
            ticks = np.rint(chances[k, t] * TIE_SCALE)
            outside += not (0.0 <= ticks <= TIE_SCALE)
            tick[k, t] = np.int64(ticks)
            key[k, t] = mean_key[k, guide[t]]
        for p in range(n_parents[k]):
            parent = parents[k, p]
            for t in range(n):
                ahead = (tick[parent, t] > tick[k, t]) | (
                    (tick[parent, t] == tick[k, t]) & (key[parent, t] > key[k, t])
                )
                tick[k, t] = tick[parent, t] if ahead else tick[k, t]
                key[k, t] = key[parent, t] if ahead else key[k, t]
    for r in range(n_keeps - first_roll):
        for t in range(n):
            chosen[r, t] = keep_of_rank[key[first_roll + r, t] & low]
    return outside


@jit
def _best_target_boxes(
    scores: FloatArray, n: int, mean_scores: FloatArray, guide: IntArray, chosen: IntArray
) -> None:
    """chosen[r, t]: the box with the best chance for roll r and lane t, the tied ones
    ranked by the mean values of lane t's guidepost (``mean_scores``), then the first: the
    mean policy's choice among them (:func:`_best_boxes`)."""
    n_boxes, n_rolls = scores.shape[0], scores.shape[1]
    best = np.empty(n)
    best_mean = np.empty(n)
    for r in range(n_rolls):
        for t in range(n):
            best[t] = np.rint(scores[0, r, t] * TIE_SCALE)
            best_mean[t] = np.rint(mean_scores[0, r, guide[t]] * TIE_SCALE)
            chosen[r, t] = 0
        for i in range(1, n_boxes):
            for t in range(n):
                tick = np.rint(scores[i, r, t] * TIE_SCALE)
                mean = np.rint(mean_scores[i, r, guide[t]] * TIE_SCALE)
                if tick > best[t] or (tick == best[t] and mean > best_mean[t]):
                    best[t], best_mean[t], chosen[r, t] = tick, mean, i


def target_policy(
    rules: RuleSet,
    filled: int,
    mean: TurnPolicy,
    guideposts: Guideposts,
    successor: Callable[[int], FloatArray],
    guide: IntArray,
    steps: IntArray,
    width: int,
) -> TurnPolicy:
    """The target policy's choices inside one turn, for lanes of the chance objective.

    Lane l is guidepost ``guide[l]`` of ``guideposts`` (the B guideposts ``mean`` was built
    for: :func:`turn_policy` with the mean values) with need ``steps[l] + 1``; ``successor``
    gives each open box's block of the chance objective at ``width`` needs
    (:mod:`memo_solver.games.yahtzee.solve.need`). Each choice maximises the chance of the lane's
    need; actions whose chances round to the same 1e-9 tick are ranked by the mean policy
    (its value to 1e-9, then its tie rule), so the choice among them is the mean policy's:
    the rule of :mod:`memo_solver.games.yahtzee.advice.need_advice`. Needs out of the table (n <= 0,
    or past what the open boxes can give) are the caller's: every action ties there, so the
    mean policy itself plays them. The tables returned are the chances'."""
    lanes = Guideposts(rules, guideposts.upper[guide], guideposts.bonus[guide])
    tables = turn_tables(
        rules, filled, successor, lanes, rules.rerolls, steps=steps, width=width, shift=True
    )
    dice = rules.universe
    rank, keep_of_rank, bits = _ranks(dice)
    parents, n_parents = dice.parent_rows
    count = guide.size
    tick = np.empty((dice.n_keeps, count), dtype=np.int64)
    key = np.empty((dice.n_keeps, count), dtype=np.int64)
    mean_key = np.empty((dice.n_keeps, guideposts.upper.size), dtype=np.int64)
    keep = [np.empty((0, 0), dtype=np.int64)]
    outside = 0
    for n in range(1, rules.rerolls + 1):
        chosen = np.empty((dice.n_rolls, count), dtype=np.int64)
        outside += _mean_keys(mean.tables.keeps[n], rank, bits, mean_key)
        outside += _best_target_keeps(
            tables.keeps[n], count, mean_key, guide, keep_of_rank, bits, parents, n_parents,
            tick, key, chosen,
        )  # fmt: skip
        keep.append(chosen)
    if outside:
        raise ValueError(_OUT_OF_RANGE)
    box = np.empty((dice.n_rolls, count), dtype=np.int64)
    _best_target_boxes(tables.scores, count, mean.tables.scores, guide, box)
    return TurnPolicy(tables, keep, box)


# --- many blocks' choices at once, without their values (the simulation) ---------------------


@jit
def _choose_blocks(
    open_boxes: IntArray,
    n_open: IntArray,
    succ_rows: IntArray,
    successors: FloatArray,
    lanes: IntArray,
    n_lanes: IntArray,
    adjust: FloatArray,
    joker_row: IntArray,
    extra: FloatArray,
    roll_class: IntArray,
    n_classes: IntArray,
    land_index: IntArray,
    land_banked: FloatArray,
    alike: IntArray,
    children: IntArray,
    parents: IntArray,
    n_parents: IntArray,
    rank: IntArray,
    keep_of_rank: IntArray,
    bits: int,
    keep_codes: SmallArray,
    rerolls: int,
    offsets: IntArray,
    out: SmallArray,
) -> int:
    """Block b's choices into ``out[offsets[b]:]`` as (rerolls + 1, n_rolls, n_lanes[b]):
    [0] the box (its position among the open ones), [n] the keep's code (``keep_codes``
    per roll and keep) with n rerolls left. The kernel's steps of :func:`turn_policy`, the
    choices read from its work area as each step leaves it; returns what
    :func:`_best_keeps` counts."""
    n_keeps, n_rolls = parents.shape[0], roll_class.shape[1]
    first_roll = n_keeps - n_rolls
    width = lanes.shape[1]
    n_boxes = open_boxes.shape[1]
    values = kernel.line_aligned((n_boxes, max(1, n_classes.max()), width), np.float64)
    scores = kernel.line_aligned((n_boxes, n_rolls, width), np.float64)
    work = kernel.line_aligned((n_keeps, width), np.float64)
    key = kernel.line_aligned((n_keeps, width), np.int64)
    chosen = kernel.line_aligned((n_rolls, width), np.int64)
    steps = np.zeros(width, dtype=np.int64)
    outside = 0
    for b in range(open_boxes.shape[0]):
        n, count = n_lanes[b], n_open[b]
        boxes, rows, levels = open_boxes[b, :count], succ_rows[b, :count], lanes[b]
        block = out[offsets[b] : offsets[b + 1]].reshape((rerolls + 1, n_rolls, n))
        kernel.landing_values(
            boxes, rows, successors, n_classes, land_index, land_banked, levels, steps, n, 1,
            False, values,
        )  # fmt: skip
        kernel.score_rolls(
            boxes, rows, successors, roll_class, land_index, land_banked, alike,
            adjust[joker_row[b]], extra, levels, steps, n, 1, False, values, work, first_roll,
            scores[:count],
        )  # fmt: skip
        _best_boxes(scores[:count], n, chosen)
        for r in range(n_rolls):
            for t in range(n):
                block[0, r, t] = chosen[r, t]
        for left in range(1, rerolls + 1):
            kernel.keep_values(work, children, n)
            outside += _best_keeps(
                work, n, rank, keep_of_rank, bits, parents, n_parents, key, chosen
            )
            for r in range(n_rolls):
                for t in range(n):
                    block[left, r, t] = keep_codes[r, chosen[r, t]]
            kernel.best_keep(work, parents, n_parents, n)
    return outside


def block_choices(
    rules: RuleSet,
    masks: Sequence[int],
    successor: Callable[[int], FloatArray],
    keep_codes: SmallArray,
    levels: Sequence[IntArray],
) -> list[SmallArray]:
    """Each block's choices at its guideposts ``levels[b]`` (reachable ones, as raveled
    (upper, bonus) indices), (rerolls + 1, n_rolls, B) bytes: [0] the position of the box
    scored with no reroll left, [n] with n rerolls left the keep chosen, as
    ``keep_codes[roll, keep]`` (the caller's one-byte code of a keep inside a roll). The
    same choices as :func:`turn_policy`'s, in one compiled call for all the blocks: a
    block's turn tables and the Python around them cost more than its choices
    (``successor`` gives a block by its filled mask)."""
    tables = kernel_tables(rules)
    dice = rules.universe
    batch = Batch.of(rules, masks, successor)
    if not batch.n_open.all():
        raise ValueError("a block with every box filled has no turn to choose in")
    n_lanes = np.array([flat.size for flat in levels], dtype=np.int64)
    lanes = np.zeros((batch.filled.size, max(1, int(n_lanes.max(initial=0)))), dtype=np.int64)
    for b, flat in enumerate(levels):
        lanes[b, : flat.size] = flat
    offsets = np.zeros(batch.filled.size + 1, dtype=np.int64)
    np.cumsum((rules.rerolls + 1) * dice.n_rolls * n_lanes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    outside = _choose_blocks(
        batch.open_boxes, batch.n_open, batch.succ_rows, batch.successors, lanes, n_lanes,
        tables.adjust, batch.joker, tables.extra, tables.roll_class, tables.n_classes,
        tables.land_index, tables.land_banked, tables.alike, tables.children, tables.parents,
        tables.n_parents, *_ranks(dice), keep_codes, rules.rerolls, offsets, out,
    )  # fmt: skip
    if outside:
        raise ValueError(_OUT_OF_RANGE)
    return [
        out[offsets[b] : offsets[b + 1]].reshape(rules.rerolls + 1, dice.n_rolls, -1)
        for b in range(batch.filled.size)
    ]


# --- where the choices take the dice (the exact distribution) --------------------------------


@jit
def _reroll(rolls: FloatArray, keep: IntArray, children: IntArray, work: FloatArray) -> None:
    """``rolls`` (n_rolls, B) becomes the chances of the rolls after one reroll, ``keep``
    the keep chosen in each roll. Each keep's mass goes to its six children, a sixth each,
    smallest keeps first (the keep lattice read backwards), so the mass of a keep of s dice
    ends on the rolls of its 6^(count - s) throws: O(keeps x 6) per lane, where the dense
    transition matrix took O(keeps x rolls)."""
    n_keeps, n = work.shape
    first_roll = children.shape[0]
    sixth = 1.0 / FACES
    for k in range(n_keeps):
        for t in range(n):
            work[k, t] = 0.0
    for r in range(n_keeps - first_roll):
        for t in range(n):
            work[keep[r, t], t] += rolls[r, t]
    for k in range(first_roll):
        c0, c1, c2 = children[k, 0], children[k, 1], children[k, 2]
        c3, c4, c5 = children[k, 3], children[k, 4], children[k, 5]
        for t in range(n):
            share = work[k, t] * sixth
            work[c0, t] += share
            work[c1, t] += share
            work[c2, t] += share
            work[c3, t] += share
            work[c4, t] += share
            work[c5, t] += share
    for r in range(n_keeps - first_roll):
        for t in range(n):
            rolls[r, t] = work[first_roll + r, t]


def outcomes(dice: Dice, keep: list[IntArray], rolls: FloatArray, rerolls_left: int) -> FloatArray:
    """(n_rolls, B): the chance that the turn ends on each roll (scored there in the box the
    policy chooses), the keeps chosen being ``keep`` (:attr:`TurnPolicy.keep`).

    ``rolls`` (n_rolls, B) is the chance of each roll with ``rerolls_left`` rerolls to go (the
    first roll's chances at the start of a turn, or a single roll for a state with dice).
    """
    work = np.empty((dice.n_keeps, rolls.shape[1]))
    ends = np.array(rolls, dtype=np.float64, order="C")  # a copy, moved in place
    for n in range(rerolls_left, 0, -1):
        _reroll(ends, keep[n], dice.child_rows, work)
    return ends
