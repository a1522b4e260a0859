"""Engines for the games players bring (rule-set files), opened on demand and capped.

A public service or a worker cannot keep an engine (and its memo) open for every rule set
anyone ever sent: the pool holds at most ``capacity`` of them and closes the least recently used one
that no work is using when it needs room; their memos share one byte budget, so the total
stays bounded however many rule sets arrive. Each engine lives in a task of the service's
owner's task group (an engine's background tasks must be entered and left by one task),
which keeps it open until the pool asks it to close.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc

from memo_solver.core.engine import DEFAULT_LEASE_S, Engine, open_engine
from memo_solver.core.game import Game
from memo_solver.core.store import Store, StoreBusyError

log = logging.getLogger(__name__)


class PoolBusyError(StoreBusyError):
    """Every pooled engine is in use and the pool is full: retry shortly (503)."""


@dataclass(eq=False)
class _Slot:
    """One pooled engine: open once ``ready`` is set (``engine`` or ``failure``)."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    close: anyio.Event = field(default_factory=anyio.Event)
    engine: Engine | None = None
    failure: BaseException | None = None
    users: int = 0


class EnginePool:
    """Engines by fingerprint for games outside the registry."""

    def __init__(
        self,
        store: Store,
        limiter: anyio.CapacityLimiter,
        task_group: anyio.abc.TaskGroup,
        *,
        capacity: int,
        cache_bytes: int,
        lease_s: float = DEFAULT_LEASE_S,
        threads: int = 1,
    ) -> None:
        self._store = store
        self._threads = threads
        self._limiter = limiter
        self._task_group = task_group
        self.capacity = capacity
        self._cache_bytes = max(1, cache_bytes // capacity)
        """Each engine's share, so that all of them together stay within the budget."""
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lease_s = lease_s

    def __len__(self) -> int:
        return len(self._slots)

    def peek(self, fingerprint: str) -> Engine | None:
        """The open engine of a fingerprint, if there is one: the warm fast path's check."""
        slot = self._slots.get(fingerprint)
        return None if slot is None else slot.engine

    @asynccontextmanager
    async def use(self, game: Game, definition: bytes | None) -> AsyncIterator[Engine]:
        """The engine of ``game`` (opened now if needed), kept open while the block runs."""
        fingerprint = game.fingerprint
        slot = self._slots.get(fingerprint)
        if slot is None:
            self._make_room()
            slot = self._slots[fingerprint] = _Slot()
            self._task_group.start_soon(self._host, game, definition, slot)
        self._slots.move_to_end(fingerprint)
        slot.users += 1
        try:
            await slot.ready.wait()
            if slot.engine is None:
                assert slot.failure is not None
                raise slot.failure
            yield slot.engine
        finally:
            slot.users -= 1

    def _make_room(self) -> None:
        if len(self._slots) < self.capacity:
            return
        for fingerprint, slot in self._slots.items():  # least recently used first
            if slot.users == 0:
                log.info("closing the engine of rule set %s to make room", fingerprint)
                slot.close.set()
                del self._slots[fingerprint]
                return
        raise PoolBusyError(
            f"all {self.capacity} engines for rule sets outside the registry are busy; retry"
        )

    async def _host(self, game: Game, definition: bytes | None, slot: _Slot) -> None:
        fingerprint = game.fingerprint
        try:
            async with open_engine(
                game,
                self._store,
                compute_limiter=self._limiter,
                cache_bytes=self._cache_bytes,
                lease_s=self._lease_s,
                definition=definition,
                threads=self._threads,
            ) as engine:
                slot.engine = engine
                slot.ready.set()
                await slot.close.wait()
        except Exception as exc:  # the users waiting are told; the slot goes
            slot.failure = exc
            if self._slots.get(fingerprint) is slot:
                del self._slots[fingerprint]
        finally:
            slot.engine = None
            slot.ready.set()
