"""Test helper: solve small sub-games bottom up with
:func:`memo_solver.games.yahtzee.solve.turn.solve_block`.

A sub-game is every scorecard that already has the boxes of ``below`` filled. With only a
few boxes open it has few blocks (``2 ** open``), so tests can build exact values of
hand-checkable end-game states in milliseconds, independently of any cache or store.
"""

from __future__ import annotations

import numpy as np

from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.turn import solve_block


def solve_all(rules: RuleSet, below: int = 0) -> dict[int, np.ndarray]:
    """Every block whose filled mask is a superset of ``below``, keyed by that mask.

    Blocks are solved most-filled first, so each block's successors (one more box filled)
    are ready when it is solved.
    """
    full = rules.all_filled
    if below & ~full:
        raise ValueError(f"mask {below:#x} names boxes beyond the {len(rules.categories)} boxes")
    free = [c for c in range(len(rules.categories)) if not below >> c & 1]
    masks = []
    for subset in range(1 << len(free)):
        mask = below
        for bit, box in enumerate(free):
            if subset >> bit & 1:
                mask |= 1 << box
        masks.append(mask)
    masks.sort(key=lambda m: (-m.bit_count(), m))
    blocks: dict[int, np.ndarray] = {}
    for mask in masks:
        blocks[mask] = solve_block(rules, mask, blocks)
    return blocks
