"""The table of commands: every ``memo-solver`` command, registered once (its name, its
options, its handler) in the module of its group, listed here in the order ``--help``
shows them, then the commands the game families bring (:mod:`memo_solver.cli.games`).

The parser builds every command from this table and :mod:`memo_solver.cli.main` runs the
one named, so a new command is one registration in its group's module and one line here.
"""

from __future__ import annotations

from memo_solver.cli.command import Command
from memo_solver.cli.commands import analysis, ops, player, rules, serve, worker
from memo_solver.cli.games import own_commands

BUILT_IN: tuple[Command, ...] = (
    rules.RULES,
    player.ADVISE,
    player.VALUE,
    ops.PRECOMPUTE,
    player.PLAY,
    ops.STATUS,
    ops.PRUNE,
    ops.COMPILE,
    ops.EXPORT,
    ops.IMPORT,
    analysis.STATS,
    analysis.SIMULATE,
    analysis.REVIEW,
    analysis.EXPORT_TABLE,
    serve.SERVE,
    worker.WORKER,
)


def commands() -> dict[str, Command]:
    """Every command by name: the built-in ones, then the registered families' own."""
    return {command.name: command for command in (*BUILT_IN, *own_commands())}
