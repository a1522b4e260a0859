"""``python -m worker`` and ``memo-solver worker``: start a worker, or check one is alive.

An unreachable Redis is not a crash: the worker logs one line naming the URL and tries
again with a growing pause (1 s doubling to 30 s), so a container restart loop never
starts and the worker comes back by itself when Redis does.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence

import anyio
from redis.exceptions import RedisError

from memo_solver.jobs import live_workers
from memo_solver.redis_store import RedisStore, redacted
from memo_solver.runtime import keep_freed_memory
from memo_solver.store import StoreUnavailableError
from worker.settings import WorkerSettings, settings_from

log = logging.getLogger("worker")
_MAX_BACKOFF_S = 30.0


async def check(settings: WorkerSettings) -> int:
    """0 if this worker (or, without an id, any worker of this host) has a live heartbeat."""
    store = RedisStore(settings.redis_url)
    pattern = settings.check_pattern
    try:
        workers = await live_workers(store.redis, pattern)
    except Exception as exc:
        print(f"worker check: cannot reach Redis at {store.description}: {exc}", file=sys.stderr)
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m worker``. The entry points (worker/__main__.py, memo_solver.cli) pin BLAS
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
    keep_freed_memory()
    from worker.worker import Worker

    backoff = 1.0
    while True:
        started = time.monotonic()
        try:
            anyio.run(Worker(settings).run)
            return 0
        except StoreUnavailableError as exc:
            log.warning("%s; retrying in %.0f s", exc, backoff)
        except (RedisError, OSError) as exc:
            url = redacted(settings.redis_url)
            log.warning("Redis at %s failed: %s; retrying in %.0f s", url, exc, backoff)
        except KeyboardInterrupt:
            return 130
        if time.monotonic() - started > _MAX_BACKOFF_S:
            backoff = 1.0  # it served a while: a new outage, not more of the last one
        time.sleep(backoff)
        backoff = min(backoff * 2, _MAX_BACKOFF_S)
