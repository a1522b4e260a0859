"""Advice for a Dice of Doom position: from the shared memo when it holds the answer.

The turn being played is the per-turn local memo: its chains of attacks are expanded here,
and each way of ending the turn lands on a turn start of the other player, whose value a
precompute (or an earlier lazy solve) left in the store. When every one of those turn
starts is stored, the answer costs one small expansion and one store round trip. When some
are not, the position is solved on its own memoised DAG
(:mod:`memo_solver.games.dice_of_doom.tree`),
which needs nothing from the store and is bounded by its position limit; the answer says
which way it came.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import anyio
import anyio.to_thread

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.dice_of_doom.board import attack, attacks, reinforce, winners
from memo_solver.games.dice_of_doom.game import doom_game
from memo_solver.games.dice_of_doom.sizes import SIZES
from memo_solver.games.dice_of_doom.tree import (
    Analysis,
    DoomLimitError,
    DoomSolver,
    MoveValue,
    Position,
)

Source = Literal["memo", "solved", "computed"]
Fetch = Callable[[Sequence[str]], Awaitable[Mapping[str, Block]]]
"""Blocks by key: those the memo holds, or all of them, computing what is missing."""


@dataclass(frozen=True)
class DoomAdvice:
    analysis: Analysis
    source: Source
    """``memo``: read from the shared memo; ``solved``: solved here on the position's DAG;
    ``computed``: too large for that, so computed on the shared memo, where it stays."""


class _Turn:
    """The rest of the current turn: every position the mover can reach by attacking."""

    def __init__(self, root: Position) -> None:
        self.moves: dict[Position, tuple[tuple[tuple[int, int] | None, Position], ...]] = {}
        todo = [root]
        while todo:
            position = todo.pop()
            if position in self.moves:
                continue
            options: list[tuple[tuple[int, int] | None, Position]] = []
            if position.attacked:
                board = reinforce(position.board, position.player, position.captured)
                options.append((None, Position(board, 1 - position.player)))
            for src, dst in attacks(position.board, position.player):
                captured = position.captured + position.board.dice[dst]
                after = Position(attack(position.board, src, dst), position.player, captured)
                options.append(((src, dst), after))
                todo.append(after)
            self.moves[position] = tuple(options)

    def turn_starts(self) -> set[Position]:
        """Where the turn can end: the other player's turn starts."""
        return {after for options in self.moves.values() for move, after in options if not move}

    def analysis(self, root: Position, start_values: Mapping[Position, Fraction]) -> Analysis:
        values: dict[Position, Fraction] = {}

        def rated(position: Position) -> tuple[MoveValue, ...]:
            out = []
            for move, after in self.moves[position]:
                value = 1 - start_values[after] if move is None else value_of(after)
                out.append(MoveValue(move, value, after))
            return tuple(out)

        def value_of(position: Position) -> Fraction:
            # Attacks lose dice, so this recursion is at most one level per hex deep.
            if position not in values:
                values[position] = max(rated(position), key=lambda m: m.value).value
            return values[position]

        moves = rated(root)
        if not moves:
            over = winners(root.board)
            value = Fraction(1, len(over)) if root.player in over else Fraction(0)
            return Analysis(root, value, (), None, over, None)
        best = max(moves, key=lambda m: m.value)  # the first best: the book's move
        return Analysis(root, best.value, moves, best, None, None)


async def from_memo(position: Position, fetch: Fetch) -> Analysis | None:
    """The analysis from turn-start blocks, or None when ``fetch`` lacks one the turn can
    reach (or the turn reaches none: a finished game is the solver's, with its figures).

    ``fetch`` is :meth:`Engine.stored` to read the memo, or :meth:`Engine.blocks` to fill
    it with what is missing first."""
    size = position.board.size
    if size not in SIZES:
        return None
    turn = _Turn(position)
    game = doom_game(size)
    where = {
        start: game.locate(start.board.owners, start.board.dice, start.player)
        for start in turn.turn_starts()
    }
    if not where:
        return None
    stored = await fetch(sorted({key for key, _ in where.values()}))
    if not all(key in stored for key, _ in where.values()):
        return None
    start_values = {
        start: Fraction(float(stored[key][index]))  # 0, 1/2 or 1: exact in binary
        for start, (key, index) in where.items()
    }
    return turn.analysis(position, start_values)


async def solve(
    position: Position,
    solver: DoomSolver,
    limiter: anyio.CapacityLimiter,
    compute: Fetch | None = None,
) -> DoomAdvice:
    """Solve on the position's own DAG in a worker thread (``limiter`` keeps the solver,
    which is not thread-safe, to one thread). A position too large for the solver's limit
    is computed on the shared memo when ``compute`` (:meth:`Engine.blocks`) is given: the
    whole 3 x 3 game is about a minute of CPU there, and it stays for everyone after."""
    try:
        return DoomAdvice(
            await anyio.to_thread.run_sync(solver.analyse, position, limiter=limiter), "solved"
        )
    except DoomLimitError:
        if compute is None or position.board.size not in SIZES:
            raise
    analysis = await from_memo(position, compute)
    assert analysis is not None, "the limit is only reached by a position with moves"
    return DoomAdvice(analysis, "computed")


async def advise(
    position: Position,
    engine: Engine | None,
    solver: DoomSolver,
    limiter: anyio.CapacityLimiter,
) -> DoomAdvice:
    """From the memo when it holds every turn start the turn can reach, else solved."""
    if engine is not None:
        analysis = await from_memo(position, engine.stored)
        if analysis is not None:
            return DoomAdvice(analysis, "memo")
    return await solve(position, solver, limiter, None if engine is None else engine.blocks)
