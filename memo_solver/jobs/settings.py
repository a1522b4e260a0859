"""One settings object for a worker, from the command line over the environment.

Every knob has an environment variable so a container needs no command line; the command
line wins where both are given.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from memo_solver.core.cache import DEFAULT_CACHE_MB, memo_bytes
from memo_solver.core.errors import UserError

ENV_REDIS_URL: Final = "MEMO_SOLVER_REDIS_URL"
ENV_WORKER_ID: Final = "MEMO_SOLVER_WORKER_ID"
ENV_CONCURRENCY: Final = "MEMO_SOLVER_WORKER_CONCURRENCY"
ENV_THREADS: Final = "MEMO_SOLVER_WORKER_THREADS"
ENV_LEASE_S: Final = "MEMO_SOLVER_LEASE_S"
ENV_JOB_TTL_S: Final = "MEMO_SOLVER_JOB_TTL_S"
DEFAULT_REDIS_URL: Final = "redis://127.0.0.1:6379/0"
DEFAULT_JOB_TTL_S: Final = 86_400.0
N = TypeVar("N", int, float)


@dataclass(frozen=True)
class WorkerSettings:
    redis_url: str = DEFAULT_REDIS_URL
    worker_id: str = ""
    """Unique per process: ``host:pid`` unless given; ``--check`` looks for this host's."""
    concurrency: int = 1
    """Jobs served at once (they share one engine per rule set)."""
    threads: int = 1
    """Threads each batch of blocks is split over: one by default, since workers scale by
    process; more where a process has cores to itself."""
    cache_bytes: int = DEFAULT_CACHE_MB << 20
    """The memo bound of each game's engine (``--cache-mb``, ``$MEMO_SOLVER_CACHE_MB``)."""
    lease_s: float = 10.0
    heartbeat_s: float = 2.0
    stale_job_s: float = 30.0
    """A job left unacknowledged this long by a silent worker is taken over: three leases,
    and never under five heartbeats (a live worker touches its jobs at every beat)."""
    job_ttl_s: float = DEFAULT_JOB_TTL_S
    """How long a finished or failed job's record is kept."""
    check: bool = False
    check_pattern: str = ""
    """The heartbeats ``--check`` looks for: the id given on the command line, else any
    worker of this host (``host:*``), whatever id the environment gives this one."""
    verbose: bool = False

    @property
    def heartbeat_ttl_s(self) -> float:
        return 3 * self.heartbeat_s


class SettingsError(UserError):
    """Options or environment a worker cannot run with; the message says which."""

    field = "settings"


def _given(option: N | None, parse: Callable[[str], N], environment: str) -> N:
    """The option where it was given, even as 0 (then refused as such, not silently
    replaced by the environment's value), else the environment's."""
    return parse(environment) if option is None else option


@dataclass(frozen=True)
class WorkerOptions:
    """What a command line gave a worker: None where it gave nothing, so that the
    environment decides (then the default)."""

    redis: str | None = None
    redis_cluster: str | None = None
    id: str | None = None
    concurrency: int | None = None
    threads: int | None = None
    cache_mb: int | None = None
    lease: float | None = None
    heartbeat: float = 2.0
    job_ttl: float | None = None
    check: bool = False
    verbose: bool = False


def resolve(options: WorkerOptions) -> WorkerSettings:
    """The settings from a command line's options (of either entry point), each over the
    environment.

    Raises SettingsError naming what is wrong.
    """
    env = os.environ
    try:
        concurrency = _given(options.concurrency, int, env.get(ENV_CONCURRENCY, "1"))
        threads = _given(options.threads, int, env.get(ENV_THREADS, "1"))
        lease_s = _given(options.lease, float, env.get(ENV_LEASE_S, "10"))
        job_ttl_s = _given(options.job_ttl, float, env.get(ENV_JOB_TTL_S, str(DEFAULT_JOB_TTL_S)))
    except ValueError as exc:
        raise SettingsError(f"bad number in the environment: {exc}") from None
    heartbeat_s = options.heartbeat
    # Here, not at the top: every command's parser reads this module, and redis-py costs
    # a process 65 ms to import, which only the worker needs.
    from memo_solver.stores.redis_client import CLUSTER_ENV, with_cluster_mode

    try:
        cache_bytes = memo_bytes(options.cache_mb)
        redis_url = with_cluster_mode(
            options.redis or env.get(ENV_REDIS_URL, DEFAULT_REDIS_URL),
            options.redis_cluster or env.get(CLUSTER_ENV),
        )
    except UserError as exc:  # a store location or a memo bound
        raise SettingsError(str(exc)) from None
    if concurrency < 1 or threads < 1 or lease_s <= 0 or heartbeat_s <= 0 or job_ttl_s <= 0:
        raise SettingsError("concurrency, threads, lease, heartbeat and job TTL must be positive")
    host = socket.gethostname()
    return WorkerSettings(
        redis_url=redis_url,
        worker_id=options.id or env.get(ENV_WORKER_ID) or f"{host}:{os.getpid()}",
        concurrency=concurrency,
        threads=threads,
        cache_bytes=cache_bytes,
        lease_s=lease_s,
        heartbeat_s=heartbeat_s,
        stale_job_s=max(5 * heartbeat_s, 3 * lease_s),
        job_ttl_s=job_ttl_s,
        check=options.check,
        check_pattern=options.id or f"{host}:*",
        verbose=options.verbose,
    )
