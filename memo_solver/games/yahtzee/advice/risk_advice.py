"""Rank every legal action of a state by the risk objective: its certainty equivalent at a
risk theta.

The certainty equivalents come from the blocks of the risk table
(:mod:`memo_solver.games.yahtzee.solve.risk`) solved lazily by its own engine, and, mid-turn,
from the kernel's steps for the one lane of the state's guidepost
(:func:`memo_solver.games.yahtzee.solve.one_roll.roll_values` at theta, the same steps as the
mean advice's). Each action also carries its mean value and loss, from the mean advice, whose
order breaks ties, as the need advice's does: actions whose certainty equivalents round to the
same 1e-9 tick keep the mean advice's order, except that keeping every die comes after the
moves it ties, as in the mean advice. At theta = 0 the risk table is the mean table and
the ranking the mean advice's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memo_solver.core.engine import Engine
from memo_solver.games.yahtzee.advice.mean_advice import Action, Advice, advise, turn_start_at
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, guidepost
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.one_roll import roll_values


class RiskAction(NamedTuple):
    """A mean advice's action with its certainty equivalent at the risk."""

    action: Action
    certainty_equivalent: float

    def to_json(self) -> dict[str, object]:
        return {**self.action.to_json(), "certainty_equivalent": self.certainty_equivalent}


@dataclass(frozen=True)
class RiskAdvice:
    risk: float
    certainty_equivalent: float
    """The state's certainty equivalent at the risk: the points for sure a player of that
    risk would swap the rest of the game for."""
    turn_start_certainty_equivalent: float
    """That before the turn's first roll, for this scorecard."""
    mean: Advice
    """The mean advice of the same state: its value, and its own best action."""
    actions: tuple[RiskAction, ...]
    """Best certainty equivalent first; empty where the mean advice's are."""

    def to_json(self) -> dict[str, object]:
        return {
            "risk": self.risk,
            "game_over": self.mean.game_over,
            "certainty_equivalent": self.certainty_equivalent,
            "turn_start_certainty_equivalent": self.turn_start_certainty_equivalent,
            "value": self.mean.value,
            "turn_start_value": self.mean.turn_start_value,
            "actions": [a.to_json() for a in self.actions],
        }


async def advise_risk(
    engine: Engine, mean_engine: Engine, rules: RuleSet, state: State, theta: float
) -> RiskAdvice:
    """The state's certainty equivalent at risk ``theta`` and every action's, solving what
    it needs through ``engine`` (the risk table's, the mean game's at theta = 0) and
    ``mean_engine`` (the rule set's mean game, for the mean values and the ties)."""
    mean = await advise(mean_engine, rules, state)
    block = await engine.block(block_key(state.filled))
    at = guidepost(state, rules)
    start = float(block[turn_start_at(rules, state, at)])
    if state.dice is None or state.rerolls_left is None:
        return RiskAdvice(theta, start, start, mean, ())
    boxes = rules.open_boxes(state.filled)
    after = [block_key(state.filled | 1 << box) for box in boxes]
    found = await engine.blocks(after)
    _, scores, keeps = roll_values(
        rules,
        state.filled,
        [found[key] for key in after],
        (at[0], at[1]),
        rules.universe.roll_index[state.dice],
        state.rerolls_left,
        theta=theta,
    )
    certain = [
        float(keeps[rules.universe.keep_index[action.keep]])
        if action.kind == "keep"
        else float(scores[boxes.index(rules.category_index(action.category))])
        for action in mean.actions
    ]
    # Keeping every die is worth the best move one roll later, never more than the best of
    # the others: capped there (its exponential steps round a hair past the move it ties),
    # and ranked after the moves it ties, so that no risk tells a player to reroll nothing.
    idle = [a.kind == "keep" and a.rerolled == 0 for a in mean.actions]
    others = [c for c, keeps_all in zip(certain, idle, strict=True) if not keeps_all]
    if others:
        cap = max(others)
        certain = [
            min(c, cap) if keeps_all else c for c, keeps_all in zip(certain, idle, strict=True)
        ]
    ticks = tie(np.array(certain)).tolist()
    order = sorted(range(len(certain)), key=lambda i: (-ticks[i], idle[i], i))
    actions = tuple(RiskAction(mean.actions[i], certain[i]) for i in order)
    return RiskAdvice(theta, actions[0].certainty_equivalent, start, mean, actions)
