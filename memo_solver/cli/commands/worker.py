"""``memo-solver worker``: a background worker's options (:mod:`memo_solver.cli.worker_options`,
which ``python -m worker`` reads too) and its settings from them; the worker runs after
the command line's error handlers (:class:`~memo_solver.cli.command.Detached`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from memo_solver.cli.command import Command, Detached
from memo_solver.cli.common import PROG, REDIS_ENV, UsageError
from memo_solver.cli.options import store_options
from memo_solver.cli.worker_options import DESCRIPTION, REDIS_HELP, add_worker_options


def _worker_options(sub: argparse.ArgumentParser) -> None:
    # --store is refused with a word on what to give instead, so the help leaves it out.
    store_options(sub, on_command=True, redis_help=REDIS_HELP, store_help=argparse.SUPPRESS)
    add_worker_options(sub)


def _settle(args: argparse.Namespace) -> Callable[[], int]:
    """A worker's settings on the options as every command resolves them: --redis and -v on
    either side of ``worker``, the command line over the environment; and the worker on them."""
    from memo_solver.cli.worker_options import settings_of
    from memo_solver.jobs.settings import SettingsError

    if args.store:
        raise UsageError(
            f"--store: a worker serves jobs from Redis only, not an SQLite file; give --redis "
            f"URL (or ${REDIS_ENV})"
        )
    if args.json:
        raise UsageError("--json: a worker prints no answer, only its log")
    try:
        settings = settings_of(args)
    except SettingsError as exc:
        raise UsageError(f"{exc} (see '{PROG} worker --help')") from None

    def work() -> int:
        from memo_solver.cli.worker import run

        return run(settings)

    return work


WORKER_EXAMPLES = """examples:
  memo-solver worker --redis redis://127.0.0.1:6379/0
  memo-solver --redis redis://127.0.0.1:6379/0 worker --concurrency 2
  memo-solver worker --redis redis://127.0.0.1:6379/0 --check   # exit 0 if one is alive
"""
WORKER = Command(
    "worker",
    "run a background worker on the shared Redis",
    _worker_options,
    Detached(_settle),
    description=DESCRIPTION,
    epilog=WORKER_EXAMPLES,
    shared_options=False,
)
