"""``advise --need``, ``value --need`` and ``play --target`` as real processes.

The game is one die and one chance box with one reroll (``cli_support.TINY_RULES``), so every
chance is a player's arithmetic: a roll meets a need N with chance (7 - N) / 6, and a die
kept or scored is worth its face.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_support import answer, memo_solver, one_error_line

from memo_solver.cli.options import DEFAULT_NEED_CAP
from memo_solver.games.yahtzee.solve.need import DEFAULT_CAP

TOL = 1e-9


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


def test_the_parser_offers_the_default_cap_of_the_need_table() -> None:
    assert DEFAULT_NEED_CAP == DEFAULT_CAP


def test_advise_needing_five_with_a_four_rerolls_against_the_mean(
    store: Path, tiny_rules_file: Path
) -> None:
    """A 4 in hand scores 4 (the mean's choice, worth 4 against a reroll's 3.5) but can
    never make 5; the reroll makes it one time in three. Keeping and scoring tie at 0 and
    keep the mean's order."""
    args = ("advise", "--rules-file", str(tiny_rules_file), "dice=4 rerolls=1", "--need", "5")
    advice = answer(memo_solver(store, *args, "--json"))

    assert advice["need"] == 5
    assert advice["cap"] == DEFAULT_CAP
    assert advice["probability"] == pytest.approx(1 / 3, abs=TOL)
    assert advice["turn_start_probability"] == pytest.approx(1 - (4 / 6) ** 2, abs=TOL)
    assert advice["value"] == pytest.approx(4.0, abs=TOL)
    assert [(a["words"], a["probability"]) for a in advice["actions"]] == [
        ("reroll the die", pytest.approx(1 / 3, abs=TOL)),
        ("score 4 in Chance", 0.0),
        ("keep the die", 0.0),
    ]
    words = memo_solver(store, *args)
    assert words.returncode == 0, words.stderr
    assert "Best for 5 more points: reroll the die  (chance 0.333333)" in words.stdout
    assert "Best for points: score 4 in Chance" in words.stdout


def test_advise_reads_states_line_by_line_with_a_need(store: Path, tiny_rules_file: Path) -> None:
    lines = '{"dice": [6], "rerolls_left": 1}\n{"dice": [9]}\n{"dice": [2], "rerolls_left": 0}\n'
    result = memo_solver(
        store, "advise", "--rules-file", str(tiny_rules_file), "-", "--need", "6", stdin=lines
    )

    assert result.returncode == 2
    first, bad, last = (json.loads(line) for line in result.stdout.splitlines())
    assert first["probability"] == 1.0
    assert bad["error"]["line"] == 2
    assert last["probability"] == 0.0


def test_value_with_a_need_prints_the_chance(store: Path, tiny_rules_file: Path) -> None:
    """From the start: a 4 or more is kept, so N = 4 is met with 1 - (1/2) ** 2 = 3/4."""
    args = ("value", "--rules-file", str(tiny_rules_file), "--need", "4")
    payload = answer(memo_solver(store, *args, "--json"))

    assert payload["probability"] == pytest.approx(0.75, abs=TOL)
    assert payload["value"] == pytest.approx(4.25, abs=TOL)
    assert payload["blocks_computed"] > 0
    assert memo_solver(store, *args).stdout.strip() == "0.7500000000"
    assert answer(memo_solver(store, *args, "--json"))["blocks_computed"] == 0


@pytest.mark.parametrize(("need", "chance"), [(-3, 1.0), (0, 1.0), (7, 0.0), (5000, 0.0)])
def test_a_need_met_already_or_past_any_roll_is_certain_either_way(
    store: Path, tiny_rules_file: Path, need: int, chance: float
) -> None:
    args = ("value", "--rules-file", str(tiny_rules_file), "--need", str(need), "--need-cap", "3")
    assert answer(memo_solver(store, *args, "--json"))["probability"] == chance


def test_a_need_above_the_cap_that_a_roll_could_meet_is_refused(
    store: Path, tiny_rules_file: Path
) -> None:
    result = memo_solver(
        store, "value", "--rules-file", str(tiny_rules_file), "--need", "5", "--need-cap", "4"
    )
    line = one_error_line(result)
    assert "need 5 is above the need table's cap of 4" in line
    assert "--need-cap" in line


def test_need_threads_must_be_positive(store: Path, tiny_rules_file: Path) -> None:
    result = memo_solver(
        store, "value", "--rules-file", str(tiny_rules_file), "--need", "3", "--need-threads", "0"
    )
    assert "--need-threads must be 1 or more, got 0" in one_error_line(result)


@pytest.mark.parametrize("cap", ["0", "2001"])
def test_a_cap_out_of_range_is_refused(store: Path, tiny_rules_file: Path, cap: str) -> None:
    result = memo_solver(
        store, "value", "--rules-file", str(tiny_rules_file), "--need", "3", "--need-cap", cap
    )
    assert "the need cap must be between 1 and 2000" in one_error_line(result)


def test_play_for_a_target_rerolls_a_four_for_a_six(store: Path, tiny_rules_file: Path) -> None:
    """Aiming at 6, a 4 is rerolled (Enter takes the best chance, 1/6), though for points it
    is worth scoring; the reroll shows a 6 and Enter scores it."""
    result = memo_solver(
        store,
        "play",
        "--rules-file",
        str(tiny_rules_file),
        "--target",
        "6",
        "--json",
        stdin="4\n\n6\n\n",
    )
    assert result.returncode == 0, result.stderr
    moves = [json.loads(line) for line in result.stdout.splitlines()]
    assert moves[0]["choice"]["words"] == "reroll the die"
    assert moves[0]["choice"]["probability"] == pytest.approx(1 / 6, abs=TOL)
    assert moves[1]["choice"]["words"] == "score 6 in Chance"
    assert moves[-1] == {"final_score": 6, "turns": 1}


def test_advise_against_an_opponent_rerolls_a_four_that_loses_too_often(
    store: Path, tiny_rules_file: Path
) -> None:
    """Level against an opponent about to play the one-die game for points: the 4 in hand
    wins 1/4 of the time, a reroll 7/24 (``test_beat.py`` does the arithmetic). Six points
    behind, no roll can win: the moves then keep the mean's order."""
    args = (
        "advise",
        "--rules-file",
        str(tiny_rules_file),
        "dice=4 rerolls=1",
        "--opponent",
        "start",
    )
    advice = answer(memo_solver(store, *args, "--json"))

    assert advice["probability"] == pytest.approx(7 / 24, abs=TOL)
    assert advice["actions"][0]["words"] == "reroll the die"
    assert advice["opponent"] == {"mean_final_score": pytest.approx(4.25), "best": 6}
    words = memo_solver(store, *args, "--score", "3", "--opponent-score", "9").stdout
    assert words.startswith(
        "Best to finish above the opponent: score 4 in Chance  (chance 0.000000"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--opponent", "dice=9"), "--opponent: "),
        (("--opponent", "start", "--need", "3"), "give --need or --opponent, not both"),
    ],
)
def test_a_bad_opponent_is_one_line(
    store: Path, tiny_rules_file: Path, extra: tuple[str, ...], message: str
) -> None:
    result = memo_solver(store, "advise", "--rules-file", str(tiny_rules_file), "start", *extra)
    assert message in one_error_line(result)
