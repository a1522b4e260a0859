"""``memo-solver play`` as a real process: scripted games, typos asked again, the table's own
commands (help, all, undo, quit), input cut short, Ctrl-C, a cold store's progress, and a
game at a risk."""

from __future__ import annotations

import json
import os
import queue
import random
import re
import signal
import subprocess
import threading
from io import StringIO
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import risk_brute_force as brute
from support.cli_support import CLI, ENV, TIMEOUT_S, TINY_RULES, memo_solver, one_error_line
from support.dice_variants import SIX_DICE, THREE_DICE

from memo_solver.cli.play import play_game
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore


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
    """A store where ``yahtzee-upper`` is solved: the games below print nothing on stderr."""
    path = tmp_path_factory.mktemp("play") / "store.sqlite3"
    subprocess.run(
        [str(CLI), "--store", str(path), "precompute", "--rules", "yahtzee-upper"],
        capture_output=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=True,
    )
    return path


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


def test_a_typo_gets_the_word_it_was_meant_to_be_and_the_boxes_in_scorecard_order(
    store: Path,
) -> None:
    script = ["66666", "kep 66", "sixs", *FIVE_OF_A_KIND_GAME[1:]]
    result = play(store, "yahtzee-upper", script)

    assert result.returncode == 0, result.stderr
    assert "Game over: final score 140" in result.stdout
    boxes = (
        "is not an open box you may use now (choose from: ones, twos, threes, fours, fives, sixes)"
    )
    assert f"'kep 66' {boxes} (did you mean 'keep 66'?)" in result.stdout
    assert f"'sixs' {boxes} (did you mean 'sixes'?)" in result.stdout


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


@pytest.mark.parametrize(
    "script",
    [[], ["66666"], FIVE_OF_A_KIND_GAME[:-3], ["66666", "keep 66"]],
    ids=["nothing", "dice-only", "last-turn", "mid-reroll"],
)
def test_input_ending_mid_game_stops_it_in_one_line(store: Path, script: list[str]) -> None:
    result = play(store, "yahtzee-upper", script)

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    last = result.stdout.splitlines()[-1]
    assert last.startswith("Game stopped (end of input) at turn ")
    assert "Game over" not in result.stdout


def test_input_ending_in_json_is_a_last_stopped_line(store: Path) -> None:
    result = play(store, "yahtzee-upper", FIVE_OF_A_KIND_GAME[:-3], "--json")

    assert result.returncode == 0, result.stderr
    last = json.loads(result.stdout.splitlines()[-1])
    assert last == {"stopped": "end of input", "turn": 5, "score": 125}  # 30+25+20+15, +35


@pytest.mark.parametrize("word", ["quit", "q", "QUIT"])
def test_quit_stops_the_game_at_once(store: Path, word: str) -> None:
    result = play(store, "yahtzee-upper", ["66666", "", "55555", word, "", "44444", ""])

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1] == "Game stopped (quit) at turn 2: score 30"
    assert "scored 25" not in result.stdout  # the Enter after quit played nothing


def test_help_lists_the_commands_and_asks_again(store: Path) -> None:
    result = play(store, "yahtzee-upper", ["help", "66666", "help", *FIVE_OF_A_KIND_GAME[1:]])

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("undo         take back the last decision") == 2
    assert "not an open box" not in out  # 'help' is no box name
    assert out.count("Roll five dice and type them") == 6 + 1  # asked again after help
    assert "Game over: final score 140" in out


def test_all_shows_every_move(store: Path) -> None:
    result = play(store, "yahtzee-upper", ["12345", "all", "quit"])

    assert result.returncode == 0, result.stderr
    first, every = result.stdout.split("('all' shows them)\n", 1)
    # 32 keeps (every subset of five distinct dice, none and all included), 6 boxes.
    assert every.count(" expect ") == 32 + 6
    assert "more move" not in every
    assert "  ... and 32 more moves" in first


def test_undo_takes_back_a_box_a_keep_and_dice(store: Path) -> None:
    script = [
        "66666",
        "fives",  # scored 0 in Fives ...
        "undo",  # ... taken back: the same dice, asked again
        "",  # sixes after all
        "55556",  # a typo ...
        "undo",  # ... taken back: asked for the dice again
        "55555",
        "keep 55",  # a keep ...
        "undo",  # ... taken back before the reroll is typed
        "",
        *FIVE_OF_A_KIND_GAME[4:],
    ]
    result = play(store, "yahtzee-upper", script)

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "scored 0 in Fives; total 0" in out
    assert out.count("undone: back to turn 1, score 0") == 1
    assert out.count("undone: back to turn 2, score 30") == 2
    assert out.count("Reroll 3 and type all five dice") == 1  # answered with undo
    assert "Game over: final score 140" in out  # as if nothing had been taken back


def test_undo_in_json_says_where_the_game_went_back_to(store: Path) -> None:
    result = play(store, "yahtzee-upper", ["undo", "66666", "", "undo", "quit"], "--json")

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0] == {"error": {"field": "undo", "message": "nothing to undo yet"}}
    assert lines[1]["choice"]["category"] == "sixes"
    assert lines[2] == {"undone": {"turn": 1, "asking": "move"}}
    assert lines[3] == {"stopped": "quit", "turn": 1, "score": 0}


def test_ctrl_c_at_a_prompt_leaves_at_once(store: Path) -> None:
    """Ctrl-C typed at the terminal: exit status 130 and one line, never the best move
    played by the next Enter (the bug: the first Ctrl-C waited for one)."""
    import fcntl
    import pty
    import termios

    leader, follower = pty.openpty()

    def on_its_own_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # Ctrl-C on the pty interrupts the game
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # whatever the test runner ignores

    process = subprocess.Popen(
        [str(CLI), "--store", str(store), "play", "--rules", "yahtzee-upper"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=ENV,
        preexec_fn=on_its_own_terminal,
    )
    os.close(follower)
    screen = _read_until(leader, "Roll five dice")
    os.write(leader, b"66666\n")
    screen += _read_until(leader, "Your move")
    os.write(leader, b"\x03")
    try:
        status = process.wait(timeout=TIMEOUT_S)  # no Enter follows: it must leave without
    finally:
        process.kill()
    screen += _read_until(leader, None)
    os.close(leader)

    assert status == 130, screen
    assert screen.endswith("memo-solver: interrupted (the store keeps every finished block)\r\n")
    assert "Traceback" not in screen
    assert "scored" not in screen


def _read_until(fd: int, text: str | None) -> str:
    """What the terminal shows until ``text`` appears (None: until the process is gone)."""
    seen = ""
    while text is None or text not in seen:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the process closed its end
            chunk = b""
        if not chunk:
            assert text is None, f"the game ended before {text!r}: {seen}"
            return seen
        seen += chunk.decode(errors="replace")
    return seen


def test_play_on_an_empty_store_says_turn_1_then_what_it_solves(tmp_path: Path) -> None:
    result = play(tmp_path / "empty.sqlite3", "yahtzee-upper", ["quit"])

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Turn 1: score 0, upper total 0\n  expected final score ")
    assert result.stderr == "solving yahtzee-upper: 64 blocks to compute (the store keeps them)\n"


def test_play_on_an_empty_terminal_shows_turn_1_then_the_progress(tmp_path: Path) -> None:
    from support.cli_support import on_a_terminal

    screen = on_a_terminal(
        str(CLI), "--store", str(tmp_path / "empty.sqlite3"), "play", "--rules", "yahtzee"
    )  # its standard input is empty: the game stops at the first question

    turn_1 = screen.index("Turn 1: score 0, upper total 0")
    bar = screen.index("yahtzee:   0%|")
    assert turn_1 < bar < screen.index("8192/8192") < screen.index("expected final score 254.59")


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


def drive_a_game(store: Path, rules: str, seed: int, stderr: str = "") -> None:
    """Roll real random dice and press Enter every time: the best move, whatever it is;
    what the game says on stderr matches the pattern ``stderr``."""
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
        status, said = table.close()
        assert status == 0
        assert re.fullmatch(stderr, said), said


@pytest.mark.parametrize("seed", range(3))
def test_a_random_game_of_yahtzee_upper_driven_move_by_move(store: Path, seed: int) -> None:
    drive_a_game(store, "yahtzee-upper", seed)


@pytest.mark.slow
def test_a_random_game_of_yahtzee_driven_move_by_move(store: Path) -> None:
    # The store holds only yahtzee-upper: the whole game, a large cone, its cost said first.
    solving = r"solving yahtzee: 8,?192 blocks to compute[^\n]*\n"  # with its cost on a slow host
    drive_a_game(store, "yahtzee", 2024, solving)


# --- other dice counts, in process -------------------------------------------------------------


def play_in_process(rules: RuleSet, script: list[str]) -> str:
    """A game of a rule set from its definition (no store, no command line) on a memory
    engine: what the table prints."""
    out = StringIO()

    async def game() -> int:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            lines = StringIO("".join(line + "\n" for line in script))
            return await play_game(engine, rules, lines, out, as_json=False)

    assert anyio.run(game) == 0
    return out.getvalue()


def test_a_six_dice_table_asks_for_six_dice_and_names_them() -> None:
    out = play_in_process(SIX_DICE, ["66666", "666666", "all", "quit"])

    assert "Roll six dice and type them (e.g. 122266): " in out
    assert "expected 6 dice, got 5; type six faces like 122266" in out
    assert "keep all six dice" in out
    assert "reroll all six dice" in out
    assert "keep 6 6 6 6 6 and reroll 1 die" in out


def test_a_three_dice_table_takes_kept_dice_among_the_three() -> None:
    out = play_in_process(THREE_DICE, ["123", "keep 1", "45", "456", "145", "quit"])

    assert "Roll three dice and type them (e.g. 122): " in out
    assert "Reroll 2 and type all three dice: " in out
    assert "expected 3 dice, got 2; type three faces like 122" in out
    assert "you kept 1: those dice must be among the three" in out
    assert "Game stopped (quit) at turn 1" in out


SAVED_CHANCE = parse_rule_set(
    {
        "name": "two-chances",
        "dice": 1,
        "rerolls": 1,
        "saved_rolls": True,
        "boxes": [{"name": "first", "kind": "chance"}, {"name": "second", "kind": "chance"}],
    }
)
"""One die, two rolls a turn, two Chance boxes: a 6 on the first roll is scored at once, and
the roll it leaves unused is carried to the second turn (three rolls there)."""


def test_the_bank_is_shown_counted_down_and_carried_to_the_next_turn() -> None:
    out = play_in_process(
        SAVED_CHANCE, ["6", "first", "2", "keep none", "3", "keep none", "5", "second"]
    )

    assert "Turn 1: score 0, upper total 0, no rolls saved" in out
    assert "score 6 in First and carry 1 roll" in out
    assert "Turn 2: score 6, upper total 0, 1 roll saved" in out
    assert "reroll the die (1 roll left after it)" in out  # two left after the first roll
    assert "reroll the die (no rolls left after it)" in out
    assert "no rolls left: score the dice in a box" not in out
    assert "Game over: final score 11" in out


@pytest.mark.slow  # starts processes
def test_play_at_a_risk_ranks_by_certainty_equivalent_beside_the_mean(
    tmp_path: Path, tiny_rules_file: Path
) -> None:
    """The tiny game (one die, one chance box, one reroll) at theta 0.5: a 4 is worth 4
    scored, but its reroll more to a bold player (the brute force's certainty equivalent),
    so Enter rerolls and the 6 that follows is scored."""
    store = tmp_path / "store.sqlite3"
    args = ("play", "--rules-file", str(tiny_rules_file), "--risk", "0.5")
    script = "4\n\n6\n\n"
    reroll = brute.actions(TINY_RULES, 0.5, (), 0, False, (4,), 1)["keep nothing"]

    words = memo_solver(store, *args, stdin=script)
    assert words.returncode == 0, words.stderr
    start = brute.value(TINY_RULES, 0.5, (), 0, False)
    assert f"certainty equivalent at risk 0.5: {start:.2f}" in words.stdout
    assert re.search(
        rf"best +reroll the die +certain +{reroll:.3f}, expect +3\.500 more", words.stdout
    )
    assert re.search(
        r"-0\.18 +score 4 in Chance +certain +4\.000, expect +4\.000 more", words.stdout
    )
    assert "Game over: final score 6" in words.stdout

    lines = [
        json.loads(line)
        for line in memo_solver(store, *args, "--json", stdin=script).stdout.splitlines()
    ]
    assert lines[-1] == {"final_score": 6, "turns": 1}
    first = lines[0]
    assert first["choice"] == first["best"]
    assert first["choice"]["words"] == "reroll the die"
    assert first["choice"]["value"] == pytest.approx(3.5)
    assert first["choice"]["certainty_equivalent"] == pytest.approx(reroll, rel=1e-9)

    assert "0.501" in one_error_line(memo_solver(store, *args[:-1], "0.501", stdin=script))
    both = memo_solver(store, *args, "--target", "5", stdin=script)
    assert one_error_line(both) == "memo-solver: error: give --target or --risk, not both"
