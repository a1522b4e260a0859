"""What registers a command: its name, its options and its handler, in one record, so that
the parser builds every command from the table (:mod:`memo_solver.cli.commands`) and
:mod:`memo_solver.cli.main` runs the one the command line names, with no list of names.

Light on purpose (argparse only; named tuples, which cost a tenth of a frozen dataclass to
define): every ``--help`` reads every registration. A handler imports what it needs when
it runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from memo_solver.cli.common import Output, store_location

if TYPE_CHECKING:
    from memo_solver.jobs.storage import Location

Options = Callable[[argparse.ArgumentParser], None]
"""Adds a command's own options to its parser."""
Run = Callable[[argparse.Namespace, Output], int]
"""A command's handler: the parsed options and where the answer goes, to an exit status."""
StoreRun = Callable[[argparse.Namespace, "Location", Output], int]
"""A handler on the store the options name."""


class Detached(NamedTuple):
    """A handler whose work runs after :func:`memo_solver.cli.main.main`'s error handlers (a
    worker: a crash leaves its traceback in the worker's log, and the worker sets up its
    own logging): ``settle`` reads the options under the handlers (bad ones are one line and
    exit 2) and returns the work."""

    settle: Callable[[argparse.Namespace], Callable[[], int]]


class Command(NamedTuple):
    """One ``memo-solver`` command, registered once."""

    name: str
    help: str
    """One line in the command list, and the command's own description unless it has one."""
    options: Options
    run: Run | Detached
    description: str | None = None
    epilog: str | None = None
    shared_options: bool = True
    """Whether the command takes ``--store``, ``--redis``, ``-v`` and ``--json`` after its
    name too (the worker takes its own)."""


def on_store(run: StoreRun) -> Run:
    """A handler on the store the options name, found before the command does anything
    else, so that a bad location is refused first, whatever else is wrong."""
    return lambda args, out: run(args, store_location(args), out)


class Side(NamedTuple):
    """A family's side of a command every family may play (``advise``, ``stats``, ``play``):
    what ``--game``'s help says of it, its options (each added with
    :func:`memo_solver.cli.options.for_game`, so refused with another game) and its handler."""

    note: str
    options: Callable[[argparse.ArgumentParser, str], None]
    """Adds the side's options to the command's parser, for the family it is given."""
    run: StoreRun


class FamilyCommands(NamedTuple):
    """What a game family brings to the command line: commands of its own, and its sides
    of the shared commands by their names."""

    commands: tuple[Command, ...] = ()
    sides: Mapping[str, Side] = MappingProxyType({})
