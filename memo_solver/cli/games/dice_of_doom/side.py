"""The ``--game dice-of-doom`` side of ``advise``, ``stats`` and ``play``.

They parse, call and format: the rules live in :mod:`memo_solver.games.dice_of_doom.board`, the
solving in
:mod:`memo_solver.games.dice_of_doom.tree` (one position's DAG) and
:mod:`memo_solver.games.dice_of_doom.advice`
(answers from the shared memo).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from memo_solver.cli.common import Output
from memo_solver.cli.progress import PositionProgress, SolveProgress
from memo_solver.core.engine import Engine, open_engine
from memo_solver.games.dice_of_doom.advice import advise
from memo_solver.games.dice_of_doom.board import parse_board, player_index, player_name
from memo_solver.games.dice_of_doom.game import doom_game
from memo_solver.games.dice_of_doom.report import analysis_to_json, format_analysis
from memo_solver.games.dice_of_doom.sizes import SIZES, doom_name
from memo_solver.games.dice_of_doom.tree import DoomSolver, Position
from memo_solver.jobs.storage import open_store_and_queue

if TYPE_CHECKING:
    import argparse

    from memo_solver.jobs.storage import Location


@dataclass(frozen=True)
class PositionOptions:
    """A position as typed, checked when the command parses it."""

    board: str
    to_move: str = "a"
    captured: int = 0
    limit: int = 2_000_000
    """Most positions one solve may hold."""

    def position(self) -> Position:
        return Position(parse_board(self.board), player_index(self.to_move), self.captured)


@asynccontextmanager
async def memo_engine(location: Location, size: int) -> AsyncIterator[Engine | None]:
    """An engine on the store for this board size, when the shared memo holds that size."""
    if size not in SIZES:
        yield None
        return
    async with AsyncExitStack() as stack:
        progress = stack.enter_context(SolveProgress(doom_name(size)))
        store, _ = open_store_and_queue(location)
        await stack.enter_async_context(store)
        yield await stack.enter_async_context(
            open_engine(doom_game(size), store, on_progress=progress)
        )


def solver_of(limit: int, size: int, progress: PositionProgress) -> DoomSolver:
    """A position solver at the command's ``--limit`` that shows a long solve's progress."""
    solver = DoomSolver(size, limit)
    solver.progress = progress
    return solver


async def advise_command(options: PositionOptions, location: Location, out: Output) -> int:
    position = options.position()
    with PositionProgress(options.limit) as progress:
        solver = solver_of(options.limit, position.board.size, progress)
        async with memo_engine(location, position.board.size) as engine:
            advice = await advise(position, engine, solver, anyio.CapacityLimiter(1))
    payload = {**analysis_to_json(advice.analysis), "source": advice.source}
    out.emit(payload, f"{format_analysis(advice.analysis)}\n({_SOURCES[advice.source]})")
    return 0


_SOURCES = {
    "memo": "from the shared memo",
    "solved": "solved here",
    "computed": "too many positions to solve alone: computed on the shared memo, kept there",
}


async def stats_command(options: PositionOptions, out: Output) -> int:
    position = options.position()
    with PositionProgress(options.limit) as progress:
        solver = solver_of(options.limit, position.board.size, progress)
        analysis = await anyio.to_thread.run_sync(solver.analyse, position)
    out.emit(analysis_to_json(analysis), format_analysis(analysis))
    return 0


@dataclass(frozen=True)
class PlayOptions:
    size: int = 2
    """The random board's size."""
    board: str | None = None
    """The starting board; None: a random one."""
    human: str = "a"
    seed: int | None = None
    """The random board's seed; None: a fresh one."""
    limit: int = 2_000_000

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PlayOptions:
        return cls(args.size, args.board, args.human, args.seed, args.limit)


def play_command(options: PlayOptions, out: Output) -> int:
    """A game against the book's perfect computer; with --json, the result as JSON last."""
    from memo_solver.cli.games.dice_of_doom.play import play, random_board

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    player_index(options.human)  # refused before a solve that may take a while
    if options.board:
        board = parse_board(options.board)
    else:
        board = random_board(options.size, random.Random(options.seed))
    # The whole game is solved before the first move: a board too large for --limit is
    # said at once, not after the player's first moves, and every move after is instant.
    with PositionProgress(options.limit) as progress:
        solver = solver_of(options.limit, board.size, progress)
        solver.value(Position(board, player_index("a")))
    solver.progress = None
    winners = play(board, options.human, sys.stdin.readline, write, solver=solver)
    if out.json:
        names = None if winners is None else [player_name(w) for w in winners]
        print(json.dumps({"finished": winners is not None, "winners": names}))
    return 0
