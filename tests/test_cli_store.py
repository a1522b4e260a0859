"""``precompute`` and ``status`` as real processes: a whole solve stored once, shared by two
processes, resumed after a kill, shown on a terminal; and where the store is.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from support.cli_support import (
    CLI,
    ENV,
    PINS,
    TIMEOUT_S,
    TOL,
    answer,
    memo_solver,
    on_a_terminal,
    status_store,
)

from memo_solver.core.engine import namespace
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.sqlite import SQLiteStore


def start(store: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), "--store", str(store), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


# --- precompute and status --------------------------------------------------------------------


def test_precompute_solves_everything_once_and_status_shows_it(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"

    first = answer(memo_solver(store, "precompute", "--rules", "yahtzee-lower", "--json"))
    assert first["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)
    assert (first["blocks_total"], first["blocks_computed"]) == (128, 128)
    assert first["blocks_already_stored"] == 0
    assert first["store"] == str(store)

    again = answer(memo_solver(store, "precompute", "--rules", "yahtzee-lower", "--json"))
    assert again["value"] == first["value"]
    assert (again["blocks_computed"], again["blocks_already_stored"]) == (0, 128)

    status = answer(memo_solver(store, "status", "--json"))
    assert status["store"] == str(store)
    assert status["size_bytes"] > 0
    assert status["rule_sets"]["yahtzee-lower"] == {
        "blocks_total": 128,
        "blocks_done": 128,
        "claims_held": 0,
        "bytes": status["rule_sets"]["yahtzee-lower"]["bytes"],
    }
    assert status["rule_sets"]["yahtzee"]["blocks_done"] == 0
    assert set(status["rule_sets"]) == {*RULE_SETS, "dice-of-doom-2x2", "dice-of-doom-3x3"}

    words = memo_solver(store, "status")
    assert words.returncode == 0, words.stderr
    assert "128 of    128 blocks" in words.stdout


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_the_readme_gives_the_size_of_a_solved_yahtzee_store_alike_everywhere(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"
    answer(memo_solver(store, "precompute", "--rules", "yahtzee", "--json"))
    size_mb = answer(memo_solver(store, "status", "--json"))["size_bytes"] / 1e6
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    told = re.findall(r"Solved `yahtzee` takes ([\d.]+) MB", readme)
    told += re.findall(
        r"peak memory of that precompute / store on disk \|[^|]* / ([\d.]+) MB", readme
    )
    assert len(told) == 2, told
    # 0.1 MB: the figures are rounded to it; SQLite's pages fill a little differently with
    # the commits' batches.
    assert all(abs(float(figure) - size_mb) <= 0.1 for figure in told), (told, size_mb)


def test_precompute_on_two_threads_solves_the_same_game(tmp_path: Path) -> None:
    both = answer(
        memo_solver(
            tmp_path / "s.db", "precompute", "--rules", "yahtzee-lower", "--threads", "2", "--json"
        )
    )
    assert both["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)
    assert both["blocks_computed"] == 128
    refused = memo_solver(
        tmp_path / "s.db", "precompute", "--rules", "yahtzee-lower", "--threads", "0"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "memo-solver: error: --threads must be 1 or more, got 0"
    ]


def test_precompute_in_words(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "s.db", "precompute", "--rules", "yahtzee-upper")

    assert result.returncode == 0, result.stderr
    assert f"start value {PINS['yahtzee-upper']:.10f}" in result.stdout
    assert "computed 64 of 64 blocks" in result.stdout


@pytest.mark.slow
def test_two_processes_share_the_work_of_one_solve(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    # Create the file first, so that neither process races the other through the schema.
    answer(memo_solver(store, "status", "--json"))

    processes = [start(store, "precompute", "--rules", "yazy", "--json") for _ in range(2)]
    results = [p.communicate(timeout=TIMEOUT_S) for p in processes]

    payloads = []
    for process, (out, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
        payloads.append(json.loads(out))
    for payload in payloads:
        assert payload["value"] == pytest.approx(PINS["yazy"], abs=TOL)
        assert payload["blocks_total"] == 2048
    computed = [p["blocks_computed"] for p in payloads]
    print(f"blocks computed by each process: {computed}")
    assert sum(computed) == 2048, "a block was computed twice, or not at all"

    status = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yazy"]
    assert (status["blocks_done"], status["claims_held"]) == (2048, 0)


def blocks_done(store: Path, rules: str) -> int:
    """The store's count read in this process: milliseconds, where ``status`` is a process
    start, so a poll sees the first blocks while the solve has most of its work left."""

    async def count() -> int:
        async with SQLiteStore(store) as opened:
            return (await opened.coverage(namespace(YahtzeeGame(RULE_SETS[rules])))).blocks

    return anyio.run(count)


def killed_midway(store: Path, rules: str) -> bool:
    """Starts a precompute and SIGKILLs it once some of its blocks are stored; False when it
    finished first (a fast machine can solve yahtzee between two polls)."""
    answer(memo_solver(store, "status", "--json"))  # the file first: no race on the schema
    victim = start(store, "precompute", "--rules", rules, "--json")
    deadline = time.monotonic() + 60
    while victim.poll() is None and time.monotonic() < deadline:
        if blocks_done(store, rules):
            break
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=TIMEOUT_S)
    return victim.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_a_killed_precompute_is_resumed_by_the_next_one(tmp_path: Path) -> None:
    tries = [tmp_path / f"store{n}.sqlite3" for n in range(3)]
    store = next((s for s in tries if killed_midway(s, "yahtzee")), None)
    assert store is not None, "the solve finished before it could be killed, three times"

    left = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yahtzee"]
    print(f"the killed process left {left['blocks_done']} blocks and {left['claims_held']} claims")

    began = time.monotonic()
    payload = answer(memo_solver(store, "precompute", "--rules", "yahtzee", "--json"))
    took = time.monotonic() - began
    print(f"resuming took {took:.2f} s ({payload['seconds']} s solving)")

    assert payload["value"] == pytest.approx(PINS["yahtzee"], abs=TOL)
    assert payload["blocks_already_stored"] > 0
    assert payload["blocks_already_stored"] == left["blocks_done"]
    assert payload["blocks_already_stored"] + payload["blocks_computed"] == 8192
    # The killed holder's claims are free at once (its pid is gone: test_store.py checks
    # that); how long the rest takes is compute, measured by scripts/bench/bench_precompute.py.

    status = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yahtzee"]
    assert (status["blocks_done"], status["claims_held"]) == (8192, 0)


def test_the_store_is_in_the_cache_folder_unless_told_otherwise(tmp_path: Path) -> None:
    env = {**ENV, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert status_store(env) == str(tmp_path / "cache" / "memo-solver" / "store.sqlite3")
    env["MEMO_SOLVER_STORE"] = str(tmp_path / "from-env.sqlite3")
    assert status_store(env) == str(tmp_path / "from-env.sqlite3")
    option = str(tmp_path / "from-option.sqlite3")
    assert status_store(env, "--store", option) == option


def test_precompute_on_a_terminal_shows_blocks_done_rate_and_time_left(tmp_path: Path) -> None:
    screen = on_a_terminal(
        str(CLI), "--store", str(tmp_path / "s.sqlite3"), "precompute", "--rules", "yahtzee-lower"
    )
    redraws = [part for part in screen.split("\r") if "block/s" in part]
    assert redraws[0].startswith("yahtzee-lower:   0%")
    # blocks done of total, [time spent<time left, rate]
    assert re.fullmatch(
        r"yahtzee-lower: 100%\|█+\| 128/128 \[\d\d:\d\d<\d\d:\d\d, [\d.]+block/s\]", redraws[-1]
    )
    assert "solved, start value 139.9712924424" in screen
