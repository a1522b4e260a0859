"""Dice of Doom on the command line: its side of ``advise`` and ``stats`` (a board as the
state, the player to move) and of ``play`` (against the book's perfect computer). The
work is :mod:`.side`'s (and the game against the computer :mod:`.play`'s), loaded when
one runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memo_solver.cli.command import FamilyCommands, Side
from memo_solver.cli.common import PROG, Output, UsageError
from memo_solver.cli.options import for_game

if TYPE_CHECKING:
    from memo_solver.cli.games.dice_of_doom.side import PositionOptions
    from memo_solver.jobs.storage import Location


def _position_options(sub: argparse.ArgumentParser, game: str) -> None:
    """A position: the board is the command's state argument."""
    for_game(sub, game, "--to-move", default="a", help="the player to move, a or b")
    for_game(
        sub,
        game,
        "--captured",
        type=int,
        default=0,
        help="dice captured so far this turn (default: 0, the turn starts)",
    )
    for_game(
        sub,
        game,
        "--limit",
        type=int,
        default=2_000_000,
        help="most positions one solve may hold (default: 2,000,000)",
    )


def _position(args: argparse.Namespace) -> PositionOptions:
    from memo_solver.cli.games.dice_of_doom import side

    if args.state in ("-", "start"):
        raise UsageError(
            f"give the board, e.g. {PROG} {args.command} --game dice-of-doom "
            "'a-3 b-3 / a-2 b-2' --to-move a"
        )
    return side.PositionOptions(args.state, args.to_move, args.captured, args.limit)


def _advise(args: argparse.Namespace, location: Location, out: Output) -> int:
    import anyio

    from memo_solver.cli.games.dice_of_doom import side

    return anyio.run(side.advise_command, _position(args), location, out)


def _stats(args: argparse.Namespace, _: Location, out: Output) -> int:
    import anyio

    from memo_solver.cli.games.dice_of_doom import side

    return anyio.run(side.stats_command, _position(args), out)


def _play_options(sub: argparse.ArgumentParser, game: str) -> None:
    for_game(sub, game, "--size", type=int, default=2, help="board size, 2 to 5")
    for_game(sub, game, "--board", help="the starting board (default: a random one)")
    for_game(sub, game, "--human", default="a", help="the player you are, a or b")
    for_game(sub, game, "--seed", type=int, help="seed of the random board (default: a fresh one)")
    for_game(
        sub,
        game,
        "--limit",
        type=int,
        default=2_000_000,
        help="most positions the computer's solve may hold",
    )


def _play(args: argparse.Namespace, _: Location, out: Output) -> int:
    from memo_solver.cli.games.dice_of_doom import side

    return side.play_command(side.PlayOptions.from_args(args), out)


BOARD = "dice-of-doom takes a board such as 'a-3 b-3 / a-2 b-2' as the state"
CLI = FamilyCommands(
    sides={
        "advise": Side(BOARD, _position_options, _advise),
        "stats": Side(BOARD, _position_options, _stats),
        "play": Side(
            "dice-of-doom: against the perfect computer, as in the book", _play_options, _play
        ),
    }
)
