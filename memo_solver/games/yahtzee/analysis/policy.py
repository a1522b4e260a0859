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
values themselves. The loops live beside the kernel whose records they read
(:mod:`memo_solver.games.yahtzee.solve.forward_kernel`); this module keeps the Python around
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.rules.dice import Dice
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve import forward_kernel, kernel
from memo_solver.games.yahtzee.solve.turn import (
    Guideposts,
    TurnTables,
    batch_of,
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
    """keep[n] (n_rolls, B): the keep chosen for each roll with n rerolls left (n >= 1);
    with saved rolls, n rolls left, the best keep that rerolls a die (played where
    :attr:`stop` says not to score)."""
    box: IntArray
    """(n_rolls, B): with no rerolls left, the position in ``tables.boxes`` of the box chosen."""
    stop: list[IntArray] = field(default_factory=list)
    """With saved rolls, stop[R] (n_rolls, B) for R = 0 .. the most rolls a turn of the
    block can leave: the position of the box scored at once with R rolls left, or -1 where
    the strategy rerolls ``keep[R]`` instead (stop[0] is ``box``). Empty without saved
    rolls: a plain turn never needs to stop early, as keeping every die is as good."""


_OUT_OF_RANGE = "keep values out of the range the integer tie keys can order"


def choose_keeps(dice: Dice, keeps: FloatArray, *, whole: bool = True) -> IntArray:
    """(n_rolls, B) for each roll the best keep inside it, by the tie rule: among the keeps
    inside a roll, the better value to 1e-9, then more dice, then the first keep. Without
    ``whole`` the roll itself is left out: a keep rerolls at least one die (saved rolls)."""
    width = keeps.shape[1]
    key = np.empty((dice.n_keeps, width), dtype=np.int64)
    chosen = np.empty((dice.n_rolls, width), dtype=np.int64)
    values = np.ascontiguousarray(keeps, dtype=np.float64)
    if forward_kernel.best_keeps(values, width, kernel.lattice(dice), key, chosen, whole):
        raise ValueError(_OUT_OF_RANGE)
    return chosen


def best_box(scores: FloatArray) -> IntArray:
    """(n_rolls, B): the best box for each roll, by the tie rule, from every open box's
    value of scoring it ``scores`` (C_open, n_rolls, B): the first with the most ticks."""
    box = np.empty((scores.shape[1], scores.shape[2]), dtype=np.int64)
    forward_kernel.best_boxes(np.ascontiguousarray(scores), scores.shape[2], box)
    return box


def turn_policy(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
    theta: float = 0.0,
) -> TurnPolicy:
    """The choices at every roll of a turn of the block of ``filled``, for ``guideposts``.

    With ``theta`` != 0 ``successor`` gives the risk table's blocks and the choices are the
    theta strategy's: each action ranked by its certainty equivalent, ties (to 1e-9) broken
    by the rule above. The risk advice breaks them by the mean advice's order, which can
    name another of the tied actions where their mean values differ: keeping every die
    ties the box the theta strategy scores a roll later, whose mean value is below the
    mean's best box; a keep whose every reroll ends in the box that another action scores
    now ties that score. Such ties lead to the same outcomes (the same box, the same
    points), so the distribution is the same whichever is played (a tie of different
    outcomes would need sums of exp(theta x) to agree to 1e-9 by chance).

    With saved rolls the turn runs over the rolls left R, from the most a turn of this block
    can leave (its largest bank plus the turn's rerolls) down to 0, and each R with rolls
    left has two kinds of choice: stop and score now (the best box, carrying
    ``rules.carried(R)`` into the next turn), or reroll a proper keep (one die at least)
    with R - 1 left. Scoring now wins a tie (the tie rule), so :attr:`TurnPolicy.stop` is
    the box where the best score's ticks reach the best keep's. The bank the turn started
    with decides only where the chain starts, not a choice on it."""
    tables = turn_tables(rules, filled, successor, guideposts, rules.rerolls, theta=theta)
    dice = rules.universe
    box = best_box(tables.scores[0])
    keep = [np.empty((0, 0), dtype=np.int64)]
    if not rules.saved_rolls:
        keep += [choose_keeps(dice, tables.keeps[n]) for n in range(1, rules.rerolls + 1)]
        return TurnPolicy(tables, keep, box)
    stop = [box]
    rolls, lanes = np.arange(dice.n_rolls)[:, None], np.arange(guideposts.upper.size)
    for left in range(1, len(tables.keeps)):
        keeps = tables.keeps[left]
        chosen = choose_keeps(dice, keeps, whole=False)
        scores = tables.scores[rules.carried(left)]
        best = best_box(scores)
        scored, kept = scores[best, rolls, lanes], keeps[chosen, lanes]
        stop.append(np.where(tie(scored) >= tie(kept), best, -1))
        keep.append(chosen)
    return TurnPolicy(tables, keep, box, stop)


# --- the target policy: the best chance of a need, ties to the mean -------------------------


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
    lattice = kernel.lattice(dice)
    count = guide.size
    tick = np.empty((dice.n_keeps, count), dtype=np.int64)
    key = np.empty((dice.n_keeps, count), dtype=np.int64)
    mean_key = np.empty((dice.n_keeps, guideposts.upper.size), dtype=np.int64)
    keep = [np.empty((0, 0), dtype=np.int64)]
    outside = 0
    for n in range(1, rules.rerolls + 1):
        chosen = np.empty((dice.n_rolls, count), dtype=np.int64)
        outside += forward_kernel.mean_keys(mean.tables.keeps[n], lattice, mean_key)
        outside += forward_kernel.best_target_keeps(
            tables.keeps[n], count, mean_key, guide, lattice, tick, key, chosen
        )
        keep.append(chosen)
    if outside:
        raise ValueError(_OUT_OF_RANGE)
    box = np.empty((dice.n_rolls, count), dtype=np.int64)
    forward_kernel.best_target_boxes(tables.scores[0], count, mean.tables.scores[0], guide, box)
    return TurnPolicy(tables, keep, box)


# --- many blocks' choices at once, without their values (the simulation) ---------------------


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
    (``successor`` gives a block by its filled mask).

    With saved rolls, (R + 1, n_rolls, B) for R = :func:`most_rolls_left`: [n] with n
    rolls left, a keep's code or ``forward_kernel.SCORE_NOW`` plus the box's position
    (scoring now, the bank carried), whatever bank the turn began with; the blocks are
    chosen in one call per count of filled boxes (the banks of their successors differ)."""
    if not rules.saved_rolls:
        return _block_choices(rules, masks, successor, keep_codes, levels)
    chosen: dict[int, SmallArray] = {}
    counts = rules.filled_counts(np.asarray(masks, dtype=np.int64))
    for count in np.unique(counts).tolist():
        picked = np.flatnonzero(counts == count).tolist()
        batch = _block_choices(
            rules, [masks[i] for i in picked], successor, keep_codes, [levels[i] for i in picked]
        )
        chosen.update(zip(picked, batch, strict=True))
    return [chosen[i] for i in range(len(masks))]


def most_rolls_left(rules: RuleSet, filled_count: int) -> int:
    """The most rolls a turn with ``filled_count`` boxes filled has left after its first
    roll: its rerolls, and with saved rolls the largest bank it may start with."""
    return rules.saved_levels(filled_count) - 1 + rules.rerolls


def _block_choices(
    rules: RuleSet,
    masks: Sequence[int],
    successor: Callable[[int], FloatArray],
    keep_codes: SmallArray,
    levels: Sequence[IntArray],
) -> list[SmallArray]:
    """:func:`block_choices` of blocks with one count of filled boxes under saved rolls."""
    tables = kernel_tables(rules)
    dice = rules.universe
    batch = batch_of(rules, masks, successor)
    if not batch.n_open.all():
        raise ValueError("a block with every box filled has no turn to choose in")
    most = most_rolls_left(rules, int(rules.filled_counts(batch.filled[:1])[0])) if masks else 0
    n_lanes = np.array([flat.size for flat in levels], dtype=np.int64)
    lanes = np.zeros((batch.filled.size, max(1, int(n_lanes.max(initial=0)))), dtype=np.int64)
    for b, flat in enumerate(levels):
        lanes[b, : flat.size] = flat
    offsets = np.zeros(batch.filled.size + 1, dtype=np.int64)
    np.cumsum((most + 1) * dice.n_rolls * n_lanes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    outside = forward_kernel.choose_blocks(
        batch, lanes, n_lanes, tables.adjust, tables.landing, tables.lattice, keep_codes,
        most, rules.saved_rolls, offsets, out,
    )  # fmt: skip
    if outside:
        raise ValueError(_OUT_OF_RANGE)
    return [
        out[offsets[b] : offsets[b + 1]].reshape(most + 1, dice.n_rolls, -1)
        for b in range(batch.filled.size)
    ]


# --- where the choices take the dice (the exact distribution) --------------------------------


def outcomes(dice: Dice, keep: list[IntArray], rolls: FloatArray, rerolls_left: int) -> FloatArray:
    """(n_rolls, B): the chance that the turn ends on each roll (scored there in the box the
    policy chooses), the keeps chosen being ``keep`` (:attr:`TurnPolicy.keep`).

    ``rolls`` (n_rolls, B) is the chance of each roll with ``rerolls_left`` rerolls to go (the
    first roll's chances at the start of a turn, or a single roll for a state with dice).
    """
    work = np.empty((dice.n_keeps, rolls.shape[1]))
    ends = np.array(rolls, dtype=np.float64, order="C")  # a copy, moved in place
    for n in range(rerolls_left, 0, -1):
        forward_kernel.reroll(ends, keep[n], dice.child_rows, work)
    return ends


def banked_outcomes(
    dice: Dice, policy: TurnPolicy, rolls: FloatArray, starts: IntArray, levels: IntArray
) -> Iterator[tuple[int, FloatArray, IntArray]]:
    """With saved rolls, where the turns of many lanes end, one R at a time from the most
    rolls left down to 0: (R, ends, box), ``ends`` (n_rolls, lanes) the chance that the
    lane's turn stops on each roll with R left, scored in ``box`` (the position of the box,
    :attr:`TurnPolicy.stop`; any valid one where nothing stops).

    Lane l follows the choices of column ``levels[l]`` of ``policy`` from ``starts[l]``
    rolls left, its rolls' chances there ``rolls[:, l]`` (a first roll, which leaves the bank
    plus the turn's rerolls, or a state's dice): the choices depend on the rolls left, not
    on the bank a turn started with, so lanes of one level with different banks join the
    same chain at different points."""
    held = np.zeros((dice.n_rolls, starts.size))
    work = np.empty((dice.n_keeps, starts.size))
    for left in range(int(starts.max(initial=0)), -1, -1):
        joining = starts == left
        held[:, joining] = rolls[:, joining]
        box = policy.stop[left][:, levels]
        stopping = box >= 0
        yield left, np.where(stopping, held, 0.0), np.maximum(box, 0)
        if left:
            held = np.where(stopping, 0.0, held)
            keep = np.ascontiguousarray(policy.keep[left][:, levels])
            forward_kernel.reroll(held, keep, dice.child_rows, work)
