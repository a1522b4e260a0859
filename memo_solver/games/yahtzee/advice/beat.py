"""The best chance of finishing strictly above an opponent who is still playing.

The opponent (same rule set) plays for points, the mean-optimal strategy, so the points
still to come to them, Y, have the exact distribution of the forward pass
(:mod:`memo_solver.games.yahtzee.analysis.distribution`), whatever the player does. With banked
scores B (the player's) and C (the opponent's), the player finishes above when the points
to come X reach ``C - B + Y + 1``. Counted as a *requirement* r, the points still needed to
be sure of it (``r = C - B + max(Y) + 1 - points banked since now``), the chance once every
box is filled is ``T(r) = P(Y <= max(Y) - r)``, and 1 once r <= 0.

That is the chance objective's block contract with another end of the game: value ``j`` is
requirement ``j + 1``, a score moves along the axis (``shift``), and a requirement met is 1.
So the same kernel solves it (:func:`memo_solver.games.yahtzee.solve.turn.solve_blocks`), from an
end-of-game block holding ``T`` instead of zeros, over the player's cone only, a layer at a
time (a score fills one box, so a layer's successors are all in the layer before it); and
the actions are ranked as the need's are
(:func:`memo_solver.games.yahtzee.advice.need_advice.rank_chances`), ties by the mean advice. The
table depends on the opponent's distribution, so it is computed per question and not
stored: two layers of it are held at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import anyio.to_thread
import numpy as np

from memo_solver.core.engine import Engine
from memo_solver.core.errors import UserError
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.advice.mean_advice import Advice, advise
from memo_solver.games.yahtzee.advice.need_advice import NeedAction, rank_chances
from memo_solver.games.yahtzee.analysis.stats import distribution_in_thread
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet, refuse_saved_rolls
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.need import reach
from memo_solver.games.yahtzee.solve.turn import solve_blocks

MAX_VALUES: Final = 400_000_000
"""The most values (turn starts times requirements) one question may solve: 3.2 GB
computed, of which two layers are held; about five minutes of one core. A question past it
is refused, naming the figure, rather than left to run for hours."""


class BeatTooLargeError(UserError):
    """A question whose table is past :data:`MAX_VALUES`."""

    field = "opponent"


@dataclass(frozen=True)
class Opponent:
    """Who is to be beaten: their state (their open boxes and turn) and banked score."""

    state: State
    score: int


@dataclass(frozen=True)
class BeatAdvice:
    probability: float
    """The player's best chance of finishing strictly above the opponent."""
    turn_start_probability: float
    mean: Advice
    actions: tuple[NeedAction, ...]
    """Every action with its chance of winning, best first (ties: the mean's order)."""
    opponent_mean: float
    """The opponent's expected final score, playing for points."""
    opponent_best: int
    """The most the opponent can finish with (with a chance above 0)."""

    def to_json(self) -> dict[str, object]:
        return {
            "game_over": self.mean.game_over,
            "probability": self.probability,
            "turn_start_probability": self.turn_start_probability,
            "value": self.mean.value,
            "turn_start_value": self.mean.turn_start_value,
            "opponent": {"mean_final_score": self.opponent_mean, "best": self.opponent_best},
            "actions": [a.to_json() for a in self.actions],
        }


async def advise_beat(
    engine: Engine, rules: RuleSet, state: State, score: int, opponent: Opponent
) -> BeatAdvice:
    """The state's chance of finishing above ``opponent`` with ``score`` banked, and every
    action's; ``engine`` is the rule set's mean game (the opponent's strategy, the ties)."""
    refuse_saved_rolls(rules, "advice against an opponent (--opponent)")
    theirs = (await distribution_in_thread(engine, rules, opponent.state)).probabilities
    top = int(np.flatnonzero(theirs)[-1])
    cdf = np.cumsum(theirs[: top + 1])
    mean = await advise(engine, rules, state)
    summary = (float(theirs @ np.arange(theirs.size)) + opponent.score, opponent.score + top)
    requirement = opponent.score - score + top + 1
    if requirement <= 0 or requirement - reach(rules, state.filled) > top:
        sure = 1.0 if requirement <= 0 else 0.0
        actions = tuple(NeedAction(action, sure) for action in mean.actions)
        return BeatAdvice(sure, sure, mean, actions, *summary)
    below = top - np.arange(1, requirement + 1)  # T(r) for r = 1..requirement: P(Y <= top - r)
    ends = np.where(below >= 0, cdf[np.maximum(below, 0)], 0.0)
    blocks = await anyio.to_thread.run_sync(_cone, rules, state, ends)
    own = blocks.pop(state.filled)
    after = [blocks[state.filled | 1 << box] for box in rules.open_boxes(state.filled)]
    successors = after if state.dice is not None and state.rerolls_left is not None else []
    best, start, ranked = rank_chances(rules, state, mean, own, successors, requirement)
    return BeatAdvice(best, start, mean, ranked, *summary)


def _cone(rules: RuleSet, state: State, ends: FloatArray) -> dict[int, Block]:
    """The state's block and the layer after it, solved from the end of the game holding
    ``ends``; refused past :data:`MAX_VALUES`."""
    width = ends.size
    layers = rules.layers(state.filled)
    levels = rules.n_upper_levels * rules.n_bonus_levels
    values = sum(len(layer) for layer in layers) * levels * width
    if values > MAX_VALUES:
        raise BeatTooLargeError(
            f"beating this opponent from this state needs {values:,} values solved, past the "
            f"limit of {MAX_VALUES:,}: ask again with fewer open boxes or a closer score"
        )
    end = np.broadcast_to(ends, (*rules.block_shape, width))
    held: dict[int, Block] = {mask: end for mask in layers[0]}
    for layer in layers[1:]:
        solved = solve_blocks(rules, layer, held, width=width, shift=True)
        solved = solved.reshape(len(layer), *rules.block_shape, width)
        held = dict(zip(layer, solved, strict=True)) | (held if layer is layers[-1] else {})
    return held
