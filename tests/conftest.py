"""Shared fixtures: every store implementation, and the process tuning a solve wants."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from memo_solver.runtime import keep_freed_memory
from memo_solver.sqlite_store import SQLiteStore
from memo_solver.store import MemoryStore, Store


async def _memory(tmp_path: Path) -> Store:
    return MemoryStore()


async def _sqlite(tmp_path: Path) -> Store:
    return SQLiteStore(tmp_path / "store" / "memo.sqlite")


# One factory per store implementation; a new store joins every contract test by adding a line.
STORE_FACTORIES: dict[str, Callable[[Path], Awaitable[Store]]] = {
    "memory": _memory,
    "sqlite": _sqlite,
}


@pytest.fixture(scope="session", autouse=True)
def _keep_freed_memory() -> None:
    """glibc keeps freed memory between block passes: halves the time of a solve."""
    keep_freed_memory()


@pytest.fixture(params=list(STORE_FACTORIES), ids=list(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, empty store of each kind, closed after the test."""
    opened = await STORE_FACTORIES[request.param](tmp_path)
    try:
        yield opened
    finally:
        await opened.aclose()
