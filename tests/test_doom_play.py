"""Playing against the perfect computer: the book's two games, replayed move for move."""

from __future__ import annotations

import io
import random
import re
from functools import cache

import pytest

from memo_solver.cli.games.dice_of_doom.play import PROMPT, play, random_board
from memo_solver.games.dice_of_doom.board import (
    DoomError,
    attacks,
    format_board,
    parse_board,
    winners,
)
from memo_solver.games.dice_of_doom.tree import DoomSolver

A, B = 0, 1


def replay(
    board: str, inputs: str, human: str = "a", first: str = "a"
) -> tuple[tuple[int, ...] | None, str]:
    """Play ``board`` with the human's lines scripted; (the result, everything printed)."""
    printed: list[str] = []
    start = parse_board(board)
    lines = io.StringIO(inputs).readline
    result = play(start, human, lines, printed.append, first=first, solver=solver(start.size))
    return result, "".join(printed)


@cache
def solver(size: int) -> DoomSolver:
    """One memo per board size for every replay: a warm memo answers as a cold one, and the
    book's 3x3 board is solved once instead of once a test."""
    return DoomSolver(size)


def boards_shown(text: str) -> list[str]:
    """Each position's board as printed, in the notation, in order."""
    shown = []
    for block in text.split("current player = ")[1:]:
        rows = []
        for line in block.splitlines()[1:]:
            if not re.fullmatch(r" +([ab]-\d ?)+", line):
                break
            rows.append(line.strip())
        shown.append(" / ".join(rows))
    return shown


BOOK_2X2 = f"""\
current player = a
    a-3 b-3
  a-2 b-2
choose your move:
1. 0 -> 3    value 0    best
{PROMPT}current player = a
    a-1 b-3
  a-2 a-2
choose your move:
1. end turn  value 0    best
{PROMPT}current player = b
    a-2 b-3
  a-2 a-2
computer (b): 1 -> 0
current player = b
    b-2 b-1
  a-2 a-2
computer (b): end turn
current player = a
    b-3 b-1
  a-2 a-2
choose your move:
1. 3 -> 1    value 0    best
{PROMPT}current player = a
    b-3 a-1
  a-2 a-1
choose your move:
1. end turn  value 0    best
{PROMPT}current player = b
    b-3 a-1
  a-2 a-1
computer (b): 0 -> 2
current player = b
    b-1 a-1
  b-2 a-1
computer (b): 2 -> 3
current player = b
    b-1 a-1
  b-1 b-1
computer (b): end turn
current player = a
    b-2 a-1
  b-2 b-1
The winner is b
"""
"""Land of Lisp's first game against the computer, as printed in the book, with the line
naming each computer move added (the book shows only the boards), and the table's habits:
each move's value and cost beside the best, and the prompt."""


def menus(text: str) -> list[list[str]]:
    """Each menu the human was shown, as the moves' texts in order."""
    return [
        re.findall(r"^\d+\. (.+?) +value", block, re.MULTILINE)
        for block in text.split("choose your move:\n")[1:]
    ]


def test_the_books_2x2_game_against_the_computer() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "1\n1\n1\n1\n")

    assert text == BOOK_2X2
    assert result == (B,)


BOOK_3X3_BOARDS = [
    "b-1 a-2 a-3 / a-1 b-1 b-2 / b-2 a-2 b-3",
    "b-1 a-2 a-1 / a-1 b-1 a-2 / b-2 a-2 b-3",
    "b-1 a-3 a-1 / a-1 b-1 a-2 / b-2 a-2 b-3",
    "b-1 a-3 a-1 / b-1 b-1 a-2 / b-1 a-2 b-3",
    "b-1 a-3 a-1 / b-1 b-1 a-2 / b-1 a-2 b-3",
    "b-1 a-1 a-1 / b-1 a-2 a-2 / b-1 a-2 b-3",
    "b-1 a-1 a-1 / b-1 a-2 a-2 / b-1 a-2 b-3",
    "b-1 a-1 a-1 / b-1 a-2 b-2 / b-1 a-2 b-1",
    "b-2 a-1 a-1 / b-1 a-2 b-2 / b-1 a-2 b-1",
    "b-2 a-1 a-1 / b-1 a-1 b-2 / b-1 a-2 a-1",
    "b-2 a-1 a-1 / b-1 a-1 b-2 / b-1 a-2 a-1",
    "b-1 b-1 a-1 / b-1 a-1 b-2 / b-1 a-2 a-1",
    "b-1 b-1 a-1 / b-1 a-1 b-2 / b-1 a-2 a-1",
    "b-1 b-1 a-1 / a-1 a-1 b-2 / b-1 a-1 a-1",
    "b-1 b-1 a-1 / a-1 a-1 b-2 / b-1 a-1 a-1",
    "b-1 b-1 b-1 / a-1 a-1 b-1 / b-1 a-1 a-1",
    "b-1 b-1 b-1 / a-1 a-1 b-1 / b-1 a-1 a-1",
]
"""Every board of the book's 3x3 game ("the computer is now almost unbeatable")."""


def test_the_books_3x3_game_against_the_computer() -> None:
    result, text = replay(BOOK_3X3_BOARDS[0], "3\n1\n1\n1\n2\n1\n1\n1\n")

    assert boards_shown(text) == BOOK_3X3_BOARDS
    assert re.findall(r"computer \(b\): (.*)", text) == [
        "6 -> 3",
        "end turn",
        "8 -> 5",
        "end turn",
        "0 -> 1",
        "end turn",
        "5 -> 2",
        "end turn",
    ]
    # The menus the book prints, end of turn first once a turn has begun.
    assert menus(text)[:2] == [
        ["1 -> 4", "1 -> 0", "2 -> 5", "7 -> 4"],
        ["end turn", "1 -> 4", "1 -> 0", "5 -> 4", "7 -> 4"],
    ]
    assert text.endswith("The winner is b\n")
    assert result == (B,)


def test_the_human_can_play_b_against_a_computer_moving_first() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "", human="b")

    assert text.startswith("current player = a\n    a-3 b-3\n  a-2 b-2\ncomputer (a): 0 -> 3\n")
    assert "computer (a): end turn" in text
    assert result is None  # b's first question finds no input


def test_a_bad_choice_is_asked_again() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "x\n0\n2\n1\n1\n1\n1\n")

    assert text.count("is not a move: type a number from 1 to 1, Enter for the best, or help") == 3
    assert "'x' is not a move" in text
    assert result == (B,)


@pytest.mark.parametrize("inputs", ["q\n", "QUIT\n", ""])
def test_quitting_or_running_out_of_input_stops_the_game(inputs: str) -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", inputs)

    assert result is None
    assert text.endswith(
        f"choose your move:\n1. 0 -> 3    value 0    best\n{PROMPT}The game stopped.\n"
    )


def test_a_game_that_cannot_start_is_announced_at_once() -> None:
    result, text = replay("a-1 a-1 / b-1 b-1", "")

    assert text == "current player = a\n    a-1 a-1\n  b-1 b-1\nThe game is a tie between a and b\n"
    assert result == (A, B)


def test_a_size_draws_a_random_board_like_the_books_gen_board() -> None:
    printed: list[str] = []
    result = play(3, "a", io.StringIO("").readline, printed.append, rng=random.Random(7))

    drawn = random_board(3, random.Random(7))
    assert boards_shown("".join(printed))[0] == format_board(drawn)
    # With no input the game stops at a's first choice, unless a cannot attack at all.
    assert result == (None if attacks(drawn, A) else winners(drawn))


def test_random_boards_cover_every_hex_state() -> None:
    rng = random.Random(1)
    cells = set()
    for _ in range(50):
        board = random_board(2, rng)
        cells |= set(zip(board.owners, board.dice, strict=True))
    assert cells == {(owner, dice) for owner in (A, B) for dice in (1, 2, 3)}


def test_bad_arguments_are_refused_in_words() -> None:
    with pytest.raises(DoomError, match="player 'c' is unknown"):
        play(parse_board("a-3 b-3 / a-2 b-2"), "c", io.StringIO("").readline, print)
    with pytest.raises(DoomError, match="boards are 2x2 to 5x5"):
        play(7, "a", io.StringIO("").readline, print, rng=random.Random(0))


# --- the table's habits, as the Yahtzee table's -------------------------------------------------

BOOK_3X3_FIRST_MENU = """\
choose your move:
1. 1 -> 4    value 0    -1
2. 1 -> 0    value 0    -1
3. 2 -> 5    value 1    best
4. 7 -> 4    value 0    -1
"""
"""The book's first 3x3 menu: only 2 -> 5 wins; each other move costs the whole game."""


def test_each_move_shows_its_value_and_what_it_costs_beside_the_best() -> None:
    _, text = replay(BOOK_3X3_BOARDS[0], "")

    assert BOOK_3X3_FIRST_MENU + PROMPT in text
    # Moves worth as much as the best are marked as ties, not as costs.
    _, later = replay(BOOK_3X3_BOARDS[0], "3\n")
    assert "1. end turn  value 1    best\n" in later
    assert "4. 5 -> 4    value 1    tie\n" in later


def test_enter_plays_the_best_move() -> None:
    by_enter = replay(BOOK_3X3_BOARDS[0], "\n")[1]
    by_number = replay(BOOK_3X3_BOARDS[0], "3\n")[1]

    assert by_enter == by_number
    assert boards_shown(by_enter)[1] == BOOK_3X3_BOARDS[1]


def test_a_move_may_be_typed_as_its_text() -> None:
    assert replay(BOOK_3X3_BOARDS[0], "2->5\n")[1] == replay(BOOK_3X3_BOARDS[0], "3\n")[1]
    assert (
        replay(BOOK_3X3_BOARDS[0], "3\nEnd Turn\n")[1] == (replay(BOOK_3X3_BOARDS[0], "3\n1\n")[1])
    )


def test_undo_takes_back_the_humans_last_move_and_the_computers_replies() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "1\n1\n1\nundo\nundo\n1\n1\n1\n")

    assert "undone: back to your move 3\ncurrent player = a\n    b-3 b-1\n  a-2 a-2\n" in text
    assert "undone: back to your move 2\ncurrent player = a\n    a-1 b-3\n  a-2 a-2\n" in text
    # The computer's replies were taken back too: it plays them again, the same.
    assert text.count("computer (b): 1 -> 0\n") == 2
    assert text.endswith(BOOK_2X2[BOOK_2X2.index("current player = b\n    b-3 a-1") :])
    assert result == (B,)


def test_undo_before_the_first_move_has_nothing_to_take_back() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "undo\nq\n")

    assert f"{PROMPT}  nothing to undo yet: this is your first move\n{PROMPT}" in text
    assert result is None


def test_help_lists_the_words_and_a_typo_gets_the_closest_one() -> None:
    result, text = replay("a-3 b-3 / a-2 b-2", "?\nhlep\nudno\nend trun\nquit\n")

    assert "    undo         take back your last move and the computer's replies\n" in text
    assert "'hlep' is not a move" in text
    assert "(did you mean 'help'?)" in text
    assert "(did you mean 'undo'?)" in text
    assert "(did you mean 'end turn'?)" not in text  # not a move here: 0 -> 3 is the only one
    assert result is None


def test_a_typo_of_a_move_gets_that_move_as_a_guess() -> None:
    _, text = replay("a-3 b-3 / a-2 b-2", "1\nend trun\nq\n")

    assert "'end trun' is not a move: type a number from 1 to 1, Enter for the best, or help " in (
        text
    )
    assert "(did you mean 'end turn'?)" in text
