"""Rank every legal action of a state with its expected final score and its loss.

Ties are broken the same way everywhere (advice, play, and later the distribution): among
actions of equal value (to 1e-9), scoring now comes first, then keeps holding more dice,
then the scorecard order. Keeping all five dice is worth exactly the best score one reroll
later, so a player is never told to reroll for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from memo_solver import dice
from memo_solver.engine import Engine
from memo_solver.rules import RuleSet
from memo_solver.state import State, guidepost
from memo_solver.turn import Guideposts, turn_tables
from memo_solver.yahtzee import block_key


@dataclass(frozen=True)
class Action:
    """One choice: keep some dice and reroll the others, or score the dice in a box."""

    kind: Literal["keep", "score"]
    value: float
    """Expected points still to come from here if this action is taken, bonuses included."""
    loss: float
    """How much less than the best action this is worth (0 for the best)."""
    keep: tuple[int, ...] = ()
    category: str = ""
    label: str = ""
    points: int = 0
    bonus: int = 0
    """Bonus points this score banks at once (upper bonus reached, extra Yahtzee)."""

    def words(self) -> str:
        """The action as a player would say it."""
        if self.kind == "keep":
            if not self.keep:
                return "reroll all five dice"
            if len(self.keep) == dice.DICE:
                return "keep all five dice"
            rerolled = dice.DICE - len(self.keep)
            shown = " ".join(map(str, self.keep))
            return f"keep {shown} and reroll {rerolled} {'die' if rerolled == 1 else 'dice'}"
        extra = f" (+{self.bonus} bonus)" if self.bonus else ""
        return f"score {self.points} in {self.label}{extra}"

    def to_json(self) -> dict[str, object]:
        if self.kind == "keep":
            return {
                "kind": "keep",
                "keep": list(self.keep),
                "value": self.value,
                "loss": self.loss,
                "words": self.words(),
            }
        return {
            "kind": "score",
            "category": self.category,
            "points": self.points,
            "bonus": self.bonus,
            "value": self.value,
            "loss": self.loss,
            "words": self.words(),
        }


@dataclass(frozen=True)
class Advice:
    value: float
    """The state's expected future score under optimal play."""
    turn_start_value: float
    """The value of this scorecard before the turn's first roll."""
    actions: tuple[Action, ...]
    """Best first; empty before the first roll of a turn and when the game is over."""
    game_over: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "game_over": self.game_over,
            "value": self.value,
            "turn_start_value": self.turn_start_value,
            "actions": [a.to_json() for a in self.actions],
        }


async def advise(engine: Engine, rules: RuleSet, state: State) -> Advice:
    """Solve whatever the state needs (lazily, through the engine) and rank its actions."""
    upper, bonus = guidepost(state, rules)
    block = await engine.block(block_key(state.filled))
    start = float(block[upper, bonus])
    if state.dice is None or state.rerolls_left is None:
        over = state.filled == rules.all_filled
        return Advice(value=start, turn_start_value=start, actions=(), game_over=over)
    keys = {box: block_key(state.filled | 1 << box) for box in range(len(rules.categories))}
    successors = await engine.blocks([k for box, k in keys.items() if not state.filled >> box & 1])
    tables = turn_tables(
        rules,
        state.filled,
        lambda box: successors[keys[box]],
        Guideposts.one(rules, upper, bonus),
        state.rerolls_left,
    )
    roll = dice.ROLL_INDEX[state.dice]
    candidates: list[tuple[tuple[float, int, int, int], Action]] = []
    for i, box in enumerate(tables.boxes):
        points = float(tables.points[i, roll])
        if np.isfinite(points):
            value = float(tables.scores[i, roll, 0])
            action = Action(
                kind="score",
                value=value,
                loss=0.0,
                category=rules.categories[box].name,
                label=rules.categories[box].label,
                points=int(points),
                bonus=_banked_bonus(rules, state, box, int(points), state.dice),
            )
            candidates.append(((-_tie(value), 0, 0, box), action))
    if state.rerolls_left > 0:
        keeps = tables.keeps[state.rerolls_left]
        for k in dice.sub_keeps(state.dice):
            value = float(keeps[k, 0])
            keep = dice.KEEPS[k]
            action = Action("keep", value, 0.0, keep=keep)
            candidates.append(((-_tie(value), 1, -len(keep), k), action))
    candidates.sort(key=lambda c: c[0])
    best = candidates[0][1].value
    actions = tuple(replace(a, loss=max(0.0, best - a.value)) for _, a in candidates)
    return Advice(value=best, turn_start_value=start, actions=actions)


def _tie(value: float) -> float:
    """Values equal to 1e-9 count as tied: equal choices reached by different float sums
    differ in the last bit, and the tie rule must not depend on that."""
    return round(value, 9)


def _banked_bonus(
    rules: RuleSet, state: State, box: int, points: int, faces: tuple[int, ...]
) -> int:
    category = rules.categories[box]
    bonus = 0
    if (
        category.upper_face
        and rules.upper_bonus
        and state.upper < rules.upper_threshold <= state.upper + points
    ):
        bonus += rules.upper_bonus
    if rules.yahtzee_bonus and state.yahtzee_bonus and len(set(faces)) == 1:
        bonus += rules.yahtzee_bonus
    return bonus
