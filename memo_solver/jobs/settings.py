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

from memo_solver.core.errors import UserError

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
    check_pattern: str = ""
    """The heartbeats ``--check`` looks for: the id given on the command line, else any
    worker of this host (``host:*``), whatever id the environment gives this one."""
    verbose: bool = False

    @property
    def heartbeat_ttl_s(self) -> float:
        return 3 * self.heartbeat_s


DESCRIPTION: Final = (
    "Serve memo-solver background jobs (precompute a rule set, warm a state) from a shared\n"
    "Redis, cooperating with every other worker through block claims."
)
REDIS_HELP: Final = f"the Redis to serve (default: ${ENV_REDIS_URL}, else {DEFAULT_REDIS_URL})"


class SettingsError(UserError):
    """Options or environment a worker cannot run with; the message says which."""

    field = "settings"


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


def _given(option: N | None, parse: Callable[[str], N], environment: str) -> N:
    """The option where it was given, even as 0 (then refused as such, not silently
    replaced by the environment's value), else the environment's."""
    return parse(environment) if option is None else option


def settings_of(args: argparse.Namespace) -> WorkerSettings:
    """The settings from parsed options (of either entry point), each over the environment.

    Raises SettingsError naming what is wrong.
    """
    env = os.environ
    try:
        concurrency = _given(args.concurrency, int, env.get(ENV_CONCURRENCY, "1"))
        lease_s = _given(args.lease, float, env.get(ENV_LEASE_S, "10"))
        job_ttl_s = _given(args.job_ttl, float, env.get(ENV_JOB_TTL_S, str(DEFAULT_JOB_TTL_S)))
    except ValueError as exc:
        raise SettingsError(f"bad number in the environment: {exc}") from None
    if concurrency < 1 or lease_s <= 0 or args.heartbeat <= 0 or job_ttl_s <= 0:
        raise SettingsError("concurrency, lease, heartbeat and job TTL must be positive")
    host = socket.gethostname()
    return WorkerSettings(
        redis_url=args.redis or env.get(ENV_REDIS_URL, DEFAULT_REDIS_URL),
        worker_id=args.id or env.get(ENV_WORKER_ID) or f"{host}:{os.getpid()}",
        concurrency=concurrency,
        lease_s=lease_s,
        heartbeat_s=args.heartbeat,
        stale_job_s=max(5 * args.heartbeat, 3 * lease_s),
        job_ttl_s=job_ttl_s,
        check=args.check,
        check_pattern=args.id or f"{host}:*",
        verbose=args.verbose,
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
