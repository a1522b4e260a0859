"""One settings object for a worker, from the command line over the environment.

Every knob has an environment variable so a container needs no command line; the command
line wins where both are given.
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

ENV_REDIS_URL: Final = "MEMO_SOLVER_REDIS_URL"
ENV_WORKER_ID: Final = "MEMO_SOLVER_WORKER_ID"
ENV_CONCURRENCY: Final = "MEMO_SOLVER_WORKER_CONCURRENCY"
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
    lease_s: float = 10.0
    heartbeat_s: float = 2.0
    stale_job_s: float = 30.0
    """A job left unacknowledged this long by a silent worker is taken over: three leases,
    and never under five heartbeats (a live worker touches its jobs at every beat)."""
    job_ttl_s: float = DEFAULT_JOB_TTL_S
    """How long a finished or failed job's record is kept."""
    check: bool = False
    verbose: bool = False

    @property
    def heartbeat_ttl_s(self) -> float:
        return 3 * self.heartbeat_s


def build_parser(prog: str = "python -m worker") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve memo-solver background jobs (precompute a rule set, warm a state) "
        "from a shared Redis, cooperating with every other worker through block claims.",
        epilog="examples:\n"
        "  python -m worker --redis redis://127.0.0.1:6379/0\n"
        "  MEMO_SOLVER_REDIS_URL=redis://redis:6379/0 python -m worker --concurrency 2\n"
        "  python -m worker --check   # exit 0 if this host's worker is alive (health check)\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--redis", help=f"Redis URL (default: ${ENV_REDIS_URL} or local)")
    parser.add_argument("--id", help=f"worker id (default: ${ENV_WORKER_ID} or host:pid)")
    parser.add_argument("--concurrency", type=int, help=f"jobs at once (${ENV_CONCURRENCY}; 1)")
    parser.add_argument("--lease", type=float, help=f"claim lease, seconds (${ENV_LEASE_S}; 10)")
    parser.add_argument("--heartbeat", type=float, default=2.0, help="seconds between beats")
    parser.add_argument(
        "--job-ttl",
        type=float,
        help=f"seconds a finished or failed job's record is kept (${ENV_JOB_TTL_S}; "
        f"{DEFAULT_JOB_TTL_S:.0f}, a day)",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 0 if a worker of this host is alive, else 1"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs")
    return parser


def _given(option: N | None, parse: Callable[[str], N], environment: str) -> N:
    """The option where it was given, even as 0 (then refused as such, not silently
    replaced by the environment's value), else the environment's."""
    return parse(environment) if option is None else option


def settings_from(
    argv: Sequence[str] | None = None, prog: str = "python -m worker"
) -> WorkerSettings:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    env = os.environ
    try:
        concurrency = _given(args.concurrency, int, env.get(ENV_CONCURRENCY, "1"))
        lease_s = _given(args.lease, float, env.get(ENV_LEASE_S, "10"))
        job_ttl_s = _given(args.job_ttl, float, env.get(ENV_JOB_TTL_S, str(DEFAULT_JOB_TTL_S)))
    except ValueError as exc:
        parser.error(f"bad number in the environment: {exc}")
    if concurrency < 1 or lease_s <= 0 or args.heartbeat <= 0 or job_ttl_s <= 0:
        parser.error("concurrency, lease, heartbeat and job TTL must be positive")
    return WorkerSettings(
        redis_url=args.redis or env.get(ENV_REDIS_URL, DEFAULT_REDIS_URL),
        worker_id=args.id or env.get(ENV_WORKER_ID) or f"{socket.gethostname()}:{os.getpid()}",
        concurrency=concurrency,
        lease_s=lease_s,
        heartbeat_s=args.heartbeat,
        stale_job_s=max(5 * args.heartbeat, 3 * lease_s),
        job_ttl_s=job_ttl_s,
        check=args.check,
        verbose=args.verbose,
    )
