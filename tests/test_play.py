"""``memo-solver play`` as a real process: scripted games, typos asked again, input cut short."""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from cli_support import one_error_line

from memo_solver.rules import RULE_SETS

CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if k != "MEMO_SOLVER_STORE"},
    "OPENBLAS_NUM_THREADS": "1",
}
TIMEOUT_S = 120


def play(
    store: Path, rules: str, script: list[str], *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), "play", "--rules", rules, *extra],
        input="".join(line + "\n" for line in script),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("play") / "store.sqlite3"


# Five of a kind from the top down, Enter each time: scoring at once is always best here.
FIVE_OF_A_KIND_GAME = [line for face in "654321" for line in (face * 5, "")]


def test_a_scripted_game_ends_with_the_final_score(store: Path) -> None:
    result = play(store, "yahtzee-upper", FIVE_OF_A_KIND_GAME)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Turn 6: score 135, upper total 100" in result.stdout
    # 5 x (6 + 5 + 4 + 3 + 2 + 1) = 105, and the bonus of 35 for reaching 63.
    assert "Game over: final score 140" in result.stdout
    assert result.stdout.count("scored ") == 6


def test_a_scripted_game_in_json(store: Path) -> None:
    result = play(store, "yahtzee-upper", FIVE_OF_A_KIND_GAME, "--json")

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1] == {"final_score": 140, "turns": 6}
    moves = lines[:-1]
    assert [m["choice"]["category"] for m in moves] == [
        "sixes",
        "fives",
        "fours",
        "threes",
        "twos",
        "ones",
    ]
    assert all(m["choice"] == m["best"] for m in moves)
    assert sum(m["choice"]["points"] + m["choice"]["bonus"] for m in moves) == 140


def test_bad_answers_are_explained_and_asked_again(store: Path) -> None:
    script = [
        "abc",  # not dice
        "6666",  # four dice
        "66666",
        "bogus",  # no such box
        "keep 7",  # not a face
        "keep 1",  # not among the dice
        "keep 66",
        "11111",  # the kept sixes are missing
        "66111",
        "keep 11166",  # keep all five: no dice to type
        "keep 66",  # no rerolls left now
        "sixes",
        *FIVE_OF_A_KIND_GAME[2:],
    ]
    result = play(store, "yahtzee-upper", script)

    assert result.returncode == 0, result.stderr
    out = result.stdout
    for explanation in [
        "'abc' is not a list of faces 1..6; type five faces like 12226",
        "expected 5 dice, got 4",
        "'bogus' is not an open box you may use now (choose from: ",
        "'7' is not a list of faces 1..6",
        "1 is not among your dice",
        "you kept 6 6: those dice must be among the five",
        "no rerolls left: score the dice in a box",
    ]:
        assert explanation in out
    assert out.count("Roll five dice and type them") == 6 + 2  # asked twice more on turn 1
    assert "scored 12 in Sixes; total 12" in out
    assert "Game over: final score 122" in out  # 12 + 25 + 20 + 15 + 10 + 5 + 35


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["words", "json"])
@pytest.mark.parametrize(
    "script",
    [[], ["66666"], FIVE_OF_A_KIND_GAME[:-3], ["66666", "keep 66"]],
    ids=["nothing", "dice-only", "last-turn", "mid-reroll"],
)
def test_input_ending_mid_game_is_one_error_line(
    store: Path, mode: list[str], script: list[str]
) -> None:
    result = play(store, "yahtzee-upper", script, *mode)

    assert "ended before the game did" in one_error_line(result)
    assert "Game over" not in result.stdout


# --- a game driven move by move, as a program would ---------------------------------------------


class Table:
    """``play --json`` driven interactively: every answer is written only when it is asked for."""

    def __init__(self, store: Path, rules: str) -> None:
        self.process = subprocess.Popen(
            [str(CLI), "--store", str(store), "play", "--rules", rules, "--json"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT_S)
        self._reader.join(timeout=TIMEOUT_S)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def send(self, *lines: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("".join(line + "\n" for line in lines))
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=TIMEOUT_S)
        except queue.Empty:
            raise AssertionError("the game stopped answering") from None
        assert line, f"the game ended early: {self.close()}"
        payload: dict[str, Any] = json.loads(line)
        return payload

    def close(self) -> tuple[int, str]:
        """End of input: the exit status and what the game said on stderr."""
        assert self.process.stdin is not None
        assert self.process.stderr is not None
        self.process.stdin.close()
        status = self.process.wait(timeout=TIMEOUT_S)
        return status, self.process.stderr.read()


def roll(rng: random.Random, kept: list[int]) -> str:
    return "".join(map(str, kept + [rng.randint(1, 6) for _ in range(5 - len(kept))]))


def drive_a_game(store: Path, rules: str, seed: int) -> None:
    """Roll real random dice and press Enter every time: the best move, whatever it is."""
    rng = random.Random(seed)
    n_turns = len(RULE_SETS[rules].categories)
    total = turns = 0
    with Table(store, rules) as table:
        table.send(roll(rng, []), "")
        while True:
            move = table.receive()
            choice = move["choice"]
            assert choice == move["best"]
            assert move["turn"] == turns + 1
            if choice["kind"] == "score":
                total += choice["points"] + choice["bonus"]
                turns += 1
                if turns == n_turns:
                    break
                table.send(roll(rng, []), "")
            elif len(choice["keep"]) == 5:
                assert move["rerolls_left"] > 0
                table.send("")  # the same dice, one reroll fewer: just the move
            else:
                assert move["rerolls_left"] > 0
                table.send(roll(rng, choice["keep"]), "")
        assert table.receive() == {"final_score": total, "turns": n_turns}
        assert table.close() == (0, "")


@pytest.mark.parametrize("seed", range(3))
def test_a_random_game_of_yahtzee_upper_driven_move_by_move(store: Path, seed: int) -> None:
    drive_a_game(store, "yahtzee-upper", seed)


@pytest.mark.slow
def test_a_random_game_of_yahtzee_driven_move_by_move(store: Path) -> None:
    drive_a_game(store, "yahtzee", 2024)
