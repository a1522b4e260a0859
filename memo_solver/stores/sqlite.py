"""The embedded default store: one SQLite file, safe to share between processes.

WAL mode lets readers run beside one writer; every operation is one short transaction,
run in a worker thread so the event loop never blocks on the file. Claims carry a wall-
clock expiry, so a killed process's claims lapse by themselves. Waiting polls the file
with a growing interval (there is no cross-process notification in SQLite), capped so a
waiter notices a committed block within 50 ms.

The WAL is copied into the file by a checkpoint of its own, in a thread beside the writes,
after every 8 MB written (SQLite's own default of 1,000 pages): inside a commit, as SQLite does
it by default, the copy and its fsync stalled that commit and every solve waiting on it (20 ms
of a half-second ``yahtzee`` solve, however many threads solved it).

A transaction commits only when every statement of it succeeded, and rolls back otherwise.
SQLite's errors leave as store errors (:mod:`memo_solver.core.store`) naming the file: full,
read-only, locked past the timeout, or failed.

One module of about 680 lines, on purpose: it is the one class of the ``Store`` protocol on
SQLite, and each of its jobs (blocks, claims, waits, coverage, namespaces, definitions,
registrations; the probe apart, on its own connection) is a function run in a worker thread
on the one connection under its lock (``_run``): its errors worded by ``_fault``, its writes
made in one ``_transaction`` and counted towards the next checkpoint. Its SQL is written
where it runs, beside the schema it reads (the tables of the file, and those made on first
use, which a reader first checks are there): a module of the schema alone would part every
statement from the columns and the ``WITHOUT ROWID`` keys it is written for, and a module
per job would reach into the connection, its lock and the checkpoint counter.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from memo_solver.core.store import (
    Claim,
    Coverage,
    GoneNamespaces,
    NamespaceGoneError,
    RegistrationQuotaError,
    StoreBusyError,
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
    Write,
    mixed,
)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blocks (
    namespace TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS claims (
    namespace TEXT NOT NULL, key TEXT NOT NULL, token TEXT NOT NULL, expires REAL NOT NULL,
    PRIMARY KEY (namespace, key)) WITHOUT ROWID;
"""
_TABLES = ("blocks", "claims")
_DEFINITIONS = """
CREATE TABLE IF NOT EXISTS definitions (
    namespace TEXT NOT NULL PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID
"""
"""Made by the first definition stored, not at open: a file from before definitions were
kept opens as it did (read-only too), and reads as holding none."""
_RECORDS = """
CREATE TABLE IF NOT EXISTS records (namespace TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID
"""
"""A record per namespace written, as Redis keeps a layout record: what a process writes
under, checked by its commits, so that one into a namespace deleted since (a rule set
deleted during its precompute) is refused. SQLite keeps no layout, so every block is read
whatever the records say: a namespace written by a version without them has none, and its
next writer records it. Made by the first write, as the definitions table."""
_REGISTRATIONS = (
    """
CREATE TABLE IF NOT EXISTS registrations (
    name TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL, document BLOB NOT NULL)
    WITHOUT ROWID
""",
    "CREATE INDEX IF NOT EXISTS registrations_by_fingerprint ON registrations (fingerprint)",
)
"""Made by the first registration, as the definitions table by the first definition. Names
compare as SQLite's TEXT does by default (BINARY: bytewise UTF-8), the order of a page."""
_REGISTRATIONS_USED = """
CREATE TABLE IF NOT EXISTS registrations_used (
    name TEXT NOT NULL PRIMARY KEY, used REAL NOT NULL) WITHOUT ROWID
"""
"""When each registration was last asked about (Unix seconds): made by the first stamp, so a
file from before stamps were kept reads as holding none (each counts as used when seen)."""
_PAGE_BYTES = 8192
_CHECKPOINT_BYTES = 1000 * _PAGE_BYTES
"""Writes between two checkpoints: SQLite's default (1,000 pages of WAL), counted here."""
_ROW_BYTES = 128
"""About what a claim's row adds to the WAL: writes are counted, not measured (SQLite tells
Python nothing of its WAL's size), so a checkpoint comes after about 8 MB."""
_POLL_START_S = 0.002
_POLL_MAX_S = 0.05
_LOCK_TIMEOUT_S = 30.0
_PROBE_LOCK_TIMEOUT_S = 0.05
_PROBE_NAMESPACE = "probe"
_HOST = socket.gethostname()

log = logging.getLogger(__name__)


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

    def __init__(
        self, path: Path, *, lock_timeout_s: float = _LOCK_TIMEOUT_S, flag: str = "--store"
    ) -> None:
        self.path = path
        self.flag = flag
        """The option that named the file, which the errors tell the user to change (an
        ``import --from`` file is not the ``--store``)."""
        self.lock_timeout_s = lock_timeout_s
        """How long a write waits for another process's write lock before StoreBusyError."""
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(1)
        self._prober: sqlite3.Connection | None = None
        self._probe_limiter = anyio.CapacityLimiter(1)
        self._unchecked = 0
        """Bytes written (counted) since the last checkpoint began."""
        self._checkpointer: threading.Thread | None = None
        self._counting = threading.Lock()
        """Guards the two above: the probe writes on its own connection, without ``_lock``."""
        self._recorded: set[str] = set()
        """Namespaces this process recorded (:data:`_RECORDS`): its commits there check the
        record is still there."""
        self._gone = GoneNamespaces()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(lock_timeout_s)
            self._db.execute(f"PRAGMA page_size = {_PAGE_BYTES}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA wal_autocheckpoint = 0")  # see _checkpoint
            marks = ",".join("?" * len(_TABLES))
            (tables,) = self._db.execute(
                f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
                _TABLES,
            ).fetchone()
            if tables < len(_TABLES):  # a read-only file with its tables still opens, to read
                self._db.executescript(_SCHEMA)
        except OSError as exc:
            raise self._unusable(exc) from exc
        except sqlite3.Error as exc:
            fault = self._fault(exc)
            if not isinstance(fault, StoreRefusedError | StoreBusyError):
                fault = self._unusable(exc)  # a folder, a file that is not a database
            raise fault from exc

    def _connect(self, lock_timeout_s: float) -> sqlite3.Connection:
        return sqlite3.connect(
            self.path, timeout=lock_timeout_s, isolation_level=None, check_same_thread=False
        )

    def _unusable(self, exc: Exception) -> StoreLocationError:
        return StoreLocationError(
            f"cannot open the store {self.path}: {exc} (choose another file with {self.flag})"
        )

    def _fault(self, exc: sqlite3.Error) -> StoreUnavailableError:
        """The store error for what SQLite said, in words that say what to do."""
        # The primary code of an extended one (an error raised by Python code has none).
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        where = f"the store {self.path}"
        if code == sqlite3.SQLITE_FULL:
            return StoreFullError(
                f"{where} is full ({exc}): free space on its disk, or choose another file "
                f"with {self.flag}"
            )
        if code == sqlite3.SQLITE_READONLY:
            return StoreRefusedError(
                f"{where} refused the write ({exc}): make the file and its folder writable, "
                f"or choose another file with {self.flag}"
            )
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreBusyError(
                f"{where} stayed locked by another process for {self.lock_timeout_s:g} s "
                f"({exc}): retry once its writer (a precompute?) is done"
            )
        return StoreUnavailableError(
            f"{where} failed: {exc} (check the file and its disk, or choose another file "
            f"with {self.flag})"
        )

    @property
    def description(self) -> str:
        return str(self.path)

    async def _run(self, fn: Callable[[sqlite3.Connection], T], *, writes: int | None = None) -> T:
        """``fn`` on the store's connection, in a worker thread; ``writes``: about the bytes
        a write adds to the WAL (a page at least), counted towards the next checkpoint."""

        def locked() -> T:
            with self._lock:
                try:
                    result = fn(self._db)
                except sqlite3.Error as exc:
                    raise self._fault(exc) from exc
                if writes is not None:
                    self._wrote(writes + _PAGE_BYTES)
                return result

        return await anyio.to_thread.run_sync(locked, limiter=self._limiter)

    def _wrote(self, size: int) -> None:
        """Count ``size`` bytes written, and start a checkpoint when due and none runs."""
        with self._counting:
            self._unchecked += size
            running = self._checkpointer is not None and self._checkpointer.is_alive()
            if self._unchecked < _CHECKPOINT_BYTES or running:
                return
            self._unchecked = 0
            self._checkpointer = threading.Thread(
                target=self._checkpoint, name=f"checkpoint of {self.path.name}"
            )
            self._checkpointer.start()

    def _checkpoint(self) -> None:
        """Copy the WAL into the file on a connection of its own, beside the writes.

        A plain thread, the store's own (joined by :meth:`aclose`), not a task: it outlives
        the write that started it, and runs no Python while SQLite copies. PASSIVE waits for
        no reader or writer, and what it could not copy goes with the next one; a failure
        is logged, never raised: the writes it follows were committed already."""
        try:
            db = self._connect(self.lock_timeout_s)
            try:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                db.close()
        except sqlite3.Error as exc:
            log.warning(
                "a checkpoint of %s failed: %s (the next one copies its pages)", self.path, exc
            )

    def expect(self, namespace: str, size_bytes: int) -> None:
        """Nothing to size: one table holds every namespace."""

    async def arrange(
        self, namespace: str, keys: Sequence[str], shuffle: random.Random | None
    ) -> list[str]:
        return mixed(keys, shuffle)

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
        self._gone.check(namespace)
        recorded = namespace in self._recorded

        def claim(db: sqlite3.Connection) -> dict[str, Claim]:
            # Set-based: three statements for the whole batch, not three per key (the
            # per-key form held the GIL 12 us a key, a fifth of a compiled solve's time).
            now = time.time()
            wanted = json.dumps(list(keys))
            with _transaction(db):
                if not recorded:
                    _record(db, namespace)
                done = {
                    key
                    for (key,) in db.execute(
                        "SELECT key FROM blocks WHERE namespace = ? "
                        "AND key IN (SELECT value FROM json_each(?))",
                        (namespace, wanted),
                    )
                }
                holders = dict(
                    db.execute(
                        "SELECT key, token FROM claims WHERE namespace = ? AND expires > ? "
                        "AND token != ? AND key IN (SELECT value FROM json_each(?))",
                        (namespace, now, token, wanted),
                    ).fetchall()
                )
                result = {
                    key: Claim.DONE
                    if key in done
                    else Claim.BUSY
                    if key in holders and not _holder_died(holders[key])
                    else Claim.CLAIMED
                    for key in keys
                }
                claimed = [key for key, state in result.items() if state is Claim.CLAIMED]
                db.execute(
                    "INSERT OR REPLACE INTO claims SELECT ?, value, ?, ? FROM json_each(?)",
                    (namespace, token, now + lease_s, json.dumps(claimed)),
                )
            return result

        result = await self._run(claim, writes=_ROW_BYTES * len(keys))
        self._recorded.add(namespace)
        return result

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        def renew(db: sqlite3.Connection) -> None:
            expires = time.time() + lease_s
            db.executemany(
                "UPDATE claims SET expires = ? WHERE namespace = ? AND key = ? AND token = ?",
                [(expires, namespace, key, token) for key in keys],
            )

        await self._run(renew, writes=_ROW_BYTES * len(keys))

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        await self._run(
            lambda db: db.executemany(
                "DELETE FROM claims WHERE namespace = ? AND key = ? AND token = ?",
                [(namespace, key, token) for key in keys],
            ),
            writes=_ROW_BYTES * len(keys),
        )

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        # One statement over every block, cut out of one joined blob by SQLite: executemany
        # bound and stepped each row, and took the GIL back after every step, which under
        # threads queued behind the other threads' Python once per row.
        rows, start = [], 1
        for key, data in blocks.items():
            rows.append([key, start, len(data)])
            start += len(data)
        joined = b"".join(blocks.values())
        self._gone.check(namespace)
        recorded = namespace in self._recorded

        def commit(db: sqlite3.Connection) -> None:
            with _transaction(db):
                if not recorded:
                    _record(db, namespace)
                elif not db.execute(  # the table is there: this process made a record
                    "SELECT 1 FROM records WHERE namespace = ?", (namespace,)
                ).fetchone():
                    raise NamespaceGoneError(namespace)
                db.execute(
                    "INSERT OR REPLACE INTO blocks SELECT ?, value ->> 0, "
                    "substr(?, value ->> 1, value ->> 2) FROM json_each(?)",
                    (namespace, joined, json.dumps(rows)),
                )
                db.execute(
                    "DELETE FROM claims WHERE namespace = ? AND token = ? "
                    "AND key IN (SELECT value FROM json_each(?))",
                    (namespace, token, json.dumps(list(blocks))),
                )

        try:
            await self._run(commit, writes=len(joined) + _ROW_BYTES * len(blocks))
        except NamespaceGoneError:
            self._recorded.discard(namespace)  # written again later, it is recorded afresh
            raise self._gone.hold(namespace) from None
        self._recorded.add(namespace)

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

    async def put_definition(self, namespace: str, definition: bytes) -> None:
        def put(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.execute(_DEFINITIONS)
                db.execute(
                    "INSERT OR IGNORE INTO definitions VALUES (?, ?)", (namespace, definition)
                )

        await self._run(put, writes=len(definition))

    async def definition(self, namespace: str) -> bytes | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            if not _has_table(db, "definitions"):
                return None
            row = db.execute(
                "SELECT data FROM definitions WHERE namespace = ?", (namespace,)
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(read)

    async def namespaces(self) -> list[str]:
        def walk(db: sqlite3.Connection) -> list[str]:
            tables = ["blocks", "claims"]
            tables += ["definitions"] if _has_table(db, "definitions") else []
            union = " UNION ".join(f"SELECT namespace FROM {table}" for table in tables)
            return [name for (name,) in db.execute(f"{union} ORDER BY 1")]

        return await self._run(walk)

    async def written(self) -> list[str]:
        """A skip over the blocks' primary key: one index step per namespace, however
        many blocks each holds."""
        return await self._run(
            lambda db: [
                name
                for (name,) in db.execute(
                    "WITH RECURSIVE held(name) AS (SELECT MIN(namespace) FROM blocks "
                    "UNION ALL SELECT (SELECT MIN(namespace) FROM blocks WHERE namespace > name) "
                    "FROM held WHERE name IS NOT NULL) SELECT name FROM held WHERE name IS NOT NULL"
                )
            ]
        )

    async def delete_namespace(self, namespace: str) -> int:
        def delete(db: sqlite3.Connection) -> int:
            with _transaction(db):
                deleted = db.execute("DELETE FROM blocks WHERE namespace = ?", (namespace,))
                db.execute("DELETE FROM claims WHERE namespace = ?", (namespace,))
                for table in ("definitions", "records"):
                    if _has_table(db, table):
                        db.execute(f"DELETE FROM {table} WHERE namespace = ?", (namespace,))
            return deleted.rowcount

        self._recorded.discard(namespace)
        self._gone.release(namespace)
        return await self._run(delete, writes=0)

    async def strays(self) -> dict[str, Coverage]:
        """None: SQLite keeps no layout, every block is read (see :data:`_RECORDS`)."""
        return {}

    async def delete_strays(self, namespace: str) -> int:
        return 0

    async def register(
        self, name: str, fingerprint: str, document: bytes, quota: int
    ) -> bytes | None:
        def register(db: sqlite3.Connection) -> bytes | None:
            # BEGIN IMMEDIATE holds the write lock from the count to the insert: no other
            # process registers in between.
            with _transaction(db):
                for statement in _REGISTRATIONS:
                    db.execute(statement)
                held = db.execute(
                    "SELECT document FROM registrations WHERE name = ?", (name,)
                ).fetchone()
                if held is not None:
                    return bytes(held[0])
                (count,) = db.execute("SELECT COUNT(*) FROM registrations").fetchone()
                if count >= quota:
                    raise RegistrationQuotaError(quota)
                db.execute(
                    "INSERT INTO registrations VALUES (?, ?, ?)", (name, fingerprint, document)
                )
            return None

        return await self._run(register, writes=len(document))

    async def registration(self, name: str) -> bytes | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            if not _has_table(db, "registrations"):
                return None
            row = db.execute(
                "SELECT document FROM registrations WHERE name = ?", (name,)
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(read)

    async def registrations(self, after: str, limit: int) -> list[tuple[str, bytes]]:
        def page(db: sqlite3.Connection) -> list[tuple[str, bytes]]:
            if not _has_table(db, "registrations"):
                return []
            rows = db.execute(
                "SELECT name, document FROM registrations WHERE name > ? ORDER BY name LIMIT ?",
                (after, limit),
            )
            return [(name, bytes(document)) for name, document in rows]

        return await self._run(page)

    async def unregister(self, name: str) -> int | None:
        def unregister(db: sqlite3.Connection) -> int | None:
            if not _has_table(db, "registrations"):
                return None
            with _transaction(db):
                row = db.execute(
                    "SELECT fingerprint FROM registrations WHERE name = ?", (name,)
                ).fetchone()
                if row is None:
                    return None
                db.execute("DELETE FROM registrations WHERE name = ?", (name,))
                (others,) = db.execute(
                    "SELECT COUNT(*) FROM registrations WHERE fingerprint = ?", row
                ).fetchone()
            return int(others)

        return await self._run(unregister, writes=0)

    async def mark_used(self, names: Sequence[str], at: float) -> None:
        def mark(db: sqlite3.Connection) -> None:
            if not _has_table(db, "registrations"):
                return
            with _transaction(db):
                db.execute(_REGISTRATIONS_USED)
                db.executemany(
                    "INSERT OR REPLACE INTO registrations_used "
                    "SELECT name, ? FROM registrations WHERE name = ?",
                    [(at, name) for name in names],
                )

        await self._run(mark, writes=_ROW_BYTES * len(names))

    async def last_used(self, now: float) -> list[tuple[str, float]]:
        def read(db: sqlite3.Connection) -> list[tuple[str, float]]:
            if not _has_table(db, "registrations"):
                return []
            with _transaction(db):
                db.execute(_REGISTRATIONS_USED)
                db.execute(
                    "DELETE FROM registrations_used "
                    "WHERE name NOT IN (SELECT name FROM registrations)"
                )
                db.execute(
                    "INSERT OR IGNORE INTO registrations_used SELECT name, ? FROM registrations",
                    (now,),
                )
                rows = db.execute("SELECT name, used FROM registrations_used ORDER BY name")
                return [(name, float(used)) for name, used in rows]

        return await self._run(read, writes=0)

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def probe(self) -> Write:
        """Store and delete a probe block of one page, in one transaction.

        A page, because a claim's row fits in a page the file already has and would pass on
        a full disk; a block needs new pages. The probe has a connection of its own that
        waits 50 ms for the write lock: it never queues behind requests waiting their 30 s,
        and a lock another process holds (a precompute committing) is BUSY, not a fault.
        """
        return await anyio.to_thread.run_sync(self._probe, limiter=self._probe_limiter)

    def _probe(self) -> Write:
        try:
            if self._prober is None:
                self._prober = self._connect(_PROBE_LOCK_TIMEOUT_S)
            db = self._prober
            with _transaction(db):
                row = (_PROBE_NAMESPACE, "readyz")
                db.execute(
                    "INSERT OR REPLACE INTO blocks VALUES (?, ?, zeroblob(?))", (*row, _PAGE_BYTES)
                )
                db.execute("DELETE FROM blocks WHERE namespace = ? AND key = ?", row)
            self._wrote(3 * _PAGE_BYTES)
        except sqlite3.Error as exc:
            fault = self._fault(exc)
            if isinstance(fault, StoreBusyError):
                return Write.BUSY
            raise fault from exc
        return Write.ACCEPTED

    async def aclose(self) -> None:
        checkpointer = self._checkpointer
        if checkpointer is not None:
            await anyio.to_thread.run_sync(checkpointer.join)
        await self._run(lambda db: db.close())
        if self._prober is not None:
            await anyio.to_thread.run_sync(self._prober.close, limiter=self._probe_limiter)


def _record(db: sqlite3.Connection, namespace: str) -> None:
    """Record the namespace (:data:`_RECORDS`), inside the caller's transaction."""
    db.execute(_RECORDS)
    db.execute("INSERT OR IGNORE INTO records VALUES (?)", (namespace,))


def _has_table(db: sqlite3.Connection, table: str) -> bool:
    """Whether the file holds a table made on first use (:data:`_DEFINITIONS`,
    :data:`_REGISTRATIONS`)."""
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return found is not None


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: committed when every statement succeeded, else rolled back.

    The error raised is the first one: SQLite rolls some errors back itself (a full disk),
    and a failed ROLLBACK after them would only hide what happened.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
