"""One turn's math for a rule set: the tables the compiled kernel reads, and its two uses.

A *guidepost* is a turn-start state ``(filled boxes, upper total u, yahtzee-bonus flag y)``.
The kernel (:mod:`memo_solver.games.yahtzee.solve.kernel`) knows dice lattices and lanes, not
rules: this module turns a rule set into its arrays once (:class:`KernelTables`, built from
the one scoring rule in :mod:`memo_solver.games.yahtzee.solve.scoring`), then either solves whole
batches of blocks (:func:`solve_blocks`, what the engine calls) or keeps every value inside
one turn for B guideposts (:func:`turn_tables`: advice, the strategy's choices). The kernel
module is imported by the first call of either: numba's import costs a process about 0.2 s
of CPU, which commands answering from stored blocks alone (a value, a status) never pay.

Values exclude points already banked and include every future bonus. The upper bonus is
banked by the score that reaches the threshold, so a block whose upper total is already at
the threshold no longer counts it, and the block with every box filled is all zeros.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.rules.dice import Dice
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.solve.batch import Batch, LaneSets
from memo_solver.games.yahtzee.solve.scoring import extra_bonus, land, points

if TYPE_CHECKING:
    from memo_solver.games.yahtzee.solve import kernel

IntArray = npt.NDArray[np.int64]
FACES_OF_ALIKE: Final = 6
"""All-alike rolls: one per face, whatever the dice count."""


@dataclass(frozen=True, eq=False)
class Guideposts:
    """B turn-start states of one block: their upper levels (capped) and bonus flags.

    Every block with the same upper boxes and Yahtzee box filled shares one instance.
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

    @staticmethod
    def counts(rules: RuleSet, masks: IntArray) -> IntArray:
        """(M,) the guideposts each block of ``masks`` reaches, for whole tables (a million
        blocks for Maxi Yatzy): they depend only on its filled upper boxes and Yahtzee box,
        a few hundred kinds, each looked up once."""
        upper_bits = sum(1 << box for box, c in enumerate(rules.categories) if c.upper_face)
        shaping = upper_bits | (0 if rules.yahtzee_box is None else 1 << rules.yahtzee_box)
        kinds, which = np.unique(masks & shaping, return_inverse=True)
        starts = np.array([Guideposts.reachable(rules, int(k)).upper.size for k in kinds])
        counts: IntArray = starts[which.ravel()]
        return counts

    @classmethod
    def one(cls, rules: RuleSet, upper: int, bonus: int) -> Guideposts:
        """A single guidepost (advice for one state), kept: a rule set has at most a few
        hundred."""
        return _one(rules, upper, bonus)

    @cached_property
    def flat(self) -> IntArray:
        """(B,) each guidepost's index in a raveled block: where a successor's value sits."""
        flat: IntArray = self.upper * self.rules.n_bonus_levels + self.bonus
        return flat


@lru_cache(maxsize=256)
def _box_landing(rules: RuleSet, box: int) -> tuple[IntArray, IntArray, FloatArray]:
    """Scoring ``box`` from every level of a block, reachable or not, by classes of rolls with
    equal points: the class of each roll (n_rolls,), and per class where each level lands in
    the successor block and what it banks (the points and the upper bonus; the Joker and
    the +100 come after, on the all-alike rolls alone), (K, levels) or (1, levels). The
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


@dataclass(frozen=True, eq=False)
class KernelTables:
    """A rule set as the kernel reads it: built once per rule set (:func:`kernel_tables`).

    Per box, the rolls fall into classes of equal points (``roll_class``); per class and
    level, where the level lands in the successor block and what it banks (``land_index``,
    ``land_banked``, from :func:`memo_solver.games.yahtzee.solve.scoring.land`). The Joker's
    points for the six all-alike rolls come in rows of ``adjust`` (from
    :func:`memo_solver.games.yahtzee.solve.scoring.points`), one per situation that decides them.
    The compiled code reads them as two records (:attr:`landing`, :attr:`lattice`).
    """

    rules: RuleSet
    roll_class: IntArray
    n_classes: IntArray
    land_index: IntArray
    land_banked: FloatArray
    extra: FloatArray
    """(levels,): the +100 a five of a kind banks from each level."""
    alike: IntArray
    """The all-alike rolls, face 1 first."""
    upper_boxes: IntArray
    """The boxes counting toward the upper total: with the Yahtzee box, what decides which
    levels of a block some game reaches."""

    @cached_property
    def landing(self) -> kernel.Landing:
        """The scoring tables as one record for the compiled code, made at its first use
        (numba is imported by the first solve only)."""
        from memo_solver.games.yahtzee.solve import kernel

        return kernel.Landing(
            self.roll_class, self.n_classes, self.land_index, self.land_banked, self.alike,
            self.extra,
        )  # fmt: skip

    @cached_property
    def lattice(self) -> kernel.Lattice:
        """The rule set's dice lattice as one record for the compiled code."""
        from memo_solver.games.yahtzee.solve import kernel

        return kernel.lattice(self.rules.universe)

    @cached_property
    def lane_sets(self) -> LaneSets:
        """Per lane set (:meth:`lane_set_of`), the reachable levels and their count."""
        rules = self.rules
        n_sets = 2 << self.upper_boxes.size
        sets = np.zeros((n_sets, rules.n_upper_levels * rules.n_bonus_levels), dtype=np.int64)
        counts = np.zeros(n_sets, dtype=np.int64)
        for q in range(n_sets):
            upper_mask = sum(
                1 << int(box) for i, box in enumerate(self.upper_boxes) if q >> 1 >> i & 1
            )
            flat = _reachable(rules, upper_mask, bool(q & 1)).flat
            sets[q, : flat.size] = flat
            counts[q] = flat.size
        return LaneSets(sets, counts)

    def lane_set_of(self, masks: IntArray) -> IntArray:
        """(N,): which lane set each filled mask's block has: its filled upper boxes as bits,
        then whether the Yahtzee box is filled."""
        q = np.zeros_like(masks)
        for i, box in enumerate(self.upper_boxes):
            q |= (masks >> box & 1) << i
        yahtzee = self.rules.yahtzee_box
        filled = 0 if yahtzee is None else masks >> yahtzee & 1
        return q << 1 | filled

    @cached_property
    def _joker(self) -> _JokerRows:
        return _JokerRows(len(self.rules.categories))

    def joker_rows(self, masks: IntArray, open_: npt.NDArray[np.bool_]) -> IntArray:
        """(N,): each block's row of :attr:`adjust`, found or made.

        What the Joker lets a five of a kind score depends only on which upper faces are
        still open and whether a lower box is
        (:func:`memo_solver.games.yahtzee.solve.scoring.points`), so blocks in the same situation
        share a row, filled box by box from the first block that has each box open."""
        rules = self.rules
        yahtzee = rules.yahtzee_box
        if rules.joker == "none" or yahtzee is None:
            return np.zeros(masks.size, dtype=np.int64)
        faces = rules.upper_faces
        face_bits = np.where(faces > 0, 1 << np.maximum(faces - 1, 0), 0)
        upper_open = np.bitwise_or.reduce(np.where(open_, face_bits[None, :], 0), axis=1)
        lower_open = (open_ & (faces == 0)[None, :]).any(axis=1)
        situation = np.where(masks >> yahtzee & 1 == 1, 1 + (upper_open << 1 | lower_open), 0)
        joker = self._joker
        open_bits = (open_ * (1 << np.arange(open_.shape[1], dtype=np.int64))).sum(axis=1)
        with joker.lock:  # batches are built in worker threads, advice on the event loop
            rows = np.array([joker.row_of(key) for key in situation.tolist()], dtype=np.int64)
            unknown = open_bits & ~np.array(joker.known, dtype=np.int64)[rows] != 0
            for b in np.flatnonzero(unknown).tolist():  # a few blocks, in a first batch
                if open_bits[b] & ~joker.known[rows[b]]:
                    joker.learn(int(rows[b]), rules, int(masks[b]))
        return rows

    def joker_row(self, filled: int) -> int:
        """:meth:`joker_rows` of one block, remembered (what advice asks, state by state)."""
        if self.rules.joker == "none" or self.rules.yahtzee_box is None:
            return 0  # nothing to remember
        row = self._joker.by_mask.get(filled)
        if row is None:
            mask = np.array([filled], dtype=np.int64)
            row = int(self.joker_rows(mask, self.rules.open_matrix(mask))[0])
            self._joker.by_mask[filled] = row
        return row

    @property
    def adjust(self) -> FloatArray:
        """(rows, C, 6): points the Joker adds to each all-alike roll, -inf where it forbids
        the box."""
        return self._joker.stacked()


class _JokerRows:
    """The Joker rows of one rule set found so far. Row 0 is all zeros: no Joker, or the
    Yahtzee box still open."""

    def __init__(self, boxes: int) -> None:
        self.index = {0: 0}
        """Situation to row."""
        self.rows = [np.zeros((boxes, FACES_OF_ALIKE))]
        self.known = [(1 << boxes) - 1]
        """The boxes each row holds."""
        self.by_mask: dict[int, int] = {}
        """Rows of single blocks asked for before: at most every mask of the game."""
        self._stacked: FloatArray | None = None
        self.lock = threading.RLock()
        """Held to find or learn rows and to stack them: without it a stack taken while
        another thread learns a row could be kept after that row's learning dropped it, and
        every later batch would read the row's Joker points as 0."""

    def row_of(self, situation: int) -> int:
        if situation not in self.index:
            self.index[situation] = len(self.rows)
            self.rows.append(np.zeros_like(self.rows[0]))
            self.known.append(0)
        return self.index[situation]

    def learn(self, row: int, rules: RuleSet, filled: int) -> None:
        """Fill ``row`` for the boxes open in ``filled`` from the scoring rule itself."""
        boxes = rules.open_boxes(filled)
        alike = rules.universe.alike_rolls
        table = points(rules, filled, boxes)[:, alike]
        self.rows[row][boxes] = table - rules.scores[boxes][:, alike]
        self.known[row] |= sum(1 << box for box in boxes)
        self._stacked = None

    def stacked(self) -> FloatArray:
        with self.lock:
            if self._stacked is None:
                self._stacked = np.stack(self.rows)
            return self._stacked


@lru_cache(maxsize=64)
def kernel_tables(rules: RuleSet) -> KernelTables:
    dice = rules.universe
    boxes = len(rules.categories)
    levels = rules.n_upper_levels * rules.n_bonus_levels
    landings = [_box_landing(rules, box) for box in range(boxes)]
    n_classes = np.array([banked.shape[0] for _, _, banked in landings], dtype=np.int64)
    most = int(n_classes.max())
    roll_class = np.stack([classes for classes, _, _ in landings])
    land_index = np.zeros((boxes, most, levels), dtype=np.int64)
    land_banked = np.zeros((boxes, most, levels))
    for box, (_, index, banked) in enumerate(landings):
        land_index[box, : n_classes[box]] = index
        land_banked[box, : n_classes[box]] = banked
    flags = np.arange(levels) % rules.n_bonus_levels
    return KernelTables(
        rules=rules,
        roll_class=roll_class,
        n_classes=n_classes,
        land_index=land_index,
        land_banked=land_banked,
        extra=extra_bonus(rules, True, flags).astype(np.float64),
        alike=dice.alike_rolls.astype(np.int64),
        upper_boxes=np.flatnonzero(rules.upper_faces > 0).astype(np.int64),
    )


def batch_of(
    rules: RuleSet,
    masks: Sequence[int],
    successor: Callable[[int], FloatArray],
    width: int = 1,
) -> Batch:
    """The blocks of these filled masks as one call of the kernel reads them."""
    filled = np.asarray(masks, dtype=np.int64)
    open_ = rules.open_matrix(filled)
    n_open = open_.sum(axis=1)
    open_boxes = np.argsort(~open_, axis=1, kind="stable")
    in_use = np.arange(open_.shape[1])[None, :] < n_open[:, None]
    succ_masks = np.where(in_use, filled[:, None] | np.int64(1) << open_boxes, -1)
    wanted = np.unique(succ_masks[succ_masks >= 0])
    values = math.prod(rules.block_shape) * width
    if rules.saved_rolls and filled.size:  # a successor's banks depend on its filled count
        counts = np.unique(rules.filled_counts(filled))
        if counts.size > 1:
            raise ValueError("blocks of saved rolls are solved in batches of one filled count")
        values *= rules.saved_levels(int(counts[0]) + 1)
    rows = [successor(mask).ravel() for mask in wanted.tolist()]
    table = np.concatenate(rows).reshape(-1, values) if rows else np.empty((1, values))
    joker = kernel_tables(rules).joker_rows(filled, open_)
    succ_rows = np.searchsorted(wanted, succ_masks)
    return Batch(filled, n_open, open_boxes, succ_rows, table, joker)


def solve_blocks(
    rules: RuleSet,
    masks: Sequence[int],
    successors: Mapping[int, FloatArray],
    *,
    width: int = 1,
    shift: bool = False,
    theta: float = 0.0,
) -> FloatArray:
    """(N, n_upper, n_bonus): the blocks of these filled masks, from their successors'
    (N, n_upper, n_bonus, banks with saved rolls: then every mask has the same count of
    filled boxes, as a layer's have).

    Unreachable guideposts hold NaN: nothing reads them, and NaN makes a bug loud. One call
    of the compiled kernel solves them all (GIL released): what a layer of a whole solve
    costs is the kernel's, plus a few vectorized steps per call.

    With ``width`` > 1 each guidepost holds that many values along the kernel's value axis
    (blocks (N, n_upper, n_bonus, width), successors the same per block), and ``shift``
    moves a score along the axis instead of adding it: the block contract of
    :mod:`memo_solver.games.yahtzee.solve.kernel`. With ``theta`` != 0 the blocks hold the
    risk objective's certainty equivalents (:mod:`memo_solver.games.yahtzee.solve.risk`)."""
    from memo_solver.games.yahtzee.solve import kernel  # numba: imported by the first solve only

    tables = kernel_tables(rules)
    batch = batch_of(rules, masks, successors.__getitem__, width)
    shape = rules.block_shape_of(int(batch.filled[0])) if batch.filled.size else rules.block_shape
    if width > 1:
        shape = (*shape, width)
    out = np.full((batch.filled.size, math.prod(shape)), np.nan)
    kernel.solve_blocks(
        0, batch.filled.size, batch, tables.lane_sets, tables.lane_set_of(batch.filled),
        tables.adjust, tables.landing, tables.lattice, rules.rerolls,
        kernel.objective(width, shift, theta), kernel.TILE, out,
    )  # fmt: skip
    return out.reshape(batch.filled.size, *shape)


@dataclass(frozen=True)
class TurnTables:
    """Every value inside one turn for B guideposts: the per-turn local memo."""

    dice: Dice
    boxes: list[int]
    points: FloatArray
    """(C_open, n_rolls): the points of each roll in each open box, -inf where illegal."""
    scores: FloatArray
    """(banks, C_open, n_rolls, B): ``scores[s]``, the value of scoring each roll in each
    open box when the next turn starts with bank s: with saved rolls, scoring with R rolls
    left carries ``min(R, banks - 1)``; without them there is one bank, 0."""
    rolls: list[FloatArray]
    """rolls[n] (n_rolls, B): a roll's value with n rerolls (rolls, with saved rolls) left."""
    keeps: list[FloatArray]
    """keeps[n] (n_keeps, B): a keep's value when it is rerolled with n - 1 rerolls left
    after; keeps[0] is unused (no keep decision without a reroll)."""
    start: FloatArray
    """(banks, B): the value before the first roll, the turn starting with bank s (one bank
    without saved rolls)."""


def turn_tables(
    rules: RuleSet,
    filled: int,
    successor: Callable[[int], FloatArray],
    guideposts: Guideposts,
    rerolls: int,
    *,
    steps: IntArray | None = None,
    width: int = 1,
    shift: bool = False,
    theta: float = 0.0,
) -> TurnTables:
    """The kernel's steps for B guideposts of one block, each step's values kept.

    With ``steps`` (B,) the lanes are on a value axis of ``width``: lane b is guidepost b
    (repeated as often as it has lanes) at index ``steps[b]``, the successors hold ``width``
    values per level, and ``shift`` moves a score along the axis (the kernel's block
    contract): the chance objective's turn for one need per lane. With ``theta`` != 0 the
    successors are the risk objective's blocks and every value kept a certainty
    equivalent."""
    from memo_solver.games.yahtzee.solve import kernel  # numba: imported by the first solve only

    tables = kernel_tables(rules)
    dice = rules.universe
    boxes = rules.open_boxes(filled)
    joker = tables.joker_row(filled)
    lanes = guideposts.flat
    count = lanes.size
    if steps is None:
        steps = np.zeros(count, dtype=np.int64)
    banks = rules.saved_levels(filled.bit_count())
    last = banks - 1 + rerolls  # the most rolls left after a first roll
    carried = min(last, rules.saved_levels(filled.bit_count() + 1) - 1) + 1
    scores = np.empty((carried, len(boxes), dice.n_rolls, count))
    rolls = np.empty((last + 1, dice.n_rolls, count))
    keeps = np.empty((last + 1, dice.n_keeps, count))
    start = np.empty((banks, count))
    kernel.turn_steps(
        np.array(boxes, dtype=np.int64), np.stack([successor(box).ravel() for box in boxes]),
        lanes, steps, kernel.objective(width, shift, theta), tables.adjust[joker],
        tables.landing, tables.lattice, scores, rolls, keeps, start,
    )  # fmt: skip
    return TurnTables(
        dice,
        boxes,
        points(rules, filled, boxes),
        scores,
        list(rolls),
        [np.empty((0, 0)), *keeps[1:]],
        start,
    )


def solve_block(rules: RuleSet, filled: int, successors: Mapping[int, FloatArray]) -> FloatArray:
    """The values (n_upper, n_bonus) of every guidepost with these boxes filled."""
    block: FloatArray = solve_blocks(rules, [filled], successors)[0]
    return block
