"""The exact distribution of the points still to come under the optimal strategy.

A forward pass over the blocks below a state, most-open first: each reachable guidepost
carries the distribution of the points banked since the state (a probability for every
total), each turn's outcomes under :mod:`memo_solver.policy` move that mass, shifted by
the points and bonuses banked, to the next turn's guideposts, and the blocks with every
box filled hold the answer. Per turn, outcomes with the same points land together, so the
work is one shifted add per (box, points) pair and guidepost, vectorized over guideposts.
The same pass yields the chances of the bonuses and the expected points of every box.
The values the policy needs come from the engine, so the pass shares the memo and warms
it; the mass itself is held level by level and dropped as soon as a block is done.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memo_solver import dice
from memo_solver.bits import submasks
from memo_solver.engine import Engine
from memo_solver.policy import FIRST_ROLL, outcomes, turn_policy
from memo_solver.rules import FloatArray, RuleSet
from memo_solver.state import State, guidepost
from memo_solver.turn import Guideposts
from memo_solver.yahtzee import block_key

IntArray = npt.NDArray[np.int64]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Distribution:
    """The points still to come from a state (the final score, from the start)."""

    probabilities: FloatArray
    """P(points == s) for s = 0, 1, ...; sums to 1 within 1e-12."""
    p_upper_bonus: float
    p_yahtzee: float
    """The chance of scoring 50 in the Yahtzee box from here."""
    p_extra_bonus: float
    """The chance of at least one +100 bonus from here."""
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


async def score_distribution(
    engine: Engine, rules: RuleSet, state: State, progress: Progress | None = None
) -> Distribution:
    """The exact distribution from ``state`` (turn start or mid-turn with dice)."""
    start = state.filled
    open_mask = rules.all_filled & ~start
    blocks = sorted(submasks(open_mask), key=lambda m: m.bit_count())
    upper, bonus = guidepost(state, rules)
    first = Guideposts.reachable(rules, start)
    row = int(np.flatnonzero((first.upper == upper) & (first.bonus == bonus))[0])
    mass: dict[int, FloatArray] = {start: np.zeros((first.upper.size, 1))}
    mass[start][row, 0] = 1.0
    clean: dict[int, FloatArray] = {start: np.zeros(first.upper.size)}  # no +100 yet
    clean[start][row] = 1.0
    tally = _Tally()
    for done, extra in enumerate(blocks):
        filled = start | extra
        here = mass.pop(filled, None)
        if here is None:
            continue
        if filled == rules.all_filled:
            final = here.sum(axis=0)
            return Distribution(
                probabilities=final,
                p_upper_bonus=tally.p_upper_bonus,
                p_yahtzee=tally.p_yahtzee,
                p_extra_bonus=max(0.0, 1.0 - float(clean.pop(filled).sum())),
                box_points=tally.box_points,
                bonus_points=tally.bonus_points,
            )
        rolls, rerolls = _first_rolls(rules, state if filled == start else None, here.shape[0])
        await _turn(
            engine, rules, filled, here, clean.pop(filled), rolls, rerolls, mass, clean, tally
        )
        if progress is not None:
            progress(done + 1, len(blocks))
    raise AssertionError("the pass never reached the end of the game")


def _first_rolls(rules: RuleSet, state: State | None, width: int) -> tuple[FloatArray, int]:
    """The chances of the turn's rolls and the rerolls left after them: the first roll of
    a turn, or the dice of a state caught mid-turn."""
    if state is not None and state.dice is not None and state.rerolls_left is not None:
        rolls = np.zeros((dice.N_ROLLS, width))
        rolls[dice.ROLL_INDEX[state.dice], :] = 1.0
        return rolls, state.rerolls_left
    return np.repeat(FIRST_ROLL[:, None], width, axis=1), rules.rerolls


async def _turn(
    engine: Engine,
    rules: RuleSet,
    filled: int,
    here: FloatArray,
    here_clean: FloatArray,
    rolls: FloatArray,
    rerolls: int,
    mass: dict[int, FloatArray],
    clean: dict[int, FloatArray],
    tally: _Tally,
) -> None:
    guideposts = Guideposts.reachable(rules, filled)
    keys = {box: block_key(filled | 1 << box) for box in range(len(rules.categories))}
    successors = await engine.blocks([k for box, k in keys.items() if not filled >> box & 1])
    policy = turn_policy(rules, filled, lambda box: successors[keys[box]], guideposts)
    ends = outcomes(policy, rolls, rerolls)
    reach = here.sum(axis=1)
    yahtzee = rules.yahtzee_box
    extra_on = bool(rules.yahtzee_bonus and yahtzee is not None and filled >> yahtzee & 1)
    for i, box in enumerate(policy.tables.boxes):
        category = rules.categories[box]
        nxt_filled = filled | 1 << box
        nxt = Guideposts.reachable(rules, nxt_filled)
        nxt_row = _row_lookup(rules, nxt)
        points = np.where(np.isfinite(policy.tables.points[i]), policy.tables.points[i], 0.0)
        weights = ends[i]  # (252, B)
        # Rolls with equal points (and equal five-of-a-kind-ness, for the +100) land alike.
        classes, class_of = np.unique(
            np.stack([points, np.isin(np.arange(dice.N_ROLLS), dice.YAHTZEE_ROLLS)]),
            axis=1,
            return_inverse=True,
        )
        by_class = np.zeros((classes.shape[1], weights.shape[1]))
        np.add.at(by_class, class_of.ravel(), weights)
        tally.box_points[category.name] = tally.box_points.get(category.name, 0.0) + float(
            (points @ weights) @ reach
        )
        for k in range(classes.shape[1]):
            w = by_class[k]
            if not w.any():
                continue
            pts, five = int(classes[0, k]), bool(classes[1, k])
            new_upper = guideposts.upper
            upper_bonus = np.zeros(w.size, dtype=np.int64)
            if category.upper_face and rules.upper_bonus:
                raw = guideposts.upper + pts
                upper_bonus = np.where(
                    (guideposts.upper < rules.upper_threshold) & (raw >= rules.upper_threshold),
                    rules.upper_bonus,
                    0,
                )
                new_upper = np.minimum(raw, rules.upper_threshold)
            new_bonus = guideposts.bonus
            if category.is_yahtzee and rules.yahtzee_bonus and pts > 0:
                new_bonus = np.ones_like(guideposts.bonus)
                tally.p_yahtzee += float(w @ reach)
            elif category.is_yahtzee and pts > 0:
                tally.p_yahtzee += float(w @ reach)
            extra = np.zeros(w.size, dtype=np.int64)
            if five and extra_on:
                extra = np.where(guideposts.bonus == 1, rules.yahtzee_bonus, 0)
            if np.any(upper_bonus):
                tally.p_upper_bonus += float(w @ np.where(upper_bonus > 0, reach, 0.0))
            _add_bonus(tally, "upper", float(w @ (upper_bonus * reach)))
            _add_bonus(tally, "yahtzee", float(w @ (extra * reach)))
            rows = nxt_row[new_upper, new_bonus]
            gains = pts + upper_bonus + extra
            _shift_add(mass, nxt_filled, nxt.upper.size, rows, gains, w, here)
            target = clean.setdefault(nxt_filled, np.zeros(nxt.upper.size))
            np.add.at(target, rows, np.where(extra > 0, 0.0, w * here_clean))


def _add_bonus(tally: _Tally, name: str, amount: float) -> None:
    if amount:
        tally.bonus_points[name] = tally.bonus_points.get(name, 0.0) + amount


def _row_lookup(rules: RuleSet, guideposts: Guideposts) -> IntArray:
    """(n_upper, n_bonus): the row of each guidepost in the block's reachable list."""
    lookup = np.full(rules.block_shape, -1, dtype=np.int64)
    lookup[guideposts.upper, guideposts.bonus] = np.arange(guideposts.upper.size)
    return lookup


def _shift_add(
    mass: dict[int, FloatArray],
    filled: int,
    height: int,
    rows: IntArray,
    gains: IntArray,
    weights: FloatArray,
    here: FloatArray,
) -> None:
    """mass[filled][rows[b], gains[b]:] += weights[b] * here[b], growing it as needed."""
    width = here.shape[1]
    need = int(gains.max()) + width
    target = mass.get(filled)
    if target is None or target.shape[1] < need:
        grown = np.zeros((height, need))
        if target is not None:
            grown[:, : target.shape[1]] = target
        target = mass[filled] = grown
    live = weights > 0
    for gain in np.unique(gains[live]):
        pick = live & (gains == gain)
        into, add = rows[pick], weights[pick, None] * here[pick]
        if np.unique(into).size == into.size:
            target[into, gain : gain + width] += add  # distinct rows: a plain fancy add
        else:
            np.add.at(target[:, gain : gain + width], into, add)  # capped totals meet
