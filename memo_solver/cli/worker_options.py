"""A worker's command line, for ``python -m worker`` and ``memo-solver worker`` alike.

Light (argparse and the settings only), so that ``memo-solver --help`` stays instant; the
worker itself lives in :mod:`memo_solver.cli.worker` and :mod:`memo_solver.jobs.worker`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Final

from memo_solver.core.cache import CACHE_MB_ENV, DEFAULT_CACHE_MB
from memo_solver.jobs.settings import (
    DEFAULT_JOB_TTL_S,
    DEFAULT_REDIS_URL,
    ENV_CONCURRENCY,
    ENV_JOB_TTL_S,
    ENV_LEASE_S,
    ENV_REDIS_URL,
    ENV_THREADS,
    ENV_WORKER_ID,
    SettingsError,
    WorkerOptions,
    WorkerSettings,
    resolve,
)

DESCRIPTION: Final = (
    "Serve memo-solver background jobs (precompute a rule set, warm a state) from a shared\n"
    "Redis, cooperating with every other worker through block claims."
)
REDIS_HELP: Final = f"the Redis to serve (default: ${ENV_REDIS_URL}, else {DEFAULT_REDIS_URL})"


def build_parser(prog: str = "python -m worker") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog="examples:\n"
        "  python -m worker --redis redis://127.0.0.1:6379/0\n"
        "  MEMO_SOLVER_REDIS_URL=redis://redis:6379/0 python -m worker --concurrency 2\n"
        "  python -m worker --check   # exit 0 if this host's worker is alive (health check)\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--redis", metavar="URL", help=REDIS_HELP)
    parser.add_argument(
        "--redis-cluster",
        choices=("auto", "yes", "no"),
        help="whether --redis is a Redis Cluster (default: $MEMO_SOLVER_REDIS_CLUSTER, else "
        "auto: ask the server)",
    )
    add_worker_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs")
    return parser


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The options only a worker has. ``--redis`` and ``-v`` are each entry point's own:
    ``memo-solver`` takes them before its command as well as after it."""
    parser.add_argument("--id", help=f"worker id (default: ${ENV_WORKER_ID}, else host:pid)")
    parser.add_argument(
        "--concurrency", type=int, help=f"jobs at once (default: ${ENV_CONCURRENCY}, else 1)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        help=f"threads solving each batch of blocks (default: ${ENV_THREADS}, else 1: "
        "workers scale by process)",
    )
    parser.add_argument(
        "--cache-mb",
        type=int,
        help=f"memo bound of each game's engine, MiB (default: ${CACHE_MB_ENV}, else "
        f"{DEFAULT_CACHE_MB})",
    )
    parser.add_argument(
        "--lease", type=float, help=f"claim lease, seconds (default: ${ENV_LEASE_S}, else 10)"
    )
    parser.add_argument(
        "--heartbeat", type=float, default=2.0, help="seconds between beats (default: 2.0)"
    )
    parser.add_argument(
        "--job-ttl",
        type=float,
        help=f"seconds a finished or failed job's record is kept (default: ${ENV_JOB_TTL_S}, "
        f"else {DEFAULT_JOB_TTL_S:.0f}, a day)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 0 if a worker of this host (or the one --id names) is alive, else 1",
    )


def settings_of(args: argparse.Namespace) -> WorkerSettings:
    """The settings from parsed options (of either entry point), each over the environment.

    Raises SettingsError naming what is wrong.
    """
    return resolve(
        WorkerOptions(
            redis=args.redis,
            redis_cluster=getattr(args, "redis_cluster", None),
            id=args.id,
            concurrency=args.concurrency,
            threads=args.threads,
            cache_mb=args.cache_mb,
            lease=args.lease,
            heartbeat=args.heartbeat,
            job_ttl=args.job_ttl,
            check=args.check,
            verbose=args.verbose,
        )
    )


def settings_from(
    argv: Sequence[str] | None = None, prog: str = "python -m worker"
) -> WorkerSettings:
    """``python -m worker``'s settings: its command line, then the environment."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        return settings_of(args)
    except SettingsError as exc:
        parser.error(str(exc))
