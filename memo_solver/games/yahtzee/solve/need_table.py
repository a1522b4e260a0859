"""How big a rule set's whole need table is, before anyone solves it.

A need table holds, per block, every reachable turn start times the block's width (one
chance per need, :func:`memo_solver.games.yahtzee.solve.need.width`), 8 bytes a chance: hundreds
of times the mean table. ``precompute --need`` weighs this against its limit before it
starts, and a service weighs a cold question's cone (:func:`cone_values`) against its
budget, so that neither learns the size from a full disk or a stalled request.
"""

from __future__ import annotations

import numpy as np

from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.need import NeedGame, reaches
from memo_solver.games.yahtzee.solve.turn import Guideposts

VALUE_BYTES = 8


def table_bytes(rules: RuleSet, cap: int) -> int:
    """Bytes of the whole need table of ``rules`` up to ``cap``: over every block a game
    reaches, its reachable turn starts times its width, 8 bytes each (what the store keeps,
    which packs the reachable turn starts only)."""
    masks = np.asarray(rules.reachable_masks(0), dtype=np.int64)
    widths = np.maximum(1, np.minimum(cap, reaches(rules, masks)))
    return int((Guideposts.counts(rules, masks) * widths).sum()) * VALUE_BYTES


def cone_values(rules: RuleSet, cap: int, filled: int) -> int:
    """Chances a cold solve from ``filled`` may compute, at most: the mean cone's turn
    starts (:meth:`RuleSet.cone_turn_starts`) times the block's width, the widest of the
    cone (later blocks reach less): the need table's :meth:`NeedGame.values_below`."""
    return NeedGame(rules, cap).values_below(block_key(filled))
