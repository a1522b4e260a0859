"""The compiled loops of the forward passes: the strategy's choices and where they move the
mass.

The policy (:mod:`memo_solver.games.yahtzee.analysis.policy`) and the exact distribution
(:mod:`memo_solver.games.yahtzee.analysis.distribution`) walk the same dice lattice and read
the same records as the turn kernel (:mod:`memo_solver.games.yahtzee.solve.kernel`), so their
loops live beside it, in ``solve/``, where the records are defined and every compiled loop of
the family is found in one room; the analysis modules keep the Python around them. A module
of its own, not the kernel's: the kernel is the one implementation of a turn's values, and
these loops only read what its steps leave (ranking keeps and boxes by the tie rule of
:mod:`memo_solver.games.yahtzee.rules.ties`, moving chances), so a reader of the values'
math need not page past them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from memo_solver.core.compiled import jit
from memo_solver.games.yahtzee.rules.dice import FACES
from memo_solver.games.yahtzee.rules.rule_set import FloatArray
from memo_solver.games.yahtzee.rules.ties import TIE_SCALE
from memo_solver.games.yahtzee.solve.kernel import (
    Landing,
    Lanes,
    Lattice,
    banks_of,
    best_keep,
    keep_values,
    landing_values,
    line_aligned,
    score_rolls,
)

if TYPE_CHECKING:
    from memo_solver.games.yahtzee.solve.batch import Batch

IntArray = npt.NDArray[np.int64]
SmallArray = npt.NDArray[np.uint8]


# --- the strategy's choices, by the tie rule --------------------------------------------------


@jit
def best_keeps(
    keeps: FloatArray, n: int, lattice: Lattice, key: IntArray, chosen: IntArray, whole: bool
) -> int:
    """chosen[r, t]: the best keep inside roll r for each of the first ``n`` lanes, from
    the keeps' values ``keeps`` (n_keeps, >= n); returns how many values lie outside the
    ticks a key can hold (the choices are wrong unless none does). Without ``whole`` the
    roll itself is no keep (saved rolls: keeping every die would throw a roll of the bank
    away), only the keeps inside it that reroll a die.

    Each keep's key is ``ticks << bits | rank``, so one integer max orders keeps by value,
    then size, then first; walking the keeps smallest first, each keep's best is itself or
    its parents' best (one die fewer, done before). An integer max has no branch to
    mispredict, and a mask decodes the rank (comparing ticks then ranks, or decoding with
    a division, ran 5x slower)."""
    rank, keep_of_rank, bits = lattice.rank, lattice.keep_of_rank, lattice.bits
    parents, n_parents = lattice.parents, lattice.n_parents
    n_keeps = keeps.shape[0]
    first_roll = n_keeps - chosen.shape[0]
    low = (1 << bits) - 1
    outside = 0
    for k in range(n_keeps):
        if whole or k < first_roll:
            outside += own_keys(keeps, k, n, rank[k], bits, key)
        else:  # below every own key: a roll is no parent, so only its own choice changes
            for t in range(n):
                key[k, t] = -1
        for p in range(n_parents[k]):
            parent = parents[k, p]
            for t in range(n):
                key[k, t] = max(key[k, t], key[parent, t])
    for r in range(n_keeps - first_roll):
        for t in range(n):
            chosen[r, t] = keep_of_rank[key[first_roll + r, t] & low]
    return outside


@jit
def own_keys(keeps: FloatArray, k: int, n: int, own: int, bits: int, key: IntArray) -> int:
    """key[k, t] = keep k's own tie key ``ticks << bits | own`` for the first ``n`` lanes;
    returns how many values lie outside the ticks a key can hold."""
    limit = float(np.iinfo(np.int64).max >> bits)
    outside = 0
    for t in range(n):
        tick = np.rint(keeps[k, t] * TIE_SCALE)
        outside += not (0.0 <= tick < limit)
        key[k, t] = np.int64(tick) << bits | own
    return outside


@jit
def best_boxes(scores: FloatArray, n: int, chosen: IntArray) -> None:
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


@jit
def mean_keys(keeps: FloatArray, lattice: Lattice, key: IntArray) -> int:
    """key[k, g]: keep k's own tie key under the mean values of guidepost g; returns what
    :func:`own_keys` counts."""
    rank, bits = lattice.rank, lattice.bits
    outside = 0
    for k in range(keeps.shape[0]):
        outside += own_keys(keeps, k, keeps.shape[1], rank[k], bits, key)
    return outside


@jit
def best_target_keeps(
    chances: FloatArray,
    n: int,
    mean_key: IntArray,
    guide: IntArray,
    lattice: Lattice,
    tick: IntArray,
    key: IntArray,
    chosen: IntArray,
) -> int:
    """chosen[r, t]: the keep inside roll r with the best chance for lane t (its chance's
    ticks ``tick``), the tied ones ranked by the mean's own keys of lane t's guidepost
    ``guide[t]`` (``mean_key``, :func:`mean_keys`): the mean policy's choice among them.
    The lattice walk of :func:`best_keeps` on a pair of keys; returns how many chances lie
    outside [0, 1]."""
    keep_of_rank, parents, n_parents = lattice.keep_of_rank, lattice.parents, lattice.n_parents
    n_keeps = chances.shape[0]
    first_roll = n_keeps - chosen.shape[0]
    low = (1 << lattice.bits) - 1
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
def best_target_boxes(
    scores: FloatArray, n: int, mean_scores: FloatArray, guide: IntArray, chosen: IntArray
) -> None:
    """chosen[r, t]: the box with the best chance for roll r and lane t, the tied ones
    ranked by the mean values of lane t's guidepost (``mean_scores``), then the first: the
    mean policy's choice among them (:func:`best_boxes`)."""
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


SCORE_NOW: Final = 0x80
"""With saved rolls, a choice byte of ``SCORE_NOW + i`` stops rolling and scores open box i
now (the rolls left carried): a keep's code is a mask of at most six dice, below it."""


@jit
def choose_blocks(
    batch: Batch,
    block_levels: IntArray,
    n_lanes: IntArray,
    adjust: FloatArray,
    landing: Landing,
    lattice: Lattice,
    keep_codes: SmallArray,
    rerolls: int,
    saved_rolls: bool,
    offsets: IntArray,
    out: SmallArray,
) -> int:
    """Block b's choices into ``out[offsets[b]:]`` as (rerolls + 1, n_rolls, n_lanes[b]):
    [0] the box (its position among the open ones), [n] the keep's code (``keep_codes``
    per roll and keep) with n rerolls left. The kernel's steps of :func:`turn_policy`, the
    choices read from its work area as each step leaves it; returns what
    :func:`best_keeps` counts.

    With ``saved_rolls`` the rows are the rolls left R = 0 .. ``rerolls`` (the most a turn
    of these blocks has after its first roll), each a keep's code or :data:`SCORE_NOW` plus
    the box (:func:`saved_choices`)."""
    open_boxes, n_open, succ_rows = batch.open_boxes, batch.n_open, batch.succ_rows
    children, parents, n_parents = lattice.children, lattice.parents, lattice.n_parents
    n_keeps, n_rolls = parents.shape[0], landing.roll_class.shape[1]
    first_roll = n_keeps - n_rolls
    width = block_levels.shape[1]
    n_boxes = open_boxes.shape[1]
    values = line_aligned((n_boxes, max(1, landing.index.shape[1]), width), np.float64)
    scores = line_aligned((n_boxes, n_rolls, width), np.float64)
    work = line_aligned((n_keeps, width), np.float64)
    key = line_aligned((n_keeps, width), np.int64)
    chosen = line_aligned((n_rolls, width), np.int64)
    steps = np.zeros(width, dtype=np.int64)
    outside = 0
    for b in range(open_boxes.shape[0]):
        n, count = n_lanes[b], n_open[b]
        boxes, rows = open_boxes[b, :count], succ_rows[b, :count]
        block = out[offsets[b] : offsets[b + 1]].reshape((rerolls + 1, n_rolls, n))
        if saved_rolls:
            outside += saved_choices(
                batch, b, adjust, landing, lattice, keep_codes,
                Lanes(block_levels[b], steps, n, 1, False, 1, 0), values, scores, work, key,
                chosen, block,
            )  # fmt: skip
            continue
        lanes = Lanes(block_levels[b], steps, n, 1, False, 1, 0)  # one bank: no saved rolls
        landing_values(boxes, rows, batch.successors, landing, lanes, values)
        score_rolls(
            boxes, rows, batch.successors, landing, adjust[batch.joker[b]], lanes, values, work,
            first_roll, scores[:count],
        )  # fmt: skip
        best_boxes(scores[:count], n, chosen)
        for r in range(n_rolls):
            for t in range(n):
                block[0, r, t] = chosen[r, t]
        for left in range(1, rerolls + 1):
            keep_values(work, children, n)
            outside += best_keeps(work, n, lattice, key, chosen, True)
            for r in range(n_rolls):
                for t in range(n):
                    block[left, r, t] = keep_codes[r, chosen[r, t]]
            best_keep(work, parents, n_parents, n)
    return outside


@jit
def saved_choices(
    batch: Batch,
    b: int,
    adjust: FloatArray,
    landing: Landing,
    lattice: Lattice,
    keep_codes: SmallArray,
    lanes: Lanes,
    values: FloatArray,
    scores: FloatArray,
    work: FloatArray,
    key: IntArray,
    chosen: IntArray,
    block: SmallArray,
) -> int:
    """One block's choices under saved rolls, block[R, r, t] for R = 0 .. len(block) - 1
    rolls left: the chain of the kernel's :func:`~memo_solver.games.yahtzee.solve.kernel.
    solve_blocks` over the rolls left, where every R offers both actions, so the score step
    runs at every R (carrying ``min(R, successor banks - 1)``, the rule set's cap included)
    and a roll is worth the better of scoring now and its best keep that rerolls a die
    (keeping every die only spends a roll). By the tie rule, scoring now wins a tie, the
    keep is :func:`best_keeps`', the box :func:`best_boxes`'. The block is ``batch``'s
    ``b``; ``scores`` is the work area of its open boxes' scores. Returns what
    :func:`best_keeps` counts."""
    children, parents, n_parents = lattice.children, lattice.parents, lattice.n_parents
    n_rolls = landing.roll_class.shape[1]
    first_roll = work.shape[0] - n_rolls
    n = lanes.n
    count = batch.n_open[b]
    boxes, rows = batch.open_boxes[b, :count], batch.succ_rows[b, :count]
    successors, adjusted = batch.successors, adjust[batch.joker[b]]
    open_scores = scores[:count]
    scored = np.empty((n_rolls, n))  # each roll's best score, and its box
    box = np.empty((n_rolls, n), dtype=np.int64)
    succ_banks = banks_of(successors, landing, 1)
    outside = 0
    for rolls_left in range(block.shape[0]):
        carry = min(rolls_left, succ_banks - 1)
        if rolls_left == 0 or carry > min(rolls_left - 1, succ_banks - 1):
            at = Lanes(lanes.levels, lanes.steps, n, 1, False, succ_banks, carry)
            landing_values(boxes, rows, successors, landing, at, values)
            score_rolls(
                boxes, rows, successors, landing, adjusted, at, values, scored, 0, open_scores
            )
            best_boxes(open_scores, n, box)
        if rolls_left == 0:
            for r in range(n_rolls):
                for t in range(n):
                    work[first_roll + r, t] = scored[r, t]
                    block[0, r, t] = box[r, t]
            continue
        keep_values(work, children, n)
        for r in range(n_rolls):
            for t in range(n):
                # Keeping every die is no candidate (best_keeps leaves it out); its row is
                # made worth 0 for the best keep's value, less than any proper keep but where
                # all are worth 0, and then scoring (>= 0) wins the tie.
                work[first_roll + r, t] = 0.0
        outside += best_keeps(work, n, lattice, key, chosen, False)
        best_keep(work, parents, n_parents, n)
        for r in range(n_rolls):
            row = first_roll + r
            for t in range(n):
                if np.rint(scored[r, t] * TIE_SCALE) >= np.rint(work[row, t] * TIE_SCALE):
                    block[rolls_left, r, t] = SCORE_NOW + box[r, t]
                else:
                    block[rolls_left, r, t] = keep_codes[r, chosen[r, t]]
                work[row, t] = max(scored[r, t], work[row, t])
    return outside


# --- where the choices take the dice and the mass (the exact distribution) ------------------


@jit
def reroll(rolls: FloatArray, keep: IntArray, children: IntArray, work: FloatArray) -> None:
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


@jit
def class_weights(ends: FloatArray, box: IntArray, of_roll: IntArray, weights: FloatArray) -> None:
    """weights[k, t] += the chance that lane t's turn ends on a roll of class k: the roll's
    chance, in the class of the box the strategy scores it in."""
    for r in range(ends.shape[0]):
        for t in range(ends.shape[1]):
            weights[of_roll[box[r, t], r], t] += ends[r, t]


@jit
def shift_add(
    here: FloatArray,
    first: IntArray,
    length: IntArray,
    weights: FloatArray,
    rows: IntArray,
    gains: IntArray,
    extra: IntArray,
    alike: IntArray,
    here_spared: FloatArray,
    target: FloatArray,
    base: IntArray,
    spared: FloatArray,
) -> None:
    """For every pair (class k, lane t) of weight w > 0, with the lane's window s = first[t]
    .. + length[t]: the target row rows[k, t]'s total gains[k, t] + s, which sits at
    target[base[row] + total] (each row's window packed, :func:`windows`), gets w * here[t,
    s]; and the mass that never had a +100 (``extra``) or all dice alike (``alike``) moves
    to spared[0, row] and spared[1, row] (the order of ``_EVENTS``) unless the pair has it."""
    for k in range(weights.shape[0]):
        for t in range(weights.shape[1]):
            w = weights[k, t]
            if w > 0.0:
                row, lo = rows[k, t], first[t]
                shift = base[row] + gains[k, t] + lo
                for s in range(length[t]):
                    target[shift + s] += w * here[t, lo + s]
                if extra[k, t] == 0:
                    spared[0, row] += w * here_spared[0, t]
                if alike[k] == 0:
                    spared[1, row] += w * here_spared[1, t]


@jit
def windows(
    first: IntArray,
    length: IntArray,
    weights: FloatArray,
    rows: IntArray,
    gains: IntArray,
    lo: IntArray,
    hi: IntArray,
) -> bool:
    """Widen each target row's window of totals lo[row] .. hi[row] (empty where hi <= lo)
    to hold what :func:`shift_add` adds with the same arguments: only the pairs of weight
    w > 0 whose lane holds mass. Returns whether any window grew."""
    grew = False
    for k in range(weights.shape[0]):
        for t in range(weights.shape[1]):
            if weights[k, t] > 0.0 and length[t] > 0:
                row = rows[k, t]
                start = gains[k, t] + first[t]
                end = start + length[t]
                if hi[row] <= lo[row]:
                    lo[row], hi[row], grew = start, end, True
                elif start < lo[row] or end > hi[row]:
                    lo[row], hi[row], grew = min(lo[row], start), max(hi[row], end), True
    return grew


@jit
def lay_out(
    data: FloatArray,
    base: IntArray,
    lo: IntArray,
    hi: IntArray,
    new_lo: IntArray,
    new_hi: IntArray,
    new_base: IntArray,
) -> FloatArray:
    """The rows' windows laid out anew, one after another: new_base[r] set so that the
    total s of row r sits at new_base[r] + s of the array returned, which holds the mass of
    ``data`` (laid out by ``base``, ``lo`` and ``hi``) where it was, and zeros around it."""
    size = 0
    for r in range(new_lo.size):
        new_base[r] = size - new_lo[r]
        size += new_hi[r] - new_lo[r]
    out = np.zeros(size)
    move_windows(data, base, lo, hi, out, new_base)
    return out


@jit
def move_windows(
    source: FloatArray,
    source_base: IntArray,
    lo: IntArray,
    hi: IntArray,
    target: FloatArray,
    target_base: IntArray,
) -> None:
    """Copy each row's window of totals lo[row] .. hi[row] from one packed layout to
    another (a wider one, or a dense block read as one row after another): the total s of
    row r sits at source[source_base[r] + s] and goes to target[target_base[r] + s]."""
    for r in range(lo.size):
        for s in range(lo[r], hi[r]):
            target[target_base[r] + s] = source[source_base[r] + s]
