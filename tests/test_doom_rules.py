"""Dice of Doom rules: the examples of ``../shared/dice_of_doom.md``, the notation, the errors."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, strategies as st

from memo_solver.games.dice_of_doom.board import (
    Board,
    DoomError,
    attack,
    attacks,
    board_from_code,
    draw_board,
    format_board,
    neighbours,
    parse_board,
    player_index,
    player_name,
    reinforce,
    winners,
)

A, B = 0, 1


@st.composite
def boards(draw: st.DrawFn) -> Board:
    size = draw(st.integers(2, 5))
    hexes = size * size
    owners = draw(st.lists(st.integers(0, 1), min_size=hexes, max_size=hexes))
    dice = draw(st.lists(st.integers(1, 3), min_size=hexes, max_size=hexes))
    return Board(size, tuple(owners), tuple(dice))


# --- neighbours ---------------------------------------------------------------------------------


def test_neighbours_of_the_doc_examples_in_the_books_order() -> None:
    assert neighbours(2)[2] == (0, 3)
    assert neighbours(3)[0] == (3, 1, 4)
    assert neighbours(3)[4] == (1, 7, 0, 3, 5, 8)


def test_neighbours_are_up_down_upleft_left_right_downright() -> None:
    # Hex 5 on 3x3 is in the right column: up 2, down 8, up-left 1, left 4, nothing right.
    assert neighbours(3)[5] == (2, 8, 1, 4)
    # Hex 6 on 4x4: up 2, down 10, up-left 1, left 5, right 7, down-right 11.
    assert neighbours(4)[6] == (2, 10, 1, 5, 7, 11)


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_neighbourhood_is_symmetric(size: int) -> None:
    """The hex grid: if p borders q then q borders p; corners have 2 or 3 neighbours."""
    table = neighbours(size)
    for pos, near in enumerate(table):
        assert pos not in near
        for other in near:
            assert pos in table[other]
    assert len(table[0]) == 3  # right, down, down-right
    assert len(table[size - 1]) == 2  # down, left


# --- attacks -----------------------------------------------------------------------------------


def test_attack_from_1_to_3_as_in_the_doc() -> None:
    board = parse_board("a-3 a-3 / b-3 b-1")

    assert attack(board, 1, 3) == parse_board("a-3 a-1 / b-3 a-2")


def test_attacks_list_src_ascending_then_dst_in_neighbour_order() -> None:
    """The Haskell port's part 1 examples (its test2x2Board and test3x3Board)."""
    two = parse_board("b-2 b-2 / a-2 b-1")
    three = parse_board("a-1 b-2 a-1 / b-1 b-2 a-1 / a-1 a-1 a-3")

    assert attacks(two, A) == ((2, 3),)
    assert attacks(two, B) == ()
    assert attacks(three, A) == ((8, 4),)
    assert attacks(three, B) == ((1, 0), (1, 2), (1, 5), (4, 7), (4, 0), (4, 5))


def test_an_attack_needs_strictly_more_dice_against_an_enemy_neighbour() -> None:
    board = parse_board("a-3 b-3 / a-2 b-2")

    assert attacks(board, A) == ((0, 3),)  # not 0 -> 1 (3 against 3), not 2 -> 3 (2 against 2)
    with pytest.raises(DoomError, match="strictly more dice") as equal:
        attack(board, 0, 1)
    assert equal.value.field == "src"
    with pytest.raises(DoomError, match="same player"):
        attack(board, 0, 2)
    with pytest.raises(DoomError, match="not a neighbour"):
        attack(parse_board("a-3 a-1 a-1 / a-1 a-1 a-1 / a-1 a-1 b-1"), 0, 8)
    with pytest.raises(DoomError, match="hexes are 0 to 3"):
        attack(board, 0, 4)


@given(boards(), st.data())
def test_an_attack_moves_all_but_one_die_and_destroys_the_defenders(
    board: Board, data: st.DataObject
) -> None:
    player = data.draw(st.integers(0, 1))
    moves = attacks(board, player)
    if not moves:
        return
    src, dst = data.draw(st.sampled_from(moves))

    after = attack(board, src, dst)

    assert (after.owners[src], after.dice[src]) == (player, 1)
    assert (after.owners[dst], after.dice[dst]) == (player, board.dice[src] - 1)
    assert sum(after.dice) == sum(board.dice) - board.dice[dst]
    untouched = set(range(board.size**2)) - {src, dst}
    assert all(after.owners[p] == board.owners[p] for p in untouched)
    assert all(after.dice[p] == board.dice[p] for p in untouched)


# --- reinforcements ----------------------------------------------------------------------------


def test_passing_after_capturing_three_dice_adds_two_as_in_the_doc() -> None:
    board = parse_board("a-1 b-3 / a-2 b-1")

    assert reinforce(board, A, 3) == parse_board("a-2 b-3 / a-3 b-1")


def test_reinforcements_scan_once_and_leftovers_are_lost() -> None:
    board = parse_board("a-3 a-1 / b-1 a-3")

    # 4 captured: 3 new dice, but only hex 1 can take one; the other two are lost.
    assert reinforce(board, A, 4) == parse_board("a-3 a-2 / b-1 a-3")
    # One captured die brings nothing: n = captured - 1.
    assert reinforce(board, A, 1) == board


@given(boards(), st.integers(0, 1), st.integers(1, 20))
def test_reinforcements_only_top_up_the_movers_first_hexes(
    board: Board, player: int, captured: int
) -> None:
    after = reinforce(board, player, captured)

    gained = [after.dice[p] - board.dice[p] for p in range(board.size**2)]
    assert set(gained) <= {0, 1}
    assert sum(gained) <= captured - 1
    assert after.owners == board.owners
    assert all(after.dice[p] <= 3 for p in range(board.size**2))
    for pos, gain in enumerate(gained):
        if gain:
            assert board.owners[pos] == player
    # Index order: a hex that could take a die is passed over only once n is used up.
    open_hexes = [
        p for p in range(board.size**2) if board.owners[p] == player and board.dice[p] < 3
    ]
    count = min(captured - 1, len(open_hexes))
    assert [p for p, gain in enumerate(gained) if gain] == open_hexes[:count]


def test_negative_captured_dice_are_refused() -> None:
    with pytest.raises(DoomError, match="cannot be negative"):
        reinforce(parse_board("a-1 b-3 / a-2 b-1"), A, -1)


# --- winners -----------------------------------------------------------------------------------


def test_the_most_hexes_win_and_equal_counts_tie() -> None:
    assert winners(parse_board("b-1 a-1 / b-2 b-1")) == (B,)
    assert winners(parse_board("a-1 a-1 / b-3 b-3")) == (A, B)
    assert winners(parse_board("a-1 a-1 a-1 / b-1 b-1 b-1 / a-1 a-1 b-3")) == (A,)
    assert winners(parse_board("a-1 a-1 / a-1 a-1")) == (A,)


# --- notation and codes ------------------------------------------------------------------------


def test_the_notation_reads_rows_top_down() -> None:
    board = parse_board("a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3")

    assert board.size == 3
    assert board.owners == (A, A, B, A, B, A, A, A, B)
    assert board.dice == (2, 2, 2, 3, 1, 3, 3, 3, 3)
    assert format_board(board) == "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"


def test_the_notation_is_lenient_about_spacing_case_and_slashes() -> None:
    expected = parse_board("a-3 b-3 / a-2 b-2")

    assert parse_board("  A-3   b-3/a-2 B-2\n") == expected
    assert parse_board("a-3 b-3 a-2 b-2") == expected
    assert parse_board("a-3 b-3 a-2 b-2", size=2) == expected


def test_the_board_is_drawn_as_the_book_draws_it() -> None:
    assert draw_board(parse_board("a-3 b-3 / a-2 b-2")) == "    a-3 b-3\n  a-2 b-2"


def test_hex_codes_are_owner_times_three_plus_dice_minus_one_in_base_six() -> None:
    assert parse_board("a-1 a-1 / a-1 a-1").code == 0
    assert parse_board("b-3 a-1 / a-1 a-1").code == 5
    assert parse_board("a-1 a-2 / a-1 a-1").code == 1 * 6
    assert parse_board("a-1 a-1 / a-1 b-1").code == 3 * 6**3
    assert parse_board("b-3 b-3 / b-3 b-3").code == 6**4 - 1


@given(boards())
def test_notation_and_code_round_trip(board: Board) -> None:
    assert parse_board(format_board(board)) == board
    assert parse_board(format_board(board).replace(" / ", " ")) == board
    assert board_from_code(board.size, board.code) == board
    assert 0 <= board.code < 6 ** (board.size**2)


def test_players_are_a_and_b() -> None:
    assert [player_index(name) for name in ("a", " B ")] == [A, B]
    assert [player_name(player) for player in (A, B)] == ["a", "b"]


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a-1 a-1 a-1 a-1 a-1", ["got 5 hexes", "4, 9, 16 or 25"]),
        ("a-1 a-1 a-1", ["got 3 hexes", "square board needs 4, 9, 16 or 25"]),
        ("a-1", ["got 1 hex;"]),
        (" ".join(["a-1"] * 36), ["got 36 hexes", "2x2 to 5x5"]),
        ("a-1 a-1 a-1 / a-1 a-1 / a-1 a-1 a-1", ["row 2 has 2 hexes but row 1 has 3"]),
        ("a-1 a-1 / a-1 a-1 / a-1 a-1", ["3 rows of 2 hexes is not square"]),
        ("a-1 a-1 / / a-1 a-1", ["row 2 is empty"]),
        ("a-1 a-4 / a-1 a-1", ["hex 1 'a-4' has 4 dice", "1 to 3 dice"]),
        ("a-1 a-1 / a-0 a-1", ["hex 2 'a-0' has 0 dice"]),
        ("a-1 c-1 / a-1 a-1", ["hex 1 'c-1' belongs to 'c'", "the players are a and b"]),
        ("a-1 a-1 / a1 a-1", ["hex 2 'a1' is not a hex", "like a-2"]),
        ("a-1 a-1 / a-1 3-a", ["hex 3 '3-a' is not a hex"]),
        ("   ", ["the board is empty"]),
    ],
)
def test_bad_boards_say_what_is_wrong_in_words(text: str, words: list[str]) -> None:
    with pytest.raises(DoomError) as error:
        parse_board(text)

    assert error.value.field == "board"
    for word in words:
        assert word in str(error.value)


def test_a_board_of_the_wrong_size_says_which_size_was_wanted() -> None:
    with pytest.raises(DoomError, match="got 4 hexes; a 3x3 board needs 9"):
        parse_board("a-1 a-1 / a-1 a-1", size=3)


@pytest.mark.parametrize("size", [1, 6])
def test_sizes_outside_two_to_five_are_refused(size: int) -> None:
    for call in (
        lambda: parse_board("a-1 a-1 / a-1 a-1", size=size),
        lambda: board_from_code(size, 0),
        lambda: neighbours(size),
        lambda: Board(size, (0,) * size * size, (1,) * size * size),
    ):
        with pytest.raises(DoomError, match="boards are 2x2 to 5x5") as error:
            call()
        assert error.value.field == "size"


def test_codes_outside_the_board_are_refused() -> None:
    with pytest.raises(DoomError, match="codes run from 0 to 1295") as error:
        board_from_code(2, 6**4)
    assert error.value.field == "code"


def test_boards_built_directly_are_checked_too() -> None:
    with pytest.raises(DoomError, match="has 4 hexes"):
        Board(2, (0, 0, 0), (1, 1, 1))
    with pytest.raises(DoomError, match="owners are 0"):
        Board(2, (0, 0, 0, 2), (1, 1, 1, 1))
    with pytest.raises(DoomError, match="1 to 3 dice"):
        Board(2, (0, 0, 0, 0), (1, 1, 1, 4))


def test_an_unknown_player_is_named() -> None:
    with pytest.raises(DoomError, match="player 'c' is unknown; the players are a and b") as error:
        player_index(" c ")
    assert error.value.field == "player"


def test_errors_print_their_message_and_survive_pickling() -> None:
    error = DoomError("board", "the board is empty")

    assert str(error) == "the board is empty"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.field, copy.message) == ("board", "the board is empty")
