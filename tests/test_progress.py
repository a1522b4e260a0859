"""A solve's progress: the engine counts the blocks a query needs before solving them, and
every solving command shows them (a bar on a terminal, one line otherwise, nothing warm)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from support.cli_support import CLI, ENV, TIMEOUT_S, on_a_terminal
from test_engine import LOWER, below, mask_with_open

from memo_solver.cli.progress import cost_words
from memo_solver.core.engine import Cost, Counters, open_engine
from memo_solver.core.game import Game
from memo_solver.games.dice_of_doom.game import DiceOfDoomGame
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.stores.memory import MemoryStore

SOLVING_LOWER = "solving yahtzee-lower: 128 blocks to compute (the store keeps them)\n"


class Told:
    """An engine's ``on_progress``: what it was told, as (needed, computed) pairs."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, counters: Counters) -> None:
        self.calls.append((counters.needed, counters.computed))


@pytest.mark.parametrize("game", [LOWER, DiceOfDoomGame(2)], ids=lambda game: game.name)
async def test_a_cold_query_needs_its_whole_cone_and_says_so_before_computing(game: Game) -> None:
    told = Told()
    async with open_engine(game, MemoryStore(), on_progress=told) as engine:
        await engine.block(game.root())

    assert told.calls[0] == (game.block_count, 0)  # the plan, before any block is computed
    assert told.calls[-1] == (game.block_count, game.block_count)
    computed = [done for _, done in told.calls]
    assert computed == sorted(computed)  # once per batch, as the blocks come


async def test_a_query_needs_only_what_the_store_lacks() -> None:
    store = MemoryStore()
    late = block_key(mask_with_open(LOWER, "chance", "yahtzee"))  # 4 blocks below it
    async with open_engine(LOWER, store) as engine:
        await engine.block(late)
    told = Told()
    async with open_engine(LOWER, store, on_progress=told) as engine:
        await engine.block(LOWER.root())

    assert told.calls[0] == (128 - len(below(LOWER, late)), 0)
    assert engine.counters.computed == engine.counters.needed == 128 - 4


async def test_a_warm_query_needs_nothing_and_tells_nothing() -> None:
    store = MemoryStore()
    async with open_engine(LOWER, store) as engine:
        await engine.block(LOWER.root())
    told = Told()
    async with open_engine(LOWER, store, on_progress=told) as engine:
        await engine.block(LOWER.root())
        await engine.blocks(LOWER.successors(LOWER.root()))

    assert told.calls == []
    assert engine.counters.needed == 0


async def test_overlapping_queries_count_each_block_once() -> None:
    told = Told()
    async with (
        open_engine(LOWER, MemoryStore(), on_progress=told) as engine,
        anyio.create_task_group() as tg,
    ):
        for key in [LOWER.root(), *LOWER.successors(LOWER.root())]:
            tg.start_soon(engine.block, key)

    assert engine.counters.needed == engine.counters.computed == 128


async def test_without_on_progress_the_engine_counts_nothing() -> None:
    async with open_engine(LOWER, MemoryStore()) as engine:
        await engine.block(LOWER.root())

    assert engine.counters == Counters(computed=128, fetched=0, waited=0, needed=0)


# --- what a command shows ----------------------------------------------------------------------


def value(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), "value", "--rules", "yahtzee-lower", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


def test_a_cold_command_says_what_it_solves_in_one_line_and_a_warm_one_says_nothing(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"

    cold = value(store)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr == SOLVING_LOWER
    assert cold.stdout == "139.9712924424\n"

    warm = value(store)
    assert warm.returncode == 0, warm.stderr
    assert warm.stderr == ""
    assert warm.stdout == "139.9712924424\n"


def test_a_command_solving_below_a_stored_state_counts_only_what_is_missing(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"
    late = value(store, "open=chance,yahtzee")
    assert late.stderr == "solving yahtzee-lower: 4 blocks to compute (the store keeps them)\n"

    rest = value(store)
    assert rest.stderr == "solving yahtzee-lower: 124 blocks to compute (the store keeps them)\n"


def test_a_cold_command_on_a_terminal_draws_the_bar_before_the_answer(tmp_path: Path) -> None:
    screen = on_a_terminal(
        str(CLI), "--store", str(tmp_path / "s.sqlite3"), "value", "--rules", "yahtzee-lower"
    )

    redraws = [part for part in screen.split("\r") if "block/s" in part]
    assert redraws[0].startswith("yahtzee-lower:   0%")
    # blocks done of the blocks needed, [time spent<time left, rate], then the answer
    assert re.search(
        r"\ryahtzee-lower: 100%\|█+\| 128/128 \[\d\d:\d\d<\d\d:\d\d, [\d.]+block/s\]\r\n"
        r"139\.9712924424\r\n$",
        screen,
    )
    assert "solving yahtzee-lower" not in screen  # the line is for non-terminals


def test_a_warm_command_on_a_terminal_draws_no_bar(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite3"
    value(store)

    screen = on_a_terminal(str(CLI), "--store", str(store), "value", "--rules", "yahtzee-lower")
    assert screen == "139.9712924424\r\n"


# --- a large cold question: a layer at a time, its bar moving, Ctrl-C heard ---------------------

LARGE = "yatzy"
"""A game whose whole cone is large (32,768 blocks, seconds to solve cold): ``value`` from
its start takes the layered path, and is still solving when the tests below act."""


@contextmanager
def cold_value_on_a_terminal(store: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``value --rules yatzy`` on a cold store, on a pseudo-terminal (the process and the
    terminal's other end), interruptible by SIGINT whatever the test runner ignores."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [str(CLI), "--store", str(store), "value", "--rules", LARGE],
        stdout=follower,
        stderr=follower,
        env=ENV,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(follower)
    try:
        yield process, leader
    finally:
        process.kill()
        process.wait()
        os.close(leader)


def until_the_bar_moves(leader: int) -> tuple[float, float, str]:
    """When the bar was first drawn and when it first counted a solved block, and the
    screen so far."""
    shown: float | None = None
    screen = ""
    while True:
        chunk = os.read(leader, 65536).decode(errors="replace")
        assert chunk, screen
        screen += chunk
        for frame in re.findall(r"\| *(\d+)/32768 ", chunk):
            shown = time.monotonic() if shown is None else shown
            if int(frame) > 0:
                return shown, time.monotonic(), screen


@pytest.mark.slow
def test_a_cold_solve_on_a_terminal_moves_its_bar_within_a_second(tmp_path: Path) -> None:
    """The bar shows the cone's blocks at once and counts them as they are solved, the end
    of the game first: its first layer is one block (milliseconds, and the solver's
    compiled code loaded, a few tenths), and tqdm redraws at most every 0.1 s; a second
    leaves room for a load of 5. Solved top-down, the bar waited for the whole cone to be
    walked first (21 s)."""
    with cold_value_on_a_terminal(tmp_path / "s.sqlite3") as (_, leader):
        shown, moved, screen = until_the_bar_moves(leader)
    assert moved - shown < 1.0, screen


@pytest.mark.slow
def test_ctrl_c_stops_a_cold_solve_within_half_a_second(tmp_path: Path) -> None:
    """Pressed while the bar moves, Ctrl-C stops the solve after the solver's call under
    way (about 0.05 s of CPU, see ``_THREAD_CALL_S``), which gives back its claims and
    closes the store, and the process leaves without the interpreter's teardown (a
    second): about 0.1 s, 0.25 s at a load of 5 on two cores. It took 3 to 10 s when each
    thread call solved a whole batch and the teardown ran."""
    with cold_value_on_a_terminal(tmp_path / "s.sqlite3") as (process, leader):
        until_the_bar_moves(leader)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=TIMEOUT_S)
        took = time.monotonic() - sent
        screen = os.read(leader, 65536).decode(errors="replace")
    assert status == 130
    assert screen.endswith("memo-solver: interrupted (the store keeps every finished block)\r\n")
    assert took < 0.5


# --- what a large solve will cost, said before it starts -------------------------------------

COST_LINE = (
    r"solving {name}: {blocks} blocks to compute, about \d+ CPU (s|minutes) at this machine's "
    r"rate and [\d.]+ [MG]B more in the store \(the store keeps them; Ctrl-C stops, and a rerun "
    r"goes on\)\n"
)


@pytest.mark.parametrize(
    ("cost", "words"),
    [
        (
            Cost(1_048_576, 180.0, 713_000_000),
            "about 3 CPU minutes at this machine's rate and 713 MB",
        ),
        (Cost(8_192, 1.6, 5_700_000), "about 2 CPU s at this machine's rate and 6 MB"),
        (
            Cost(8_192, 24_000.0, 1_780_000_000),
            "about 6.7 CPU hours at this machine's rate and 1.8 GB",
        ),
        (Cost(4, 0.01, 300), "under a CPU second at this machine's rate and 1 MB"),
    ],
)
def test_a_cost_is_said_in_the_units_a_person_weighs(cost: Cost, words: str) -> None:
    assert words in cost_words(cost)
    assert cost_words(cost).startswith(f"{cost.blocks:,} blocks to compute, ")


def _first_word(args: list[str]) -> str:
    """The first line a command writes on stderr (off a terminal); the command is killed
    there, before the solve it announces."""
    with subprocess.Popen(
        [str(CLI), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    ) as process:
        assert process.stderr is not None
        said = process.stderr.readline().decode()
        process.kill()
    return said


@pytest.mark.slow
def test_a_cold_question_past_the_threshold_says_its_cost_before_solving(tmp_path: Path) -> None:
    """The first word of a cold ``value`` on a large game (off a terminal) is its cost; the
    command is stopped there, its cost said."""
    said = _first_word(["--store", str(tmp_path / "s.sqlite3"), "value", "--rules", LARGE])
    assert re.fullmatch(COST_LINE.format(name=LARGE, blocks="32,768"), said), said


@pytest.mark.slow
def test_a_cold_need_table_says_its_cost_before_solving(tmp_path: Path) -> None:
    """``advise``, ``value``, ``stats``, ``simulate`` and ``play`` with a need (or a target)
    build the need table's cone through the one engine: its cost is said first (a store
    once grew from 5.7 MB to 1.78 GB without a word). Stopped there, its cost said."""
    said = _first_word(["--store", str(tmp_path / "s"), "value", "--rules=yahtzee", "--need=100"])
    name = re.escape("yahtzee (need up to 400)")
    assert re.fullmatch(COST_LINE.format(name=name, blocks="8,192"), said), said
