"""Rank every legal action of a state by its best chance of scoring at least N more points.

The chances come from the blocks of the chance objective
(:mod:`memo_solver.games.yahtzee.solve.need`) solved lazily by their own engine, and, mid-turn, from
the kernel's steps for the one lane of the state's guidepost at need N
(:func:`memo_solver.games.yahtzee.solve.one_roll.roll_values`, the same steps as the mean advice's).
Each action also carries its mean value and loss, from the mean advice, because that is what breaks
ties: actions whose chances round to the same 1e-9 tick keep the mean advice's order, so a
hopeless position (every chance 0) or a secured one (every chance 1, N <= 0 included) is played
for points, as a player would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.advice.mean_advice import Action, Advice, advise
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.rules.state import State, guidepost
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.need import NeedBeyondCapError, NeedGame, reach, widen
from memo_solver.games.yahtzee.solve.one_roll import roll_values


class NeedAction(NamedTuple):
    """A mean advice's action with its chance of reaching the need."""

    action: Action
    probability: float

    def to_json(self) -> dict[str, object]:
        return {**self.action.to_json(), "probability": self.probability}


@dataclass(frozen=True)
class NeedAdvice:
    need: int
    cap: int
    probability: float
    """The state's best chance of scoring at least ``need`` more points."""
    turn_start_probability: float
    """That chance before the turn's first roll, for this scorecard."""
    mean: Advice
    """The mean advice of the same state: its value, and its own best action."""
    actions: tuple[NeedAction, ...]
    """Best chance first; empty where the mean advice's are."""

    def to_json(self) -> dict[str, object]:
        return {
            "need": self.need,
            "cap": self.cap,
            "game_over": self.mean.game_over,
            "probability": self.probability,
            "turn_start_probability": self.turn_start_probability,
            "value": self.mean.value,
            "turn_start_value": self.mean.turn_start_value,
            "actions": [a.to_json() for a in self.actions],
        }


async def advise_need(
    engine: Engine, mean_engine: Engine, rules: RuleSet, state: State, need: int
) -> NeedAdvice:
    """The state's chance of ``need`` more points and every action's, solving what it
    needs through ``engine`` (a :class:`NeedGame`'s) and ``mean_engine`` (the rule set's
    mean game, for the ties); :class:`NeedBeyondCapError` for a need above the cap that the
    open boxes could still reach."""
    game = engine.game
    assert isinstance(game, NeedGame)
    mean = await advise(mean_engine, rules, state)
    if need <= 0 or need > reach(rules, state.filled):
        certain = 1.0 if need <= 0 else 0.0
        actions = tuple(NeedAction(action, certain) for action in mean.actions)
        return NeedAdvice(need, game.cap, certain, certain, mean, actions)
    if need > game.cap:
        raise NeedBeyondCapError(need, game.cap)
    block = await engine.block(block_key(state.filled))
    successors: list[Block] = []
    if state.dice is not None and state.rerolls_left is not None:
        after = [block_key(state.filled | 1 << box) for box in rules.open_boxes(state.filled)]
        found = await engine.blocks(after)
        successors = [found[key] for key in after]
    best, start, actions = rank_chances(rules, state, mean, block, successors, need)
    return NeedAdvice(need, game.cap, best, start, mean, actions)


def rank_chances(
    rules: RuleSet, state: State, mean: Advice, block: Block, successors: list[Block], lane: int
) -> tuple[float, float, tuple[NeedAction, ...]]:
    """The state's chance, its turn start's, and every action of ``mean`` with its chance,
    best first (ties in the mean's order), read at value ``lane - 1`` of blocks on the
    kernel's value axis: ``block`` the state's own, ``successors`` (once rolled) the block
    after each open box, in box order. Any objective on that axis ranks here: a need
    (lane: the need), or the chance of beating an opponent."""
    upper, bonus = guidepost(state, rules)
    start = float(block[upper, bonus, lane - 1])
    if state.dice is None or state.rerolls_left is None:
        return start, start, ()
    boxes = rules.open_boxes(state.filled)
    wide = max(lane, *(b.shape[2] for b in successors))
    padded = [widen(block, wide) for block in successors]
    dice = rules.universe
    _, scores, keeps = roll_values(
        rules,
        state.filled,
        padded,
        (upper, bonus),
        dice.roll_index[state.dice],
        state.rerolls_left,
        lane,
    )
    chances = [_chance(action, boxes, scores, keeps, rules) for action in mean.actions]
    ticks = tie(np.array(chances)).tolist()
    order = sorted(range(len(chances)), key=lambda i: (-ticks[i], i))
    actions = tuple(NeedAction(mean.actions[i], chances[i]) for i in order)
    return actions[0].probability, start, actions


def _chance(
    action: Action, boxes: list[int], scores: FloatArray, keeps: FloatArray, rules: RuleSet
) -> float:
    if action.kind == "keep":
        return float(keeps[rules.universe.keep_index[action.keep]])
    return float(scores[boxes.index(rules.category_index(action.category))])
