"""``memo-solver --game dice-of-doom`` end to end: a real process on a store of its own.

The same contract as Yahtzee's command (tests/test_cli_*.py): answers in words and in JSON,
one line on stderr and exit status 2 for anything the user typed wrong, and a store that a
precompute fills, ``status`` reports, ``export`` and ``import`` copy, and ``advise`` reads.
The figures pinned here are the published ones (``shared/dice_of_doom.md``); the game
against the computer is the book's (tests/test_doom_play.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli_support import one_error_line
from test_doom_game import every_2x2_outcome
from test_doom_play import BOOK_2X2

from memo_solver.games.dice_of_doom.board import draw_board, parse_board

CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")},
    "OPENBLAS_NUM_THREADS": "1",
}
TIMEOUT_S = 120

BIG = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
"""The published 3x3 board: a wins it, with a tree of 1,468,919,491 nodes."""
BOOK = "a-3 b-3 / a-2 b-2"
"""The book's first 2x2 game: a to move loses it."""
BOOK_AFTER_0_3 = "a-1 b-3 / a-2 a-2"
"""The book's board after a's 0 -> 3, which captured b's 2 dice."""
DOOM = ("--game", "dice-of-doom")
SIZE_2 = (*DOOM, "--size", "2")


def memo_solver(
    store: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


def answer(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def words(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def advise(store: Path, board: str, *args: str) -> Any:
    return answer(memo_solver(store, "advise", *DOOM, board, *args, "--json"))


def moves_of(advice: dict[str, Any]) -> list[tuple[str, str]]:
    """Each move's menu text and value, in the order the book lists them."""
    return [(move["text"], move["value"]) for move in advice["moves"]]


def without_stats_or_source(advice: dict[str, Any]) -> dict[str, Any]:
    """What the memo and a solve must agree on (only a solve counts the tree)."""
    return {k: v for k, v in advice.items() if k not in ("stats", "source")}


# --- advise ---------------------------------------------------------------------------------


def test_advise_in_words_gives_the_value_and_the_books_move(tmp_path: Path) -> None:
    text = words(memo_solver(tmp_path / "s.sqlite", "advise", *DOOM, BIG, "--to-move", "a"))

    lines = text.splitlines()
    assert lines[:4] == ["a to move:", "      a-2 a-2 b-2", "    a-3 b-1 a-3", "  a-3 a-3 b-3"]
    assert "Value for a: 1 (a wins with best play)" in lines
    assert "Best: attack 0 -> 4" in lines
    assert "  attack 0 -> 4 (value 1)  <- best" in lines
    assert "1,468,919,491 nodes, depth 40, 201,861 distinct positions" in text
    assert lines[-1] == "(solved here)"


def test_advise_json_of_the_big_board(tmp_path: Path) -> None:
    advice = advise(tmp_path / "s.sqlite", BIG, "--to-move", "a")

    assert advice["position"] == {
        "board": BIG,
        "size": 3,
        "code": parse_board(BIG).code,
        "player": "a",
        "captured": 0,
    }
    assert (advice["value"], advice["value_float"]) == ("1", 1.0)
    assert (advice["game_over"], advice["winners"]) == (False, None)
    assert moves_of(advice) == [
        ("0 -> 4", "1"),
        ("1 -> 4", "1"),
        ("3 -> 4", "1"),
        ("5 -> 2", "1"),
        ("5 -> 4", "1"),
        ("7 -> 4", "1"),
    ]
    best = advice["best"]
    assert (best["kind"], best["src"], best["dst"]) == ("attack", 0, 4)  # the first best
    assert best["after"]["board"] == "a-1 a-2 b-2 / a-3 a-1 a-3 / a-3 a-3 b-3"
    assert (best["after"]["player"], best["after"]["captured"]) == ("a", 1)
    assert advice["source"] == "solved"


def test_advise_a_2x2_board_in_words_and_json(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    advice = advise(store, BOOK)
    text = words(memo_solver(store, "advise", *DOOM, BOOK))

    assert (advice["value"], advice["value_float"]) == ("0", 0.0)  # the book's a loses
    assert moves_of(advice) == [("0 -> 3", "0")]
    assert advice["best"]["after"] == {
        "board": BOOK_AFTER_0_3,
        "size": 2,
        "code": parse_board(BOOK_AFTER_0_3).code,
        "player": "a",
        "captured": 2,
    }
    assert "Value for a: 0 (a loses against best play)" in text
    assert "Best: attack 0 -> 3" in text


def test_advise_mid_turn_offers_the_end_of_the_turn_first(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    book = advise(store, BOOK_AFTER_0_3, "--captured", "2")
    big = advise(store, "a-1 a-2 b-2 / a-3 a-1 a-3 / a-3 a-3 b-3", "--captured", "1")
    text = words(memo_solver(store, "advise", *DOOM, BOOK_AFTER_0_3, "--captured", "2"))

    assert book["position"]["captured"] == 2
    assert moves_of(book) == [("end turn", "0")]
    # Ending the turn reinforces with 2 - 1 = 1 die: hex 0 is the first of a's not full.
    assert book["best"]["after"]["board"] == "a-2 b-3 / a-2 a-2"
    assert (book["best"]["after"]["player"], book["best"]["after"]["captured"]) == ("b", 0)
    assert text.startswith("a to move, 2 dice captured this turn:\n")
    assert "Best: end turn" in text

    assert moves_of(big) == [("end turn", "1"), ("5 -> 2", "1")]
    assert big["best"]["kind"] == "pass"


def test_advise_with_b_to_move_on_the_big_board_says_the_game_is_over(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    advice = advise(store, BIG, "--to-move", "b")
    text = words(memo_solver(store, "advise", *DOOM, BIG, "--to-move", "B"))

    assert (advice["game_over"], advice["winners"]) == (True, ["a"])
    assert (advice["value"], advice["moves"], advice["best"]) == ("0", [], None)
    assert "The game is over (b cannot attack): a wins." in text


# --- stats ----------------------------------------------------------------------------------


def test_stats_of_the_big_board_are_the_published_figures(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    stats = answer(memo_solver(store, "stats", *DOOM, BIG, "--to-move", "a", "--json"))["stats"]
    text = words(memo_solver(store, "stats", *DOOM, BIG, "--to-move", "a"))

    assert stats["tree_size"] == 1_468_919_491
    assert stats["depth"] == 40
    assert stats["positions"] == 201_861
    assert stats["calls"] == 472_109
    assert stats["leaf_winners"]["tie"] == 0  # nine hexes cannot split evenly
    assert (
        "Game tree: 1,468,919,491 nodes, depth 40, 201,861 distinct positions, "
        "472,109 memoised calls" in text
    )


def test_stats_of_the_largest_2x2_tree(tmp_path: Path) -> None:
    stats = answer(
        memo_solver(tmp_path / "s.sqlite", "stats", *DOOM, "a-3 a-3 / b-2 b-3", "--json")
    )["stats"]

    assert stats["tree_size"] == 269


# --- bad input ------------------------------------------------------------------------------

TOO_MANY_DIGITS = "a-1 a-1 / a-1 a-" + "9" * 5000

BAD_INPUT: list[Any] = [
    # id, arguments after the command, words in the one line
    pytest.param(["advise", *DOOM, "a-1 a-1 a-1"], "got 3 hexes", id="three-hexes"),
    pytest.param(["advise", *DOOM, "a-1 " * 5], "got 5 hexes; a square board", id="five-hexes"),
    pytest.param(["advise", *DOOM, "a-1 " * 36], "got 36 hexes", id="six-by-six"),
    pytest.param(["advise", *DOOM, "a-1 a-4 / a-1 a-1"], "hex 1 'a-4' has 4 dice", id="dice-4"),
    pytest.param(["advise", *DOOM, "a-1 a-1 / a-0 a-1"], "hex 2 'a-0' has 0 dice", id="dice-0"),
    pytest.param(["advise", *DOOM, "a-1 a-1 / a-1 a-10"], "hex 3 'a-10' has 10 dice", id="dice-10"),
    pytest.param(
        ["advise", *DOOM, "a-1 c-1 / a-1 a-1"], "hex 1 'c-1' belongs to 'c'", id="owner-c"
    ),
    pytest.param(["advise", *DOOM, "a-1 a-1 / a1 a-1"], "hex 2 'a1' is not a hex", id="no-dash"),
    pytest.param(
        ["advise", *DOOM, "a-1 a-1 / a-1 a-1 / a-1 a-1"], "3 rows of 2 hexes", id="not-square"
    ),
    pytest.param(
        ["advise", *DOOM, "a-1 a-1 a-1 / a-1 a-1 / a-1 a-1 a-1"],
        "row 2 has 2 hexes but row 1 has 3",
        id="ragged-rows",
    ),
    pytest.param(["advise", *DOOM, "a-1 a-1 / / a-1 a-1"], "row 2 is empty", id="empty-row"),
    pytest.param(["advise", *DOOM, "  "], "the board is empty", id="empty-board"),
    pytest.param(["advise", *DOOM, "-"], "give the board", id="stdin-dash"),
    pytest.param(["advise", *DOOM], "required: state", id="no-board"),
    pytest.param(["stats", *DOOM, "a-1 a-4 / a-1 a-1"], "has 4 dice", id="stats-dice-4"),
    pytest.param(
        ["advise", *DOOM, BOOK, "--to-move", "c"],
        "player 'c' is unknown; the players are a and b",
        id="to-move-c",
    ),
    pytest.param(["stats", *DOOM, BOOK, "--to-move", ""], "player '' is unknown", id="to-move-"),
    pytest.param(
        ["advise", *DOOM, BOOK, "--captured", "3"],
        "3 dice captured this turn is impossible: with 10 dice on the board it is 0 to 2",
        id="captured-3",
    ),
    pytest.param(
        ["advise", *DOOM, BOOK, "--captured", "-1"], "-1 dice captured", id="captured-negative"
    ),
    pytest.param(
        ["advise", *DOOM, BOOK, "--captured", "x"],
        "argument --captured: invalid int value: 'x'",
        id="captured-x",
    ),
    pytest.param(
        ["stats", *DOOM, BIG, "--limit", "1000"], "more than 1,000 distinct", id="over-limit"
    ),
    pytest.param(["advise", "--game", "doom", BOOK], "invalid choice: 'doom'", id="game-doom"),
    pytest.param(
        ["play", *DOOM, "--board", "a-3 b-3 / a-2 b-2 / a-1"], "row 3 has 1 hex", id="play-board"
    ),
    pytest.param(["play", *DOOM, "--human", "c"], "player 'c' is unknown", id="play-human"),
    pytest.param(["play", *DOOM, "--size", "7"], "size 7 is not supported", id="play-size"),
    pytest.param(
        ["play", *DOOM, "--board", BOOK, "--limit", "5"],
        "more than 5 distinct positions, the solver's limit",
        id="play-over-limit",
    ),
    pytest.param(["play", *DOOM, "--limit", "0"], "must be at least 1, got 0", id="play-limit-0"),
    pytest.param(
        ["play", *DOOM, "--size", "5", "--seed", "1"],
        "needs more than 2,000,000 distinct positions, the solver's limit (an estimate from",
        id="play-5x5-estimated-at-once",
    ),
    pytest.param(
        ["serve", "--doom-limit", "99999999999999", "--port", "1"],
        "a limit of 99,999,999,999,999 positions is more than this machine's memory holds",
        id="serve-doom-limit-past-memory",
    ),
    pytest.param(
        ["stats", *DOOM, BOOK, "--limit", "99999999999999"],
        "a limit of 99,999,999,999,999 positions is more than this machine's memory holds",
        id="limit-past-memory",
    ),
    pytest.param(["precompute", *DOOM, "--size", "4"], "invalid choice: 4", id="precompute-4x4"),
    pytest.param(["advise", *DOOM, TOO_MANY_DIGITS], "is not a hex", id="dice-5000-digits"),
]


@pytest.mark.parametrize(("args", "expected"), BAD_INPUT)
def test_bad_input_is_one_line_on_stderr_and_exit_status_2(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    result = memo_solver(tmp_path / "s.sqlite", *args, stdin="")

    assert expected in one_error_line(result)
    assert result.stdout == ""


# --- precompute, status, export and import --------------------------------------------------


def test_precompute_fills_the_store_and_advise_then_reads_the_memo(tmp_path: Path) -> None:
    store = tmp_path / "tmp.sqlite"
    before = advise(store, BOOK)

    solved = answer(memo_solver(store, "precompute", *SIZE_2, "--json"))
    after = advise(store, BOOK)
    mid_turn = advise(store, BOOK_AFTER_0_3, "--captured", "2")
    text = words(memo_solver(store, "advise", *DOOM, BOOK))

    assert solved["rules"] == "dice-of-doom-2x2"
    assert (solved["blocks_total"], solved["blocks_computed"]) == (307, 307)
    assert solved["blocks_already_stored"] == 0
    assert (before["source"], after["source"], mid_turn["source"]) == ("solved", "memo", "memo")
    assert without_stats_or_source(after) == without_stats_or_source(before)
    assert after["stats"] is None  # a store of turn-start values knows no trees
    assert mid_turn["value"] == "0"
    assert text.endswith("(from the shared memo)\n")


def test_precompute_twice_computes_nothing_and_status_shows_every_block(tmp_path: Path) -> None:
    store = tmp_path / "tmp.sqlite"
    first = answer(memo_solver(store, "precompute", *SIZE_2, "--json"))
    again = answer(memo_solver(store, "precompute", *SIZE_2, "--json"))
    status = answer(memo_solver(store, "status", "--json"))["rule_sets"]
    text = words(memo_solver(store, "status"))

    # Over all 2 x 2 turn starts: what the mover wins, ties and loses, and the expected share.
    outcome = every_2x2_outcome()
    assert {k: first[k] for k in outcome} == pytest.approx(outcome, abs=1e-12)
    assert {k: again[k] for k in outcome} == {k: first[k] for k in outcome}
    assert (again["blocks_computed"], again["blocks_already_stored"]) == (0, 307)
    small, large = status["dice-of-doom-2x2"], status["dice-of-doom-3x3"]
    assert (small["blocks_total"], small["blocks_done"], small["claims_held"]) == (307, 307, 0)
    assert small["bytes"] > 0
    assert (large["blocks_total"], large["blocks_done"]) == (19_495, 0)
    assert "dice-of-doom-2x2" in text
    assert "307 of    307 blocks (100.0%)" in text


def test_precompute_says_wins_ties_and_losses_and_what_the_expected_share_is(
    tmp_path: Path,
) -> None:
    said = words(memo_solver(tmp_path / "tmp.sqlite", "precompute", *SIZE_2))

    assert said.startswith(
        "dice-of-doom-2x2: solved, of all turn starts the player to move wins 0.5038580247, "
        "ties 0.1589506173 and loses 0.3371913580 (expected share, ties counting half: "
        "0.5833333333); computed 307 of 307 blocks in "
    )


@pytest.mark.parametrize("through", ["dump.msgpack", "copy.sqlite"])
def test_export_and_import_round_trip_the_2x2_game(tmp_path: Path, through: str) -> None:
    source, target, middle = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / through
    answer(memo_solver(source, "precompute", *SIZE_2, "--json"))

    exported = answer(memo_solver(source, "export", *SIZE_2, "--to", str(middle), "--json"))
    imported = answer(memo_solver(target, "import", *SIZE_2, "--from", str(middle), "--json"))
    status = answer(memo_solver(target, "status", "--json"))["rule_sets"]
    advice = advise(target, BOOK)

    for copied in (exported, imported):
        assert copied == {
            "rules": "dice-of-doom-2x2",
            "blocks": 307,
            "skipped_bad": 0,
            "blocks_total": 307,
        }
    assert status["dice-of-doom-2x2"]["blocks_done"] == 307
    assert advice["source"] == "memo"
    assert without_stats_or_source(advice) == without_stats_or_source(advise(source, BOOK))


def test_importing_blocks_of_the_other_size_is_refused_in_one_line(tmp_path: Path) -> None:
    dump = tmp_path / "dump.msgpack"
    answer(memo_solver(tmp_path / "a.sqlite", "precompute", *SIZE_2, "--json"))
    answer(memo_solver(tmp_path / "a.sqlite", "export", *SIZE_2, "--to", str(dump), "--json"))

    result = memo_solver(tmp_path / "b.sqlite", "import", *DOOM, "--size", "3", "--from", str(dump))

    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "holds blocks of 'dice-of-doom-2x2'" in lines[0]
    assert "not of dice-of-doom-3x3" in lines[0]


# --- play -----------------------------------------------------------------------------------


def test_play_reproduces_the_books_game_against_the_computer(tmp_path: Path) -> None:
    result = memo_solver(
        tmp_path / "s.sqlite", "play", *DOOM, "--board", BOOK, "--json", stdin="1\n1\n1\n1\n"
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == BOOK_2X2 + '{"finished": true, "winners": ["b"]}\n'
    assert result.stderr == ""


def test_play_stops_when_the_input_runs_out(tmp_path: Path) -> None:
    result = memo_solver(
        tmp_path / "s.sqlite", "play", *DOOM, "--board", BOOK, "--human", "b", "--json", stdin=""
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "current player = a\n    a-3 b-3\n  a-2 b-2\ncomputer (a): 0 -> 3\n"
    )
    assert result.stdout.endswith('The game stopped.\n{"finished": false, "winners": null}\n')


def test_a_position_computed_on_the_shared_memo_says_what_it_solves(tmp_path: Path) -> None:
    """Past the solver's limit, advise computes the blocks it needs into the store, and says
    so as every solving command does; the second time it reads them."""
    store = tmp_path / "s.sqlite"
    board = "a-3 a-3 / b-2 b-3"
    first = memo_solver(store, "advise", *DOOM, board, "--limit", "5", "--json")
    again = memo_solver(store, "advise", *DOOM, board, "--limit", "5", "--json")

    assert answer(first)["source"] == "computed"
    assert (
        first.stderr == "solving dice-of-doom-2x2: 150 blocks to compute (the store keeps them)\n"
    )
    assert (answer(again)["source"], again.stderr) == ("memo", "")


SEED_2_3X3 = "a-3 a-3 a-1 / b-2 a-3 b-2 / b-3 a-3 a-2"
"""The 3x3 board that ``--size 3 --seed 2`` draws: solving it holds 288,639 positions."""


def test_play_takes_a_limit_and_says_what_it_solves_when_it_takes_long(tmp_path: Path) -> None:
    game = ["play", *DOOM, "--size", "3", "--seed", "2"]
    too_small = memo_solver(tmp_path / "s.sqlite", *game, "--limit", "200000", stdin="")
    assert "needs more than 200,000 distinct positions" in one_error_line(too_small)
    assert too_small.stdout == ""  # said before the first move, not after

    enough = memo_solver(tmp_path / "s.sqlite", *game, "--limit", "300000", stdin="")
    assert enough.returncode == 0, enough.stderr
    assert enough.stdout.startswith(f"current player = a\n{draw_board(parse_board(SEED_2_3X3))}")
    assert enough.stderr == (
        "solving the position: over 262,144 positions, at most 300,000 (--limit)\n"
    )


def test_play_draws_the_same_random_board_for_the_same_seed(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    games = [
        words(memo_solver(store, "play", *DOOM, "--size", "3", "--seed", "7", stdin=""))
        for _ in range(2)
    ]

    assert games[0] == games[1]
    assert games[0].splitlines()[0].startswith("current player = a")
