"""The exact distribution of the points still to come under the optimal strategy.

A forward pass over the blocks below a state, most-open first: each reachable guidepost
carries the distribution of the points banked since the state (a probability for every
total), each turn's outcomes under :mod:`memo_solver.games.yahtzee.analysis.policy` move that mass,
shifted by the points and bonuses banked, to the next turn's guideposts, and the blocks
with every box filled hold the answer. Per turn, outcomes with the same points land
together, so the work is one shifted add per (box, points) class and guidepost, of the
totals that guidepost can hold (its window), in a compiled loop (:func:`_turn`, the loop in
:mod:`memo_solver.games.yahtzee.solve.forward_kernel` beside the kernel's; the whole
``yahtzee`` distribution takes about 9 CPU s, 40 when these were array steps). The same
pass yields the chances of the bonuses and the expected points of every box.
The values the policy needs are solved on the engine first (everything below the state,
shared with everyone on the memo); the pass itself (:func:`forward_pass`) only reads them
from a plain mapping, so it is synchronous and can run in a thread of its own. The mass is
held level by level, each block's as its turn starts' windows of totals until the pass
reaches it (:class:`_Mass`: the whole ``yatzy-saved`` distribution peaks at 2.2 GB, where
rows of every total would take about 18), and dropped as soon as the block is done.

With saved rolls a block's turn starts are its guideposts each with its banks (the rolls a
turn starts with saved), and the pass carries the bank: a turn starting with bank s rolls
first with s + rerolls rolls left, the policy stops or rerolls at each roll by the rolls
left alone (:func:`memo_solver.games.yahtzee.analysis.policy.banked_outcomes`), and the mass
that stops with R left lands on the next block's turn start with the bank it carries,
``rules.carried(R)`` (:func:`_class_weights`, weights per bank carried).

The same pass follows the target policy, which plays for the best chance of N more points
(:func:`target_pass`): there the points banked decide the choices (the need left is N less
them), so each total of a guidepost is a lane of its own. Its P(>= N) is the chance
objective's value computed by another road, which the tests and the pins hold together.

One module of about 690 lines, on purpose: the mean pass and the target pass walk the same
blocks with the same mass bookkeeping and differ only in what decides a choice; apart, each
would keep a copy of the walk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.policy import (
    TurnPolicy,
    banked_outcomes,
    outcomes,
    target_policy,
    turn_policy,
)
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.rules.state import State, guidepost
from memo_solver.games.yahtzee.solve import forward_kernel
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.need import (
    NeedBeyondCapError,
    NeedGame,
    reach,
    widen,
    width as need_width,
)
from memo_solver.games.yahtzee.solve.scoring import land
from memo_solver.games.yahtzee.solve.turn import Guideposts

IntArray = npt.NDArray[np.int64]
Progress = Callable[[int, int], None]
_EVENTS = ("extra", "alike")
"""What the pass follows the chance of never having had: a +100 bonus, a turn ending with
all dice alike. One mass per guidepost each (a block's are an (events, B) array), moved
like the scores but never shifted."""


@dataclass(frozen=True)
class Scores:
    """The distribution of the points still to come from a state (the final score, from
    the start) under some policy: what :func:`target_pass` gives for the target policy."""

    probabilities: FloatArray
    """P(points == s) for s = 0, 1, ...; sums to 1 within 1e-12."""

    @property
    def mean(self) -> float:
        return float(self.probabilities @ np.arange(self.probabilities.size))

    @property
    def std(self) -> float:
        scores = np.arange(self.probabilities.size)
        return math.sqrt(float(self.probabilities @ (scores - self.mean) ** 2))

    def percentile(self, q: float) -> int:
        """The smallest total whose cumulative probability reaches ``q`` (0 < q <= 1)."""
        cumulative = np.cumsum(self.probabilities)
        return int(np.searchsorted(cumulative, q - 1e-12))

    def survival(self, threshold: int) -> float:
        """P(points >= threshold)."""
        return float(self.probabilities[max(0, threshold) :].sum())

    def to_json(self, thresholds: tuple[int, ...] = ()) -> dict[str, object]:
        return {
            "mean": self.mean,
            "std": self.std,
            "percentiles": {
                str(q): self.percentile(q / 100) for q in (1, 5, 10, 25, 50, 75, 90, 95, 99)
            },
            "survival": {str(t): self.survival(t) for t in thresholds},
            "probabilities": self.probabilities.tolist(),
        }


@dataclass(frozen=True)
class Distribution(Scores):
    """The points still to come from a state under the mean-optimal strategy, with the
    chances of its bonuses and the points of each box."""

    p_upper_bonus: float
    p_yahtzee: float
    """The chance of scoring the all-alike (Yahtzee) box's points (not 0) from here."""
    p_extra_bonus: float
    """The chance of at least one +100 bonus from here."""
    p_any_yahtzee: float
    """The chance that at least one turn from here ends with all dice alike, whichever box
    takes it (the all-alike box open, holding its points, or scratched)."""
    box_points: dict[str, float] = field(default_factory=dict)
    """Expected points each box still open receives (bonuses not included)."""
    bonus_points: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> Distribution:
        """Back from :meth:`to_json` (a worker's answer to a background ``stats`` job)."""
        return cls(
            probabilities=np.asarray(payload["probabilities"], dtype=np.float64),
            p_upper_bonus=float(payload["p_upper_bonus"]),
            p_yahtzee=float(payload["p_yahtzee"]),
            p_extra_bonus=float(payload["p_extra_bonus"]),
            p_any_yahtzee=float(payload["p_any_yahtzee"]),
            box_points={k: float(v) for k, v in payload["box_points"].items()},
            bonus_points={k: float(v) for k, v in payload["bonus_points"].items()},
        )

    def to_json(self, thresholds: tuple[int, ...] = ()) -> dict[str, object]:
        scores = super().to_json(thresholds)
        return {
            "mean": scores["mean"],
            "std": scores["std"],
            "percentiles": scores["percentiles"],
            "p_upper_bonus": self.p_upper_bonus,
            "p_yahtzee": self.p_yahtzee,
            "p_extra_bonus": self.p_extra_bonus,
            "p_any_yahtzee": self.p_any_yahtzee,
            "box_points": self.box_points,
            "bonus_points": self.bonus_points,
            "survival": scores["survival"],
            "probabilities": scores["probabilities"],
        }


@dataclass
class _Tally:
    p_upper_bonus: float = 0.0
    p_yahtzee: float = 0.0
    box_points: dict[str, float] = field(default_factory=dict)
    bonus_points: dict[str, float] = field(default_factory=dict)


class MissingBlockError(LookupError):
    """The pass needed a block its mapping lacks: a bug in what was solved beforehand."""


async def score_distribution(
    engine: Engine,
    rules: RuleSet,
    state: State,
    progress: Progress | None = None,
    theta: float = 0.0,
) -> Distribution:
    """The exact distribution from ``state`` (turn start or mid-turn with dice); with
    ``theta`` != 0 ``engine`` is the risk table's and the strategy the theta strategy."""
    blocks = await blocks_below(engine, rules, state)
    return forward_pass(blocks, rules, state, progress, theta)


async def blocks_below(engine: Engine, rules: RuleSet, state: State) -> dict[str, Block]:
    """Every block the pass from ``state`` reads, solved on ``engine`` if need be."""
    filled = state.filled
    await engine.block(block_key(filled))  # solves everything below the state
    return await engine.blocks([block_key(mask) for mask in rules.reachable_masks(filled)])


def forward_pass(
    blocks: Mapping[str, Block],
    rules: RuleSet,
    state: State,
    progress: Progress | None = None,
    theta: float = 0.0,
) -> Distribution:
    """The distribution from ``state``, reading the values of :func:`blocks_below` from
    ``blocks``; a block missing there is a :class:`MissingBlockError` at once. With
    ``theta`` != 0 ``blocks`` are the risk table's and the choices the theta strategy's
    (:func:`memo_solver.games.yahtzee.analysis.policy.turn_policy`): the exponential utility
    does not depend on the points banked, so the mass moves as the mean pass's does."""
    start = state.filled
    order = rules.reachable_masks(start)  # fewest boxes first
    mass = _starting_mass(rules, state)
    spared = {start: np.repeat(mass[start].dense().T, len(_EVENTS), axis=0)}
    tally = _Tally()
    for done, filled in enumerate(order):
        pending = mass.pop(filled, None)
        if pending is None:
            continue
        here = pending.dense()
        if filled == rules.all_filled:
            final = here.sum(axis=0)
            never = spared[filled].sum(axis=1)
            hit = {event: max(0.0, 1.0 - float(never[e])) for e, event in enumerate(_EVENTS)}
            return Distribution(
                probabilities=final,
                p_upper_bonus=tally.p_upper_bonus,
                p_yahtzee=tally.p_yahtzee,
                p_extra_bonus=hit["extra"],
                p_any_yahtzee=hit["alike"],
                box_points=tally.box_points,
                bonus_points=tally.bonus_points,
            )
        opening = state if filled == start else None
        here_spared = spared.pop(filled)
        _turn(blocks, rules, filled, here, here_spared, opening, mass, spared, tally, theta)
        if progress is not None:
            progress(done + 1, len(order))
    raise AssertionError("the pass never reached the end of the game")


def _starting_mass(rules: RuleSet, state: State) -> dict[int, _Mass]:
    """All the mass on the state's turn start of its block, with 0 points banked: its
    guidepost, and with saved rolls its bank (0 for a state with dice, whose rolls left
    say where its turn stands)."""
    at = guidepost(state, rules)
    first = Guideposts.reachable(rules, state.filled)
    level = int(np.flatnonzero((first.upper == at[0]) & (first.bonus == at[1]))[0])
    banks = rules.saved_levels(state.filled.bit_count())
    here = np.zeros((first.upper.size * banks, 1))
    here[level * banks + state.saved, 0] = 1.0
    return {state.filled: _Mass.of(here)}


def _first_rolls(rules: RuleSet, state: State | None, width: int) -> tuple[FloatArray, int]:
    """The chances of the turn's rolls and the rerolls left after them: the first roll of
    a turn, or the dice of a state caught mid-turn."""
    dice = rules.universe
    if state is not None and state.dice is not None and state.rerolls_left is not None:
        rolls = np.zeros((dice.n_rolls, width))
        rolls[dice.roll_index[state.dice], :] = 1.0
        return rolls, state.rerolls_left
    return np.repeat(dice.transition[0][:, None], width, axis=1), rules.rerolls


def _turn(
    blocks: Mapping[str, Block],
    rules: RuleSet,
    filled: int,
    here: FloatArray,
    here_spared: FloatArray,
    opening: State | None,
    mass: dict[int, _Mass],
    spared: dict[int, FloatArray],
    tally: _Tally,
    theta: float,
) -> None:
    """Move the block's mass ``here`` (turn starts, totals) to the blocks its boxes fill;
    ``opening`` is the state the pass starts from when this is its block, ``theta`` the
    strategy's risk (0: the mean).

    The rolls a turn ends on fall into classes of equal points in a box (and equal
    all-alike-ness, for the +100); every (class, turn start) pair lands on one turn start of
    the next block having banked one gain, so the move is one shifted add of the turn
    start's window of totals per pair (:func:`memo_solver.games.yahtzee.solve.forward_kernel.
    shift_add`, compiled), and the tallies are a few array steps over the pairs of all boxes
    at once. A block's turn starts are its guideposts, each with its banks under saved rolls
    (guidepost-major, as the block's values): there a pair lands on the bank the turn
    carries, so its weights come per bank carried (:func:`_class_weights`).
    """
    guideposts = Guideposts.reachable(rules, filled)
    successors = _successors(blocks, rules, filled)
    policy = turn_policy(rules, filled, successors.__getitem__, guideposts, theta)
    classes = _Classes.of(rules, policy.tables.boxes, policy.tables.points)
    banks = rules.saved_levels(filled.bit_count())
    reach = here.sum(axis=1)
    held = np.arange(reach.size)
    if banks > 1:  # only the turn starts that hold mass: a bank's are often few
        held = np.flatnonzero(reach > 0)
        here, here_spared, reach = here[held], here_spared[:, held], reach[held]
    by_carry = _class_weights(rules, policy, classes, opening, banks, held)
    pts, alike = classes.points[:, None], classes.alike[:, None]
    landing = land(rules, classes.box[:, None], pts, alike, guideposts.upper, guideposts.bonus)
    shape = (classes.points.size, guideposts.upper.size)
    level = held // banks

    def rows_of(levels: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """(classes, turn starts followed) from (classes, guideposts)."""
        levels = np.broadcast_to(levels, shape)
        return levels if banks == 1 else levels[:, level]

    upper_bonus = rows_of(landing.upper_bonus)
    extra = np.ascontiguousarray(rows_of(landing.extra))
    gains = pts + upper_bonus + extra
    # The tallies are linear in the weights: one pass over their sum over the banks carried.
    weights = by_carry[0][1]
    for _, more in by_carry[1:]:
        weights = weights + more
    reached = weights * reach
    boxes = policy.tables.boxes
    box_points = np.bincount(classes.position, reached.sum(axis=1) * classes.points, len(boxes))
    for i, box in enumerate(boxes):
        name = rules.categories[box].name
        tally.box_points[name] = tally.box_points.get(name, 0.0) + float(box_points[i])
    tally.p_yahtzee += float(reached[rows_of(landing.fifty)].sum())
    tally.p_upper_bonus += float(reached[upper_bonus > 0].sum())
    _add_bonus(tally, "upper", float((reached * upper_bonus).sum()))
    _add_bonus(tally, "yahtzee", float((reached * extra).sum()))
    first, length = _windows(here)
    upper = rows_of(landing.upper)
    flag = rows_of(landing.flag)
    hit_alike = classes.alike.astype(np.int64)
    for i, box in enumerate(boxes):
        lo, hi = classes.bounds[i], classes.bounds[i + 1]
        live = weights[lo:hi] > 0
        if not live.any():
            continue  # the strategy never scores this box here: no mass, no block to visit
        nxt_filled = filled | 1 << box
        nxt = Guideposts.reachable(rules, nxt_filled)
        nxt_banks = rules.saved_levels(nxt_filled.bit_count())
        rows = _row_lookup(nxt)[upper[lo:hi], flag[lo:hi]]
        width = int(gains[lo:hi][live].max()) + here.shape[1]
        height = nxt.upper.size * nxt_banks
        target = _pending(mass, nxt_filled, height)
        into = spared.setdefault(nxt_filled, np.zeros((len(_EVENTS), height)))
        # each bank carried lands on its own rows
        moves = [
            (carried[lo:hi], rows * nxt_banks + carry if nxt_banks > 1 else rows)
            for carry, carried in by_carry
        ]
        target.make_room(width, [(first, length, w, landed, gains[lo:hi]) for w, landed in moves])
        for carried, landed in moves:
            forward_kernel.shift_add(
                here, first, length, carried, landed, gains[lo:hi], extra[lo:hi],
                hit_alike[lo:hi], here_spared, target.data, target.base, into,
            )  # fmt: skip


def _class_weights(
    rules: RuleSet,
    policy: TurnPolicy,
    classes: _Classes,
    opening: State | None,
    banks: int,
    held: IntArray,
) -> list[tuple[int, FloatArray]]:
    """(bank carried, weights) pairs: weights[k, j] the chance that the turn from the
    block's turn start ``held[j]`` ends on a roll of class k carrying that bank (0 without
    saved rolls), ``opening`` its state when the pass starts mid-turn in it. With saved
    rolls a turn start with bank s rolls first with s + rerolls left."""
    count = classes.points.size
    rolls, rerolls = _first_rolls(rules, opening, held.size)
    if not rules.saved_rolls:
        weights = np.zeros((count, held.size))
        ends = outcomes(rules.universe, policy.keep, rolls, rerolls)
        forward_kernel.class_weights(ends, policy.box, classes.of_roll, weights)
        return [(0, weights)]
    mid_turn = opening is not None and opening.dice is not None
    starts = np.full(held.size, rerolls) if mid_turn else rerolls + held % banks
    by_carry: dict[int, FloatArray] = {}
    stops = banked_outcomes(rules.universe, policy, rolls, starts, held // banks)
    for left, ends, box in stops:
        carry = rules.carried(left)
        if carry not in by_carry:
            by_carry[carry] = np.zeros((count, held.size))
        forward_kernel.class_weights(ends, box, classes.of_roll, by_carry[carry])
    return sorted(by_carry.items())


def _successors(blocks: Mapping[str, Block], rules: RuleSet, filled: int) -> dict[int, Block]:
    """The blocks after scoring each open box of ``filled``, by box."""
    successors: dict[int, Block] = {}
    for box in rules.open_boxes(filled):
        key = block_key(filled | 1 << box)
        if key not in blocks:
            raise MissingBlockError(f"the distribution's pass needs block {key}, not solved")
        successors[box] = blocks[key]
    return successors


@dataclass(frozen=True)
class _Classes:
    """A block's rolls by (open box, points, all alike), each class's rolls scored alike:
    sorted by box, so each box's classes are one run ``bounds[i]:bounds[i + 1]``."""

    position: IntArray
    """(K,) the class's box as its position among the open boxes."""
    box: IntArray
    points: IntArray
    alike: npt.NDArray[np.bool_]
    of_roll: IntArray
    """(C_open, n_rolls) the class of each roll in each open box."""
    bounds: IntArray

    @classmethod
    def of(cls, rules: RuleSet, boxes: list[int], table: FloatArray) -> _Classes:
        points = np.where(np.isfinite(table), table, 0.0).astype(np.int64)
        span = int(points.max()) + 1
        position = np.arange(len(boxes))[:, None]
        codes = (position * span + points) * 2 + rules.universe.all_alike
        unique, of_roll = np.unique(codes, return_inverse=True)
        where, alike = np.divmod(unique, 2)
        position, points = np.divmod(where, span)
        return cls(
            position=position,
            box=np.asarray(boxes, dtype=np.int64)[position],
            points=points,
            alike=alike == 1,
            of_roll=of_roll.reshape(codes.shape).astype(np.int64),
            bounds=np.searchsorted(position, np.arange(len(boxes) + 1)),
        )


def _windows(here: FloatArray) -> tuple[IntArray, IntArray]:
    """Each guidepost's window of totals, its first to last nonzero (empty where it holds
    no mass): moving only the windows moves a ninth of the numbers (yahtzee, from the start)."""
    nonzero = here != 0
    held = nonzero.any(axis=1)
    first: IntArray = np.where(held, nonzero.argmax(axis=1), 0)
    last = here.shape[1] - nonzero[:, ::-1].argmax(axis=1)
    length: IntArray = np.where(held, last - first, 0)
    return first, length


def _add_bonus(tally: _Tally, name: str, amount: float) -> None:
    if amount:
        tally.bonus_points[name] = tally.bonus_points.get(name, 0.0) + amount


@lru_cache(maxsize=1024)
def _row_lookup(guideposts: Guideposts) -> IntArray:
    """(n_upper, n_bonus): the row of each guidepost in the block's reachable list (kept
    per list: blocks with the same upper boxes and Yahtzee box filled share one)."""
    lookup = np.full(guideposts.rules.block_shape, -1, dtype=np.int64)
    lookup[guideposts.upper, guideposts.bonus] = np.arange(guideposts.upper.size)
    return lookup


Move = tuple[IntArray, IntArray, FloatArray, IntArray, IntArray]
"""What one :func:`memo_solver.games.yahtzee.solve.forward_kernel.shift_add` into a block
reads of where it lands: the lanes' windows (first, length), the weights, the target rows
and the gains."""


class _Mass:
    """The mass a block has received so far, held until the pass reaches it: each turn
    start's window of totals (its first to last total any move brought, :func:`memo_solver.
    games.yahtzee.solve.forward_kernel.windows`), packed one after another.

    A rectangle of every turn start by every total, as the pass held before, is mostly
    zeros: a turn start's totals lie in a narrow window (its upper total decides most of
    them), and under saved rolls most banks hold no mass at all. From the start of
    ``yatzy-saved`` two layers of rectangles take about 18 GB, their windows a thirteenth
    of that (counted on nine of its boxes).
    The pass reads one block at a time as the rectangle (:meth:`dense`)."""

    __slots__ = ("base", "data", "hi", "lo", "width")

    def __init__(self, rows: int) -> None:
        self.width = 0
        """The totals of :meth:`dense`: the most any move into the block could reach, as
        wide as the rectangles were, so the arrays read from it and the final distribution
        keep their length."""
        self.lo = np.zeros(rows, dtype=np.int64)
        self.hi = np.zeros(rows, dtype=np.int64)
        """Row r holds the totals lo[r] .. hi[r] (none where they are equal) ..."""
        self.base = np.zeros(rows, dtype=np.int64)
        """... its total s at data[base[r] + s]."""
        self.data: FloatArray = np.zeros(0)

    @classmethod
    def of(cls, dense: FloatArray) -> _Mass:
        """The mass of ``dense`` (turn starts, totals), packed."""
        mass = cls(dense.shape[0])
        mass.width = dense.shape[1]
        first, length = _windows(dense)
        mass._lay_out(first, first + length)
        forward_kernel.move_windows(
            dense.reshape(-1), mass._dense_base(), mass.lo, mass.hi, mass.data, mass.base
        )
        return mass

    def make_room(self, width: int, moves: list[Move]) -> None:
        """Widen the windows to hold what ``moves`` bring, the rectangle to ``width``
        totals. A row that grows lays every row out anew: a copy of what the block holds,
        a few times per block, where the moves into it cost a pass over every pair."""
        self.width = max(self.width, width)
        lo, hi = self.lo.copy(), self.hi.copy()
        grew = False
        for first, length, weights, rows, gains in moves:
            grew |= forward_kernel.windows(first, length, weights, rows, gains, lo, hi)
        if grew:
            self._lay_out(lo, hi)

    def _lay_out(self, lo: IntArray, hi: IntArray) -> None:
        """Rows with the windows lo .. hi, the mass held so far copied over."""
        base = np.empty_like(self.base)
        self.data = forward_kernel.lay_out(self.data, self.base, self.lo, self.hi, lo, hi, base)
        self.lo, self.hi, self.base = lo, hi, base

    def dense(self) -> FloatArray:
        """The rectangle: (turn starts, :attr:`width` totals)."""
        out = np.zeros((self.lo.size, self.width))
        base = self._dense_base()
        forward_kernel.move_windows(self.data, self.base, self.lo, self.hi, out.reshape(-1), base)
        return out

    def _dense_base(self) -> IntArray:
        return np.arange(self.lo.size, dtype=np.int64) * self.width


def _pending(mass: dict[int, _Mass], filled: int, rows: int) -> _Mass:
    """The block's mass so far, an empty one of ``rows`` turn starts for a block no move
    has reached yet."""
    pending = mass.get(filled)
    if pending is None:
        pending = mass[filled] = _Mass(rows)
    return pending


# --- the target policy's distribution ---------------------------------------------------------

TARGET_TILE: Final = 128
"""Lanes of the target policy whose turn tables are made at once, as many as a tile of the
kernel: 11 MB of values for five dice and thirteen boxes. Tiles of 512 or more cost the
same user time and a sixth more in system time (their tables, fresh allocations of tens of
MB, fault their pages in every call); 64 is no faster."""


async def target_distribution(
    engine: Engine,
    need_engine: Engine,
    rules: RuleSet,
    state: State,
    need: int,
    progress: Progress | None = None,
) -> Scores:
    """The exact distribution from ``state`` under the target policy for ``need`` more
    points (:func:`target_pass`), solving what it reads on the mean game's ``engine`` and
    the chance objective's ``need_engine`` (a :class:`memo_solver.games.yahtzee.solve.need.
    NeedGame`'s)."""
    game = need_engine.game
    assert isinstance(game, NeedGame)
    if game.cap < need <= reach(rules, state.filled):
        raise NeedBeyondCapError(need, game.cap)
    blocks = await blocks_below(engine, rules, state)
    need_blocks = await blocks_below(need_engine, rules, state)
    return target_pass(blocks, need_blocks, rules, state, need, game.cap, progress)


def target_pass(
    blocks: Mapping[str, Block],
    need_blocks: Mapping[str, Block],
    rules: RuleSet,
    state: State,
    need: int,
    cap: int,
    progress: Progress | None = None,
) -> Scores:
    """The distribution of the points to come from ``state`` when every turn is played for
    the best chance of ``need`` of them: the forward pass of :func:`forward_pass`, where
    the mass of each guidepost is split by the points banked since the state, because the
    need left (``need`` less those points) decides the target policy's choices
    (:func:`memo_solver.games.yahtzee.analysis.policy.target_policy`, its ties broken by the mean
    policy). Mass whose need is met (n <= 0) or out of reach of the open boxes moves by the
    mean policy's choices, the rest lane by lane, a lane being one guidepost and one total.
    ``blocks`` are the mean values (:func:`blocks_below`), ``need_blocks`` the chance
    objective's at ``cap`` over the same blocks. P(points >= need) of the result is the
    chance objective's value of the state, by another road: the tests hold the two together.
    """
    start = state.filled
    mass = _starting_mass(rules, state)
    order = rules.reachable_masks(start)
    for done, filled in enumerate(order):
        pending = mass.pop(filled, None)
        if pending is None:
            continue
        here = pending.dense()
        if filled == rules.all_filled:
            return Scores(here.sum(axis=0))
        opening = state if filled == start else None
        _target_turn(blocks, need_blocks, rules, filled, here, opening, need, cap, mass)
        if progress is not None:
            progress(done + 1, len(order))
    raise AssertionError("the pass never reached the end of the game")


def _target_turn(
    blocks: Mapping[str, Block],
    need_blocks: Mapping[str, Block],
    rules: RuleSet,
    filled: int,
    here: FloatArray,
    state: State | None,
    need: int,
    cap: int,
    mass: dict[int, _Mass],
) -> None:
    """Move the block's mass ``here`` (B, totals) to the blocks its boxes fill, each total
    of each guidepost by the choices for its own need."""
    dice = rules.universe
    guideposts = Guideposts.reachable(rules, filled)
    mean = turn_policy(rules, filled, _successors(blocks, rules, filled).__getitem__, guideposts)
    classes = _Classes.of(rules, mean.tables.boxes, mean.tables.points)
    left = need - np.arange(here.shape[1])
    chased = (here > 0) & ((left >= 1) & (left <= reach(rules, filled)))[None, :]
    guide, total = np.nonzero(chased)
    plain = np.where(chased, 0.0, here)
    rolls, rerolls = _first_rolls(rules, state, guideposts.upper.size)
    weights = np.zeros((classes.points.size, guideposts.upper.size))
    forward_kernel.class_weights(
        outcomes(dice, mean.keep, rolls, rerolls), mean.box, classes.of_roll, weights
    )
    lanes = np.zeros((classes.points.size, guide.size))
    """(classes, chased lanes): like ``weights``, per lane of the target policy."""
    if guide.size:
        width = need_width(rules, cap, filled)
        chances = widened(_successors(need_blocks, rules, filled), width)
        steps = left[total] - 1
        for lo in range(0, guide.size, TARGET_TILE):
            hi = min(lo + TARGET_TILE, guide.size)
            policy = target_policy(
                rules, filled, mean, guideposts, chances.__getitem__, guide[lo:hi],
                steps[lo:hi], width,
            )  # fmt: skip
            rolls, rerolls = _first_rolls(rules, state, hi - lo)
            ends = outcomes(dice, policy.keep, rolls, rerolls)
            tile = np.zeros((classes.points.size, hi - lo))
            forward_kernel.class_weights(ends, policy.box, classes.of_roll, tile)
            lanes[:, lo:hi] = tile
    pts, alike = classes.points[:, None], classes.alike[:, None]
    landing = land(rules, classes.box[:, None], pts, alike, guideposts.upper, guideposts.bonus)
    shape = weights.shape
    extra = np.ascontiguousarray(np.broadcast_to(landing.extra, shape))
    gains = pts + np.broadcast_to(landing.upper_bonus, shape) + extra
    upper = np.broadcast_to(landing.upper, shape)
    flag = np.broadcast_to(landing.flag, shape)
    hit_alike = classes.alike.astype(np.int64)
    first, length = _windows(plain)
    one = np.ones((guide.size, 1))
    one[:, 0] = here[guide, total]
    ones = np.ones(guide.size, dtype=np.int64)
    for i, box in enumerate(mean.tables.boxes):
        lo, hi = classes.bounds[i], classes.bounds[i + 1]
        if not (weights[lo:hi] > 0).any() and not (lanes[lo:hi] > 0).any():
            continue  # no policy scores this box here: no mass, no block to visit
        nxt_filled = filled | 1 << box
        nxt = Guideposts.reachable(rules, nxt_filled)
        rows = _row_lookup(nxt)[upper[lo:hi], flag[lo:hi]]
        most = int(gains[lo:hi].max()) + here.shape[1]
        target = _pending(mass, nxt_filled, nxt.upper.size)
        unused = np.zeros((len(_EVENTS), nxt.upper.size))  # the events: the mean pass's alone
        lane_start = np.zeros(guide.size, dtype=np.int64)
        lane_weights = np.ascontiguousarray(lanes[lo:hi])
        lane_rows, lane_gains = rows[:, guide], gains[lo:hi][:, guide] + total
        target.make_room(
            most,
            [
                (first, length, weights[lo:hi], rows, gains[lo:hi]),
                (lane_start, ones, lane_weights, lane_rows, lane_gains),
            ],
        )
        forward_kernel.shift_add(
            plain, first, length, weights[lo:hi], rows, gains[lo:hi], extra[lo:hi],
            hit_alike[lo:hi], np.zeros((len(_EVENTS), shape[1])), target.data, target.base,
            unused,
        )  # fmt: skip
        if guide.size:
            forward_kernel.shift_add(
                one, lane_start, ones, lane_weights, lane_rows, lane_gains,
                extra[lo:hi][:, guide], hit_alike[lo:hi], np.zeros((len(_EVENTS), guide.size)),
                target.data, target.base, unused,
            )  # fmt: skip


def widened(blocks: Mapping[int, Block], width: int) -> dict[int, Block]:
    """Blocks of the chance objective at ``width`` needs each, as one turn reads its
    successors: a block's chances past its own width (past what its open boxes can give)
    are 0. Most are as wide already (the cap) and are used as they are."""
    return {box: widen(block, width) for box, block in blocks.items()}
