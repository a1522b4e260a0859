"""Tiny workloads that run every compiled function of the family once.

``memo-solver compile`` runs them so that every compiled loop is in the cache folder before
the first real command needs it (:mod:`memo_solver.core.compiled`). Each goes through the
code path real commands take, not the kernel directly: numba compiles one machine code per
argument types, and only the real path passes the real ones (the same C-contiguous int64
and float64 arrays for every rule set, so one rule set's workload serves them all).

A module that defines compiled functions adds a workload to :data:`WORKLOADS` (one that
needs solved blocks can solve a small rule set on an engine over a ``MemoryStore``, inside
``anyio.run``); tests/test_compiled.py fails while any compiled function of the package is
left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from memo_solver.games.yahtzee import turn
from memo_solver.games.yahtzee.catalog import get_rule_set


def _turn_kernel() -> None:
    """Official Yahtzee's last turn: every block with one box open solved as a layer (the
    block solver), then one guidepost's turn with every step kept (advice, the policy)."""
    rules = get_rule_set("yahtzee")
    full = rules.all_filled
    over = turn.solve_block(rules, full, {})
    last = [full & ~(1 << box) for box in range(len(rules.categories))]
    turn.solve_blocks(rules, last, {full: over})
    turn.turn_tables(
        rules, last[0], lambda _box: over, turn.Guideposts.one(rules, 0, 0), rules.rerolls
    )


WORKLOADS: Final[tuple[Callable[[], None], ...]] = (_turn_kernel,)
"""Together they reach every compiled function; each takes milliseconds once compiled."""


def warm_up() -> None:
    """Run every workload: each compiled function compiled, or loaded from the cache."""
    for workload in WORKLOADS:
        workload()
