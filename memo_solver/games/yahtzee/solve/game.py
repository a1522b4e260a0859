"""A Yahtzee-family rule set seen as a :class:`~memo_solver.core.game.Game`.

A block is every guidepost sharing one set of filled boxes; its key is the filled mask in
hexadecimal, so keys are short and the same in every store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from memo_solver.core.game import Block, Packed
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


def as_stored(rules: RuleSet, block: Block) -> Block:
    """A solved block at the precision its rule set stores (float32 values where it says
    so): rounded as it is solved, so that the memo holds what the store holds and a value
    is the same whoever computed it or read it."""
    if rules.precision == "float64":
        return block
    rounded: Block = block.astype(np.float32).astype(np.float64)
    return rounded


@lru_cache(maxsize=1024)
def _hopeless(rules: RuleSet, upper_filled: int) -> tuple[int, npt.NDArray[np.int64]]:
    """A saved-rolls block's hopeless levels and those of them a game reaches, which its
    filled upper boxes alone decide: computed once per set of them (Maxi Yatzy has 64), not
    per block read."""
    hopeless = rules.hopeless_levels(upper_filled) if rules.saved_rolls else 0
    reached = rules.reachable_upper(upper_filled)
    reached = reached[reached < hopeless]
    reached.setflags(write=False)
    return hopeless, reached


class YahtzeeGame:
    """Blocks keyed by filled mask, solved in batches by
    :func:`memo_solver.games.yahtzee.solve.turn.solve_blocks`."""

    theta: float = 0.0
    """The risk objective's (:class:`memo_solver.games.yahtzee.solve.risk.RiskGame`); 0,
    the mean's."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._upper_boxes = sum(1 << box for box, face in enumerate(rules.upper_faces) if face)

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

    def pack(self, key: str, block: Block) -> Packed:
        """With saved rolls, the upper levels that can no longer make the bonus
        (:meth:`~memo_solver.games.yahtzee.rules.rule_set.RuleSet.hopeless_levels`) are
        stored once, as level 0 (which every game may reach: it scratches its upper boxes),
        then every level above them: 714 million values for the whole ``maxi-yatzy-saved``
        table, not 1.27 billion. Without saved rolls a block is stored whole, its bytes those
        it always had."""
        hopeless, _ = _hopeless(self.rules, filled_of(key) & self._upper_boxes)
        kept = np.concatenate([block[:1], block[hopeless:]]) if hopeless else block
        return kept.astype(np.float32) if self.rules.precision == "float32" else kept

    def unpack(self, key: str, packed: Block) -> Block:
        """Every hopeless level that a game reaches gets the one stored; the others stay
        NaN, as the kernel leaves the levels no game reaches."""
        hopeless, reached = _hopeless(self.rules, filled_of(key) & self._upper_boxes)
        if not hopeless:
            return packed
        shape = self.block_shape(key)
        if packed.shape != (1 + shape[0] - hopeless, *shape[1:]):
            raise ValueError(f"{packed.shape} is not a packed block of shape {shape}")
        block = np.full(shape, np.nan)
        block[hopeless:] = packed[1:]
        block[reached] = packed[0]
        return block

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
            solved = solve_blocks(self.rules, masks.tolist(), by_mask, theta=self.theta)
            return [as_stored(self.rules, block) for block in solved]
        # Blocks of saved rolls hold more banks with each box filled: one kernel call per
        # filled count (a layer of a whole solve is one; a cold cone's batch may be several).
        counts = self.rules.filled_counts(masks)
        blocks: list[Block] = [np.empty(0)] * len(keys)
        for count in np.unique(counts).tolist():
            at = np.flatnonzero(counts == count)
            solved = solve_blocks(self.rules, masks[at].tolist(), by_mask, theta=self.theta)
            for i, block in zip(at.tolist(), solved, strict=True):
                blocks[i] = as_stored(self.rules, block)
        return blocks
