"""Engines for synchronous tests: one per rule set on a memory store, in one event loop.

Hypothesis and plain pytest functions are synchronous; a blocking portal keeps an event
loop (and the engines' background tasks) alive for a whole module, so every example shares
the warm memo instead of solving again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal

from memo_solver.core.engine import Engine, open_engine
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

T = TypeVar("T")


@dataclass
class PortalEngines:
    portal: BlockingPortal
    stack: contextlib.ExitStack[Any]
    engines: dict[str, Engine] = field(default_factory=dict)

    def engine(self, rules: RuleSet) -> Engine:
        engine = self.engines.get(rules.name)
        if engine is None:
            opened = open_engine(YahtzeeGame(rules), MemoryStore())
            engine = self.stack.enter_context(self.portal.wrap_async_context_manager(opened))
            self.engines[rules.name] = engine
        return engine

    def call(self, work: Callable[..., Awaitable[T]], rules: RuleSet, *args: Any) -> T:
        """``await work(engine, rules, *args)`` on the rule set's engine, from sync code."""
        return self.portal.call(work, self.engine(rules), rules, *args)
