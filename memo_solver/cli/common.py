"""What every command module shares: the program's name and exit statuses, the errors that
end a command in one line, where a command's answer goes and the store it works on.

Below every other CLI module (it imports none of them), so that the command modules and
:mod:`memo_solver.cli.main`, which calls them, form no cycle.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from memo_solver.core.errors import UserError

if TYPE_CHECKING:
    from memo_solver.jobs.storage import Location

PROG: Final = "memo-solver"
EXIT_USAGE: Final = 2
EXIT_TEMPFAIL: Final = 75
"""sysexits.h's EX_TEMPFAIL: the store failed (unreachable, refused the write, full, or
locked past the timeout); the same command may work later."""
EXIT_UNAVAILABLE: Final = 69
"""sysexits.h's EX_UNAVAILABLE: what the command needs is not there: no live worker for
``precompute --wait``, or a port ``serve`` cannot listen on (another server holds it)."""
EXIT_PIPE: Final = 141
"""Standard output's reader left before the answer was written (``| head``): 128 + SIGPIPE,
what a shell reports for a tool the signal ends; quiet, like such a tool."""
STORE_ENV: Final = "MEMO_SOLVER_STORE"
REDIS_ENV: Final = "MEMO_SOLVER_REDIS_URL"
EXPORT_TABLE_MB_ENV: Final = "MEMO_SOLVER_EXPORT_TABLE_MB"
DEFAULT_EXPORT_TABLE_MB: Final = 16384
"""``export-table``'s memory limit, MiB: sized for a 24 GiB machine, so ``maxi-yatzy``'s
table (5 GiB while written) goes through and ``maxi-yatzy-saved``'s (109 GiB) is refused
before anything is solved."""


EXIT_INTERRUPTED: Final = 130
"""Ctrl-C, as a shell reports a command killed by SIGINT."""


def leave_interrupted() -> NoReturn:
    """End the process at once after Ctrl-C, its solve stopped and its store closed: the
    interpreter's own teardown (a full collection over every object the compiled code's
    imports made) took another second, and a person who pressed Ctrl-C waits for none."""
    print(f"{PROG}: interrupted (the store keeps every finished block)", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


class UsageError(UserError):
    """Bad input a command finds itself (an option out of range, a file it cannot use)."""

    field = "arguments"


@dataclass(frozen=True)
class Output:
    """Where a command's answer goes: words for a person, or JSON with ``--json``."""

    json: bool = False

    def emit(self, payload: object, text: str) -> None:
        print(json.dumps(payload) if self.json else text)


def store_location(args: argparse.Namespace) -> Location:
    """The store the options name, for every command alike: a Redis URL, or an SQLite file.

    The command line wins over the environment (``--store`` over ``--redis``); in the
    environment a Redis URL wins over a store file; else the file in the cache folder.
    """
    url = args.redis or os.environ.get(REDIS_ENV)
    if url and not args.store:
        from memo_solver.stores.redis_client import CLUSTER_ENV, with_cluster_mode

        mode = getattr(args, "redis_cluster", None) or os.environ.get(CLUSTER_ENV)
        return with_cluster_mode(str(url), mode)
    return Path(args.store or os.environ.get(STORE_ENV) or default_store_path())


def default_store_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memo-solver")) / "store.sqlite3"


def store_name(args: argparse.Namespace) -> str:
    """The store's location as errors and ``serve`` print it (a Redis password left out)."""
    from memo_solver.stores.redis_client import redacted

    location = store_location(args)
    return redacted(location) if isinstance(location, str) else str(location)
