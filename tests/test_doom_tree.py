"""Solving Dice of Doom on the memoised DAG: the published figures, the book's games, the
minimax definition checked against a naive walk of the tree, and the limit."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from memo_solver.games.dice_of_doom import tree as doom_tree
from memo_solver.games.dice_of_doom.board import Board, DoomError, parse_board, winners
from memo_solver.games.dice_of_doom.report import analysis_to_json, format_analysis
from memo_solver.games.dice_of_doom.tree import (
    Analysis,
    DoomLimitError,
    DoomSolver,
    Position,
    TreeStats,
    analyse,
    legal_moves,
    make_position,
    play_move,
)

A, B = 0, 1
TABLE = Path(__file__).parent / "data" / "dice_of_doom_2x2.txt"
BIG = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
"""The Haskell port's test3x3BoardE: the 1.4-billion-node tree of its part 3."""


# --- an oracle: the tree walked node by node, straight from the rules ---------------------------


@dataclass(frozen=True)
class Walked:
    value: Fraction
    tree_size: int
    depth: int
    leaves: Counter[tuple[int, ...]]


def walk(position: Position) -> Walked:
    """The book's unmemoised game tree, every node visited: only for small trees."""
    moves = legal_moves(position)
    if not moves:
        won = winners(position.board)
        value = Fraction(1, len(won)) if position.player in won else Fraction(0)
        return Walked(value, 1, 1, Counter({won: 1}))
    children = [walk(play_move(position, move)) for move in moves]
    values = [
        1 - child.value if move is None else child.value
        for move, child in zip(moves, children, strict=True)
    ]
    return Walked(
        max(values),
        1 + sum(child.tree_size for child in children),
        1 + max(child.depth for child in children),
        sum((child.leaves for child in children), Counter()),
    )


def distinct_positions(root: Position) -> tuple[int, int]:
    """(distinct positions, memoised calls): the DAG's nodes, and its edges plus the root."""
    seen = {root}
    todo = [root]
    edges = 0
    while todo:
        position = todo.pop()
        for move in legal_moves(position):
            edges += 1
            after = play_move(position, move)
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return len(seen), edges + 1


@st.composite
def positions(draw: st.DrawFn, size: int = 2) -> Position:
    hexes = size * size
    owners = draw(st.lists(st.integers(0, 1), min_size=hexes, max_size=hexes))
    dice = draw(st.lists(st.integers(1, 3), min_size=hexes, max_size=hexes))
    player = draw(st.integers(0, 1))
    most = 3 * hexes - sum(dice)
    captured = draw(st.sampled_from([0, 0, 1, 2, 3, 5]).filter(lambda n: n <= most))
    return Position(Board(size, tuple(owners), tuple(dice)), player, captured)


def mirrored(position: Position) -> Position:
    """The same position with the players' names swapped."""
    board = position.board
    swapped = Board(board.size, tuple(1 - owner for owner in board.owners), board.dice)
    return Position(swapped, 1 - position.player, position.captured)


# --- the published figures ---------------------------------------------------------------------


def winners_text(stats: TreeStats) -> str:
    """Leaf winners as the published table writes them: ``[([A],36),([A,B],22),([B],22)]``."""
    names = {(A,): "[A]", (A, B): "[A,B]", (B,): "[B]"}
    return "[" + ",".join(f"({names[w]},{n})" for w, n in stats.leaf_winners().items()) + "]"


def test_every_2x2_board_has_the_published_tree_size_and_leaf_winners() -> None:
    """All 1,296 boards of the Haskell port's table, either player to move."""
    lines = TABLE.read_text().splitlines()
    assert len(lines) == 1296
    solver = DoomSolver(2)  # one memo for all: a warm memo must not change any figure
    for line in lines:
        top, bottom, size_a, size_b, winners_a, winners_b = (
            field.strip() for field in line.split("\t")
        )
        board = parse_board(f"{top} / {bottom}")
        for player, size, leaf_winners in ((A, size_a, winners_a), (B, size_b, winners_b)):
            stats = solver.analyse(Position(board, player)).stats
            assert stats is not None
            name = "AB"[player]
            assert f"{name}: {stats.tree_size}" == size, line
            assert f"{name} Winners: {winners_text(stats)}" == leaf_winners, line


def test_the_largest_2x2_tree_has_269_nodes() -> None:
    stats = analyse(make_position("a-3 a-3 / b-2 b-3", "a")).stats

    assert stats is not None
    assert (stats.tree_size, stats.leaf_winners()) == (269, {(A,): 36, (A, B): 22, (B,): 22})
    sizes = [
        int(line.split("\t")[n].split(":")[1])
        for line in TABLE.read_text().splitlines()
        for n in (2, 3)
    ]
    assert max(sizes) == 269


@pytest.fixture(scope="module")
def big() -> tuple[Analysis, float]:
    """The published 3x3 board, a to move, solved cold; with the CPU seconds it took."""
    position = make_position(BIG, "a")
    started = time.process_time()
    analysis = DoomSolver(3).analyse(position)
    return analysis, time.process_time() - started


def test_the_big_3x3_board_has_the_published_tree(big: tuple[Analysis, float]) -> None:
    """1,468,919,491 nodes and depth 40 (the Haskell port, part 3); 201,861 distinct
    positions and 472,109 memoised calls (the Lisp program's MISS and HIT counts)."""
    stats = big[0].stats

    assert stats is not None
    assert stats.tree_size == 1_468_919_491
    assert stats.depth == 40
    assert stats.positions == 201_861
    assert stats.calls == 472_109
    assert stats.a_wins + stats.b_wins + stats.ties < stats.tree_size
    assert stats.ties == 0  # nine hexes cannot split evenly


def test_the_big_3x3_board_is_a_win_for_a(big: tuple[Analysis, float]) -> None:
    analysis = big[0]

    assert analysis.value == 1
    assert [move.move for move in analysis.moves] == [
        (0, 4),
        (1, 4),
        (3, 4),
        (5, 2),
        (5, 4),
        (7, 4),
    ]
    assert analysis.best is not None
    assert analysis.best.move == (0, 4)


def test_the_big_3x3_board_solves_cold_in_under_three_cpu_seconds(
    big: tuple[Analysis, float],
) -> None:
    assert big[1] < 3.0


def test_with_b_to_move_the_big_board_is_a_single_root() -> None:
    analysis = analyse(make_position(BIG, "b"))

    assert analysis.stats == TreeStats(1, 1, 1, 1, a_wins=1, b_wins=0, ties=0)
    assert analysis.moves == ()
    assert analysis.best is None
    assert analysis.winners == (A,)
    assert analysis.value == 0


# --- the book's game against the computer ------------------------------------------------------


def test_the_books_computer_takes_hex_0_and_ends_its_turn() -> None:
    """Land of Lisp's 2x2 game from ``a-3 b-3 / a-2 b-2``: after a's 0 -> 3 and end of turn,
    the computer (b) plays 1 -> 0, ends its turn; later 0 -> 2, 2 -> 3 and ends it again."""
    solver = DoomSolver(2)
    b_turn = make_position("a-2 b-3 / a-2 a-2", "b")

    assert solver.value(b_turn) == 1  # "The computer played an optimal game and won"
    assert solver.book_move(b_turn) == (1, 0)
    after = play_move(b_turn, (1, 0))
    assert after == make_position("b-2 b-1 / a-2 a-2", "b", captured=2)
    assert solver.book_move(after) is None

    second = make_position("b-3 a-1 / a-2 a-1", "b")
    assert solver.book_move(second) == (0, 2)
    after = play_move(second, (0, 2))
    assert solver.book_move(after) == (2, 3)
    after = play_move(after, (2, 3))
    assert solver.book_move(after) is None
    assert play_move(after, None) == make_position("b-2 a-1 / b-2 b-1", "a")


def test_the_book_move_is_the_first_of_equal_best_moves() -> None:
    analysis = analyse(make_position("a-3 b-3 / a-2 b-2", "a", captured=0))

    values = [move.value for move in analysis.moves]
    assert analysis.best is analysis.moves[values.index(max(values))]


# --- the definition, against a walk of the tree ------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(positions())
def test_value_and_statistics_match_a_walk_of_the_tree(position: Position) -> None:
    analysis = analyse(position)
    walked = walk(position)

    assert analysis.stats is not None
    assert analysis.value == walked.value
    assert analysis.stats.tree_size == walked.tree_size
    assert analysis.stats.depth == walked.depth
    assert analysis.stats.leaf_winners() == dict(walked.leaves)
    assert (analysis.stats.positions, analysis.stats.calls) == distinct_positions(position)


@pytest.mark.parametrize(
    ("board", "player"),
    [
        ("a-2 b-1 a-1 a-1 / a-1 a-1 a-1 a-1 / a-1 a-1 a-1 b-1 / a-1 a-1 b-2 a-3", "a"),
        (
            "a-3 b-2 a-1 a-1 a-1 / b-1 a-1 a-1 a-1 a-1 / "
            + " / ".join(["a-1 a-1 a-1 a-1 a-1"] * 3),
            "a",
        ),
        ("b-2 " + " ".join(["a-1"] * 24), "b"),
    ],
)
def test_larger_boards_with_small_trees_match_the_walk(board: str, player: str) -> None:
    position = make_position(board, player)
    analysis = analyse(position)
    walked = walk(position)

    assert analysis.stats is not None
    assert (analysis.value, analysis.stats.tree_size, analysis.stats.depth) == (
        walked.value,
        walked.tree_size,
        walked.depth,
    )
    assert analysis.stats.leaf_winners() == dict(walked.leaves)


@settings(max_examples=100, deadline=None)
@given(positions())
def test_a_position_is_worth_its_best_move_and_a_pass_is_one_minus_the_next(
    position: Position,
) -> None:
    solver = DoomSolver(2)
    analysis = solver.analyse(position)

    for move in analysis.moves:
        after = solver.value(move.after)
        assert move.value == (1 - after if move.move is None else after)
        assert move.after == play_move(position, move.move)
    if analysis.moves:
        assert analysis.value == max(move.value for move in analysis.moves)
    assert analysis.value in (0, Fraction(1, 2), 1)


@settings(max_examples=100, deadline=None)
@given(positions())
def test_swapping_the_players_names_changes_nothing_but_the_names(position: Position) -> None:
    solver = DoomSolver(2)
    original = solver.analyse(position)
    swapped = solver.analyse(mirrored(position))

    assert original.stats is not None
    assert swapped.stats is not None
    assert swapped.value == original.value
    assert (swapped.stats.tree_size, swapped.stats.depth) == (
        original.stats.tree_size,
        original.stats.depth,
    )
    assert (swapped.stats.a_wins, swapped.stats.b_wins, swapped.stats.ties) == (
        original.stats.b_wins,
        original.stats.a_wins,
        original.stats.ties,
    )


def test_ending_the_turn_is_worth_one_minus_the_opponents_value() -> None:
    """After a's pass b moves: to a, the pass is worth 1 - (b's value at the turn start)."""
    solver = DoomSolver(2)
    board = parse_board("a-1 a-3 / b-3 b-2")
    a_after_attack = play_move(Position(board, A), (1, 3))

    rated = {move.move: move for move in solver.analyse(a_after_attack).moves}
    assert rated[None].value == 1 - solver.value(rated[None].after)


# --- the limit, wide counts, and misuse --------------------------------------------------------


def test_the_position_limit_names_itself_and_the_way_out() -> None:
    solver = DoomSolver(3, limit=1000)

    with pytest.raises(DoomLimitError) as error:
        solver.analyse(make_position(BIG, "a"))

    assert error.value.field == "limit"
    assert "more than 1,000 distinct positions" in str(error.value)
    assert "raise the limit" in str(error.value)
    assert isinstance(error.value, DoomError)
    # The half-built memo is dropped, so the solver still answers what fits.
    assert solver.positions == 0
    assert solver.value(make_position("a-1 b-2 a-1 / a-1 a-1 a-1 / a-1 a-1 a-1", "b")) == 0


SEED_1_5X5 = (
    "a-3 a-1 b-2 a-3 b-1 / b-3 b-1 b-2 a-2 a-3 / b-1 a-2 b-1 b-3 a-1 / "
    "b-2 b-2 a-1 a-2 b-3 / a-3 a-1 a-1 a-3 b-3"
)
"""The board ``play --size 5 --seed 1`` draws: solving it outgrows any machine."""


def test_a_board_that_cannot_fit_is_refused_before_its_solve_starts() -> None:
    solver = DoomSolver(5)
    reported: list[int] = []
    solver.progress = reported.append  # told every 262,144 positions the solve holds

    with pytest.raises(DoomLimitError) as error:
        solver.value(make_position(SEED_1_5X5, "a"))

    assert error.value.field == "limit"
    assert "needs more than 2,000,000 distinct positions, the solver's limit (an estimate" in (
        error.value.message
    )
    assert reported == []  # refused on the estimate, before a single solved position
    assert solver.positions == 0


@pytest.mark.parametrize(
    ("board", "positions"),
    [
        pytest.param(
            "b-2 b-2 a-1 b-2 / a-1 a-1 a-1 a-3 / b-3 b-2 a-1 b-1 / a-1 a-1 a-1 a-1",
            25_810,
            id="4x4-seed-5",
        ),
        pytest.param(
            "a-3 b-2 a-1 a-1 a-1 / b-1 a-1 a-1 a-1 a-1 / a-1 a-1 b-1 a-1 a-1 / "
            "a-1 a-1 a-1 a-1 b-1 / a-1 a-1 a-1 b-2 a-3",
            1_567,
            id="5x5",
        ),
        pytest.param("a-1 a-2 b-1 / a-2 b-2 b-3 / b-1 b-3 a-2", 15_914, id="3x3-seed-1"),
        pytest.param("a-1 a-3 b-2 / b-3 a-3 a-2 / b-2 b-3 a-1", 49_990, id="3x3-seed-3"),
    ],
)
def test_a_board_that_fits_its_limit_exactly_is_solved_whatever_its_size(
    board: str, positions: int
) -> None:
    """The estimate stays below the truth: it never refuses what the limit holds."""
    solver = DoomSolver(parse_board(board).size, limit=positions)

    solver.value(make_position(board, "a"))

    assert solver.positions == positions


def test_a_limit_is_bounded_by_what_the_machines_memory_holds() -> None:
    most = doom_tree.most_positions()
    assert most * doom_tree.BYTES_PER_POSITION <= doom_tree._memory()

    assert DoomSolver(5, limit=most).limit == most
    with pytest.raises(DoomError, match="more than this machine's memory holds") as error:
        DoomSolver(5, limit=99_999_999_999_999)
    assert error.value.field == "limit"
    assert f"hold at most {most:,}" in error.value.message


def test_counts_wider_than_their_packed_fields_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes and leaf counts share one integer; a count outgrowing its field widens them all."""
    monkeypatch.setattr(doom_tree, "_FIELD_BITS", 4)
    solver = DoomSolver(2)

    small = solver.analyse(make_position("a-1 a-1 / a-2 b-2", "b")).stats  # 11 nodes
    large = solver.analyse(make_position("a-3 a-3 / b-2 b-3", "a")).stats  # 269 nodes

    assert small == TreeStats(11, 5, 11, 11, a_wins=3, b_wins=0, ties=0)
    assert large is not None
    assert (large.tree_size, large.a_wins, large.b_wins, large.ties) == (
        269,
        36,
        22,
        22,
    )
    again = solver.analyse(make_position("a-1 a-1 / a-2 b-2", "b")).stats
    assert again == small


def test_positions_are_checked() -> None:
    board = parse_board("a-3 b-3 / a-2 b-2")
    with pytest.raises(DoomError, match="player 2 is unknown"):
        Position(board, 2)
    with pytest.raises(DoomError, match="with 10 dice on the board it is 0 to 2") as error:
        Position(board, A, captured=3)
    assert error.value.field == "captured"
    with pytest.raises(DoomError, match="not 2x2"):
        DoomSolver(3).value(Position(board, A))
    with pytest.raises(DoomError, match="at least 1"):
        DoomSolver(2, limit=0)


def test_moves_are_checked() -> None:
    start = make_position("a-3 b-3 / a-2 b-2", "a")
    with pytest.raises(DoomError, match="cannot end before the first attack") as error:
        play_move(start, None)
    assert error.value.field == "move"
    with pytest.raises(DoomError, match="hex 1 does not belong to a"):
        play_move(make_position("a-1 b-3 / a-2 b-1", "a"), (1, 0))
    with pytest.raises(DoomError, match="not a neighbour"):
        play_move(start, (1, 2))
    with pytest.raises(DoomError, match="game is over"):
        DoomSolver(2).book_move(make_position("a-3 b-3 / a-2 b-2", "b"))


# --- summaries ---------------------------------------------------------------------------------


def test_the_json_summary_is_plain_and_gives_values_two_ways() -> None:
    analysis = analyse(make_position("a-3 a-3 / b-2 b-3", "a"))

    summary = analysis_to_json(analysis)

    assert json.loads(json.dumps(summary)) == summary
    assert summary["value"] == "1"
    assert summary["value_float"] == 1.0
    assert summary["best"] == {
        "kind": "attack",
        "src": 0,
        "dst": 2,
        "text": "0 -> 2",
        "value": "1",
        "value_float": 1.0,
        "after": {
            "board": "a-1 a-3 / a-2 b-3",
            "size": 2,
            "code": parse_board("a-1 a-3 / a-2 b-3").code,
            "player": "a",
            "captured": 2,
        },
    }
    assert summary["stats"] == {
        "tree_size": 269,
        "depth": 17,
        "positions": 126,
        "calls": 148,
        "leaf_winners": {"a": 36, "b": 22, "tie": 22},
    }
    assert summary["game_over"] is False
    assert summary["winners"] is None


def test_a_tie_is_worth_one_half_in_json_and_words() -> None:
    position = make_position("a-1 a-2 / b-2 b-1", "a")  # every leaf a tie
    analysis = analyse(position)
    summary = analysis_to_json(analysis)
    text = format_analysis(analysis)

    assert analysis.value == Fraction(1, 2)
    assert (summary["value"], summary["value_float"]) == ("1/2", 0.5)
    assert "Value for a: 1/2 (a ties with best play)" in text
    assert "attack 1 -> 3 (value 1/2)  <- best" in text


def test_the_text_lists_end_turn_first_and_the_tree_figures() -> None:
    position = play_move(make_position("a-3 a-3 / b-2 b-1", "a"), (1, 3))
    text = format_analysis(analyse(position))

    assert text.splitlines()[:3] == [
        "a to move, 1 die captured this turn:",
        "    a-3 a-1",
        "  b-2 a-2",
    ]
    moves = text.split("Moves:\n")[1].splitlines()
    assert moves[0].startswith("  end turn (value ")
    assert moves[1].startswith("  attack 0 -> 2 (value ")
    assert text.splitlines()[-1].startswith("Game tree: ")


def test_a_finished_game_says_who_won() -> None:
    analysis = analyse(make_position(BIG, "b"))
    text = format_analysis(analysis)
    summary = analysis_to_json(analysis)

    assert "The game is over (b cannot attack): a wins." in text
    assert (summary["game_over"], summary["winners"], summary["best"]) == (True, ["a"], None)
    tie = format_analysis(analyse(make_position("a-1 a-1 / b-1 b-1", "a")))
    assert "a tie between a and b" in tie


def test_an_analysis_without_a_tree_prints_without_figures() -> None:
    analysis = analyse(make_position("a-3 b-3 / a-2 b-2", "a"))
    bare = Analysis(analysis.position, analysis.value, analysis.moves, analysis.best, None, None)

    assert analysis_to_json(bare)["stats"] is None
    assert "Game tree" not in format_analysis(bare)


def test_the_most_captured_dice_a_position_can_hold_stay_possible_after_attacks() -> None:
    """Captured dice plus dice on the board stay at 3 a hex, so attacks never break the
    bound; the solver's keys hold the largest count, 2 a hex."""
    board = parse_board("a-3 b-2 " + " ".join(["a-1"] * 23))  # 28 dice: 47 can be captured
    position = Position(board, A, captured=47)

    analysis = analyse(position)

    after = play_move(position, (0, 1))
    assert after.captured == 49
    assert [move.after for move in analysis.moves] == [play_move(position, None), after]
    assert Position(parse_board(" ".join(["a-1"] * 25)), A, captured=50).captured == 50
