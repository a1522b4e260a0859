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

import anyio

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.analysis.distribution import score_distribution, target_distribution
from memo_solver.games.yahtzee.analysis.simulate import PolicyCache, simulate
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.state import State, start_state
from memo_solver.games.yahtzee.solve import turn
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.need import NeedGame
from memo_solver.stores.memory import MemoryStore


def _turn_kernel() -> None:
    """Official Yahtzee's last turn: every block with one box open solved as a layer (the
    block solver), then one guidepost's turn with every step kept (advice, the policy), for
    the mean and at a risk (its utilities back in points)."""
    rules = get_rule_set("yahtzee")
    full = rules.all_filled
    over = turn.solve_block(rules, full, {})
    last = [full & ~(1 << box) for box in range(len(rules.categories))]
    turn.solve_blocks(rules, last, {full: over})
    for theta in (0.0, 0.5):
        turn.turn_tables(
            rules, last[0], lambda _box: over, turn.Guideposts.one(rules, 0, 0), rules.rerolls,
            theta=theta,
        )  # fmt: skip


def _strategy() -> None:
    """The strategy's choices on a small rule set: its exact score distribution (policies and
    the forward pass), advice for a rolled state (one roll's steps), a few simulated games
    (block policies in batches), and the target policy's distribution for a need."""
    rules = get_rule_set("yahtzee-lower")

    async def run() -> None:
        store = MemoryStore()
        async with (
            open_engine(YahtzeeGame(rules), store) as engine,
            open_engine(NeedGame(rules, 200), store) as need_engine,
        ):
            await score_distribution(engine, rules, start_state())
            await advise(engine, rules, State(0, 0, False, 2, (1, 2, 3, 4, 5)))
            await simulate(engine, PolicyCache(rules), games=20, seed=0)
            await target_distribution(engine, need_engine, rules, start_state(), 150)

    anyio.run(run)


WORKLOADS: Final[tuple[Callable[[], None], ...]] = (_turn_kernel, _strategy)
"""Together they reach every compiled function; each takes milliseconds once compiled."""


def warm_up() -> None:
    """Run every workload: each compiled function compiled, or loaded from the cache."""
    for workload in WORKLOADS:
        workload()
