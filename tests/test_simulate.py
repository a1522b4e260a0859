"""``memo-solver simulate``: seeded games played with exactly the solver's strategy.

The means are checked against the exact pins (``shared/pins.md``) within four standard
errors: a wrong choice anywhere in the strategy, the dice or the bonus bookkeeping moves a
20,000-game mean by far more than that. The choices themselves are checked against
:mod:`memo_solver.games.yahtzee.analysis.policy` block by block, and logged decisions against
:func:`advise`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from support import yahtzee_figures
from support.dice_variants import FORCED, SIX_DICE, VARIANTS

from memo_solver.cli.analysis import SimulateOptions, simulate_command
from memo_solver.cli.common import Output, UsageError
from memo_solver.cli.reports import GLYPHS, describe_simulation
from memo_solver.core.engine import Engine, open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.analysis.distribution import score_distribution
from memo_solver.games.yahtzee.analysis.policy import TurnPolicy, choose_keeps, turn_policy
from memo_solver.games.yahtzee.analysis.simulate import (
    CHUNK_GAMES,
    PolicyCache,
    dice_tables,
    greedy_policy,
    optimal_policies,
    simulate,
    throw,
)
from memo_solver.games.yahtzee.analysis.summary import Strategy, Summary
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.dice import dice_universe
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

FIVE = dice_universe(5)
CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if k != "MEMO_SOLVER_STORE"},
    "OPENBLAS_NUM_THREADS": "1",
}
TIMEOUT_S = 120
SIGMAS = 4.0
PINS = {
    "yahtzee": 254.5877287345,
    "yahtzee-lower": 139.9712924424,
    "yahtzee-upper": 71.9515297337,
}
Log = dict[str, Any]
GAMES = {**RULE_SETS, **VARIANTS}
"""The built-ins and the small games of other dice counts and forced order, by name."""


@dataclass
class Player:
    """Engines on memory stores and policy caches, one per rule set, shared by the module:
    a rule set is solved and its policies built once, whatever the tests' order."""

    portal: BlockingPortal
    stack: contextlib.ExitStack[Any]
    engines: dict[str, Engine] = field(default_factory=dict)
    caches: dict[tuple[str, Strategy], PolicyCache] = field(default_factory=dict)

    def engine(self, rules: RuleSet) -> Engine:
        engine = self.engines.get(rules.name)
        if engine is None:
            opened = open_engine(YahtzeeGame(rules), MemoryStore())
            engine = self.stack.enter_context(self.portal.wrap_async_context_manager(opened))
            self.engines[rules.name] = engine
        return engine

    def play(
        self,
        name: str,
        games: int,
        seed: int,
        strategy: Strategy = "optimal",
        logs: int = 0,
        cache: PolicyCache | None = None,
        chunk_games: int = CHUNK_GAMES,
    ) -> tuple[Summary, list[Log]]:
        rules = GAMES[name]
        if cache is None:
            cache = self.caches.setdefault((name, strategy), PolicyCache(rules, strategy))
        played: list[Log] = []

        async def keep(games: list[dict[str, object]]) -> None:
            played.extend(games)

        engine = self.engine(rules)  # opened from this thread, not the portal's
        summary = self.portal.call(
            lambda: simulate(
                engine, cache, games, seed, on_games=keep if logs else None, record=logs
            )
        )
        return summary, played


@pytest.fixture(scope="module")
def player() -> Iterator[Player]:
    # The stack closes the engines before the portal stops their event loop.
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        yield Player(portal, stack)


def within(summary: Summary, exact: float) -> None:
    assert abs(summary.mean - exact) <= SIGMAS * summary.se, (summary.mean, summary.se, exact)


# --- the strategy is the solver's ------------------------------------------------------------


@pytest.mark.parametrize("width", [1, 7])
def test_the_keep_choice_follows_the_tie_rule_by_brute_force(width: int) -> None:
    """Best value to 1e-9, then the most dice, then the first keep, among keeps in the roll."""
    rng = np.random.default_rng(width)
    # Values on a coarse grid tie often; a few carry float noise below the 1e-9 tie level.
    keeps = (rng.integers(0, 6, size=(FIVE.n_keeps, width)) * 0.5).astype(np.float64)
    keeps += rng.choice([0.0, 3e-12, -3e-12], size=keeps.shape)

    chosen = choose_keeps(FIVE, keeps)
    for roll_index, roll in enumerate(FIVE.rolls):
        inside = FIVE.sub_keeps(roll)
        for column in range(width):
            best = max(
                inside,
                key=lambda k: (round(keeps[k, column], 9), len(FIVE.keeps[k]), -k),
            )
            assert chosen[roll_index, column] == best


def _successors(player: Player, rules: RuleSet, filled: int) -> dict[str, Any]:
    keys = [block_key(filled | 1 << box) for box in rules.open_boxes(filled)]
    return player.portal.call(player.engine(rules).blocks, keys)


def _masks(rules: RuleSet, count: int, open_boxes: int, seed: int) -> list[int]:
    """Late-game masks (cheap to solve) with the Yahtzee box filled: bonus and Joker apply."""
    rng = np.random.default_rng(seed)
    n = len(rules.categories)
    others = [box for box in range(n) if box != rules.yahtzee_box]
    masks = []
    for _ in range(count):
        opened = rng.choice(others, size=open_boxes, replace=False)
        masks.append(rules.all_filled & ~int(sum(1 << int(b) for b in opened)))
    return masks


def _turn_policy(rules: RuleSet, filled: int, successors: dict[str, Any]) -> TurnPolicy:
    def successor(box: int) -> Any:
        return successors[block_key(filled | 1 << box)]

    return turn_policy(rules, filled, successor, Guideposts.reachable(rules, filled))


@pytest.mark.parametrize(
    ("name", "masks"),
    [
        ("yahtzee-lower", range(127)),
        ("yahtzee-upper", range(63)),
        ("yahtzee", _masks(RULE_SETS["yahtzee"], 12, 4, seed=1)),
        ("yahtzee-free-joker", _masks(RULE_SETS["yahtzee-free-joker"], 6, 3, seed=2)),
        ("three-dice", range(63)),
        ("six-dice", range(63)),
        ("forced-four", FORCED.reachable_masks(0)[:-1]),
    ],
)
def test_block_policies_choose_what_turn_policy_chooses(
    player: Player, name: str, masks: range | list[int]
) -> None:
    rules = GAMES[name]
    rolls = np.arange(rules.universe.n_rolls)[:, None]
    successors = {k: v for filled in masks for k, v in _successors(player, rules, filled).items()}
    batch = optimal_policies(rules, list(masks), successors)  # one compiled call for all
    for filled in masks:
        compact = batch[filled]
        full = _turn_policy(rules, filled, successors)
        for n in range(1, rules.rerolls + 1):
            keeps = dice_tables(rules.universe).keep_of_mask[rolls, compact.keep[n]]
            assert np.array_equal(keeps, full.keep[n]), filled
        assert np.array_equal(compact.box, full.box), filled
        assert np.array_equal(compact.boxes, full.tables.boxes)


def test_greedy_scores_the_most_points_now_and_never_rerolls() -> None:
    rules = RULE_SETS["yahtzee"]
    policy = greedy_policy(rules, 0)
    chance = rules.category_index("chance")
    roll = FIVE.roll_index[(1, 2, 3, 4, 6)]  # small straight 30 beats chance 16
    assert rules.categories[int(policy.boxes[policy.box[roll, 0]])].name == "small_straight"
    sixes = FIVE.roll_index[(1, 1, 6, 6, 6)]  # full house 25 beats 3 of a kind 20, chance 20
    assert rules.categories[int(policy.boxes[policy.box[sixes, 0]])].name == "full_house"
    assert all((keep == 31).all() for keep in policy.keep[1:])
    assert policy.boxes[policy.box[FIVE.roll_index[(1, 1, 2, 3, 3)], 0]] == chance


def test_greedy_keeps_all_six_dice_of_a_six_dice_game() -> None:
    policy = greedy_policy(SIX_DICE, 0)
    assert all((keep == 0b111111).all() for keep in policy.keep[1:])
    straight = SIX_DICE.universe.roll_index[(1, 2, 3, 4, 5, 6)]
    assert SIX_DICE.categories[int(policy.boxes[policy.box[straight, 0]])].name == "full_straight"


# --- the dice --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "keep"),
    [
        *((5, keep) for keep in [(), (6,), (2, 2), (1, 3, 5), (4, 4, 4, 4), (1, 2, 3, 4, 5)]),
        (1, ()),
        (1, (3,)),
        (3, ()),
        (3, (2,)),
        (6, ()),
        (6, (1, 2, 3)),
        (6, (6, 6, 6, 6, 6)),
        (6, (1, 1, 2, 2, 3, 3)),
    ],
)
def test_thrown_dice_follow_the_exact_roll_chances(count: int, keep: tuple[int, ...]) -> None:
    """Whatever the dice count: a base-(count + 1) code of the faces finds the roll."""
    dice = dice_universe(count)
    k = dice.keep_index[keep]
    draws = 100_000
    rolls = throw(np.random.default_rng(7), dice, np.full(draws, k))
    seen = np.bincount(rolls, minlength=dice.n_rolls) / draws
    chances = dice.transition[k]  # row 0, keeping nothing: the first roll
    se = np.sqrt(chances * (1 - chances) / draws)
    assert np.all(np.abs(seen - chances) <= 5 * se + 1e-12)
    inside = np.all(dice.roll_counts[rolls] >= dice.keep_counts[k], axis=1)
    assert inside.all()


# --- the means against the exact pins --------------------------------------------------------


@pytest.mark.parametrize("name", ["yahtzee-lower", "yahtzee-upper"])
def test_the_mean_of_20000_games_is_the_exact_mean(player: Player, name: str) -> None:
    summary, _ = player.play(name, 20_000, seed=11)

    assert summary.games == 20_000
    within(summary, PINS[name])
    # The exact mean is the solver's value of the empty scorecard: the pin, to 1e-9.
    assert summary.to_json()["exact_mean"] == pytest.approx(RULE_SETS[name].start_value, abs=1e-9)


@pytest.mark.parametrize(
    ("name", "thresholds"),
    [
        ("yahtzee-lower", (100, 140, 200)),
        ("yahtzee-upper", (60, 72, 90)),
        ("three-dice", (60, 90)),
        ("six-dice", (60, 90, 150)),
        ("forced-four", (30, 40)),
    ],
)
def test_every_figure_lies_within_four_standard_errors_of_the_exact_one(
    player: Player, name: str, thresholds: tuple[int, ...]
) -> None:
    """Each simulated figure against the exact distribution, within four of its own
    standard errors: a wrong error (too small) fails here as surely as a wrong figure."""
    rules = GAMES[name]
    summary, _ = player.play(name, 20_000, seed=12)
    exact = player.portal.call(score_distribution, player.engine(rules), rules, start_state())
    data: dict[str, Any] = summary.to_json(thresholds)

    within(summary, exact.mean)

    assert abs(summary.std - exact.std) <= SIGMAS * summary.std_se
    assert data["std_se"] == summary.std_se
    for t in thresholds:
        assert (
            abs(data["survival"][str(t)] - exact.survival(t))
            <= SIGMAS * data["survival_se"][str(t)]
        )
    for q, at in data["percentiles"].items():
        # Scores are whole points: a quantile may sit a point off where the mass is lumpy.
        margin = SIGMAS * data["percentiles_se"][q] + 1
        assert abs(at - exact.percentile(int(q) / 100)) <= margin, q
    for box, mean in exact.box_points.items():
        assert abs(data["box_points"][box] - mean) <= SIGMAS * data["box_points_se"][box], box
    shares = [("p_upper_bonus", exact.p_upper_bonus, rules.upper_bonus)]
    shares.append(("p_yahtzee", exact.p_yahtzee, rules.yahtzee_box is not None))
    shares.append(("p_any_yahtzee", exact.p_any_yahtzee, True))  # all alike: any rule set
    for key, p, applies in shares:
        if applies:
            assert abs(data[key] - p) <= SIGMAS * data[f"{key}_se"], key
        else:
            assert data[key] == p == 0.0


def _summary(scores: list[int], boxes: list[list[int]]) -> Summary:
    """A summary of known games: ``scores`` per game, ``boxes`` each box's points per game."""
    rules = RULE_SETS["yahtzee-lower"]
    points = np.zeros((len(scores), len(rules.categories)))
    points[:, : len(boxes)] = np.array(boxes, dtype=np.float64).T
    return Summary(
        rules,
        "optimal",
        0,
        histogram=np.bincount(scores),
        box_points=points.sum(axis=0),
        box_squares=(points**2).sum(axis=0),
    )


def test_standard_errors_of_a_small_sample_are_the_hand_computed_ones() -> None:
    # Scores 0 0 0 0 10: mean 2, s^2 = (4 * 4 + 64) / 4 = 20, m4 = (4 * 16 + 8**4) / 5 = 832.
    summary = _summary([0, 0, 0, 0, 10], [[0, 0, 0, 0, 10], [3, 3, 3, 3, 3]])

    assert summary.mean == 2.0
    assert summary.std == pytest.approx(np.sqrt(20))
    assert summary.se == pytest.approx(2.0)  # sqrt(20 / 5)
    # sqrt((832 - 400) / 5) / (2 sqrt 20) = sqrt(86.4 / 80)
    assert summary.std_se == pytest.approx(np.sqrt(1.08))
    assert summary.survival(5) == pytest.approx((0.2, np.sqrt(0.2 * 0.8 / 5)))
    assert summary.survival(10) == summary.survival(1) == summary.survival(5)
    assert summary.survival(11) == (0.0, 0.0)
    assert summary.survival(0) == (1.0, 0.0)
    assert summary.box_means[:3].tolist() == [2.0, 3.0, 0.0]
    assert summary.box_se[:3] == pytest.approx([2.0, 0.0, 0.0])  # sample std / sqrt(n)
    data: dict[str, Any] = summary.to_json((5, 11))
    assert data["survival"] == {"5": pytest.approx(0.2), "11": 0.0}
    assert data["survival_se"]["5"] == pytest.approx(np.sqrt(0.032))
    assert data["std_se"] == pytest.approx(np.sqrt(1.08))
    assert data["box_points_se"]["three_of_a_kind"] == pytest.approx(2.0)


def test_two_equally_common_scores_have_no_std_error_below_zero() -> None:
    # m4 = 1 but s^4 = (4 / 3)^2 with the n - 1: the delta method would take a square root
    # of a negative number.
    summary = _summary([0, 0, 2, 2], [])
    assert summary.std_se == 0.0
    assert _summary([7], []).std_se == 0.0


def test_one_game_is_one_game_and_measures_no_distance_from_the_exact_mean() -> None:
    one = replace(_summary([116], []), exact_mean=139.97)
    assert one.z is None
    assert one.to_json(())["z"] is None
    text = describe_simulation(one)
    assert "optimal strategy: 1 game (seed 0)" in text
    assert "116.00 (one game: no standard error)   exact mean 139.9700\n" in text
    assert "z =" not in text
    assert "\n  1 game in " in text
    two = replace(_summary([110, 120], []), exact_mean=115.0)
    assert two.z == 0.0  # a distance measured, and none found
    assert "2 games (seed 0)" in describe_simulation(two)


def test_percentile_errors_come_from_the_order_statistics() -> None:
    # Scores 1..100: the k-th smallest is k. The median's ranks are 50 -+ sqrt(25): 45 and 55.
    summary = _summary(list(range(1, 101)), [])

    assert summary.percentile(0.5) == 50
    assert summary.percentile_se(0.5) == 5.0  # (55 - 45) / 2
    assert summary.percentile_se(0.25) == 5.0  # 25 -+ 4.33: ranks 20 and 30
    assert summary.percentile_se(0.05) == 3.0  # 5 -+ 2.18: ranks 2 and 8
    assert summary.percentile_se(0.95) == 3.0  # ranks 92 and 98
    data: dict[str, Any] = summary.to_json()
    assert data["percentiles_se"] == {"5": 3.0, "25": 5.0, "50": 5.0, "75": 5.0, "95": 3.0}
    assert data["median_se"] == 5.0
    # Ranks are clipped to the games there are; one score everywhere has no spread.
    assert _summary([1, 2, 3], []).percentile_se(0.95) == 0.5  # ranks 2 and 3 (not 4)
    # 6859 * 0.95 - sqrt(6859 * 0.95 * 0.05) is 6498 but computes as 6497.999...: the rank
    # must still be 6498 (the high one is 6534.1..., so 6535).
    assert _summary(list(range(1, 6860)), []).percentile_se(0.95) == 18.5
    assert _summary([4] * 50, []).percentile_se(0.5) == 0.0


@pytest.mark.slow
def test_the_mean_of_20000_yahtzee_games_is_the_exact_mean(player: Player) -> None:
    summary, logs = player.play("yahtzee", 20_000, seed=2024, logs=50)

    within(summary, PINS["yahtzee"])
    # The same quantities as the exact distribution (pinned by test_stats.py, -m full):
    # each simulated figure within four standard errors of it.
    shares = {
        yahtzee_figures.P_UPPER_BONUS: summary.upper_bonus_games,
        yahtzee_figures.P_YAHTZEE: summary.yahtzee_games,
        yahtzee_figures.P_EXTRA_BONUS: summary.extra_games,
        yahtzee_figures.P_ANY_YAHTZEE: summary.any_yahtzee_games,
    }
    for p, count in shares.items():
        assert abs(count / summary.games - p) <= SIGMAS * np.sqrt(p * (1 - p) / summary.games)
    assert abs(summary.std - yahtzee_figures.STD) <= SIGMAS * summary.std_se
    median_off = abs(summary.percentile(0.5) - yahtzee_figures.MEDIAN)
    assert median_off <= SIGMAS * summary.percentile_se(0.5) + 1  # +1: whole points
    assert summary.extra_points % 100 == 0
    _check_logs(RULE_SETS["yahtzee"], logs)


def test_greedy_scores_less_than_optimal(player: Player) -> None:
    optimal, _ = player.play("yahtzee-lower", 5_000, seed=3)
    greedy, _ = player.play("yahtzee-lower", 5_000, seed=3, strategy="greedy")

    gap = optimal.mean - greedy.mean
    assert gap > SIGMAS * np.hypot(optimal.se, greedy.se)
    assert "exact_mean" not in greedy.to_json()


# --- logs ------------------------------------------------------------------------------------


def _check_logs(rules: RuleSet, logs: list[Log]) -> None:
    """13 turns (one per box), kept dice among the dice before and after, sums that add up."""
    n = len(rules.categories)
    for number, game in enumerate(logs):
        assert game["game"] == number
        json.loads(json.dumps(game))
        assert len(game["turns"]) == n
        assert sorted(t["box"] for t in game["turns"]) == sorted(c.name for c in rules.categories)
        for turn in game["turns"]:
            rolls, keeps, left = turn["rolls"], turn["keeps"], turn["rerolls_left"]
            assert len(rolls) == len(keeps) + 1 == len(left)
            assert left[0] == rules.rerolls
            assert left == sorted(left, reverse=True)
            for before, kept, after in zip(rolls, keeps, rolls[1:], strict=False):
                assert len(kept) < rules.dice
                assert not Counter(kept) - Counter(before)
                assert not Counter(kept) - Counter(after)
            assert all(r == sorted(r) and len(r) == rules.dice for r in rolls)
        total = sum(t["points"] + t["upper_bonus"] + t["yahtzee_bonus"] for t in game["turns"])
        assert game["score"] == total


def test_logs_hold_every_decision_of_every_game(player: Player) -> None:
    _, logs = player.play("yahtzee-lower", 300, seed=5, logs=300)
    assert len(logs) == 300
    _check_logs(RULE_SETS["yahtzee-lower"], logs)
    assert any(len(t["keeps"]) == 2 for g in logs for t in g["turns"])
    assert any(len(t["keeps"]) == 0 for g in logs for t in g["turns"])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_logs_of_other_dice_counts_hold_their_dice(player: Player, name: str) -> None:
    rules = VARIANTS[name]
    summary, logs = player.play(name, 200, seed=3, logs=200)
    _check_logs(rules, logs)
    assert summary.exact_mean == pytest.approx(
        float(player.portal.call(player.engine(rules).block, block_key(0))[0, 0]), abs=1e-12
    )
    if rules.order == "forced":  # each box in its turn: the scorecard's order
        names = [c.name for c in rules.categories]
        assert all([t["box"] for t in g["turns"]] == names for g in logs)


def test_a_three_dice_game_is_told_with_its_dice(
    player: Player, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _command(player, "three-dice", _args(games=200, seed=2, show=True)) == 0
    narration, statistics = capsys.readouterr().out.split("\n\n")

    rolled = [line.split("rolled ")[1][:3] for line in narration.splitlines()[:-1]]
    assert all(len(faces) == 3 and set(faces) <= set(GLYPHS) for faces in rolled)
    # The all-alike box is labelled with its points, as memo-solver stats labels it.
    assert "P(Triple 30)" in statistics
    assert "exact mean" in statistics


def test_greedy_yahtzee_logs_use_every_box_once(player: Player) -> None:
    summary, logs = player.play("yahtzee", 200, seed=6, strategy="greedy", logs=200)
    _check_logs(RULE_SETS["yahtzee"], logs)
    assert all(len(t["rolls"]) == 1 for g in logs for t in g["turns"])
    assert sum(g["score"] for g in logs) == summary.histogram @ np.arange(summary.histogram.size)


def test_the_same_seed_plays_the_same_games(player: Player) -> None:
    _, first = player.play("yahtzee-lower", 100, seed=9, logs=100)
    _, again = player.play("yahtzee-lower", 100, seed=9, logs=100)
    _, other = player.play("yahtzee-lower", 100, seed=10, logs=100)

    assert first == again
    assert first != other


def test_every_logged_decision_is_one_advise_ranks_best(player: Player) -> None:
    rules = RULE_SETS["yahtzee-upper"]
    _, logs = player.play("yahtzee-upper", 5, seed=4, logs=5)
    engine = player.engine(rules)
    for game in logs:
        filled = upper = 0
        for turn in game["turns"]:
            rolls, keeps, left = turn["rolls"], turn["keeps"], turn["rerolls_left"]
            for i, roll in enumerate(rolls):
                state = State(filled, upper, False, left[i], tuple(roll))
                actions = player.portal.call(advise, engine, rules, state).actions
                if i + 1 < len(rolls):  # rerolled: keep what was kept, or all five first
                    kept = tuple(keeps[i]) if left[i + 1] == left[i] - 1 else tuple(roll)
                    taken = [a for a in actions if a.kind == "keep" and a.keep == kept]
                else:
                    taken = [a for a in actions if a.category == turn["box"]]
                assert taken[0].loss <= 1e-9, (state, taken[0], actions[0])
            filled |= 1 << rules.category_index(turn["box"])
            upper += turn["points"]


def test_a_bounded_cache_plays_the_same_games(player: Player) -> None:
    rules = RULE_SETS["yahtzee-lower"]
    bounded = PolicyCache(rules, max_bytes=60_000)  # a few blocks' policies at a time
    _, small = player.play("yahtzee-lower", 300, seed=8, logs=300, cache=bounded)
    _, large = player.play("yahtzee-lower", 300, seed=8, logs=300, cache=PolicyCache(rules))

    assert small == large
    assert 0 < bounded.nbytes <= 60_000
    assert len(bounded) < 127


def test_a_filled_cache_builds_nothing_more(player: Player) -> None:
    rules = RULE_SETS["yahtzee-upper"]
    cache = PolicyCache(rules)
    player.portal.call(cache.fill, player.engine(rules))
    assert len(cache) == cache.built == 63

    summary, _ = player.play("yahtzee-upper", 1000, seed=1, cache=cache)
    assert summary.policies_built == 0
    assert summary.policy_bytes == cache.nbytes


def test_a_policy_built_for_some_guideposts_chooses_as_the_whole_block(player: Player) -> None:
    """Policies are built for the guideposts games stand on, then extended: every column
    holds the whole block's choices at its guidepost, however it was put together."""
    rules = RULE_SETS["yahtzee"]
    mask = rules.all_filled & ~0b1000001000111  # ones to threes, sixes, chance open
    successors = _successors(player, rules, mask)
    whole = optimal_policies(rules, [mask], successors)[mask]
    reachable = Guideposts.reachable(rules, mask).flat
    first, then = reachable[[5, 0, 9]], reachable[[9, 2, 5, 17]]
    cache = PolicyCache(rules)
    engine = player.engine(rules)

    (partial,) = player.portal.call(cache.policies, engine, [mask], [first])
    (extended,) = player.portal.call(cache.policies, engine, [mask], [then])
    (again,) = player.portal.call(cache.policies, engine, [mask], [first])

    assert partial.box.shape[1] == 3
    assert partial.lacking(reachable).size == reachable.size - 3
    assert extended.box.shape[1] == 5  # only the two new guideposts were built
    assert again is extended  # nothing more to build
    assert cache.built == 2
    assert cache.nbytes == extended.nbytes
    for level in then.tolist() + first.tolist():
        ours, full = extended.column.ravel()[level], whole.column.ravel()[level]
        assert np.array_equal(extended.box[:, ours], whole.box[:, full])
        for n in range(1, rules.rerolls + 1):
            assert np.array_equal(extended.keep[n][:, ours], whole.keep[n][:, full])


def test_an_empty_store_is_solved_a_layer_at_a_time_first() -> None:
    """Games from the start need nearly every block: the engine's whole-solve path solves
    them once, before the first turn, not top-down from each turn's policies."""
    rules = RULE_SETS["yahtzee-lower"]

    async def play() -> tuple[list[str], list[str]]:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            whole_solves: list[str] = []
            layered = engine.solve_layers

            async def solve_layers(key: str) -> Any:
                whole_solves.append(key)
                return await layered(key)

            engine.solve_layers = solve_layers  # type: ignore[method-assign,assignment]
            await simulate(engine, PolicyCache(rules), 50, seed=1)
            first = list(whole_solves)
            await simulate(engine, PolicyCache(rules), 50, seed=2)  # solved: nothing more
            return first, whole_solves

    first, both = anyio.run(play)
    assert first == both == [block_key(0)]


def test_a_filled_cache_of_a_forced_order_game_holds_its_prefixes(player: Player) -> None:
    cache = PolicyCache(FORCED)
    player.portal.call(cache.fill, player.engine(FORCED))
    assert sorted(m for m in FORCED.reachable_masks(0)[:-1] if m in cache) == [0, 1, 3, 7, 15]
    assert len(cache) == cache.built == 5


def test_games_span_chunks_in_order(player: Player) -> None:
    summary, logs = player.play("yahtzee-lower", 20, seed=1, logs=17, chunk_games=7)

    assert summary.games == 20
    assert [g["game"] for g in logs] == list(range(17))
    _check_logs(RULE_SETS["yahtzee-lower"], logs)


# --- the command -----------------------------------------------------------------------------


def _args(**given: Any) -> argparse.Namespace:
    defaults = {
        "games": 1,
        "seed": 0,
        "policy": "optimal",
        "log": None,
        "show": False,
        "threshold": [],
    }
    return argparse.Namespace(**{**defaults, "json": False, **given})


def _command(player: Player, name: str, args: argparse.Namespace) -> int:
    rules = GAMES[name]
    options = SimulateOptions.from_args(args)
    return player.portal.call(
        simulate_command, options, player.engine(rules), rules, Output(args.json)
    )


def test_show_narrates_a_game_with_dice_faces(
    player: Player, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _command(player, "yahtzee-lower", _args(games=3, seed=1, show=True)) == 0
    out = capsys.readouterr().out

    narration, statistics = out.split("\n\n")
    turns = narration.splitlines()[:-1]
    assert [line.split(":")[0] for line in turns] == [f"Turn {n}" for n in range(1, 8)]
    assert all(line.startswith(f"Turn {n}: rolled ") for n, line in enumerate(turns, 1))
    assert all(any(glyph in line for glyph in GLYPHS) for line in turns)
    assert all("→ score " in line for line in turns)
    assert narration.splitlines()[-1].startswith("Final score: ")
    assert "games/s" in statistics
    assert "± " in statistics


def test_the_text_gives_every_figure_with_its_standard_error(
    player: Player, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(games=500, seed=4, threshold=[150, 200])
    assert _command(player, "yahtzee-lower", args) == 0
    lines = capsys.readouterr().out.splitlines()

    def line(label: str) -> str:
        return next(text for text in lines if text.strip().startswith(label))

    for label in ("score", "std", "median", "P(score >= 150)", "P(score >= 200)"):
        assert " ± " in line(label), label
    assert line("percentiles").count(" ± ") == 4
    # Labelled as memo-solver stats labels it: 50 scored in the Yahtzee box.
    assert "%" in line("P(Yahtzee 50)")
    boxes = lines[lines.index("  mean points per box:") + 1 :][:7]
    assert all(" ± " in text for text in boxes)


def test_show_with_json_carries_the_game(
    player: Player, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _command(player, "yahtzee-lower", _args(games=2, show=True, json=True)) == 0
    payload = json.loads(capsys.readouterr().out)

    assert payload["games"] == 2
    assert len(payload["game"]["turns"]) == 7


def test_log_writes_one_json_line_per_game(
    player: Player, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "games.jsonl"
    args = _args(games=40, seed=2, log=path, json=True)
    assert _command(player, "yahtzee-lower", args) == 0
    summary = json.loads(capsys.readouterr().out)

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 40
    assert {(g["rules"], g["policy"], g["seed"]) for g in lines} == {
        ("yahtzee-lower", "optimal", 2)
    }
    _check_logs(RULE_SETS["yahtzee-lower"], lines)
    assert sum(g["score"] for g in lines) / 40 == pytest.approx(summary["mean"])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"games": 0}, "--games must be between 1 and 10,000,000"),
        ({"games": 10_000_001}, "--games must be between 1 and 10,000,000"),
        ({"seed": -1}, "--seed must be 0 or more"),
    ],
)
def test_bad_arguments_are_usage_errors(
    player: Player, given: dict[str, int], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        _command(player, "yahtzee-lower", _args(**given))


def memo_solver(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


def test_the_cli_prints_the_statistics_as_json(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    args = ("simulate", "--rules", "yahtzee-upper", "--games", "200", "--seed", "3", "--json")
    result = memo_solver(store, *args, "--threshold", "70", "--threshold", "80")

    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["games"] == 200
    assert payload["rules"] == "yahtzee-upper"
    figures = {"mean", "std", "median", "percentiles", "survival", "box_points"}
    assert {f"{key}_se" for key in figures - {"mean"}} | figures | {"se"} <= payload.keys()
    assert payload["survival"].keys() == payload["survival_se"].keys() == {"70", "80"}
    assert payload["percentiles"].keys() == payload["percentiles_se"].keys()
    assert payload["box_points"].keys() == payload["box_points_se"].keys()
    assert abs(payload["mean"] - PINS["yahtzee-upper"]) <= 5 * payload["se"]
    again = json.loads(memo_solver(store, *args, "--threshold", "70", "--threshold", "80").stdout)
    timings = {"seconds", "games_per_second", "policy_seconds"}
    assert {k: v for k, v in again.items() if k not in timings} == {
        k: v for k, v in payload.items() if k not in timings
    }


def test_the_cli_rejects_zero_games_in_one_line(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "store.sqlite3", "simulate", "--games", "0")

    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--games" in result.stderr
