"""The exact distribution of the points still to come under the optimal strategy.

A forward pass over the blocks below a state, most-open first: each reachable guidepost
carries the distribution of the points banked since the state (a probability for every
total), each turn's outcomes under :mod:`memo_solver.games.yahtzee.policy` move that mass, shifted
by
the points and bonuses banked, to the next turn's guideposts, and the blocks with every
box filled hold the answer. Per turn, outcomes with the same points land together, so the
work is one shifted add per (box, points) class and guidepost, of the totals that
guidepost can hold (its window), all of a box's in a few whole-array steps (:class:`_Turn`).
The same pass yields the chances of the bonuses and the expected points of every box.
The values the policy needs are solved on the engine first (everything below the state,
shared with everyone on the memo); the pass itself (:func:`forward_pass`) only reads them
from a plain mapping, so it is synchronous and can run in a thread of its own. The mass is
held level by level and dropped as soon as a block is done.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.game import block_key
from memo_solver.games.yahtzee.policy import outcomes, turn_policy
from memo_solver.games.yahtzee.rules import FloatArray, RuleSet
from memo_solver.games.yahtzee.scoring import land
from memo_solver.games.yahtzee.state import State, guidepost
from memo_solver.games.yahtzee.turn import Guideposts

IntArray = npt.NDArray[np.int64]
Progress = Callable[[int, int], None]
_EVENTS = ("extra", "alike")
"""What the pass follows the chance of never having had: a +100 bonus, a turn ending with
all dice alike. One mass per guidepost each, moved like the scores but never shifted."""
Spared = dict[str, dict[int, FloatArray]]


@dataclass(frozen=True)
class Distribution:
    """The points still to come from a state (the final score, from the start)."""

    probabilities: FloatArray
    """P(points == s) for s = 0, 1, ...; sums to 1 within 1e-12."""
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
        return {
            "mean": self.mean,
            "std": self.std,
            "percentiles": {
                str(q): self.percentile(q / 100) for q in (1, 5, 10, 25, 50, 75, 90, 95, 99)
            },
            "p_upper_bonus": self.p_upper_bonus,
            "p_yahtzee": self.p_yahtzee,
            "p_extra_bonus": self.p_extra_bonus,
            "p_any_yahtzee": self.p_any_yahtzee,
            "box_points": self.box_points,
            "bonus_points": self.bonus_points,
            "survival": {str(t): self.survival(t) for t in thresholds},
            "probabilities": self.probabilities.tolist(),
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
    engine: Engine, rules: RuleSet, state: State, progress: Progress | None = None
) -> Distribution:
    """The exact distribution from ``state`` (turn start or mid-turn with dice)."""
    return forward_pass(await blocks_below(engine, rules, state), rules, state, progress)


async def blocks_below(engine: Engine, rules: RuleSet, state: State) -> dict[str, Block]:
    """Every block the pass from ``state`` reads, solved on ``engine`` if need be."""
    filled = state.filled
    await engine.block(block_key(filled))  # solves everything below the state
    return await engine.blocks([block_key(mask) for mask in rules.reachable_masks(filled)])


def forward_pass(
    blocks: Mapping[str, Block], rules: RuleSet, state: State, progress: Progress | None = None
) -> Distribution:
    """The distribution from ``state``, reading the values of :func:`blocks_below` from
    ``blocks``; a block missing there is a :class:`MissingBlockError` at once."""
    start = state.filled
    order = rules.reachable_masks(start)  # fewest boxes first
    upper, bonus = guidepost(state, rules)
    first = Guideposts.reachable(rules, start)
    row = int(np.flatnonzero((first.upper == upper) & (first.bonus == bonus))[0])
    mass: dict[int, FloatArray] = {start: np.zeros((first.upper.size, 1))}
    mass[start][row, 0] = 1.0
    spared: Spared = {event: {start: mass[start][:, 0].copy()} for event in _EVENTS}
    tally = _Tally()
    for done, filled in enumerate(order):
        here = mass.pop(filled, None)
        if here is None:
            continue
        if filled == rules.all_filled:
            final = here.sum(axis=0)
            hit = {event: max(0.0, 1.0 - float(spared[event][filled].sum())) for event in _EVENTS}
            return Distribution(
                probabilities=final,
                p_upper_bonus=tally.p_upper_bonus,
                p_yahtzee=tally.p_yahtzee,
                p_extra_bonus=hit["extra"],
                p_any_yahtzee=hit["alike"],
                box_points=tally.box_points,
                bonus_points=tally.bonus_points,
            )
        rolls, rerolls = _first_rolls(rules, state if filled == start else None, here.shape[0])
        here_spared = {event: spared[event].pop(filled) for event in _EVENTS}
        _turn(blocks, rules, filled, here, here_spared, rolls, rerolls, mass, spared, tally)
        if progress is not None:
            progress(done + 1, len(order))
    raise AssertionError("the pass never reached the end of the game")


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
    here_spared: dict[str, FloatArray],
    rolls: FloatArray,
    rerolls: int,
    mass: dict[int, FloatArray],
    spared: Spared,
    tally: _Tally,
) -> None:
    guideposts = Guideposts.reachable(rules, filled)
    successors: dict[int, Block] = {}
    for box in rules.open_boxes(filled):
        key = block_key(filled | 1 << box)
        if key not in blocks:
            raise MissingBlockError(f"the distribution's pass needs block {key}, not solved")
        successors[box] = blocks[key]
    policy = turn_policy(rules, filled, successors.__getitem__, guideposts)
    ends = outcomes(policy, rolls, rerolls)
    turn = _Turn(rules, filled, guideposts, here, here_spared, mass, spared, tally)
    for i, box in enumerate(policy.tables.boxes):
        turn.score(box, policy.tables.points[i], ends[i])


@dataclass
class _Turn:
    """One block's guideposts and their mass, moved box by box to the next blocks.

    Each box's rolls fall into classes of equal points (and equal all-alike-ness, for
    the +100), and every (class, guidepost) pair is one shifted add of the guidepost's
    mass: all pairs of a box go in a few whole-array steps, never a loop over them (a
    dozen numpy calls per class, as before, cost more than the adds: the whole ``yahtzee``
    distribution took 65-72 CPU s then, 33 s now with the windows).
    """

    rules: RuleSet
    filled: int
    guideposts: Guideposts
    here: FloatArray
    here_spared: dict[str, FloatArray]
    mass: dict[int, FloatArray]
    spared: Spared
    tally: _Tally

    def __post_init__(self) -> None:
        self.reach = self.here.sum(axis=1)
        # Each guidepost's mass lives in a window of totals (its first to last nonzero):
        # moving only the windows moves a ninth of the numbers (yahtzee, from the start).
        nonzero = self.here != 0
        held = nonzero.any(axis=1)
        self.first = np.where(held, nonzero.argmax(axis=1), 0)
        last = self.here.shape[1] - nonzero[:, ::-1].argmax(axis=1)
        self.length = np.where(held, last - self.first, 0)

    def score(self, box: int, table: FloatArray, weights: FloatArray) -> None:
        """Move the mass that scores ``box``: ``table`` its points per roll (-inf where the
        Joker forbids it), ``weights`` (n_rolls, B) the chance of ending the turn there."""
        rules, gp, tally, reach = self.rules, self.guideposts, self.tally, self.reach
        category = rules.categories[box]
        nxt_filled = self.filled | 1 << box
        nxt = Guideposts.reachable(rules, nxt_filled)
        nxt_row = _row_lookup(rules, nxt)
        points = np.where(np.isfinite(table), table, 0.0)
        codes, class_of = np.unique(
            points.astype(np.int64) * 2 + rules.universe.all_alike, return_inverse=True
        )
        pts, alike = (codes // 2)[:, None], (codes % 2 == 1)[:, None]  # (K, 1)
        members = class_of == np.arange(codes.size)[:, None]  # (K, n_rolls): each class's rolls
        w = members @ weights  # (K, B): the chance of each class
        tally.box_points[category.name] = tally.box_points.get(category.name, 0.0) + float(
            (points @ weights) @ reach
        )
        landing = land(rules, box, pts, alike, gp.upper[None, :], gp.bonus[None, :])
        upper_bonus, extra = landing.upper_bonus, landing.extra
        tally.p_yahtzee += float((w * landing.fifty).sum(axis=0) @ reach)
        tally.p_upper_bonus += float((w * (upper_bonus > 0)).sum(axis=0) @ reach)
        _add_bonus(tally, "upper", float((w * upper_bonus).sum(axis=0) @ reach))
        _add_bonus(tally, "yahtzee", float((w * extra).sum(axis=0) @ reach))
        live = w > 0
        if not live.any():
            return  # the strategy never scores this box here: no mass, no block to visit
        _, column = np.nonzero(live)
        rows = np.broadcast_to(nxt_row[landing.upper, landing.flag], w.shape)[live]
        gains = (pts + upper_bonus + extra)[live]
        target = _grown(
            self.mass, nxt_filled, nxt.upper.size, int(gains.max()) + self.here.shape[1]
        )
        _shift_add(target, rows, gains, w[live], self.here, column, self.first, self.length)
        happened = {"extra": extra > 0, "alike": np.broadcast_to(alike, w.shape)}
        for event, hit in happened.items():
            into = self.spared[event].setdefault(nxt_filled, np.zeros(nxt.upper.size))
            np.add.at(into, rows, np.where(hit, 0.0, w * self.here_spared[event])[live])


def _add_bonus(tally: _Tally, name: str, amount: float) -> None:
    if amount:
        tally.bonus_points[name] = tally.bonus_points.get(name, 0.0) + amount


def _row_lookup(rules: RuleSet, guideposts: Guideposts) -> IntArray:
    """(n_upper, n_bonus): the row of each guidepost in the block's reachable list."""
    lookup = np.full(rules.block_shape, -1, dtype=np.int64)
    lookup[guideposts.upper, guideposts.bonus] = np.arange(guideposts.upper.size)
    return lookup


def _grown(mass: dict[int, FloatArray], filled: int, height: int, need: int) -> FloatArray:
    """The block's mass array, at least ``need`` totals wide."""
    target = mass.get(filled)
    if target is None or target.shape[1] < need:
        grown = np.zeros((height, need))
        if target is not None:
            grown[:, : target.shape[1]] = target
        target = mass[filled] = grown
    return target


def _shift_add(
    target: FloatArray,
    rows: IntArray,
    gains: IntArray,
    weights: FloatArray,
    here: FloatArray,
    column: IntArray,
    first: IntArray,
    length: IntArray,
) -> None:
    """For every pair p, with b = column[p] and its window s = first[b] .. + length[b]:
    target[rows[p], gains[p] + s] += weights[p] * here[b, s].

    The windows are laid end to end in one flat run, so all pairs take a few whole-array
    steps; ``add.at`` sums the pairs that land on one row (a block's classes, capped totals).
    """
    lengths = length[column]
    total = int(lengths.sum())
    within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    begin = first[column]
    source = np.repeat(column * here.shape[1] + begin, lengths) + within
    into = np.repeat(rows * target.shape[1] + gains + begin, lengths) + within
    amounts = here.reshape(-1)[source] * np.repeat(weights, lengths)
    np.add.at(target.reshape(-1), into, amounts)
