"""A game of Dice of Doom against the perfect computer, as the book's ``play-vs-computer``.

The text follows the book's transcript: every position is shown as ``current player = a``
and the board; the human picks a move from the book's numbered menu (``1. end turn``,
``2. 0 -> 2``: end of turn first, numbered from 1 like the book's ``handle-human``); the
computer plays the first best move, the one the book's AI plays, and says which (the book
shows only the boards, which leaves the reader to work the move out). Input and output
are injected, so a test scripts a game line by line and the CLI passes the terminal.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from memo_solver.games.dice_of_doom.board import (
    MAX_DICE,
    PLAYER_NAMES,
    Board,
    check_size,
    draw_board,
    player_index,
    player_name,
    winners,
)
from memo_solver.games.dice_of_doom.report import move_text
from memo_solver.games.dice_of_doom.tree import (
    DoomSolver,
    Move,
    Position,
    legal_moves,
    play_move,
)

QUIT_WORDS = ("q", "quit")
"""What a player types to stop the game."""


def random_board(size: int, rng: random.Random) -> Board:
    """A board as the book's ``gen-board`` draws one: each hex a random owner and 1 to 3 dice."""
    check_size(size)
    hexes = size * size
    owners = tuple(rng.randrange(len(PLAYER_NAMES)) for _ in range(hexes))
    dice = tuple(rng.randint(1, MAX_DICE) for _ in range(hexes))
    return Board(size, owners, dice)


def play(
    start: int | Board,
    human: str,
    read_line: Callable[[], str],
    write: Callable[[str], None],
    *,
    first: str = "a",
    rng: random.Random | None = None,
    solver: DoomSolver | None = None,
) -> tuple[int, ...] | None:
    """Play one game, the human as ``human`` (``a`` or ``b``), the computer as the other.

    ``start`` is a board, or a size for a random board drawn with ``rng``. ``read_line``
    returns one line of input, ``""`` at the end of input (as ``file.readline`` does);
    ``write`` prints text. Returns the winners, or None when the human quit (``q``) or the
    input ran out. The computer's moves come from ``solver`` (by default a new one at the
    default position limit), which solves on the computer's first move, unless it was
    asked about the start already, and keeps it for the rest of the game; a board too
    large for its limit raises :class:`~memo_solver.games.dice_of_doom.tree.DoomLimitError` then.
    """
    board = start if isinstance(start, Board) else random_board(start, rng or random.Random())
    you = player_index(human)
    position = Position(board, player_index(first))
    solver = solver or DoomSolver(board.size)
    while True:
        write(f"current player = {player_name(position.player)}\n{draw_board(position.board)}\n")
        moves = legal_moves(position)
        if not moves:
            return _announce(position.board, write)
        if position.player == you:
            number = _ask(moves, read_line, write)
            if number is None:
                write("The game stopped.\n")
                return None
            choice = moves[number]
        else:
            choice = solver.book_move(position)
            write(f"computer ({player_name(position.player)}): {move_text(choice)}\n")
        position = play_move(position, choice)


def _ask(
    moves: tuple[Move, ...], read_line: Callable[[], str], write: Callable[[str], None]
) -> int | None:
    """The index of the human's move in ``moves``; None when they quit or input ends (a
    move cannot say that: None is ending the turn)."""
    menu = "".join(f"{number}. {move_text(move)}\n" for number, move in enumerate(moves, 1))
    write(f"choose your move:\n{menu}")
    while True:
        line = read_line()
        if not line:
            return None
        answer = line.strip().lower()
        if answer in QUIT_WORDS:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(moves):
            return int(answer) - 1
        write(f"please type a number from 1 to {len(moves)} (or q to quit):\n")


def _announce(board: Board, write: Callable[[str], None]) -> tuple[int, ...]:
    """The book's closing line, and the winners."""
    won = winners(board)
    if len(won) > 1:
        write(f"The game is a tie between {' and '.join(map(player_name, won))}\n")
    else:
        write(f"The winner is {player_name(won[0])}\n")
    return won
