"""The turn kernel: every turn start of many blocks solved in compiled, allocation-free loops.

This is the one implementation of a turn's math; the block solver, advice for one state and
the strategy's choices all call these functions (through
:mod:`memo_solver.games.yahtzee.solve.turn`, which builds their tables from the rules).

The block contract
------------------
A block holds, for every *level* ``(upper total, bonus flag)`` of one set of filled boxes,
``W`` values along one *value axis*, flattened level-major: value ``j`` of level ``v`` is
at ``v * W + j``. The mean objective has ``W = 1`` (the expected points to come). A *lane*
is one (level, value index) pair; every lane of a block is solved by the same loops, so a
vector-valued block costs W times a scalar one and needs no second kernel. With saved rolls
(unused rolls carried to later turns) each level holds a row of *banks*, the rolls a turn
starts with saved: value ``j`` of bank ``s`` of level ``v`` is at ``(v * banks + s) * W + j``
(one bank without saved rolls, so the layout is the one above).

A turn has three steps, each in its own function:

1. the score step (:func:`landing_values`, :func:`score_rolls`): scoring a roll in an open
   box banks ``b`` points (the box's points, the upper bonus it reaches, the Joker's and the
   +100's for a five of a kind) and lands the level on the successor block's level ``v'``.
   With ``shift`` off the lane's value is ``b + successor[v', j]`` (expected points); with
   ``shift`` on, value ``j`` means "points still needed: j + 1" and the score moves along the
   axis instead: ``successor[v', j - b]``, which is 1 where ``j + 1 - b <= 0`` (reached); the
   successor holds the same width, its values past what its open boxes can give being 0.
   The best box per roll is a max per lane.
2. the reroll rounds (:func:`keep_values`, :func:`best_keep`): a keep is worth the average
   of its six children with one die more; a roll is worth its best sub-keep, found through
   the parents lattice. Both are per-lane linear or max operations, so they serve any value
   axis unchanged.
3. the turn start (:func:`start_values`): the first roll's expectation.

The risk objective (exponential utility, ``theta`` != 0) runs the same steps. Its blocks
hold certainty equivalents c, (1/theta) ln E[exp(theta X)] in points, so the score step is
the mean's, ``b + successor[v', j]``: everything a score banks shares one exponent. Then
each landing value (and each all-alike roll's, with the Joker's and the +100's points)
moves to a utility, ``sign(theta) exp(theta c - top)``, relative to the lane's reference
``top`` (:func:`exponent_reference`, fixed by the chain's first score step). The rounds'
averages and the turn start's expectation are then the mean's own linear steps, and the
best box and keep the mean's max (the sign makes the larger utility the better for either
sign of theta); the turn start's utility goes back to points (:func:`certainty`). An
impossible move (-inf points: the Joker's forbidden boxes) is a utility of 0 for theta > 0
and -inf for theta < 0, the worst for either sign. With ``top`` the largest exponent of
the landing values, no utility of the first step exceeds 1 in size but by the all-alike
rolls' extra points, and a turn start's is at least the chance of the best roll (theta >
0), so nothing overflows or vanishes at |theta| <= 0.5 (tests/test_risk.py).

The steps form one chain over the rolls left (:func:`solve_blocks`): a score step at 0, then
a round and, where the bank a score would carry grows, a score step again
(:func:`score_step`), each turn start read off the chain where the first roll leaves its
bank plus the turn's rerolls.

Lanes are the innermost, contiguous axis: a block's lanes are solved up to ``TILE`` at a
time, and every loop over them starts at lane 0 and runs a count known at run time, the one
shape of loop that LLVM turns into SIMD instructions here (a loop from a run-time offset, or
one of a constant 16 trips, stayed scalar and ran 2.5x slower). The work area of a tile
stays in the core's L2 cache and starts on a cache line (:func:`line_aligned`). Nothing is
allocated per block, and the GIL is released throughout.

The records
-----------
What a rule set gives every turn comes in two records, built once per rule set
(:class:`memo_solver.games.yahtzee.solve.turn.KernelTables`) and passed whole: the scoring
tables (:class:`Landing`) and the dice lattice (:class:`Lattice`). They are numba structrefs,
not named tuples: a structref carries its numba type, so the dispatcher types it in C as it
does an array (0.15 us a record), while it types a named tuple in Python, element by
element, on every call (2 us a record of five arrays: the two would make a warm advice
request, 65 us at the median with one call of
:func:`memo_solver.games.yahtzee.solve.one_roll.roll_steps`, 6 % slower). Each function
reads the fields it uses into locals first, so its loops index plain arrays, as they did
when the fields were arguments. What changes per call stays a named tuple: the lanes of a
tile (:class:`Lanes`), made inside compiled code, which costs no typing, and the blocks of a
batch (:class:`memo_solver.games.yahtzee.solve.batch.Batch`), typed once per batch.

One module of about 760 lines, on purpose: the one implementation of the turn's math, for
every objective, whose steps share the records and the tile and are compiled together; the
forward passes' loops, which only read the records, are in
:mod:`memo_solver.games.yahtzee.solve.forward_kernel`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Final, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
from numba.core import types
from numba.experimental import structref

from memo_solver.core.compiled import jit
from memo_solver.games.yahtzee.rules.dice import Dice

if TYPE_CHECKING:
    from memo_solver.games.yahtzee.solve.batch import Batch, LaneSets

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Item = TypeVar("Item", bound=np.generic)

TILE: Final = 128
"""Lanes solved together at most: every level of a Yahtzee block (at most 128) in one tile;
its (keeps, 128) work area is 473 KB for five dice, 946 KB for six."""
FACES: Final = 6
CACHE_LINE: Final = 64
"""Bytes of a cache line, the width of an AVX-512 vector too."""


class _RecordType(types.StructRef):
    """numba's type of a record: its fields' types as given, never a literal's."""

    def preprocess_fields(
        self, fields: tuple[tuple[str, types.Type], ...]
    ) -> tuple[tuple[str, types.Type], ...]:
        return tuple((name, types.unliteral(kind)) for name, kind in fields)  # type: ignore[no-untyped-call]


@structref.register
class _LandingType(_RecordType):
    """numba's type of a :class:`Landing`."""


@structref.register
class _LatticeType(_RecordType):
    """numba's type of a :class:`Lattice`."""


@structref.register
class _ObjectiveType(_RecordType):
    """numba's type of an :class:`Objective`."""


class Landing(structref.StructRefProxy):
    """A rule set's scoring as the score step reads it (built by
    :class:`memo_solver.games.yahtzee.solve.turn.KernelTables`): per box, the rolls fall
    into classes of equal points; per class and level, where the level lands in the
    successor block and what it banks."""

    roll_class: IntArray
    """(boxes, n_rolls): each roll's class in each box."""
    n_classes: IntArray
    """(boxes,): how many classes each box has."""
    index: IntArray
    """(boxes, classes, levels) or (boxes, classes, 1), classes the most any box has: the
    successor's level landed on."""
    banked: FloatArray
    """(boxes, classes, levels) or (boxes, classes, 1): the points and upper bonus banked."""
    alike: IntArray
    """(6,): the all-alike rolls, face 1 first, which the Joker and the +100 score again."""
    extra: FloatArray
    """(levels,): the +100 a five of a kind banks from each level."""

    def __new__(
        cls,
        roll_class: IntArray,
        n_classes: IntArray,
        index: IntArray,
        banked: FloatArray,
        alike: IntArray,
        extra: FloatArray,
    ) -> Landing:
        record: Landing = _new_landing(roll_class, n_classes, index, banked, alike, extra)
        vars(record).update(
            roll_class=roll_class, n_classes=n_classes, index=index, banked=banked,
            alike=alike, extra=extra,
        )  # fmt: skip
        return record


class Lattice(structref.StructRefProxy):
    """A dice count's lattice of keeps and rolls as the reroll rounds and the choices walk
    it (:func:`lattice`): rows are keeps, the rolls last."""

    children: IntArray
    """(keeps short of a roll, 6): each keep's children, one die more."""
    parents: IntArray
    """(n_keeps, 6): each keep's parents, one die fewer (row 0 unused)."""
    n_parents: IntArray
    """(n_keeps,): how many parents each keep has."""
    first: FloatArray
    """(n_rolls,): each roll's chance on the first roll of a turn."""
    rank: IntArray
    """(n_keeps,): each keep's rank by the tie rule (higher wins: more dice, then the first
    keep)."""
    keep_of_rank: IntArray
    """(n_keeps,): the keep of each rank."""
    bits: int
    """The bits a rank takes in an integer key."""

    def __new__(
        cls,
        children: IntArray,
        parents: IntArray,
        n_parents: IntArray,
        first: FloatArray,
        rank: IntArray,
        keep_of_rank: IntArray,
        bits: int,
    ) -> Lattice:
        record: Lattice = _new_lattice(
            children, parents, n_parents, first, rank, keep_of_rank, bits
        )
        vars(record).update(
            children=children, parents=parents, n_parents=n_parents, first=first, rank=rank,
            keep_of_rank=keep_of_rank, bits=bits,
        )  # fmt: skip
        return record


class Objective(structref.StructRefProxy):
    """What a call solves (:func:`objective`): the value axis of ``width`` values per level,
    a score moving lanes along it (``shift``: the need) or adding to them, and the risk
    ``theta`` (0: the mean; else certainty equivalents, the module's docstring). A record,
    not three arguments, so that no compiled function takes more than a screenful."""

    width: int
    shift: bool
    theta: float

    def __new__(cls, width: int, shift: bool, theta: float) -> Objective:
        record: Objective = _new_objective(width, shift, theta)
        vars(record).update(width=width, shift=shift, theta=theta)
        return record


# numba's structref helpers carry no annotations
structref.define_proxy(Landing, _LandingType, list(Landing.__annotations__))  # type: ignore[no-untyped-call]
structref.define_proxy(Lattice, _LatticeType, list(Lattice.__annotations__))  # type: ignore[no-untyped-call]
structref.define_proxy(Objective, _ObjectiveType, list(Objective.__annotations__))  # type: ignore[no-untyped-call]


@jit
def _new_landing(
    roll_class: IntArray,
    n_classes: IntArray,
    index: IntArray,
    banked: FloatArray,
    alike: IntArray,
    extra: FloatArray,
) -> Landing:
    """A :class:`Landing` made in compiled code, kept in the cache folder (the proxy's own
    constructor compiles again in every process)."""
    return Landing(roll_class, n_classes, index, banked, alike, extra)


@jit
def _new_lattice(
    children: IntArray,
    parents: IntArray,
    n_parents: IntArray,
    first: FloatArray,
    rank: IntArray,
    keep_of_rank: IntArray,
    bits: int,
) -> Lattice:
    """A :class:`Lattice` made in compiled code (:func:`_new_landing` says why)."""
    return Lattice(children, parents, n_parents, first, rank, keep_of_rank, bits)


@jit
def _new_objective(width: int, shift: bool, theta: float) -> Objective:
    """An :class:`Objective` made in compiled code (:func:`_new_landing` says why)."""
    return Objective(width, shift, theta)


@lru_cache(maxsize=4096)
def objective(width: int, shift: bool = False, theta: float = 0.0) -> Objective:
    """The :class:`Objective` of these, made once (a warm advice request reuses the mean's):
    its fields always of one type each, so that no call compiles the kernel again."""
    return Objective(int(width), bool(shift), float(theta))


@lru_cache(maxsize=8)
def lattice(dice: Dice) -> Lattice:
    """The lattice of ``dice``, made once per dice count. Its ranks order the keeps by the
    tie rule (:mod:`memo_solver.games.yahtzee.rules.ties`): more dice, then the first keep."""
    order: IntArray = np.lexsort((-np.arange(dice.n_keeps), dice.keep_sizes))  # worst first
    rank = np.empty(dice.n_keeps, dtype=np.int64)
    rank[order] = np.arange(dice.n_keeps)
    parents, n_parents = dice.parent_rows
    return Lattice(
        dice.child_rows, parents, n_parents, np.ascontiguousarray(dice.transition[0]), rank,
        order.astype(np.int64), (dice.n_keeps - 1).bit_length(),
    )  # fmt: skip


@jit
def line_aligned(shape: tuple[int, ...], dtype: type[Item]) -> npt.NDArray[Item]:
    """Zeros of ``shape`` and ``dtype`` starting on a cache line: a work area whose rows are
    lane loops. numba aligns its arrays to 32 bytes only, so half of them began mid-line,
    every 64-byte vector load of them then spanned two lines, and the same layer took 93 ms
    in place of 73 (which half a call got decided at random: the kernel's bimodal timings)."""
    size = 1
    for extent in shape:
        size *= extent
    raw = np.zeros(size + CACHE_LINE, dtype)  # a line's worth of spare items, whatever their size
    skip = (-raw.ctypes.data % CACHE_LINE) // raw.itemsize
    return raw[skip : skip + size].reshape(shape)


@jit
def _larger(a: float, b: float) -> float:
    """The larger of two values, written as the select that x86's ``maxpd`` is, so that each
    vectorized lane loop is one max instruction per vector; never given a NaN, where the two
    spellings would differ."""
    return a if a > b else b


@jit
def _landed(
    successors: FloatArray,
    row: int,
    level: int,
    banked: float,
    j: int,
    width: int,
    shift: bool,
) -> float:
    """Value ``j`` of landing on ``level`` (a level and bank of the successor, as one index)
    of successor ``row`` having banked ``banked``."""
    if not shift:
        value: float = banked + successors[row, level * width + j]
        return value
    if banked == -np.inf:
        return -np.inf
    still = j + 1 - int(banked)  # points still needed after the score (points are never < 0)
    if still <= 0:
        return 1.0
    reached: float = successors[row, level * width + still - 1]
    return reached


class Lanes(NamedTuple):
    """The lanes a step solves: lane t is on level ``levels[t]`` at index ``steps[t]`` of
    the value axis of ``width``, for the first ``n`` lanes; ``shift`` as in the block
    contract. A score lands on bank ``saved`` of the successor's ``banks`` (saved rolls;
    one bank, 0, without them)."""

    levels: IntArray
    steps: IntArray
    n: int
    width: int
    shift: bool
    banks: int
    saved: int


@jit
def landing_values(
    open_boxes: IntArray,
    succ_rows: IntArray,
    successors: FloatArray,
    landing: Landing,
    lanes: Lanes,
    values: FloatArray,
) -> None:
    """values[i, k, t]: lane t's value for scoring a roll of class k in open box i (the
    classes of a box are its rolls of equal points)."""
    n_classes, index, banked = landing.n_classes, landing.index, landing.banked
    levels, steps, n, width, shift, banks, saved = lanes
    for i in range(open_boxes.size):
        box = open_boxes[i]
        row = succ_rows[i]
        for k in range(n_classes[box]):
            for t in range(n):
                values[i, k, t] = _landed(
                    successors,
                    row,
                    index[box, k, levels[t]] * banks + saved,
                    banked[box, k, levels[t]],
                    steps[t],
                    width,
                    shift,
                )


@jit
def score_rolls(
    open_boxes: IntArray,
    succ_rows: IntArray,
    successors: FloatArray,
    landing: Landing,
    adjust: FloatArray,
    lanes: Lanes,
    values: FloatArray,
    work: FloatArray,
    first_roll: int,
    scores: FloatArray,
) -> None:
    """work[first_roll + r, t]: roll r's value with no reroll left, the best open box's.

    The six all-alike rolls are scored again with what the Joker (``adjust``: points added,
    -inf where it forbids the box) and the +100 (``landing.extra`` per level) bank on top.
    When ``scores`` has rows, it receives every box's value too (advice and the policy)."""
    roll_class, index, banked = landing.roll_class, landing.index, landing.banked
    alike, extra = landing.alike, landing.extra
    levels, steps, n, width, shift, banks, saved = lanes
    keep_scores = scores.shape[0] > 0
    n_rolls = roll_class.shape[1]
    for r in range(n_rolls):
        row = first_roll + r
        cls = roll_class[open_boxes[0], r]
        for t in range(n):
            work[row, t] = values[0, cls, t]
        i = 1
        while i + 3 <= open_boxes.size:  # three boxes a pass: a third of the row's traffic
            c1 = roll_class[open_boxes[i], r]
            c2 = roll_class[open_boxes[i + 1], r]
            c3 = roll_class[open_boxes[i + 2], r]
            for t in range(n):
                best = _larger(values[i, c1, t], values[i + 1, c2, t])
                work[row, t] = _larger(_larger(best, values[i + 2, c3, t]), work[row, t])
            i += 3
        while i < open_boxes.size:
            cls = roll_class[open_boxes[i], r]
            for t in range(n):
                work[row, t] = _larger(values[i, cls, t], work[row, t])
            i += 1
        if keep_scores:
            for i in range(open_boxes.size):
                cls = roll_class[open_boxes[i], r]
                for t in range(n):
                    scores[i, r, t] = values[i, cls, t]
    for a in range(alike.size):
        row = first_roll + alike[a]
        for t in range(n):
            work[row, t] = -np.inf
        for i in range(open_boxes.size):
            box = open_boxes[i]
            cls = roll_class[box, alike[a]]
            for t in range(n):
                level = levels[t]
                value = _landed(
                    successors,
                    succ_rows[i],
                    index[box, cls, level] * banks + saved,
                    banked[box, cls, level] + adjust[box, a] + extra[level],
                    steps[t],
                    width,
                    shift,
                )
                work[row, t] = _larger(value, work[row, t])
                if keep_scores:
                    scores[i, alike[a], t] = value


@jit
def keep_values(work: FloatArray, children: IntArray, n: int) -> None:
    """Rows 0..len(children)-1 of ``work`` (the keeps short of a full roll) from the rows
    after them: each keep the average of its six children, largest keeps first."""
    sixth = 1.0 / FACES
    for k in range(children.shape[0] - 1, -1, -1):
        c0, c1, c2 = children[k, 0], children[k, 1], children[k, 2]
        c3, c4, c5 = children[k, 3], children[k, 4], children[k, 5]
        for t in range(n):
            work[k, t] = (
                work[c0, t] + work[c1, t] + work[c2, t] + work[c3, t] + work[c4, t] + work[c5, t]
            ) * sixth


@jit
def best_keep(work: FloatArray, parents: IntArray, n_parents: IntArray, n: int) -> None:
    """Every row of ``work`` becomes the best of its keep and the keeps inside it (through
    the parents, one die fewer, whose rows come first and are done first)."""
    for k in range(1, work.shape[0]):
        for p in range(n_parents[k]):
            parent = parents[k, p]
            for t in range(n):
                work[k, t] = _larger(work[parent, t], work[k, t])


@jit
def start_values(work: FloatArray, first: FloatArray, first_roll: int, n: int) -> None:
    """Row 0 of ``work``: the expectation over the first roll (the rolls' rows, weighted by
    ``first``, their chances)."""
    for t in range(n):
        work[0, t] = 0.0
    for r in range(first.size):
        weight = first[r]
        for t in range(n):
            work[0, t] += weight * work[first_roll + r, t]


@jit
def exponent_reference(
    values: FloatArray, open_boxes: IntArray, n_classes: IntArray, n: int, theta: float,
    top: FloatArray,
) -> None:  # fmt: skip
    """top[t]: the largest ``theta * c`` over lane t's landing values (``values`` as
    :func:`landing_values` writes them, in points), the reference of every utility of the
    lane's turn."""
    for t in range(n):
        top[t] = -np.inf
    for i in range(open_boxes.size):
        for k in range(n_classes[open_boxes[i]]):
            for t in range(n):
                top[t] = _larger(theta * values[i, k, t], top[t])


@jit
def _utility(value: float, sign: float, theta: float, top: float) -> float:
    """A value in points as a utility relative to ``top``: sign(theta) exp(theta c - top),
    increasing in c, so that a best choice is the same in either domain."""
    utility: float = sign * np.exp(theta * value - top)
    return utility


@jit
def to_utilities(rows: FloatArray, first: int, n: int, theta: float, top: FloatArray) -> None:
    """Rows ``first`` on of ``rows`` (lanes last, the first ``n``), in points, as utilities."""
    sign = 1.0 if theta > 0 else -1.0
    for r in range(first, rows.shape[0]):
        for t in range(n):
            rows[r, t] = _utility(rows[r, t], sign, theta, top[t])


@jit
def _score_utilities(
    open_boxes: IntArray, landing: Landing, values: FloatArray, n: int, theta: float,
    top: FloatArray,
) -> None:  # fmt: skip
    """The landing values of every open box's classes, in points, as utilities: a few dozen
    per lane, where the rolls they score are a few hundred (the exponentials are most of
    what a risk table costs beyond the mean's)."""
    for i in range(open_boxes.size):
        to_utilities(values[i, : landing.n_classes[open_boxes[i]]], 0, n, theta, top)


@jit
def _alike_utilities(
    landing: Landing, rows: FloatArray, first: int, scores: FloatArray, n: int, theta: float,
    top: FloatArray,
) -> None:  # fmt: skip
    """The all-alike rolls' rows from ``first`` on (and their ``scores``, when it has rows),
    which :func:`score_rolls` scores in points (the Joker's and the +100's points added to
    the landing's), as utilities."""
    sign = 1.0 if theta > 0 else -1.0
    alike = landing.alike
    for a in range(alike.size):
        row = first + alike[a]
        for t in range(n):
            rows[row, t] = _utility(rows[row, t], sign, theta, top[t])
        for i in range(scores.shape[0]):
            for t in range(n):
                scores[i, alike[a], t] = _utility(scores[i, alike[a], t], sign, theta, top[t])


@jit
def certainty(utility: float, theta: float, top: float) -> float:
    """A utility relative to ``top`` back in points: the certainty equivalent."""
    sign = 1.0 if theta > 0 else -1.0
    value: float = (np.log(sign * utility) + top) / theta
    return value


@jit
def to_certainties(rows: FloatArray, n: int, theta: float, top: FloatArray) -> None:
    """Every row of utilities (lanes last, the first ``n`` of them) back in points."""
    for r in range(rows.shape[0]):
        for t in range(n):
            rows[r, t] = certainty(rows[r, t], theta, top[t])


@jit
def banks_of(values: FloatArray, landing: Landing, width: int) -> int:
    """How many banks of saved rolls a block's raveled ``values`` hold per level and value
    index: its size over the rule set's levels (1 without saved rolls)."""
    banks: int = values.shape[-1] // (landing.extra.size * width)
    return banks


@jit
def score_step(
    rolls_left: int,
    open_boxes: IntArray,
    succ_rows: IntArray,
    successors: FloatArray,
    landing: Landing,
    adjust: FloatArray,
    lanes: Lanes,
    values: FloatArray,
    work: FloatArray,
    scored: FloatArray,
    scores: FloatArray,
    theta: float,
    top: FloatArray,
) -> None:
    """The score step of the chain over rolls left, ``lanes.saved`` ignored: a score with
    ``rolls_left`` rolls unused starts the next turn with that bank (capped by the
    successor's banks). With none left it is the rolls' only value, written to ``work``'s
    rolls rows. Later the rows already hold the best of rerolling; the score step runs again
    only where the bank carried grows (never without saved rolls), into ``scored``
    (n_rolls, lanes), and each row keeps the better of the two. ``scores`` as for
    :func:`score_rolls`, written when the step runs. With ``theta`` != 0 (the risk
    objective) the step scores in points and hands its rows and ``scores`` on as utilities,
    the first step (``rolls_left`` 0) fixing each lane's reference ``top``."""
    banks = lanes.banks
    saved = min(rolls_left, banks - 1)
    if rolls_left > 0 and saved == min(rolls_left - 1, banks - 1):
        return
    n = lanes.n
    at = Lanes(lanes.levels, lanes.steps, n, lanes.width, lanes.shift, banks, saved)
    landing_values(open_boxes, succ_rows, successors, landing, at, values)
    n_rolls = landing.roll_class.shape[1]
    first_roll = work.shape[0] - n_rolls
    if theta != 0.0:
        if rolls_left == 0:
            exponent_reference(values, open_boxes, landing.n_classes, n, theta, top)
        _score_utilities(open_boxes, landing, values, n, theta, top)
    if rolls_left == 0:
        score_rolls(
            open_boxes, succ_rows, successors, landing, adjust, at, values, work, first_roll,
            scores,
        )  # fmt: skip
        if theta != 0.0:
            _alike_utilities(landing, work, first_roll, scores, n, theta, top)
        return
    score_rolls(open_boxes, succ_rows, successors, landing, adjust, at, values, scored, 0, scores)
    if theta != 0.0:
        _alike_utilities(landing, scored, 0, scores, n, theta, top)
    for r in range(n_rolls):
        row = first_roll + r
        for t in range(n):
            work[row, t] = _larger(scored[r, t], work[row, t])


@jit
def solve_blocks(
    lo: int,
    hi: int,
    batch: Batch,
    lane_sets: LaneSets,
    lane_set: IntArray,
    adjust: FloatArray,
    landing: Landing,
    lattice: Lattice,
    rerolls: int,
    goal: Objective,
    tile: int,
    out: FloatArray,
) -> None:
    """Blocks ``lo..hi-1`` of ``batch`` into ``out`` (N, levels * banks * width), every lane
    of each.

    Block b's lanes are ``lane_sets.levels[lane_set[b]]`` (the first ``lane_sets.counts[...]``),
    and its Joker adjustments ``adjust[batch.joker[b]]``. Lanes not listed are left as they
    are (the caller fills them with NaN).

    One turn is one chain over the rolls left R, from 0 up: the rolls' values with R left
    are the score step's (the next turn starting with bank R) or, with R > 0, the best keep
    of the chain at R - 1, and the turn start with bank s is the first roll's expectation
    at R = s + rerolls. Without saved rolls a block holds one bank and the chain is the
    plain turn: one score step, ``rerolls`` rounds, one turn start. Every block of a batch
    holds the same banks (:func:`banks_of` ``out``), and so do its successors. ``goal``
    says what the lanes hold (:class:`Objective`)."""
    open_boxes, n_open, succ_rows, successors = (
        batch.open_boxes, batch.n_open, batch.succ_rows, batch.successors,
    )  # fmt: skip
    width, shift, theta = goal.width, goal.shift, goal.theta
    children, parents, n_parents = lattice.children, lattice.parents, lattice.n_parents
    n_keeps = parents.shape[0]
    first_roll = n_keeps - landing.roll_class.shape[1]
    values = line_aligned((open_boxes.shape[1], max(1, landing.index.shape[1]), tile), np.float64)
    work = line_aligned((n_keeps, tile), np.float64)
    banks = banks_of(out, landing, width)
    succ_banks = banks_of(successors, landing, width)
    scored = line_aligned((landing.roll_class.shape[1] if succ_banks > 1 else 0, tile), np.float64)
    levels = np.zeros(tile, dtype=np.int64)
    steps = np.zeros(tile, dtype=np.int64)
    top = np.zeros(tile)
    no_scores = np.empty((0, 0, 0))
    for b in range(lo, hi):
        boxes = open_boxes[b, : n_open[b]]
        rows = succ_rows[b, : n_open[b]]
        reached = lane_sets.levels[lane_set[b]]
        count = lane_sets.counts[lane_set[b]] * width
        for start in range(0, count, tile):
            n = min(tile, count - start)
            for t in range(n):
                levels[t] = reached[(start + t) // width]
                steps[t] = (start + t) % width
            if boxes.size == 0:  # the game is over: nothing more to score, whatever the bank
                for saved in range(banks):
                    for t in range(n):
                        out[b, (levels[t] * banks + saved) * width + steps[t]] = 0.0
                continue
            lanes = Lanes(levels, steps, n, width, shift, succ_banks, 0)
            adjusted = adjust[batch.joker[b]]
            for rolls_left in range(banks + rerolls):
                if rolls_left > 0:
                    keep_values(work, children, n)
                    best_keep(work, parents, n_parents, n)
                score_step(
                    rolls_left, boxes, rows, successors, landing, adjusted, lanes, values, work,
                    scored, no_scores, theta, top,
                )  # fmt: skip
                if rolls_left >= rerolls:
                    start_values(work, lattice.first, first_roll, n)
                    if theta != 0.0:  # row 0 is written again before it is read
                        to_certainties(work[:1], n, theta, top)
                    saved = rolls_left - rerolls
                    for t in range(n):
                        out[b, (levels[t] * banks + saved) * width + steps[t]] = work[0, t]


@jit
def turn_steps(
    open_boxes: IntArray,
    successors: FloatArray,
    levels: IntArray,
    steps: IntArray,
    goal: Objective,
    adjust: FloatArray,
    landing: Landing,
    lattice: Lattice,
    scores: FloatArray,
    rolls: FloatArray,
    keeps: FloatArray,
    start: FloatArray,
) -> None:
    """One block's turn for the lanes ``levels`` (one tile of any width: each lane's level,
    and its index ``steps`` on the value axis of ``goal``, as in the block contract),
    keeping what each step found: ``scores[s]`` (boxes, rolls, lanes) the score step
    carrying bank s, ``rolls[n]`` the rolls with n rolls left, ``keeps[n]`` the keep
    lattice before its best-keep pass, ``start[s]`` the turn start with bank s (the shapes
    say how many: one bank, ``rerolls + 1`` rolls without saved rolls). Successor row i is
    open box i's. The same chain as :func:`solve_blocks`; at a risk every value kept is
    back in points by the end (``keeps[0]``, never written, aside)."""
    children, parents, n_parents = lattice.children, lattice.parents, lattice.n_parents
    n_keeps = parents.shape[0]
    first_roll = n_keeps - landing.roll_class.shape[1]
    tile = levels.size
    succ_rows = np.arange(open_boxes.size)
    values = line_aligned((open_boxes.size, max(1, landing.index.shape[1]), tile), np.float64)
    work = line_aligned((n_keeps, tile), np.float64)
    theta = goal.theta
    succ_banks = banks_of(successors, landing, goal.width)
    scored = line_aligned((landing.roll_class.shape[1] if succ_banks > 1 else 0, tile), np.float64)
    lanes = Lanes(levels, steps, tile, goal.width, goal.shift, succ_banks, 0)
    top = np.zeros(tile)
    rerolls = rolls.shape[0] - start.shape[0]
    for rolls_left in range(rolls.shape[0]):
        if rolls_left > 0:
            keep_values(work, children, tile)
            keeps[rolls_left] = work
            best_keep(work, parents, n_parents, tile)
        score_step(
            rolls_left, open_boxes, succ_rows, successors, landing, adjust, lanes, values, work,
            scored, scores[min(rolls_left, scores.shape[0] - 1)], theta, top,
        )  # fmt: skip
        rolls[rolls_left] = work[first_roll:]
        if rolls_left >= rerolls:
            start_values(work, lattice.first, first_roll, tile)
            start[rolls_left - rerolls] = work[0]
    if theta != 0.0:
        for kept in (scores.reshape(-1, tile), rolls.reshape(-1, tile), start):
            to_certainties(kept, tile, theta, top)
        to_certainties(keeps[1:].reshape(-1, tile), tile, theta, top)
