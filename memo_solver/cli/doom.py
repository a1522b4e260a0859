"""The ``--game dice-of-doom`` side of ``advise``, ``stats`` and ``play``.

They parse, call and format: the rules live in :mod:`memo_solver.games.dice_of_doom.board`, the
solving in
:mod:`memo_solver.games.dice_of_doom.tree` (one position's DAG) and
:mod:`memo_solver.games.dice_of_doom.advice`
(answers from the shared memo).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio

from memo_solver.cli.main import emit, open_store
from memo_solver.cli.progress import PositionProgress, SolveProgress
from memo_solver.core.engine import Engine, open_engine
from memo_solver.games.dice_of_doom.advice import advise
from memo_solver.games.dice_of_doom.board import parse_board, player_index, player_name
from memo_solver.games.dice_of_doom.game import SIZES, doom_game, doom_name
from memo_solver.games.dice_of_doom.report import analysis_to_json, format_analysis
from memo_solver.games.dice_of_doom.tree import DoomSolver, Position


def position_of(args: argparse.Namespace) -> Position:
    board = parse_board(args.board)
    return Position(board, player_index(args.to_move), args.captured)


@asynccontextmanager
async def memo_engine(args: argparse.Namespace, size: int) -> AsyncIterator[Engine | None]:
    """An engine on the store for this board size, when the shared memo holds that size."""
    if size not in SIZES:
        yield None
        return
    async with AsyncExitStack() as stack:
        progress = stack.enter_context(SolveProgress(doom_name(size)))
        store = await stack.enter_async_context(open_store(args))
        yield await stack.enter_async_context(
            open_engine(doom_game(size), store, on_progress=progress)
        )


def solver_of(args: argparse.Namespace, size: int, progress: PositionProgress) -> DoomSolver:
    """A position solver at the command's ``--limit`` that shows a long solve's progress."""
    solver = DoomSolver(size, args.limit)
    solver.progress = progress
    return solver


async def advise_command(args: argparse.Namespace) -> int:
    position = position_of(args)
    with PositionProgress(args.limit) as progress:
        solver = solver_of(args, position.board.size, progress)
        async with memo_engine(args, position.board.size) as engine:
            advice = await advise(position, engine, solver, anyio.CapacityLimiter(1))
    payload = {**analysis_to_json(advice.analysis), "source": advice.source}
    emit(args, payload, f"{format_analysis(advice.analysis)}\n({_SOURCES[advice.source]})")
    return 0


_SOURCES = {
    "memo": "from the shared memo",
    "solved": "solved here",
    "computed": "too many positions to solve alone: computed on the shared memo, kept there",
}


async def stats_command(args: argparse.Namespace) -> int:
    position = position_of(args)
    with PositionProgress(args.limit) as progress:
        solver = solver_of(args, position.board.size, progress)
        analysis = await anyio.to_thread.run_sync(solver.analyse, position)
    emit(args, analysis_to_json(analysis), format_analysis(analysis))
    return 0


def play_command(args: argparse.Namespace) -> int:
    """A game against the book's perfect computer; with --json, the result as JSON last."""
    from memo_solver.cli.doom_play import play, random_board

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    player_index(args.human)  # refused before a solve that may take a while
    if args.board:
        board = parse_board(args.board)
    else:
        board = random_board(args.size, random.Random(args.seed))
    # The whole game is solved before the first move: a board too large for --limit is
    # said at once, not after the player's first moves, and every move after is instant.
    with PositionProgress(args.limit) as progress:
        solver = solver_of(args, board.size, progress)
        solver.value(Position(board, player_index("a")))
    solver.progress = None
    winners = play(board, args.human, sys.stdin.readline, write, solver=solver)
    if args.json:
        names = None if winners is None else [player_name(w) for w in winners]
        print(json.dumps({"finished": winners is not None, "winners": names}))
    return 0
