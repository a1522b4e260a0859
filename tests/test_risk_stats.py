"""``stats --risk`` and ``simulate --risk``: the exact distribution of the points to come
under the theta strategy, which maximises E[exp(theta X)] (minimises it for theta < 0), and
games played by it.

Never against the solver itself: the distribution's E[exp(theta X)] is the risk table's
start value (its certainty equivalent, (1/theta) ln of it), by another road; every total's
chance is a brute force's that plays the tiny games by the best certainty equivalent on its
own terms (``risk_brute_force.py``); near theta = 0 the certainty equivalent moves by half
the variance per unit of theta; and simulated games score the exact distribution's mean.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support import risk_brute_force as brute
from support.api_support import api_client, error_of
from support.cli_support import TINY_RULES, answer, memo_solver, one_error_line
from support.rule_strategies import tiny_rule_sets, tiny_saved_rule_sets

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.analysis.distribution import Distribution, score_distribution
from memo_solver.games.yahtzee.analysis.simulate import PolicyCache, simulate
from memo_solver.games.yahtzee.analysis.summary import Summary
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.risk import RiskGame
from memo_solver.service.app import ApiSettings
from memo_solver.stores.memory import MemoryStore

LOG_TOL = 1e-9
"""ln E[exp(theta X)] of the distribution against theta times the table's start value."""
TOL = 1e-9
"""Each total's chance against the brute force's."""
THETAS = st.integers(-500, 500).filter(bool).map(lambda milli: milli / 1000)


def at_risk(rules: RuleSet, theta: float) -> tuple[Distribution, float]:
    """The theta strategy's distribution from the start, as ``stats --risk`` computes it
    (the engine's lazy solve of the risk table, then the forward pass), and the table's
    start value."""

    async def run() -> tuple[Distribution, float]:
        game = RiskGame(rules, theta) if theta else YahtzeeGame(rules)
        async with open_engine(game, MemoryStore()) as engine:
            dist = await score_distribution(engine, rules, start_state(), theta=theta)
            start = await engine.block(block_key(0))
            return dist, float(start.flat[0])

    return anyio.run(run)


def log_utility(dist: Distribution, theta: float) -> float:
    """ln E[exp(theta X)] of the distribution, its largest exponent taken out so that no
    term overflows or vanishes."""
    totals = np.flatnonzero(dist.probabilities)
    exponents = theta * totals
    top = float(exponents.max())
    weights = dist.probabilities[totals] @ np.exp(exponents - top)
    return top + math.log(float(weights))


@pytest.mark.parametrize("name", ["yahtzee-lower", "yahtzee-upper"])
@pytest.mark.parametrize("theta", [0.05, -0.05])
def test_the_strategys_distribution_has_the_tables_certainty_equivalent(
    name: str, theta: float
) -> None:
    """The forward pass follows the choices; the table holds the objective: by the
    definition of the certainty equivalent c, ln E[exp(theta X)] = theta c."""
    dist, certain = at_risk(get_rule_set(name), theta)

    assert log_utility(dist, theta) == pytest.approx(theta * certain, abs=LOG_TOL)
    assert dist.probabilities.sum() == pytest.approx(1.0, abs=1e-12)


def same(mine: Distribution, theirs: dict[int, float]) -> None:
    """Every probability equal to 1e-9, the totals the brute force never reaches at 0."""
    size = max(mine.probabilities.size, max(theirs) + 1)
    expected = np.zeros(size)
    for total, chance in theirs.items():
        expected[total] = chance
    got = np.zeros(size)
    got[: mine.probabilities.size] = mine.probabilities
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


def check_tiny(document: dict[str, Any], theta: float) -> None:
    dist, certain = at_risk(parse_rule_set(document), theta)

    same(dist, brute.distribution(document, theta, (), 0, False))
    assert log_utility(dist, theta) == pytest.approx(theta * certain, abs=LOG_TOL)


@settings(max_examples=25, deadline=None)
@given(st.data(), THETAS)
def test_every_probability_is_the_brute_forces(data: st.DataObject, theta: float) -> None:
    """Tiny rule sets (1-3 dice, 1-3 boxes, bonuses, forced order, the Joker's variants)
    at risks over the whole dial."""
    check_tiny(data.draw(tiny_rule_sets(joker=data.draw(st.booleans())), label="rules"), theta)


@settings(max_examples=15, deadline=None)
@given(st.data(), THETAS)
def test_with_saved_rolls_every_probability_is_the_brute_forces(
    data: st.DataObject, theta: float
) -> None:
    """The bank of unused rolls: the theta strategy stops or rerolls by the rolls left, and
    the pass carries the bank, as the mean strategy's."""
    check_tiny(data.draw(tiny_saved_rule_sets(joker=True), label="rules"), theta)


@pytest.mark.full
@pytest.mark.parametrize("theta", [0.001, -0.001])
def test_on_yatzy_a_small_risk_moves_the_value_by_half_the_variance_per_unit(
    theta: float,
) -> None:
    """ln E[exp(theta X)] = theta mean + theta^2 variance / 2 + O(theta^3): at theta =
    0.001 (CE - mean) / theta is variance / 2 within 1 %, the mean and variance the mean
    strategy's exact distribution's. Two whole solves of yatzy and a pass (a minute)."""
    rules = get_rule_set("yatzy")
    mean, _ = at_risk(rules, 0.0)
    _, certain = at_risk(rules, theta)

    assert (certain - mean.mean) / theta == pytest.approx(mean.std**2 / 2, rel=0.01)


# --- the command ---------------------------------------------------------------------------


@pytest.mark.slow
def test_stats_at_a_risk_gives_the_bold_strategys_distribution(
    tmp_path: Path, tiny_rules_file: Path
) -> None:
    """One die, one chance box, one reroll: the bold player (theta 0.5) rerolls a 4, worth
    4.17 to it rerolled, which the mean player keeps; each keeps a 5 or a 6. So a score of
    4 comes only from a reroll of 1 to 4, 4/6 x 1/6; the mean player's from its 4 as well."""
    store = tmp_path / "store.sqlite3"
    args = ("stats", "--rules-file", str(tiny_rules_file), "--json", "--threshold", "5")
    bold = answer(memo_solver(store, *args, "--risk", "0.5"))

    assert bold["risk"] == 0.5
    assert bold["probabilities"] == pytest.approx(
        [0.0, *[p for _, p in sorted(brute.distribution(TINY_RULES, 0.5, (), 0, False).items())]],
        abs=TOL,
    )
    assert bold["probabilities"][4] == pytest.approx(4 / 6 * 1 / 6)
    assert bold["survival"]["5"] == pytest.approx(2 / 6 + 4 / 6 * 2 / 6)
    assert bold["certainty_equivalent"] == pytest.approx(
        brute.value(TINY_RULES, 0.5, (), 0, False), rel=1e-9
    )
    words = memo_solver(store, *args[:-3], "--risk", "0.5")
    assert words.returncode == 0, words.stderr
    assert "the final score under play at risk 0.5" in words.stdout
    assert "certainty equivalent at risk 0.5: " in words.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "field"),
    [(("--risk", "0.7"), "risk"), (("--risk", "0.1", "--need", "3"), "--need or --risk")],
)
def test_stats_refuses_a_risk_off_the_dial_or_beside_a_need(
    tmp_path: Path, tiny_rules_file: Path, extra: tuple[str, ...], field: str
) -> None:
    result = memo_solver(
        tmp_path / "store.sqlite3", "stats", "--rules-file", str(tiny_rules_file), *extra
    )

    assert field in one_error_line(result)


# --- over HTTP -----------------------------------------------------------------------------


async def test_stats_over_http_at_a_risk_gives_the_strategys_distribution(tmp_path: Path) -> None:
    """``risk`` on ``POST /v1/stats``: the bold strategy's distribution, the brute force's;
    off the dial a 422 naming ``risk``; without it the mean strategy's, with no ``risk``."""
    settings = ApiSettings(deadline_s=30.0)
    async with api_client(tmp_path / "s.sqlite", settings) as client:
        body = {"rules": TINY_RULES, "state": "start", "full": True}
        bold = (await client.post("/v1/stats", json={**body, "risk": "0.5"})).json()
        mean = (await client.post("/v1/stats", json=body)).json()
        refused = await client.post("/v1/stats", json={**body, "risk": 0.7})

    assert bold["risk"] == 0.5
    theirs = brute.distribution(TINY_RULES, 0.5, (), 0, False)
    assert bold["probabilities"] == pytest.approx(
        [theirs.get(total, 0.0) for total in range(len(bold["probabilities"]))], abs=TOL
    )
    assert "risk" not in mean
    assert mean["mean"] > bold["mean"]
    assert "at most 3 decimals" in error_of(refused, 422, "risk")


# --- simulate --risk -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("theta", [0.1, -0.1])
def test_simulated_games_at_a_risk_score_the_exact_distributions_mean(theta: float) -> None:
    """The games play the theta strategy: their mean lies within 4 standard errors of the
    exact distribution's at that risk (a false alarm 1 run in 16,000), which lies more than
    8 from the mean strategy's (2.9 and 6.0 points, a standard error about 0.2 in 20,000
    games): games of the mean strategy would miss it."""
    rules = get_rule_set("yahtzee-lower")
    exact, _ = at_risk(rules, theta)
    mean_strategy, _ = at_risk(rules, 0.0)

    async def play() -> Summary:
        async with open_engine(RiskGame(rules, theta), MemoryStore()) as engine:
            return await simulate(engine, PolicyCache(rules, theta=theta), 20_000, seed=7)

    summary = anyio.run(play)
    assert abs(summary.mean - exact.mean) <= 4 * summary.se
    assert summary.exact_mean is None  # the table holds certainty equivalents, not a mean
    assert abs(mean_strategy.mean - exact.mean) > 8 * summary.se


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--risk", "0.1", "--policy", "greedy"), "leave out --policy greedy"),
        (("--risk", "0.1", "--need", "3"), "--need or --risk"),
    ],
)
def test_simulate_refuses_a_risk_beside_another_strategy(
    tmp_path: Path, tiny_rules_file: Path, extra: tuple[str, ...], said: str
) -> None:
    result = memo_solver(
        tmp_path / "store.sqlite3", "simulate", "--rules-file", str(tiny_rules_file), *extra
    )

    assert said in one_error_line(result)


@pytest.mark.slow
def test_a_log_of_games_at_a_risk_says_the_risk_they_were_played_at(
    tmp_path: Path, tiny_rules_file: Path
) -> None:
    log = tmp_path / "games.jsonl"
    result = memo_solver(
        tmp_path / "store.sqlite3", "simulate", "--rules-file", str(tiny_rules_file),
        "--risk", "0.1", "--games", "3", "--log", str(log),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    games = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(games) == 3
    assert all((g["policy"], g["risk"]) == ("optimal", 0.1) for g in games)


@pytest.mark.slow
def test_simulate_at_a_risk_refuses_saved_rolls_in_one_line(tmp_path: Path) -> None:
    result = memo_solver(
        tmp_path / "store.sqlite3", "simulate", "--rules", "maxi-yatzy-saved", "--risk", "0.1"
    )

    assert "simulate at a risk (--risk): not available yet" in one_error_line(result)
