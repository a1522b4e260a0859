"""Options where people type them: the store, ``-v`` and ``--json`` on either side of the
command with one resolution, and each game's options refused for the other game.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.cli_support import (
    CLI,
    COMMANDS,
    ENV,
    TIMEOUT_S,
    answer,
    command_parsers,
    memo_solver,
    one_error_line,
    parsed,
    status_store,
)

from memo_solver.cli import main as memo_cli

# --- options: on either side of the command, one resolution -----------------------------------


def test_every_command_is_checked_below() -> None:
    assert set(command_parsers()) == set(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("option", "before", "after", "dest"),
    [
        ("--store", "a.db", "b.db", "store"),
        ("--redis", "redis://before/1", "redis://after/2", "redis"),
    ],
)
def test_store_options_go_on_either_side_and_the_commands_own_wins(
    command: str, option: str, before: str, after: str, dest: str
) -> None:
    def value(*argv: str) -> object:
        found = getattr(parsed(*argv), dest)
        return str(found) if found is not None else None

    required = COMMANDS[command]
    assert value(option, before, command, *required) == before
    assert value(command, *required, option, after) == after
    assert value(option, before, command, *required, option, after) == after
    assert value(command, *required) is None


@pytest.mark.parametrize("command", list(COMMANDS))
def test_verbose_goes_on_either_side(command: str) -> None:
    required = COMMANDS[command]
    assert parsed("-v", command, *required).verbose
    assert parsed(command, *required, "-v").verbose
    assert parsed(command, *required, "--verbose").verbose
    assert not parsed(command, *required).verbose


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "worker"])
def test_json_goes_on_either_side(command: str) -> None:
    required = COMMANDS[command]
    assert parsed("--store", "s.db", "--json", command, *required).json
    assert parsed(command, *required, "--json").json
    assert not parsed(command, *required).json


def test_a_worker_refuses_json_before_it_as_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A worker prints no answer to put in JSON: ``worker --json`` is an unknown option."""
    assert memo_cli.main(["--redis", "redis://127.0.0.1:1/0", "--json", "worker"]) == 2
    assert capsys.readouterr().err == (
        "memo-solver: error: --json: a worker prints no answer, only its log\n"
    )


def test_the_store_named_after_the_command_is_the_one_used(tmp_path: Path) -> None:
    """``--store`` after the command, where people type it; the cache folder stays empty."""
    env = {**ENV, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    store = tmp_path / "after.sqlite3"
    argv = ["value", "--rules", "yazy", "open=yazy", "--store", str(store), "--json"]
    value = subprocess.run(
        [str(CLI), *argv], capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False
    )
    assert answer(value)["value"] == pytest.approx(50 * 2783176 / 60466176)
    assert store.is_file()
    assert not (tmp_path / "cache").exists()
    other = str(tmp_path / "before.sqlite3")
    assert status_store(env, "--store", other) == other
    assert status_store(env, "--store", other, after=("--store", str(store))) == str(store)


def test_verbose_after_the_command_logs(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "s.db", "status", "-v")

    assert result.returncode == 0, result.stderr
    assert " DEBUG " in result.stderr


# --- options of one game only -----------------------------------------------------------------

OTHER_GAMES_OPTIONS = [
    # (command and its arguments, the option of the other game)
    (["precompute", "--game", "dice-of-doom"], ["--rules", "yahtzee-lower"]),
    (["export", "--game", "dice-of-doom", "--to", "x.msgpack"], ["--rules", "yazy"]),
    (["import", "--game", "dice-of-doom", "--from", "x.msgpack"], ["--rules", "yazy"]),
    (["precompute"], ["--size", "2"]),
    (["export", "--to", "x.msgpack"], ["--size", "2"]),
    (["advise", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--rules", "yazy"]),
    (["advise", "start"], ["--to-move", "b"]),
    (["advise", "start"], ["--captured", "1"]),
    (["advise", "start"], ["--limit", "10"]),
    (["stats", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--threshold", "1"]),
    (["stats", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--plot", "p.png"]),
    (["stats"], ["--limit", "10"]),
    (["play", "--game", "dice-of-doom"], ["--rules", "yazy"]),
    (["play"], ["--size", "3"]),
    (["play"], ["--board", "a-3 b-3 / a-2 b-2"]),
    (["play"], ["--human", "b"]),
    (["play"], ["--seed", "1"]),
    (["play"], ["--limit", "10"]),
]


@pytest.mark.parametrize(
    ("argv", "option"), OTHER_GAMES_OPTIONS, ids=[" ".join(a + o) for a, o in OTHER_GAMES_OPTIONS]
)
def test_an_option_of_the_other_game_is_refused(
    argv: list[str], option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parsed(*argv, *option)
    assert stopped.value.code == 2
    game = "yahtzee" if "dice-of-doom" in argv else "dice-of-doom"
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"memo-solver: error: {option[0]} is for --game {game}, not ")


def test_a_precompute_of_dice_of_doom_with_rules_is_refused_at_once(tmp_path: Path) -> None:
    result = memo_solver(
        tmp_path / "s.db", "precompute", "--game", "dice-of-doom", "--rules", "yahtzee-lower"
    )
    line = one_error_line(result)
    assert "--rules is for --game yahtzee, not dice-of-doom (which takes --size)" in line
    assert not (tmp_path / "s.db").exists()


def test_options_of_the_chosen_game_keep_their_defaults() -> None:
    doom = parsed("precompute", "--game", "dice-of-doom")
    assert (doom.size, doom.rules) == (3, "yahtzee")
    assert parsed("precompute", "--game", "dice-of-doom", "--size", "2").size == 2
    assert parsed("precompute", "--rules", "yazy").rules == "yazy"
    played = parsed("play")
    assert (played.size, played.board, played.human, played.seed) == (2, None, "a", None)
    stats = parsed("stats", "--threshold", "5", "--threshold", "9")
    assert (stats.threshold, stats.plot, stats.to_move, stats.limit) == (
        [5, 9],
        None,
        "a",
        2_000_000,
    )
    assert parsed("stats").threshold == []
    advised = parsed("advise", "--game", "dice-of-doom", "x", "--to-move", "b", "--captured", "2")
    assert (advised.to_move, advised.captured, advised.rules) == ("b", 2, "yahtzee")
