"""The operator commands: ``precompute``, ``status``, ``prune``, ``compile``, ``export`` and
``import``, their options and handlers. They work on any game of the registry; the work
is :mod:`memo_solver.cli.ops`', :mod:`memo_solver.cli.prune`'s and
:mod:`memo_solver.cli.compiled`'s, loaded when one runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from memo_solver.cli.command import Command, on_store
from memo_solver.cli.common import Output, UsageError
from memo_solver.cli.options import game_options, need_table_options, rules_file_option
from memo_solver.core.cache import CACHE_MB_ENV, DEFAULT_CACHE_MB, memo_bytes

if TYPE_CHECKING:
    from memo_solver.core.store import Store
    from memo_solver.games.entry import GameEntry
    from memo_solver.jobs.queue import JobQueue
    from memo_solver.jobs.storage import Location

StoreWork = Callable[["Store", "JobQueue | None"], Awaitable[int]]


def _on_store_and_queue(location: Location, work: StoreWork) -> int:
    """Run ``work`` on the store at ``location``, open, and its job queue (Redis only)."""
    import anyio

    async def opened() -> int:
        from memo_solver.jobs.storage import open_store_and_queue

        store, queue = open_store_and_queue(location)
        async with store:
            return await work(store, queue)

    return anyio.run(opened)


def _table(args: argparse.Namespace) -> GameEntry:
    """The game the options name, or with ``--need`` its need table, with ``--risk`` its
    risk table."""
    from memo_solver.cli import engines, ops

    entry = engines.game(args)
    if args.need and args.risk is not None:
        raise UsageError("give --need or --risk, not both")
    if args.need:
        entry = ops.need_table(entry, args.need_cap, getattr(args, "max_table_mb", None))
    if args.risk is not None:
        from memo_solver.games.yahtzee import risk_entry_of

        entry = risk_entry_of(entry, args.risk)
    return entry


def _precompute_options(sub: argparse.ArgumentParser) -> None:
    game_options(sub)
    sub.add_argument(
        "--wait",
        action="store_true",
        help="with --redis: follow the job until it is done; with no live worker, say so and "
        "exit with status 69 (the job stays queued)",
    )
    sub.add_argument(
        "--wait-for-workers",
        action="store_true",
        help="with --wait: keep waiting when no worker is alive yet",
    )
    sub.add_argument(
        "--here", action="store_true", help="with --redis: solve in this process, not a job"
    )
    sub.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads solving each batch of blocks here (default: 1; workers take their own "
        "--threads)",
    )
    sub.add_argument(
        "--cache-mb",
        type=int,
        help=f"memo bound solving here, MiB (default: ${CACHE_MB_ENV}, else {DEFAULT_CACHE_MB})",
    )
    need_table_options(sub, "solve")
    sub.add_argument(
        "--max-table-mb",
        type=int,
        default=4096,
        help="with --need: refuse a table larger than this many MiB (the full yahtzee table "
        "at the default cap is 1,624 MiB; default: 4096)",
    )


def _precompute(args: argparse.Namespace, location: Location, out: Output) -> int:
    async def work(store: Store, queue: JobQueue | None) -> int:
        from memo_solver.cli import ops

        entry = _table(args)
        if args.threads < 1:
            raise UsageError(f"--threads must be 1 or more, got {args.threads}")
        options = ops.PrecomputeOptions(
            args.wait, args.wait_for_workers, args.here, args.threads, memo_bytes(args.cache_mb)
        )
        return await ops.precompute(entry, options, store, queue, out)

    return _on_store_and_queue(location, work)


PRECOMPUTE = Command(
    "precompute",
    "solve a whole rule set into the store (resumable); with --redis, queue it for the "
    "workers and print the job id",
    _precompute_options,
    on_store(_precompute),
)


def _status_options(sub: argparse.ArgumentParser) -> None:
    rules_file_option(sub, None)
    sub.add_argument(
        "--verify",
        action="store_true",
        help="also decode every stored block and count the damaged ones (reads them all)",
    )


def _status(args: argparse.Namespace, location: Location, out: Output) -> int:
    async def work(store: Store, queue: JobQueue | None) -> int:
        from memo_solver.cli import engines, ops

        also = None
        if args.rules_file is not None:
            from memo_solver.games.yahtzee import entry_for

            also = entry_for(engines.rules_of_file(args.rules_file))
        return await ops.status(args.verify, store, queue, location, out, also)

    return _on_store_and_queue(location, work)


STATUS = Command(
    "status",
    "what the store holds per rule set (with --redis: workers and jobs too)",
    _status_options,
    on_store(_status),
)


def _prune_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--dry-run", action="store_true", help="list what would go, with its blocks; delete nothing"
    )
    sub.add_argument(
        "--unused-for",
        type=float,
        metavar="DAYS",
        help="instead, remove the registered rule sets nobody asked about for DAYS days (with "
        "their blocks unless another name shares them); one registered before this was "
        "recorded counts as asked about at the first such prune (default: none: prune the "
        "namespaces no one can name)",
    )


def _prune(args: argparse.Namespace, location: Location, out: Output) -> int:
    async def work(store: Store, queue: JobQueue | None) -> int:
        from memo_solver.cli.prune import prune, prune_unused

        if args.unused_for is not None:
            return await prune_unused(args.unused_for, args.dry_run, store, queue, out)
        return await prune(args.dry_run, store, out)

    return _on_store_and_queue(location, work)


PRUNE_EXAMPLES = """examples:
  memo-solver prune --dry-run
  memo-solver --redis redis://127.0.0.1:6379/0 prune --dry-run --json
  memo-solver --redis redis://127.0.0.1:6379/0 prune
  memo-solver --redis redis://127.0.0.1:6379/0 prune --unused-for 90 --dry-run
"""
PRUNE = Command(
    "prune",
    "delete the store's namespaces that no built-in game and no stored rule-set "
    "definition names (blocks nobody can ask for, or of an older store format)",
    _prune_options,
    on_store(_prune),
    epilog=PRUNE_EXAMPLES,
)


def _compile(args: argparse.Namespace, out: Output) -> int:
    from memo_solver.cli.compiled import compile_command

    return compile_command(out)


COMPILE_EXAMPLES = """examples:
  memo-solver compile
  memo-solver compile --json
  MEMO_SOLVER_COMPILE_CACHE=/var/cache/memo-solver memo-solver compile

The cache folder is $MEMO_SOLVER_COMPILE_CACHE if set, else $NUMBA_CACHE_DIR, else the
user's cache folder (~/.cache/memo-solver/compiled on Linux). Machine code is kept per CPU
model: on another CPU the first process compiles again. A folder that cannot be written is
not an error: each process compiles in memory instead, with one warning.
"""
COMPILE = Command(
    "compile",
    "compile the solver's loops for this CPU into the compile cache (seconds, once per "
    "install and CPU), so that no later process pays it",
    lambda sub: None,
    _compile,
    epilog=COMPILE_EXAMPLES,
)


def _export_options(sub: argparse.ArgumentParser) -> None:
    game_options(sub)
    need_table_options(sub, "copy")
    sub.add_argument(
        "--to", required=True, help="a .msgpack file, an SQLite file or a redis:// URL"
    )


def _export(args: argparse.Namespace, location: Location, out: Output) -> int:
    async def work(store: Store, _: JobQueue | None) -> int:
        from memo_solver.cli import ops

        return await ops.transfer("export", _table(args), args.to, store, out)

    return _on_store_and_queue(location, work)


EXPORT = Command(
    "export",
    "copy a rule set's verified blocks from the store elsewhere",
    _export_options,
    on_store(_export),
)


def _import_options(sub: argparse.ArgumentParser) -> None:
    game_options(sub)
    need_table_options(sub, "copy")
    sub.add_argument(
        "--from",
        dest="source",
        required=True,
        help="a .msgpack file, an SQLite file or a redis:// URL",
    )


def _import(args: argparse.Namespace, location: Location, out: Output) -> int:
    async def work(store: Store, _: JobQueue | None) -> int:
        from memo_solver.cli import ops

        return await ops.transfer("import", _table(args), args.source, store, out)

    return _on_store_and_queue(location, work)


IMPORT = Command(
    "import",
    "copy a rule set's verified blocks into the store",
    _import_options,
    on_store(_import),
)
