"""A game of Dice of Doom against the perfect computer, as the book's ``play-vs-computer``.

The text follows the book's transcript: every position is shown as ``current player = a``
and the board; the human picks a move from the book's numbered menu (``1. end turn``,
``2. 0 -> 2``: end of turn first, numbered from 1 like the book's ``handle-human``); the
computer plays the first best move, the one the book's AI plays, and says which (the book
shows only the boards, which leaves the reader to work the move out). The table keeps the
habits of the Yahtzee ``play`` table (:mod:`memo_solver.cli.table_words`): each move shows
its value and what it costs beside the best, a prompt says what may be typed, Enter plays
the best move, ``undo`` takes back the human's last move, ``help`` lists the words, and a
typo is answered with the closest word. Input and output are injected, so a test scripts a
game line by line and the CLI passes the terminal.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final, Literal

from memo_solver.cli.table_words import HELP, QUIT, UNDO, cost_mark, did_you_mean
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
    MoveValue,
    Position,
    legal_moves,
    play_move,
)

PROMPT: Final = "your move (a number, Enter = best, undo, help, q): "
HELP_TEXT: Final = """\
  Choose a move from the list; its value is your share of the game with best play after it
  (1 a win, 1/2 a tie, 0 a loss), and beside it 'best', 'tie' or what it costs:
    a number     that move, or its text ('0 -> 3', 'end turn')
    Enter        the best move, the one the book's computer would play
    undo         take back your last move and the computer's replies
    help         this list
    quit         stop the game (q and Ctrl-D do too)
"""
_Answer = int | Literal["undo"] | None
"""The index of the chosen move, ``undo``, or None when the human stops the game."""


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
    input ran out. Moves and their values come from ``solver`` (by default a new one at the
    default position limit), which solves on the first question, unless it was asked about
    the start already, and keeps it for the rest of the game; a board too large for its
    limit raises :class:`~memo_solver.games.dice_of_doom.tree.DoomLimitError` then.
    """
    board = start if isinstance(start, Board) else random_board(start, rng or random.Random())
    you = player_index(human)
    position = Position(board, player_index(first))
    solver = solver or DoomSolver(board.size)
    asked: list[Position] = []
    """Where the human chose before: what ``undo`` goes back to."""
    while True:
        write(f"current player = {player_name(position.player)}\n{draw_board(position.board)}\n")
        if not legal_moves(position):
            return _announce(position.board, write)
        if position.player != you:
            choice = solver.book_move(position)
            write(f"computer ({player_name(position.player)}): {move_text(choice)}\n")
            position = play_move(position, choice)
            continue
        moves, best = solver.analyse_moves(position)
        assert best is not None, "a position with legal moves has a best one"
        answer = _ask(moves, best, bool(asked), read_line, write)
        if answer is None:
            write("The game stopped.\n")
            return None
        if answer == "undo":
            position = asked.pop()
            write(f"undone: back to your move {len(asked) + 1}\n")
            continue
        asked.append(position)
        position = play_move(position, moves[answer].move)


def _menu(moves: Sequence[MoveValue], best: MoveValue) -> str:
    """The book's numbered menu, each move with its value and its cost beside the best."""
    lines = []
    for number, move in enumerate(moves, 1):
        mark = cost_mark(move is best, move.value == best.value, str(best.value - move.value))
        text = f"{number}. {move_text(move.move)}"
        lines.append(f"{text:<12} value {move.value!s:<4} {mark}\n")
    return "".join(lines)


def _ask(
    moves: Sequence[MoveValue],
    best: MoveValue,
    can_undo: bool,
    read_line: Callable[[], str],
    write: Callable[[str], None],
) -> _Answer:
    """Ask until the human names a move, asks to undo one, or stops the game."""
    texts = [move_text(move.move) for move in moves]
    write(f"choose your move:\n{_menu(moves, best)}")
    while True:
        write(PROMPT)
        line = read_line()
        if not line:
            return None
        answer = line.strip().lower()
        if answer in QUIT:
            return None
        if answer in HELP:
            write(HELP_TEXT)
            continue
        if answer in UNDO:
            if can_undo:
                return "undo"
            write("  nothing to undo yet: this is your first move\n")
            continue
        if not answer:
            return moves.index(best)
        if answer.isdigit() and 1 <= int(answer) <= len(moves):
            return int(answer) - 1
        squeezed = [text.replace(" ", "") for text in texts]
        if answer.replace(" ", "") in squeezed:
            return squeezed.index(answer.replace(" ", ""))
        words = [*texts, *QUIT, *HELP, *UNDO]
        write(
            f"  {line.strip()!r} is not a move: type a number from 1 to {len(moves)}, Enter "
            f"for the best, or help{did_you_mean(answer, words)}\n"
        )


def _announce(board: Board, write: Callable[[str], None]) -> tuple[int, ...]:
    """The book's closing line, and the winners."""
    won = winners(board)
    if len(won) > 1:
        write(f"The game is a tie between {' and '.join(map(player_name, won))}\n")
    else:
        write(f"The winner is {player_name(won[0])}\n")
    return won
