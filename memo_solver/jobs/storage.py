"""The store a location names and, beside it, the job queue: built where the location is
known (the command line, the service's start, a worker), then passed down explicitly."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memo_solver.core.store import Store
    from memo_solver.jobs.queue import JobQueue

Location = str | Path
"""A Redis URL, or an SQLite file."""


def open_store_and_queue(location: Location) -> tuple[Store, JobQueue | None]:
    """Redis for a URL, with its job queue; an SQLite file alone (background jobs need the
    workers' shared Redis). Not yet open: enter the store (``async with``) to use either.

    Redis is imported only for a URL: a command on the SQLite file never pays for it."""
    if isinstance(location, str):
        from memo_solver.jobs.queue import JobQueue
        from memo_solver.stores.redis import RedisStore

        store = RedisStore(location)
        return store, JobQueue(store)
    from memo_solver.stores.sqlite import SQLiteStore

    return SQLiteStore(location), None
