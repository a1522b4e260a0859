"""Rank every legal action of a state with its expected final score and its loss.

Ties are broken the same way everywhere (advice, play, the distribution and the
simulation), on the key of :func:`memo_solver.games.yahtzee.rules.ties.tie`: among actions of
equal value (to 1e-9), scoring now comes first, then keeps holding more dice, then the
scorecard order. Keeping every die is worth exactly the best score one reroll later, so
a player is never told to reroll for nothing. What a score banks comes from
:func:`memo_solver.games.yahtzee.solve.scoring.score`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Final, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from memo_solver.core.cache import BlockCache
from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.rules.dice import Dice
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, guidepost
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve import one_roll
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.scoring import Scored, score

_NUMBERS: Final = ("no", "one", "two", "three", "four", "five", "six")


class Action(NamedTuple):
    """One choice: keep some dice and reroll the others, or score the dice in a box.

    A named tuple: a warm request builds about twenty of them, and a tuple is made in a
    third of the time of a frozen dataclass."""

    kind: Literal["keep", "score"]
    value: float
    """Expected points still to come from here if this action is taken, bonuses included."""
    loss: float
    """How much less than the best action this is worth (0 for the best)."""
    keep: tuple[int, ...] = ()
    rerolled: int = 0
    """How many dice a keep rerolls: the rule set's dice not in ``keep``."""
    category: str = ""
    label: str = ""
    points: int = 0
    bonus: int = 0
    """Bonus points this score banks at once (upper bonus reached, extra Yahtzee)."""
    rolls_after: int | None = None
    """With saved rolls, what becomes of the bank: the rolls left after a keep's reroll, or
    the rolls a score carries to the next turn; None without saved rolls."""

    def words(self) -> str:
        """The action as a player would say it."""
        if self.kind == "keep":
            if not self.keep:
                said = f"reroll {every_die(self.rerolled)}"
            elif not self.rerolled:
                said = f"keep {every_die(len(self.keep))}"
            else:
                shown = " ".join(map(str, self.keep))
                dice = "die" if self.rerolled == 1 else "dice"
                said = f"keep {shown} and reroll {self.rerolled} {dice}"
            if self.rolls_after is None:
                return said
            return f"{said} ({rolls(self.rolls_after)} left after it)"
        extra = f" (+{self.bonus} bonus)" if self.bonus else ""
        carry = "" if self.rolls_after is None else f" and carry {rolls(self.rolls_after)}"
        return f"score {self.points} in {self.label}{extra}{carry}"

    def to_json(self) -> dict[str, object]:
        saved: dict[str, object] = {}
        if self.kind == "keep":
            if self.rolls_after is not None:
                saved = {"rolls_left_after": self.rolls_after}
            return {
                "kind": "keep",
                "keep": list(self.keep),
                **saved,
                "value": self.value,
                "loss": self.loss,
                "words": self.words(),
            }
        if self.rolls_after is not None:
            saved = {"carried": self.rolls_after}
        return {
            "kind": "score",
            "category": self.category,
            "points": self.points,
            "bonus": self.bonus,
            **saved,
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


def number_word(count: int) -> str:
    """A count of dice in words (``five``), as players say it."""
    return _NUMBERS[count]


def rolls(count: int) -> str:
    """A count of saved rolls in words: ``no rolls``, ``1 roll``, ``4 rolls``."""
    if count == 0:
        return "no rolls"
    return f"{count} roll" if count == 1 else f"{count} rolls"


def every_die(count: int) -> str:
    """All the dice of a rule set, in words: ``the die``, ``all five dice``."""
    return "the die" if count == 1 else f"all {number_word(count)} dice"


def blocks_needed(rules: RuleSet, state: State) -> list[str]:
    """The blocks :func:`advise` reads: the state's own, and once the dice are rolled, the
    one after each box the score may go in. With all of them in the engine's memo it never
    waits."""
    own, after = _keys(rules, state.filled)
    return [own, *after] if _rolled(state) else [own]


async def advise(engine: Engine, rules: RuleSet, state: State) -> Advice:
    """Solve whatever the state needs (lazily, through the engine) and rank its actions."""
    own, after = _keys(rules, state.filled)
    block = await engine.block(own)
    if not _rolled(state):
        return _advice(rules, state, block, [])
    successors = await engine.blocks(after)
    return _advice(rules, state, block, [successors[key] for key in after])


def advise_held(memo: BlockCache, rules: RuleSet, state: State) -> Advice | None:
    """:func:`advise` from the blocks ``memo`` holds, without waiting; None when one of
    them is not there (then :func:`advise` fetches or solves it). What a warm request asks:
    each block is looked up once, with no task, event or store round trip."""
    own, after = _keys(rules, state.filled)
    block = memo.get(own)
    if block is None:
        return None
    successors: list[Block] = []
    if _rolled(state):
        for key in after:
            found = memo.get(key)
            if found is None:
                return None
            successors.append(found)
    return _advice(rules, state, block, successors)


def _rolled(state: State) -> bool:
    return state.dice is not None and state.rerolls_left is not None


@lru_cache(maxsize=8192)
def _keys(rules: RuleSet, filled: int) -> tuple[str, list[str]]:
    """The key of a scorecard's block, and of the block after each box the score may go in
    (every scorecard of the 13-box games kept: about 6 MB at most)."""
    return block_key(filled), [block_key(filled | 1 << box) for box in rules.open_boxes(filled)]


def turn_start_at(rules: RuleSet, state: State, at: tuple[int, ...]) -> tuple[int, ...]:
    """Where the turn start of a state's scorecard sits in its block, from its guidepost
    ``at``. Once rolled, with saved rolls, the turn's own bank is past: the least that
    leaves the rolls it has left."""
    if not rules.saved_rolls or state.dice is None or state.rerolls_left is None:
        return at
    return at[0], at[1], max(0, state.rerolls_left - rules.rerolls)


def _advice(rules: RuleSet, state: State, block: Block, successors: list[Block]) -> Advice:
    """The state's actions ranked, from its block and, once rolled, its successors (in the
    order of the open boxes)."""
    at = guidepost(state, rules)
    if state.dice is None or state.rerolls_left is None:
        start = float(block[at])
        over = state.filled == rules.all_filled
        return Advice(value=start, turn_start_value=start, actions=(), game_over=over)
    left = state.rerolls_left
    start = float(block[turn_start_at(rules, state, at)])
    dice = rules.universe
    boxes, values, every_keep = one_roll.roll_values(
        rules, state.filled, successors, (at[0], at[1]), dice.roll_index[state.dice], left
    )
    keeps: tuple[list[int], list[int]] = ([], [])
    if left > 0:
        inside, rows, sizes = _sub_keeps(dice, state.dice, rules.saved_rolls)
        values = np.concatenate((values, every_keep.take(rows)))
        keeps = (inside, sizes)
    kept, carried = (left - 1, rules.carried(left)) if rules.saved_rolls else (None, None)
    # Plain floats (one conversion per array, not one per element) ranked as flat tuples
    # (tie key, kind, keep size, box or keep, value); each Action is built once, with its
    # loss, after the ranking.
    flat = values.tolist()
    ties = tie(values).tolist()
    scored: list[Scored | None] = [score(rules, state, box) for box in boxes]
    ranked = [
        (-ties[i], 0, 0, box, flat[i]) for i, box in enumerate(boxes) if scored[i] is not None
    ]
    first = len(boxes)
    ranked += [
        (-ties[first + j], 1, -size, k, flat[first + j])
        for j, (k, size) in enumerate(zip(*keeps, strict=True))
    ]
    ranked.sort()  # the first four fields never tie: the values are never compared
    best = ranked[0][4]
    actions: list[Action] = []
    for _, kind, _, index, value in ranked:
        loss = max(0.0, best - value)
        if kind:
            keep = dice.keeps[index]
            actions.append(
                Action("keep", value, loss, keep, dice.count - len(keep), rolls_after=kept)
            )
            continue
        outcome = scored[boxes.index(index)]
        assert outcome is not None  # only the boxes the Joker allows are ranked
        category = rules.categories[index]
        actions.append(
            Action(
                "score",
                value,
                loss,
                (),
                0,
                category.name,
                category.label,
                outcome.points,
                outcome.bonus,
                carried,
            )
        )
    return Advice(value=best, turn_start_value=start, actions=tuple(actions))


@cache
def _sub_keeps(
    dice: Dice, roll: tuple[int, ...], reroll_one: bool = False
) -> tuple[list[int], npt.NDArray[np.int64], list[int]]:
    """The keeps inside a roll (462 rolls in all with six dice): their indices, the same as
    rows of an (n_keeps, 1) table, and how many dice each keeps. With ``reroll_one`` (saved
    rolls) not the whole roll: keeping every die would throw a roll of the bank away."""
    inside = [k for k in dice.sub_keeps(roll) if not reroll_one or len(dice.keeps[k]) < dice.count]
    return inside, np.array(inside, dtype=np.int64), [len(dice.keeps[k]) for k in inside]
