"""The values advice ranks for one rolled state, computed for that roll alone.

A state mid-turn asks two things of its turn: what scoring its dice in each open box is
worth, and, with rerolls left, what each keep inside its dice is worth. The first needs
none of the other rolls: scoring a roll is worth what its class of rolls (equal points in
that box) lands on, the kernel's landing values, apart from the six all-alike rolls,
which the Joker and the +100 score again. The second needs every roll one reroll later,
so the turn's steps run up to that point and stop: no table of every box's score for
every roll, no turn start, no rounds past the state's own. With no rerolls left that is a
few hundred operations; a whole turn's tables (:func:`memo_solver.games.yahtzee.solve.turn.
turn_tables`, what the strategy keeps) are a few thousand more and were a third of a
warm request's CPU.

The steps are the kernel's own (:mod:`memo_solver.games.yahtzee.solve.kernel`), run in the same
order on the same arrays as :func:`memo_solver.games.yahtzee.solve.kernel.turn_steps`, so every
value is the same float, to the bit, as the whole turn's: this module only chooses which
steps a roll needs.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memo_solver.core.compiled import jit
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.solve.kernel import (
    Landing,
    Lanes,
    Lattice,
    Objective,
    banks_of,
    best_keep,
    certainty,
    exponent_reference,
    keep_values,
    landing_values,
    objective,
    score_rolls,
    score_step,
    to_utilities,
)
from memo_solver.games.yahtzee.solve.turn import Guideposts, kernel_tables

IntArray = npt.NDArray[np.int64]


@jit
def roll_steps(
    open_boxes: IntArray,
    successors: FloatArray,
    levels: IntArray,
    steps: IntArray,
    goal: Objective,
    adjust: FloatArray,
    landing: Landing,
    lattice: Lattice,
    roll: int,
    rerolls: int,
    scores: FloatArray,
    keeps: FloatArray,
) -> None:
    """For one lane (``levels``: one guidepost; ``steps``: its index on the value axis of
    ``goal``, as in the kernel's block contract), ``scores[i]``: scoring roll ``roll`` in
    open box i (successor row i) with ``rerolls`` rolls left (which a score carries to the
    next turn, with saved rolls); with ``rerolls`` > 0, ``keeps[k]``: keep k's value when
    it is rerolled with ``rerolls - 1`` rolls left after (``keeps`` untouched otherwise):
    the kernel's chain up to there. At a risk both are certainty equivalents, the chain's
    utilities taken relative to the reference its first score step fixes."""
    roll_class, alike = landing.roll_class, landing.alike
    children, parents, n_parents = lattice.children, lattice.parents, lattice.n_parents
    n_keeps = parents.shape[0]
    first_roll = n_keeps - roll_class.shape[1]
    succ_rows = np.arange(open_boxes.size)
    values = np.zeros((open_boxes.size, max(1, landing.index.shape[1]), 1))
    theta = goal.theta
    banks = banks_of(successors, landing, goal.width)
    carried = min(rerolls, banks - 1)
    lanes = Lanes(
        levels, steps, 1, goal.width, goal.shift, banks, carried
    )  # one lane: the loops fold it
    landing_values(open_boxes, succ_rows, successors, landing, lanes, values)
    five = False
    for a in range(alike.size):
        five = five or alike[a] == roll
    if not five:  # what score_rolls writes for the roll: its class's landing value
        for i in range(open_boxes.size):
            scores[i] = values[i, roll_class[open_boxes[i], roll], 0]
        if rerolls == 0:
            return
    work = np.zeros((n_keeps, 1))
    every = np.zeros((open_boxes.size if five else 0, roll_class.shape[1], 1))
    if five or carried == 0:  # the chain's own first step when it carries no bank
        score_rolls(
            open_boxes, succ_rows, successors, landing, adjust, lanes, values, work, first_roll,
            every,
        )  # fmt: skip
    if five:  # scored again by the Joker and the +100
        for i in range(open_boxes.size):
            scores[i] = every[i, roll, 0]
    if rerolls == 0:
        return
    scored = np.zeros((roll_class.shape[1] if banks > 1 else 0, 1))
    no_scores = np.empty((0, 0, 0))
    top = np.zeros(1)
    if carried > 0:
        score_step(
            0, open_boxes, succ_rows, successors, landing, adjust, lanes, values, work, scored,
            no_scores, theta, top,
        )  # fmt: skip
    elif theta != 0.0:  # the first step was score_rolls' above, in points, from bank 0
        exponent_reference(values, open_boxes, landing.n_classes, 1, theta, top)
        to_utilities(work, first_roll, 1, theta, top)
    for rolls_left in range(1, rerolls):
        keep_values(work, children, 1)
        best_keep(work, parents, n_parents, 1)
        score_step(
            rolls_left, open_boxes, succ_rows, successors, landing, adjust, lanes, values, work,
            scored, no_scores, theta, top,
        )  # fmt: skip
    keep_values(work, children, 1)
    for k in range(n_keeps):
        keeps[k] = work[k, 0] if theta == 0.0 else certainty(work[k, 0], theta, top[0])


@lru_cache(maxsize=1024)
def _step(step: int) -> IntArray:
    """The one-lane ``steps`` array of an index on the value axis, made once (a warm request
    would otherwise make one)."""
    return np.array([step], dtype=np.int64)


@lru_cache(maxsize=8192)
def _open_boxes(rules: RuleSet, filled: int) -> tuple[list[int], IntArray]:
    """A block's open boxes, as a list and as the kernel reads them (every scorecard of the
    13-box games kept: about 7 MB at most). Not its Joker row: that is an index into the
    rule set's :func:`kernel_tables`, which a process seeing many rule sets may drop and
    build again with its rows in another order."""
    boxes = rules.open_boxes(filled)
    return boxes, np.array(boxes, dtype=np.int64)


def roll_values(
    rules: RuleSet,
    filled: int,
    successors: list[FloatArray],
    guidepost: tuple[int, int],
    roll: int,
    rerolls: int,
    need: int = 0,
    theta: float = 0.0,
) -> tuple[list[int], FloatArray, FloatArray]:
    """The open boxes of ``filled``; what scoring roll ``roll`` (an index) in each is worth
    from ``guidepost`` (upper level, bonus level); and, with ``rerolls`` > 0 left (the rolls
    left, with saved rolls), every keep's value (n_keeps,): the turn of
    :func:`memo_solver.games.yahtzee.solve.turn.turn_tables` at this roll (its
    ``scores[s][:, roll, 0]``, s the bank a score carries, and ``keeps[rerolls][:, 0]``),
    computed for this roll alone (with no reroll left, the keeps' values are not computed).
    ``successors`` are the blocks after scoring each open box, in box order.

    With ``need`` > 0 the successors are blocks of the chance objective, one width for all
    (:mod:`memo_solver.games.yahtzee.solve.need`), and the values are the chances of scoring at
    least ``need`` more points (value ``need - 1`` of the axis, the score shifting it).
    With ``theta`` != 0 they are blocks of the risk objective
    (:mod:`memo_solver.games.yahtzee.solve.risk`), and the values certainty equivalents."""
    tables = kernel_tables(rules)
    boxes, open_boxes = _open_boxes(rules, filled)
    joker = tables.joker_row(filled)
    scores = np.empty(len(boxes))
    keeps = np.empty(rules.universe.n_keeps)  # even unused: numba types an empty array slowly
    rows = np.concatenate(successors).reshape(len(boxes), -1)
    banks = rules.saved_levels(filled.bit_count() + 1)
    width = rows.shape[1] // (rules.n_upper_levels * rules.n_bonus_levels * banks)
    roll_steps(
        open_boxes, rows, Guideposts.one(rules, *guidepost).flat, _step(max(0, need - 1)),
        objective(width, need > 0, theta), tables.adjust[joker], tables.landing, tables.lattice,
        roll, rerolls, scores, keeps,
    )  # fmt: skip
    return boxes, scores, keeps
