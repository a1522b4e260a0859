"""A Yahtzee-family rule set seen as a :class:`~memo_solver.core.game.Game`.

A block is every guidepost sharing one set of filled boxes; its key is the filled mask in
hexadecimal, so keys are short and the same in every store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from memo_solver.core.game import Block
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.turn import solve_blocks


def block_key(filled: int) -> str:
    return format(filled, "x")


def filled_of(key: str) -> int:
    return int(key, 16)


class _ByMask(Mapping[int, Block]):
    """Successor blocks looked up by filled mask, without copying the mapping."""

    def __init__(self, by_key: Mapping[str, Block]) -> None:
        self._by_key = by_key

    def __getitem__(self, filled: int) -> Block:
        return self._by_key[block_key(filled)]

    def __iter__(self) -> Iterator[int]:
        return (filled_of(k) for k in self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)


class YahtzeeGame:
    """Blocks keyed by filled mask, solved in batches by
    :func:`memo_solver.games.yahtzee.solve.turn.solve_blocks`."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def fingerprint(self) -> str:
        return self.rules.fingerprint

    @property
    def block_count(self) -> int:
        return self.rules.block_count

    def root(self) -> str:
        return block_key(0)

    def is_key(self, key: str) -> bool:
        try:
            filled = filled_of(key)
        except ValueError:
            return False
        return self.rules.is_reachable(filled) and block_key(filled) == key

    def block_shape(self, key: str) -> tuple[int, ...]:
        return self.rules.block_shape_of(filled_of(key))

    def block_cost(self, key: str) -> float:
        return self.rules.turn_cost(filled_of(key).bit_count())

    def values_below(self, key: str) -> int:
        return self.rules.cone_turn_starts(filled_of(key))

    def successors(self, key: str) -> Sequence[str]:
        filled = filled_of(key)
        return [block_key(filled | 1 << box) for box in self.rules.open_boxes(filled)]

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        return [[block_key(m) for m in layer] for layer in self.rules.layers(filled_of(key))]

    def solve(self, key: str, successors: Mapping[str, Block]) -> Block:
        return self.solve_many([key], successors)[0]

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        masks = np.array([filled_of(k) for k in keys], dtype=np.int64)
        by_mask = _ByMask(successors)
        if not self.rules.saved_rolls:
            return list(solve_blocks(self.rules, masks.tolist(), by_mask))
        # Blocks of saved rolls hold more banks with each box filled: one kernel call per
        # filled count (a layer of a whole solve is one; a cold cone's batch may be several).
        counts = self.rules.filled_counts(masks)
        blocks: list[Block] = [np.empty(0)] * len(keys)
        for count in np.unique(counts).tolist():
            at = np.flatnonzero(counts == count)
            solved = solve_blocks(self.rules, masks[at].tolist(), by_mask)
            for i, block in zip(at.tolist(), solved, strict=True):
                blocks[i] = block
        return blocks
