"""Dice of Doom in the registry: one game per board size the shared memo holds.

Light at import (see :mod:`memo_solver.games.entry`): the game's tables and the board
parser are loaded when an entry is built.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from memo_solver.games.dice_of_doom.sizes import SIZES, doom_name
from memo_solver.games.entry import GameEntry, GameFamily, Parameter

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.core.game import Block
    from memo_solver.games.dice_of_doom.board import Board


def entries() -> list[GameEntry]:
    return [_entry(size) for size in SIZES]


def _entry(size: int) -> GameEntry:
    from memo_solver.games.dice_of_doom.board import (
        format_board,
        parse_board,
        player_index,
    )
    from memo_solver.games.dice_of_doom.game import doom_game

    game = doom_game(size)

    def position(text: str) -> tuple[Board, int]:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"a position is JSON {{'board': ..., 'to_move': ...}}: {exc}"
            ) from None
        if not isinstance(raw, dict):
            raise ValueError("a position is a JSON object with 'board' and 'to_move'")
        board = parse_board(str(raw.get("board", "")), size)
        return board, player_index(str(raw.get("to_move", "")))

    def canonical(text: str) -> str:
        board, player = position(text)
        return json.dumps({"board": format_board(board), "to_move": "ab"[player]}, sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        board, player = position(text)
        key, _ = game.locate(board.owners, board.dice, player)
        await engine.block(key)

    return GameEntry(
        game=game,
        description=f"Dice of Doom (Land of Lisp, version 1) on the {size} x {size} board: "
        f"all {game.turn_starts():,} turn starts",
        summarize_root=_outcomes,
        canonical_state=canonical,
        warm=warm,
    )


def _outcomes(root: Block) -> tuple[str, dict[str, float]]:
    """Wins, ties and losses of the player to move over every turn start, and the expected
    share the root holds first, where a tie counts half (which alone reads like a win rate)."""
    expected, won, tied = (float(share) for share in root)
    lost = 1.0 - won - tied
    return (
        f"of all turn starts the player to move wins {won:.10f}, ties {tied:.10f} and loses "
        f"{lost:.10f} (expected share, ties counting half: {expected:.10f})",
        {"value": expected, "won": won, "tied": tied, "lost": lost},
    )


FAMILY = GameFamily(
    name="dice-of-doom",
    parameter=Parameter(
        "--size", "board size", default=3, game_name=doom_name, type=int, choices=SIZES
    ),
    entries=entries,
)
