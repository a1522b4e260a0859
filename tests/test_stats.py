"""Score distributions against brute force, hand counts and the pins; the stats command and API.

The brute force (``brute_force.py``) knows nothing of the solver: it scores dice by the
printed rules, enumerates every keep of every roll, and follows the best one (ties broken
by the documented rule: more dice kept, then the first keep; the first box) to the exact
distribution. End games of one or two boxes are small enough for it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import given, settings, strategies as st
from support import yahtzee_figures
from support.api_support import api_client
from support.brute_force import CHANCE, FIVES, SIXES, YAHTZEE, EndGame
from support.cli_support import one_error_line
from support.dice_variants import FORCED, MAXI, SIX_DICE, VARIANTS
from support.portal_engines import PortalEngines

from memo_solver.cli import analysis
from memo_solver.core.engine import Engine, open_engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.analysis import stats
from memo_solver.games.yahtzee.analysis.distribution import (
    Distribution,
    MissingBlockError,
    score_distribution,
)
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, parse_state, start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.service.app import ApiSettings
from memo_solver.stores.memory import MemoryStore

CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")},
    "OPENBLAS_NUM_THREADS": "1",
}
TOL = 1e-9
SUM_TOL = 1e-12
LOWER = RULE_SETS["yahtzee-lower"]
UPPER = RULE_SETS["yahtzee-upper"]


class Solver(PortalEngines):
    """Engines on memory stores, one per rule set, in one event loop for the module."""

    def distribution(self, rules: RuleSet, state: State) -> Distribution:
        return self.call(score_distribution, rules, state)

    def value(self, rules: RuleSet, state: State) -> float:
        return self.call(advise, rules, state).value


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        yield Solver(portal, stack)


# --- the brute force's distributions against ours --------------------------------------


def as_array(dist: dict[int, float]) -> np.ndarray:
    out = np.zeros(max(dist) + 1)
    for points, p in dist.items():
        out[points] = p
    return out


def same_distribution(ours: Distribution, brute: dict[int, float]) -> None:
    theirs = as_array(brute)
    size = max(ours.probabilities.size, theirs.size)
    a = np.pad(ours.probabilities, (0, size - ours.probabilities.size))
    b = np.pad(theirs, (0, size - theirs.size))
    assert np.abs(a - b).max() < 1e-12


# --- small games, by hand and by brute force -----------------------------------------------


def test_only_chance_open_matches_the_brute_force(solver: Solver) -> None:
    ours = solver.distribution(LOWER, parse_state("open=chance", LOWER))
    value, brute = EndGame((CHANCE,)).turn(frozenset({"chance"}), 0)

    same_distribution(ours, brute)
    assert ours.mean == pytest.approx(value, abs=TOL)
    assert ours.box_points == {"chance": pytest.approx(value, abs=TOL)}
    assert ours.probabilities[:5].sum() == 0  # five dice show at least 5
    assert ours.probabilities[30] == pytest.approx(brute[30], abs=1e-15)
    chance = EndGame((CHANCE,)).p_five_alike(frozenset({"chance"}), 0)
    assert ours.p_any_yahtzee == pytest.approx(chance, abs=1e-15)
    assert ours.p_yahtzee == 0  # five alike in Chance is no 50


def test_only_yahtzee_open_is_the_chance_of_five_alike_in_three_rolls(solver: Solver) -> None:
    ours = solver.distribution(LOWER, parse_state("open=yahtzee", LOWER))
    p_fifty = 2783176 / 60466176  # the classic count: keep the most common face

    assert np.flatnonzero(ours.probabilities).tolist() == [0, 50]
    assert ours.probabilities[50] == pytest.approx(p_fifty, abs=1e-15)
    assert ours.probabilities[0] == pytest.approx(1 - p_fifty, abs=1e-15)
    assert ours.p_yahtzee == pytest.approx(p_fifty, abs=1e-15)
    assert ours.p_any_yahtzee == pytest.approx(p_fifty, abs=1e-15)  # the box takes each one
    assert ours.mean == pytest.approx(50 * p_fifty, abs=1e-12)
    same_distribution(ours, EndGame((YAHTZEE,)).turn(frozenset({"yahtzee"}), 0)[1])


def test_chance_and_yahtzee_end_game_matches_the_brute_force(solver: Solver) -> None:
    ours = solver.distribution(LOWER, parse_state("open=yahtzee,chance", LOWER))
    value, brute = EndGame((YAHTZEE, CHANCE)).turn(frozenset({"yahtzee", "chance"}), 0)

    same_distribution(ours, brute)
    assert ours.mean == pytest.approx(value, abs=TOL)
    # A Yahtzee rolled after the box was scratched still counts as one rolled.
    either = EndGame((YAHTZEE, CHANCE)).p_five_alike(frozenset({"yahtzee", "chance"}), 0)
    assert ours.p_any_yahtzee == pytest.approx(either, abs=1e-15)
    assert ours.p_any_yahtzee > ours.p_yahtzee


def test_fives_and_sixes_for_the_upper_bonus_match_the_brute_force(solver: Solver) -> None:
    """23 short of the bonus with Fives and Sixes open: the bonus decides the keeps."""
    state = parse_state("open=fives,sixes upper=40", UPPER)
    ours = solver.distribution(UPPER, state)
    game = EndGame((FIVES, SIXES), upper_bonus=35)
    value, brute = game.turn(frozenset({"fives", "sixes"}), 40)

    same_distribution(ours, brute)
    assert ours.mean == pytest.approx(value, abs=TOL)
    assert ours.p_upper_bonus == pytest.approx(
        sum(p for points, p in brute.items() if points >= 23 + 35), abs=1e-12
    )
    assert ours.bonus_points["upper"] == pytest.approx(35 * ours.p_upper_bonus, abs=1e-12)


def test_a_state_with_dice_rolled_starts_from_those_dice(solver: Solver) -> None:
    """Mid-turn: 6 6 6 6 6 with Yahtzee open and no rerolls is 50 for sure."""
    ours = solver.distribution(
        LOWER, parse_state("open=yahtzee,chance dice=66666 rerolls=0", LOWER)
    )
    chance_alone = EndGame((CHANCE,)).turn(frozenset({"chance"}), 0)[1]
    same_distribution(ours, {50 + points: p for points, p in chance_alone.items()})


# --- mean equals value ---------------------------------------------------------------------


FULL = [pytest.mark.slow, pytest.mark.full]
"""Over a CPU minute and a half: outside the suite's 10 minutes, run with ``-m full``."""


@pytest.mark.parametrize(
    "name",
    [
        "yahtzee-upper",
        "yahtzee-upper-no-bonus",
        "yahtzee-lower",
        pytest.param("yazy", marks=pytest.mark.slow),
        pytest.param("yahtzee-no-joker", marks=pytest.mark.slow),
        pytest.param("yahtzee-no-joker-no-bonus", marks=pytest.mark.slow),
        pytest.param("yatzy", marks=FULL),
    ],
)
def test_the_mean_from_the_start_is_the_pinned_value(solver: Solver, name: str) -> None:
    rules = RULE_SETS[name]
    dist = solver.distribution(rules, start_state())

    assert dist.mean == pytest.approx(rules.start_value, abs=TOL)
    assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)
    assert (dist.probabilities >= 0).all()
    # Every point comes from a box or a bonus.
    total = sum(dist.box_points.values()) + sum(dist.bonus_points.values())
    assert total == pytest.approx(dist.mean, abs=TOL)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_mean_of_other_dice_counts_and_forced_order_is_the_value(
    solver: Solver, name: str
) -> None:
    """From the start, and from scorecards with two boxes filled and the highest upper total
    they can make."""
    rules = VARIANTS[name]
    later = [
        State(filled, int(np.flatnonzero(rules.upper_totals(filled))[-1]), False, None, None)
        for filled in rules.reachable_masks(0)
        if filled.bit_count() == 2
    ]
    for state in [start_state(), *later[:3]]:
        dist = solver.distribution(rules, state)
        assert dist.mean == pytest.approx(solver.value(rules, state), abs=TOL), state
        assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)
        total = sum(dist.box_points.values()) + sum(dist.bonus_points.values())
        assert total == pytest.approx(dist.mean, abs=TOL)


def test_a_forced_order_distribution_scores_the_boxes_in_order(solver: Solver) -> None:
    """Ones in the first turn, Threes in the second, and so on: every box gets its turn,
    and Ones, scored once with four dice, holds at most 4."""
    dist = solver.distribution(FORCED, start_state())
    # Only the scorecard's prefixes were solved: 6 blocks, not the 32 subsets of 5 boxes.
    assert solver.engine(FORCED).counters.computed <= FORCED.block_count == 6
    assert set(dist.box_points) == {c.name for c in FORCED.categories}
    assert 0 < dist.box_points["ones"] <= 4
    assert dist.p_any_yahtzee >= dist.p_yahtzee > 0


def test_a_six_dice_state_with_its_dice_rolled(solver: Solver) -> None:
    """Mid-turn with six sixes and no rerolls, only the all-alike box open: 100 for sure."""
    state = parse_state("open=maxi dice=666666 rerolls=0", SIX_DICE)
    dist = solver.distribution(SIX_DICE, state)
    assert np.flatnonzero(dist.probabilities).tolist() == [100]
    assert dist.p_yahtzee == dist.p_any_yahtzee == 1.0


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_maxi_yatzy_late_states_with_six_dice_rolled(solver: Solver, data: st.DataObject) -> None:
    """Maxi Yatzy's own boxes (villa, tower, three pairs, the full straight) near the end,
    always with the turn's six dice: the mean is the advice's value."""
    state = data.draw(late_states(MAXI))
    if state.dice is None:
        face = st.integers(1, 6)
        dice = tuple(sorted(data.draw(st.lists(face, min_size=6, max_size=6))))
        state = replace(state, dice=dice, rerolls_left=data.draw(st.integers(0, 2)))
    dist = solver.distribution(MAXI, state)
    assert dist.mean == pytest.approx(solver.value(MAXI, state), abs=TOL)
    assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)


# Late states of every rule set: a few boxes open, with or without the turn's dice. (From
# the start, the 13-box games take 6-10 CPU s each and run above and below; the 15-box
# yatzy takes 30 s and runs with ``-m full``.)
LATE = {
    "yahtzee": (1, 3),
    "yahtzee-free-joker": (1, 2),
    "yahtzee-no-joker": (1, 3),
    "yahtzee-no-joker-no-bonus": (1, 3),
    "yazy": (1, 3),
    "yatzy": (1, 2),
    "yahtzee-upper": (1, 3),
    "yahtzee-upper-no-bonus": (1, 3),
    "yahtzee-lower": (1, 3),
    "maxi-yatzy": (1, 3),
}


def test_late_states_come_from_every_rule_set() -> None:
    """Every rule set the distribution serves: not yet those with saved rolls (refused)."""
    assert set(LATE) == {name for name, rules in RULE_SETS.items() if not rules.saved_rolls}


@st.composite
def late_states(draw: st.DrawFn, rules: RuleSet) -> State:
    low, high = LATE[rules.name]
    n = len(rules.categories)
    opened = draw(st.sets(st.integers(0, n - 1), min_size=low, max_size=high))
    filled = rules.all_filled & ~sum(1 << box for box in opened)
    upper = draw(st.sampled_from([int(t) for t in np.flatnonzero(rules.upper_totals(filled))]))
    yahtzee = rules.yahtzee_box
    bonus = yahtzee is not None and filled >> yahtzee & 1 == 1 and draw(st.booleans())
    state = State(filled, upper, bonus, None, None)
    if draw(st.booleans()):
        face = st.integers(1, 6)
        n = rules.dice
        dice = draw(st.one_of(face.map(lambda f: [f] * n), st.lists(face, min_size=n, max_size=n)))
        state = replace(state, dice=tuple(sorted(dice)), rerolls_left=draw(st.integers(0, 2)))
    return state


@pytest.mark.parametrize("name", sorted(LATE))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_the_mean_of_a_late_state_is_its_value(
    solver: Solver, name: str, data: st.DataObject
) -> None:
    rules = RULE_SETS[name]
    state = data.draw(late_states(rules))
    dist = solver.distribution(rules, state)

    assert dist.mean == pytest.approx(solver.value(rules, state), abs=TOL)
    assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)
    for p in (dist.p_upper_bonus, dist.p_yahtzee, dist.p_extra_bonus, dist.p_any_yahtzee):
        assert -SUM_TOL <= p <= 1 + SUM_TOL
    # A 50 in the box, or a +100, each needs a turn that ended with all dice alike.
    assert dist.p_any_yahtzee >= max(dist.p_yahtzee, dist.p_extra_bonus) - SUM_TOL
    for q in (0.01, 0.5, 0.99):
        assert dist.probabilities[: dist.percentile(q) + 1].sum() >= q - SUM_TOL


# --- the full games (tens of CPU seconds each) -----------------------------------------------


@pytest.mark.slow
def test_yahtzee_free_joker_full_game_distribution(solver: Solver) -> None:
    """About 40 CPU s; the median and spread as pinned (the spread depends on the tie rule:
    the strategy keeping more dice)."""
    rules = RULE_SETS["yahtzee-free-joker"]
    dist = solver.distribution(rules, start_state())

    assert dist.mean == pytest.approx(254.5896094820, abs=TOL)
    assert dist.std == pytest.approx(59.611436, abs=1e-6)
    assert dist.percentile(0.5) == 248
    assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)


@pytest.mark.slow
def test_yahtzee_full_game_distribution(solver: Solver) -> None:
    rules = RULE_SETS["yahtzee"]
    dist = solver.distribution(rules, start_state())

    assert dist.mean == pytest.approx(rules.start_value, abs=TOL)
    assert dist.std == pytest.approx(yahtzee_figures.STD, abs=TOL)
    assert dist.percentile(0.5) == yahtzee_figures.MEDIAN
    assert dist.p_upper_bonus == pytest.approx(yahtzee_figures.P_UPPER_BONUS, abs=TOL)
    assert dist.p_yahtzee == pytest.approx(yahtzee_figures.P_YAHTZEE, abs=TOL)
    assert dist.p_extra_bonus == pytest.approx(yahtzee_figures.P_EXTRA_BONUS, abs=TOL)
    assert dist.p_any_yahtzee == pytest.approx(yahtzee_figures.P_ANY_YAHTZEE, abs=TOL)
    assert dist.probabilities.sum() == pytest.approx(1, abs=SUM_TOL)


# --- words, JSON and the plot ------------------------------------------------------------------


def run_stats(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(tmp_path / "store.sqlite3"), "stats", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )


def test_cli_stats_json(tmp_path: Path) -> None:
    result = run_stats(tmp_path, "--rules", "yahtzee-upper", "--json", "--threshold", "63")
    assert result.returncode == 0, result.stderr
    # Off a terminal no progress bar, but one line for the solve (every block of the game).
    assert result.stderr == "solving yahtzee-upper: 64 blocks to compute (the store keeps them)\n"
    answer = json.loads(result.stdout)
    assert answer["rules"] == "yahtzee-upper"
    assert answer["from_start"] is True
    assert answer["state"]["filled"] == []
    assert answer["mean"] == pytest.approx(UPPER.start_value, abs=TOL)
    assert math.fsum(answer["probabilities"]) == pytest.approx(1, abs=SUM_TOL)
    assert answer["survival"] == {"63": pytest.approx(sum(answer["probabilities"][63:]))}
    assert set(answer["percentiles"]) == {str(q) for q in stats.PERCENTILES}
    assert set(answer["box_points"]) == {c.name for c in UPPER.categories}
    assert answer["bonus_points"]["upper"] == pytest.approx(35 * answer["p_upper_bonus"])


def test_cli_stats_in_words_from_a_state(tmp_path: Path) -> None:
    result = run_stats(tmp_path, "--rules", "yahtzee-lower", "open=yahtzee", "--threshold", "50")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "yahtzee-lower, from open=yahtzee: the points still to come" in text
    assert "points already on the scorecard are not included" in text
    assert f"P(points still to come >= 50) = {2783176 / 60466176:.6f}" in text
    assert "expected points per box (still to come):" in text


def test_cli_stats_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "upper.png"
    result = run_stats(tmp_path, "--rules", "yahtzee-upper", "--plot", str(png))
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    assert f"plot written to {png}" in result.stdout


def test_cli_stats_plot_into_a_missing_folder_fails_before_the_work(tmp_path: Path) -> None:
    result = run_stats(tmp_path, "--rules", "yahtzee", "--plot", str(tmp_path / "no" / "x.png"))
    assert result.returncode == 2
    assert result.stderr.startswith("memo-solver: error: --plot: the folder ")
    assert result.stdout == ""


def test_a_plot_file_matplotlib_cannot_write_is_refused_before_the_work(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = run_stats(tmp_path, "--rules", "yahtzee", "--plot", str(tmp_path / "out.txt"))
    line = one_error_line(result)
    assert line.startswith("memo-solver: error: --plot: matplotlib cannot draw a .txt file")
    assert {".png", ".svg", ".pdf"} <= set(line.rstrip(".").replace(",", "").split())
    assert result.stdout == ""


def test_plot_without_matplotlib_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from memo_solver.cli.common import UsageError

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"pip install 'memo-solver\[plot\]'"):
        analysis.check_plot_target(tmp_path / "x.png")


# --- the API -----------------------------------------------------------------------------------


async def test_api_stats_without_and_with_the_probabilities(tmp_path: Path) -> None:
    body = {"rules": "yahtzee-upper", "state": "start", "thresholds": [63, 100]}
    async with api_client(tmp_path / "store.sqlite3") as client:
        short = await client.post("/v1/stats", json=body)
        full = await client.post("/v1/stats", json={**body, "full": True})
        late = await client.post(
            "/v1/stats", json={"rules": "yahtzee-lower", "state": {"filled": ["chance"]}}
        )
    assert short.status_code == 200, short.text
    answer = short.json()
    assert "probabilities" not in answer
    assert answer["mean"] == pytest.approx(UPPER.start_value, abs=TOL)
    assert set(answer["survival"]) == {"63", "100"}
    assert answer["state"] == {
        "filled": [],
        "upper": 0,
        "yahtzee_bonus": False,
        "rerolls_left": None,
        "dice": None,
    }
    whole = full.json()
    assert math.fsum(whole.pop("probabilities")) == pytest.approx(1, abs=SUM_TOL)
    assert whole == answer
    assert late.status_code == 200
    assert late.json()["from_start"] is False
    assert "chance" not in late.json()["box_points"]


async def test_api_stats_errors_name_the_field(tmp_path: Path) -> None:
    async with api_client(tmp_path / "store.sqlite3") as client:
        bad_state = await client.post("/v1/stats", json={"state": "upper=999"})
        bad_rules = await client.post("/v1/stats", json={"rules": "nope"})
        too_many = await client.post("/v1/stats", json={"thresholds": list(range(101))})
        not_int = await client.post("/v1/stats", json={"thresholds": ["x"]})
        a_bool = await client.post("/v1/stats", json={"thresholds": [True]})
    assert bad_state.status_code == 422
    assert bad_state.json()["error"]["field"] == "upper"
    assert bad_rules.status_code == 422
    assert bad_rules.json()["error"]["field"] == "rules"
    assert too_many.status_code == 422
    assert too_many.json()["error"]["field"] == "thresholds"
    assert not_int.status_code == 422
    assert not_int.json()["error"]["field"].startswith("thresholds")
    assert a_bool.status_code == 422  # true is no score (lax mode took it for 1)
    assert a_bool.json()["error"]["field"] == "thresholds.0"


async def test_api_stats_past_the_deadline_is_503_and_the_retry_shares_the_work(
    tmp_path: Path,
) -> None:
    import anyio

    body = {"rules": "yahtzee-lower", "state": "start"}
    async with api_client(tmp_path / "store.sqlite3", ApiSettings(deadline_s=0.01)) as client:
        first = await client.post("/v1/stats", json=body)
        service = client.app.state.service  # type: ignore[attr-defined]
        for _ in range(3000):
            answer = await client.post("/v1/stats", json=body)
            if answer.status_code == 200:
                break
            assert answer.status_code == 503
            await anyio.sleep(0.02)
        shared = list(service._shared)
    assert first.status_code == 503
    assert first.headers["retry-after"]
    assert first.json()["error"]["field"] == "state"
    assert answer.status_code == 200
    assert answer.json()["mean"] == pytest.approx(LOWER.start_value, abs=TOL)
    assert shared == [("stats", LOWER.fingerprint, start_state())]  # computed once


async def test_distribution_in_thread_is_the_same_and_stops_when_cancelled() -> None:
    import anyio

    async with open_engine(YahtzeeGame(LOWER), MemoryStore()) as engine:
        state = parse_state("filled=chance", LOWER)
        here = await score_distribution(engine, LOWER, state)
        there = await stats.distribution_in_thread(engine, LOWER, state)
        assert np.array_equal(here.probabilities, there.probabilities)
    yazy = RULE_SETS["yazy"]  # a pass of 2,048 blocks: long enough to be cancelled in it
    async with open_engine(YahtzeeGame(yazy), MemoryStore()) as engine:
        await engine.block("0")  # solved: the cancel below lands in the thread's pass
        started = time.monotonic()
        with anyio.move_on_after(0.05) as scope:
            await stats.distribution_in_thread(engine, yazy, start_state())
        assert scope.cancelled_caught
        assert time.monotonic() - started < 0.5  # not held up by the thread


class Forgetful:
    """An engine that leaves one block out of every answer, as a bug in what is solved
    before the pass would."""

    def __init__(self, engine: Engine, forgotten: str) -> None:
        self.engine, self.forgotten = engine, forgotten

    async def block(self, key: str) -> Block:
        return await self.engine.block(key)

    async def blocks(self, keys: list[str]) -> dict[str, Block]:
        found = await self.engine.blocks(keys)
        found.pop(self.forgotten, None)
        return found


async def test_distribution_in_thread_missing_a_block_fails_at_once() -> None:
    """The thread's pass reads a plain mapping: a block it lacks is a clear error, never a
    lookup that no task serves (the thread would wait forever, long after the request)."""
    import anyio

    async with open_engine(YahtzeeGame(LOWER), MemoryStore()) as engine:
        forgetful = cast(Engine, Forgetful(engine, block_key(LOWER.all_filled)))
        state = parse_state("filled=chance", LOWER)
        with anyio.fail_after(30), pytest.raises(MissingBlockError) as missing:
            await stats.distribution_in_thread(forgetful, LOWER, state)
    assert str(missing.value) == (
        f"the distribution's pass needs block {block_key(LOWER.all_filled)}, not solved"
    )
