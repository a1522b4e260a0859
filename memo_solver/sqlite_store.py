"""The embedded default store: one SQLite file, safe to share between processes.

WAL mode lets readers run beside one writer; every operation is one short transaction,
run in a worker thread so the event loop never blocks on the file. Claims carry a wall-
clock expiry, so a killed process's claims lapse by themselves. Waiting polls the file
with a growing interval (there is no cross-process notification in SQLite), capped so a
waiter notices a committed block within 50 ms.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from memo_solver.store import Claim, Coverage, StoreUnavailableError

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blocks (
    namespace TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS claims (
    namespace TEXT NOT NULL, key TEXT NOT NULL, token TEXT NOT NULL, expires REAL NOT NULL,
    PRIMARY KEY (namespace, key)) WITHOUT ROWID;
"""
_POLL_START_S = 0.002
_POLL_MAX_S = 0.05
_HOST = socket.gethostname()


def _holder_died(token: str) -> bool:
    """A claim taken by a process of this host that no longer exists (host/pid/random tokens).

    A reused pid only makes the claim look alive, as every claim did before: claims are a
    courtesy, never needed for correctness.
    """
    host, _, rest = token.partition("/")
    pid, _, _ = rest.partition("/")
    if host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class SQLiteStore:
    """Blocks and claims in one SQLite file (created with its folder if missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(1)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA page_size = 8192")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailableError(
                f"cannot open the store {path}: {exc} (choose another file with --store)"
            ) from exc

    @property
    def description(self) -> str:
        return str(self.path)

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                return fn(self._db)

        return await anyio.to_thread.run_sync(locked, limiter=self._limiter)

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        if not keys:
            return {}

        def query(db: sqlite3.Connection) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, data FROM blocks WHERE namespace = ? AND key IN ({marks})",
                    [namespace, *chunk],
                )
                found.update((key, bytes(data)) for key, data in rows)
            return found

        return await self._run(query)

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        def claim(db: sqlite3.Connection) -> dict[str, Claim]:
            now = time.time()
            result: dict[str, Claim] = {}
            db.execute("BEGIN IMMEDIATE")
            try:
                for key in keys:
                    holder = db.execute(
                        "SELECT token, expires FROM claims WHERE namespace = ? AND key = ?",
                        (namespace, key),
                    ).fetchone()
                    if db.execute(
                        "SELECT 1 FROM blocks WHERE namespace = ? AND key = ?", (namespace, key)
                    ).fetchone():
                        result[key] = Claim.DONE
                    elif (
                        holder is not None
                        and holder[0] != token
                        and holder[1] > now
                        and not _holder_died(holder[0])
                    ):
                        result[key] = Claim.BUSY
                    else:
                        db.execute(
                            "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?)",
                            (namespace, key, token, now + lease_s),
                        )
                        result[key] = Claim.CLAIMED
            finally:
                db.execute("COMMIT")
            return result

        return await self._run(claim)

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        def renew(db: sqlite3.Connection) -> None:
            expires = time.time() + lease_s
            db.executemany(
                "UPDATE claims SET expires = ? WHERE namespace = ? AND key = ? AND token = ?",
                [(expires, namespace, key, token) for key in keys],
            )

        await self._run(renew)

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        await self._run(
            lambda db: db.executemany(
                "DELETE FROM claims WHERE namespace = ? AND key = ? AND token = ?",
                [(namespace, key, token) for key in keys],
            )
        )

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        def commit(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO blocks VALUES (?, ?, ?)",
                    [(namespace, key, data) for key, data in blocks.items()],
                )
                db.executemany(
                    "DELETE FROM claims WHERE namespace = ? AND key = ? AND token = ?",
                    [(namespace, key, token) for key in blocks],
                )
            finally:
                db.execute("COMMIT")

        await self._run(commit)

    async def wait(self, namespace: str, key: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        interval = _POLL_START_S
        while time.monotonic() < deadline:
            if await self.get_many(namespace, [key]):
                return
            holder = await self._run(
                lambda db: db.execute(
                    "SELECT token FROM claims WHERE namespace = ? AND key = ? AND expires > ?",
                    (namespace, key, time.time()),
                ).fetchone()
            )
            if holder is None or _holder_died(holder[0]):
                return  # released or lapsed: the caller may claim it now
            await anyio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            interval = min(interval * 2, _POLL_MAX_S)

    async def keys(self, namespace: str) -> list[str]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT key FROM blocks WHERE namespace = ? ORDER BY key", (namespace,)
            ).fetchall()
        )
        return [key for (key,) in rows]

    async def coverage(self, namespace: str) -> Coverage:
        def count(db: sqlite3.Connection) -> Coverage:
            blocks, size = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM blocks WHERE namespace = ?",
                (namespace,),
            ).fetchone()
            (claims,) = db.execute(
                "SELECT COUNT(*) FROM claims WHERE namespace = ? AND expires > ?",
                (namespace, time.time()),
            ).fetchone()
            return Coverage(blocks=blocks, claims=claims, bytes=size)

        return await self._run(count)

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._run(lambda db: db.close())
