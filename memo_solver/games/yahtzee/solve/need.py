"""The second objective: the best chance of scoring at least N more points.

Players at a table rarely want the best average: they want to beat the score on the sheet
next to theirs. For a guidepost and a *need* N, the chance objective's value is the
probability that the points still to come (counted as the mean values count them: box
points and every bonus, the points already banked excluded) reach N, under the policy that
maximises exactly that probability.

Its blocks follow the kernel's block contract (:mod:`memo_solver.games.yahtzee.solve.kernel`)
with a value axis: value ``j`` of a guidepost is the chance for need ``j + 1``, and scoring
``b`` points moves a lane ``b`` steps down the axis (``shift``). A block holds the needs
from 1 up to its *width*: the smaller of the objective's cap and :func:`reach`, the most the
open boxes could give each at its best. Past the reach every chance is 0 and at or below 0
every chance is 1, so neither is stored; the values for needs up to the cap are exact, and
a need above the cap that the open boxes could still reach cannot be answered from the
table (:class:`NeedBeyondCapError`) rather than guessed.

The cap is part of the fingerprint: tables with different caps never share a namespace,
and none shares one with the mean values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Final

import numpy as np

from memo_solver.core.errors import UserError
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet, refuse_saved_rolls
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, as_stored, block_key, filled_of
from memo_solver.games.yahtzee.solve.turn import IntArray, solve_blocks

DEFAULT_CAP: Final = 400
"""Points to come a table answers for by default: a final score of 400 is past what the
official game gives one game in a thousand, and a need table of ``yahtzee`` at this cap
is about 1.7 GB of values where a state is reachable."""
MAX_CAP: Final = 2000


class NeedError(UserError):
    """A need or a cap the chance objective cannot answer for."""

    field = "need"


class NeedBeyondCapError(NeedError):
    """A need above the objective's cap that the open boxes could still reach."""

    def __init__(self, need: int, cap: int) -> None:
        super().__init__(
            f"need {need} is above the need table's cap of {cap} points to come, and the "
            f"open boxes could still reach it: ask for at most {cap}, or raise the cap to at "
            f"least {need} (--need-cap; need_cap in the API)"
        )
        self.need = need
        self.cap = cap


def check_cap(cap: int) -> int:
    """``cap`` if a need table may have it (a positive number of points up to
    :data:`MAX_CAP`), else a :class:`NeedError` saying what may."""
    if not 1 <= cap <= MAX_CAP:
        raise NeedError(
            f"the need cap must be between 1 and {MAX_CAP} points, not {cap}", "need_cap"
        )
    return cap


@lru_cache(maxsize=64)
def _box_tops(rules: RuleSet) -> tuple[IntArray, IntArray]:
    """Per box, the most one score in it can bank (its best roll's points or its Joker
    points, and the +100 of a five of a kind once the Yahtzee box holds 50), and whether
    it counts toward the upper bonus."""
    tops = [
        max(int(rules.scores[box].max()), category.joker_points) + rules.yahtzee_bonus
        for box, category in enumerate(rules.categories)
    ]
    upper = [category.upper_face > 0 for category in rules.categories]
    return np.array(tops, dtype=np.int64), np.array(upper, dtype=np.int64)


def reaches(rules: RuleSet, masks: IntArray) -> IntArray:
    """:func:`reach` of many filled masks at once (a whole table's, to size it)."""
    tops, upper = _box_tops(rules)
    open_ = (masks[:, None] >> np.arange(tops.size) & 1) == 0
    bonus = (open_ & (upper == 1)).any(axis=1)
    points: IntArray = (open_ * tops).sum(axis=1) + np.where(bonus, rules.upper_bonus, 0)
    return points


@lru_cache(maxsize=65536)
def reach(rules: RuleSet, filled: int) -> int:
    """The most points the boxes open in ``filled`` could give, each at its best, with the
    upper bonus while an upper box is open: at least the most any game can score from any
    guidepost of the block, so every chance for a larger need is exactly 0."""
    return int(reaches(rules, np.array([filled], dtype=np.int64))[0])


def width(rules: RuleSet, cap: int, filled: int) -> int:
    """How many needs a block of the table holds: 1 up to the smaller of the cap and the
    reach (at least one, so that the end of the game is a block like any other)."""
    return max(1, min(cap, reach(rules, filled)))


def widen(block: Block, wide: int) -> Block:
    """A block of the table at ``wide`` needs (at least its own width), as a turn on a
    wider value axis reads it: its chances past its own width are 0."""
    short = wide - block.shape[2]
    if not short:
        return block
    padded: Block = np.pad(block, ((0, 0), (0, 0), (0, short)))
    return padded


class _Padded(Mapping[int, FloatArray]):
    """Successor blocks widened to one width with zeros (chances past their reach), as one
    kernel call reads them, padded when the batch asks for each."""

    def __init__(self, by_key: Mapping[str, Block], width: int) -> None:
        self._by_key = by_key
        self._width = width

    def __getitem__(self, filled: int) -> FloatArray:
        return widen(self._by_key[block_key(filled)], self._width)

    def __iter__(self) -> Iterator[int]:
        return (filled_of(key) for key in self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)


class NeedGame(YahtzeeGame):
    """A rule set's chance objective up to a cap: the same blocks, keys and layers as its
    mean game, each block holding a value per need (:func:`width` of them)."""

    def __init__(self, rules: RuleSet, cap: int = DEFAULT_CAP) -> None:
        refuse_saved_rolls(rules, "need tables (a need, a target)")
        super().__init__(rules)
        self.cap = check_cap(cap)

    @property
    def name(self) -> str:
        return f"{self.rules.name} (need up to {self.cap})"

    @property
    def fingerprint(self) -> str:
        return f"{self.rules.fingerprint}-need{self.cap}"

    def width(self, filled: int) -> int:
        return width(self.rules, self.cap, filled)

    def block_shape(self, key: str) -> tuple[int, ...]:
        return (*self.rules.block_shape, self.width(filled_of(key)))

    def values_below(self, key: str) -> int:
        """The mean game's, each at ``key``'s width: the widest of its cone."""
        return super().values_below(key) * self.width(filled_of(key))

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        """The blocks of ``keys`` in one kernel call at the widest one's width, each cut to
        its own: a layer's blocks mostly share the cap as their width."""
        masks = [filled_of(key) for key in keys]
        widths = [self.width(mask) for mask in masks]
        wide = max(widths)
        solved = solve_blocks(self.rules, masks, _Padded(successors, wide), width=wide, shift=True)
        solved = solved.reshape(len(masks), *self.rules.block_shape, wide)
        return [
            as_stored(self.rules, np.ascontiguousarray(b[..., :w]))
            for b, w in zip(solved, widths, strict=True)
        ]
