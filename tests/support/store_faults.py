"""Real store faults for the tests, as an operator meets them: a full SQLite file, a
read-only one, a statement that fails mid-transaction, a Redis at ``maxmemory``.

SQLite's limits are per connection, so each fault applies to every connection opened while
it is on (``monkeypatch`` undoes it): ``PRAGMA max_page_count = 1`` lets the file grow no
more than it is (SQLITE_FULL is then SQLite's own error, as on a full disk), ``PRAGMA
query_only`` refuses every write (SQLITE_READONLY, as a read-only file does for anyone but
root, which CI runs as).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from memo_solver.stores.sqlite import SQLiteStore

FULL = "PRAGMA max_page_count = 1"
READ_ONLY = "PRAGMA query_only = ON"


async def store_file(path: Path) -> Path:
    """An SQLite store file with its tables and nothing else, closed."""
    async with SQLiteStore(path):
        return path


def on_every_connection(monkeypatch: pytest.MonkeyPatch, pragma: str) -> None:
    """Every SQLite connection opened from now on runs ``pragma`` first."""
    connect = sqlite3.connect

    def connect_with_pragma(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = connect(*args, **kwargs)
        db.execute(pragma)
        return db

    monkeypatch.setattr(sqlite3, "connect", connect_with_pragma)


class FailingConnection(sqlite3.Connection):
    """A connection whose ``statements_left``-th statement from now fails, as a disk error
    would, without SQLite rolling anything back itself (None: never)."""

    statements_left: int | None = None

    def _count(self) -> None:
        if FailingConnection.statements_left is not None:
            FailingConnection.statements_left -= 1
            if FailingConnection.statements_left == 0:
                FailingConnection.statements_left = None
                raise sqlite3.OperationalError("disk I/O error (injected)")

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        self._count()
        return super().execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        self._count()
        return super().executemany(*args, **kwargs)


def failing_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite connections opened from now on are :class:`FailingConnection` (unarmed)."""
    connect = sqlite3.connect

    def connect_failing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(*args, **kwargs, factory=FailingConnection)

    monkeypatch.setattr(sqlite3, "connect", connect_failing)
    monkeypatch.setattr(FailingConnection, "statements_left", None)


@contextmanager
def redis_at_maxmemory(client: redis.Redis) -> Iterator[None]:
    """The Redis refuses every write (``maxmemory`` 1 byte, no eviction), then is reset."""
    before = client.config_get("maxmemory-policy").get("maxmemory-policy") or "noeviction"
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    try:
        yield
    finally:
        client.config_set("maxmemory", 0)
        client.config_set("maxmemory-policy", before)
