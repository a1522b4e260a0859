"""``python -m worker`` and ``memo-solver worker``: start a worker, or check one is alive.

A Redis that cannot be reached is not a crash: the worker logs one line naming the URL,
asks Redis every second, and serves again at its first answer. The lines come with a
growing pause (1 s doubling to 30 s), which is also the wait before the next try when
Redis answers but refuses (an error reply), so a worker that keeps failing neither
floods its log nor loops, while one whose Redis is back never idles; the pause starts
again at 1 s once Redis answers. A container restart loop never starts.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence

import anyio
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
    TimeoutError as RedisTimeoutError,
)

from memo_solver.cli.worker_options import settings_from
from memo_solver.core.store import StoreUnavailableError
from memo_solver.jobs.queue import JobQueue
from memo_solver.jobs.settings import WorkerSettings
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.redis_client import FAULTS, redacted, store_error

log = logging.getLogger("worker")
_PROBE_S = 1.0


class Backoff:
    """The pause before the next try: doubling from ``first_s`` up to ``cap_s``, back to
    ``first_s`` once Redis has answered."""

    def __init__(self, first_s: float = 1.0, cap_s: float = 30.0) -> None:
        self.first_s, self.cap_s = first_s, cap_s
        self._next_s = first_s

    def next(self) -> float:
        pause = self._next_s
        self._next_s = min(pause * 2, self.cap_s)
        return pause

    def reset(self) -> None:
        self._next_s = self.first_s


async def wait_for_redis(url: str, longest_s: float) -> bool:
    """Whether Redis answered a PING (asked every second) within ``longest_s``."""
    with anyio.move_on_after(longest_s):
        while True:
            store = RedisStore(url)
            try:
                await store.ping()
                return True
            except StoreUnavailableError:
                pass
            finally:
                await store.aclose()
            await anyio.sleep(_PROBE_S)
    return False


def lost_connection(exc: BaseException | None) -> bool:
    """Redis could not be reached (or stopped answering), as opposed to an error reply."""
    while exc is not None:
        if isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError):
            return True
        exc = exc.__cause__
    return False


async def check(settings: WorkerSettings) -> int:
    """0 if this worker (or, without an id, any worker of this host) has a live heartbeat."""
    store = RedisStore(settings.redis_url)
    pattern = settings.check_pattern
    try:
        workers = await JobQueue(store).live_workers(pattern)
    except (StoreUnavailableError, *FAULTS) as exc:
        print(f"worker check: {worded(exc, store.description)}", file=sys.stderr)
        return 1
    finally:
        await store.aclose()
    if not workers:
        print(
            f"worker check: no live worker matching {pattern!r} at {store.description}",
            file=sys.stderr,
        )
        return 1
    print(f"worker check: {len(workers)} live ({', '.join(str(w['id']) for w in workers)})")
    return 0


def worded(exc: BaseException, where: str) -> str:
    """A store error says what went wrong at which Redis already; a raw Redis fault gets
    the same words (:func:`store_error`), so no line names the address twice."""
    return str(exc if isinstance(exc, StoreUnavailableError) else store_error(exc, where))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m worker``. The entry points (worker/__main__.py, memo_solver.cli.main) pin BLAS
    before importing this module: here it would come too late, numpy being loaded already."""
    return run(settings_from(argv))


def run(settings: WorkerSettings) -> int:
    """Check, or serve until stopped; ``memo-solver worker`` calls this with the settings
    it resolved from its own command line."""
    logging.basicConfig(
        level=logging.DEBUG if settings.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if settings.check:
        return anyio.run(check, settings)
    from memo_solver.jobs.worker import Worker

    backoff = Backoff()
    while True:
        started = time.monotonic()
        try:
            anyio.run(Worker(settings, JobQueue(RedisStore(settings.redis_url))).run)
            return 0
        except (StoreUnavailableError, *FAULTS) as exc:
            failure = exc
        except KeyboardInterrupt:
            return 130
        if time.monotonic() - started > backoff.cap_s:
            backoff.reset()  # it served a while: a new trouble, not more of the last one
        pause = backoff.next()
        what = worded(failure, redacted(settings.redis_url))
        try:
            if not lost_connection(failure):
                log.warning("%s; retrying in %.0f s", what, pause)
                time.sleep(pause)
                continue
            log.warning("%s; retrying in %.0f s, or as soon as Redis answers", what, pause)
            if anyio.run(wait_for_redis, settings.redis_url, pause):
                backoff.reset()
        except KeyboardInterrupt:
            return 130
