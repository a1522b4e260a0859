"""The risk dial: the exponential-utility tables against a brute force, at the ends of the dial
and near its middle.

The brute force (``risk_brute_force.py``) plays the rule-file dict on its own terms and
computes E[exp(theta X)] itself, sharing no code with the solver, whose blocks hold
certainty equivalents relative to a per-lane reference; here the solver solves the same
dict through :func:`parse_rule_set`, bottom up, a layer at a time as a whole solve does.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support import risk_brute_force as brute
from support.rule_strategies import (
    tiny_rule_sets,
    tiny_saved_rule_sets,
    tiny_saved_states,
)

from memo_solver.core.engine import open_engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.distribution import score_distribution
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.one_roll import roll_values
from memo_solver.games.yahtzee.solve.risk import RiskError, RiskGame, check_theta
from memo_solver.games.yahtzee.solve.turn import Guideposts, turn_tables
from memo_solver.stores.memory import MemoryStore

REL = 1e-9
THETAS = st.integers(-500, 500).filter(bool).map(lambda milli: milli / 1000)
"""Every risk the dial takes but 0 (the mean game), the ends of the dial among them."""


def solve_game(game: YahtzeeGame) -> dict[int, Block]:
    """Every block of the game by filled mask, a layer at a time, the end first."""
    by_key: dict[str, Block] = {}
    for layer in game.rules.layers(0):
        keys = [block_key(mask) for mask in layer]
        by_key |= zip(keys, game.solve_many(keys, by_key), strict=True)
    return {int(key, 16): block for key, block in by_key.items()}


def levels(rules: RuleSet, upper: int, fifty: bool) -> tuple[int, int]:
    """Where a scorecard's upper total and fifty flag sit in its block."""
    level = min(upper, rules.upper_threshold) if rules.n_upper_levels > 1 else 0
    return level, int(fifty) if rules.n_bonus_levels > 1 else 0


def solver_actions(
    game: RiskGame,
    blocks: dict[int, Block],
    filled: int,
    at: tuple[int, int],
    dice: tuple[int, ...],
    rolls_left: int,
) -> dict[str, float]:
    """The certainty equivalent of every action the brute force names: each legal box, and
    each keep that rerolls a die."""
    rules = game.rules
    universe = rules.universe
    successors = [blocks[filled | 1 << box] for box in rules.open_boxes(filled)]
    boxes, scores, keeps = roll_values(
        rules, filled, successors, at, universe.roll_index[dice], rolls_left, theta=game.theta
    )
    named = {
        f"score {rules.categories[box].name}": float(value)
        for box, value in zip(boxes, scores, strict=True)
        if value > -np.inf  # a box the Joker forbids
    }
    if rolls_left:
        for k in universe.sub_keeps(dice):
            kept = universe.keeps[k]
            if len(kept) < rules.dice:
                named["keep " + (" ".join(map(str, kept)) or "nothing")] = float(keeps[k])
    return named


def check_against_brute_force(document: dict[str, Any], theta: float, data: st.DataObject) -> None:
    """Four drawn states of the rule set: the turn start's certainty equivalent, and every
    action's once rolled, the brute force's to 1e-9 relative."""
    game = RiskGame(parse_rule_set(document), theta)
    rules = game.rules
    blocks = solve_game(game)
    for _ in range(4):
        state = data.draw(tiny_saved_states(document))
        bank = state.saved if rules.saved_rolls else 0
        filled = sum(1 << box for box in state.filled)
        at = levels(rules, state.upper, state.fifty)
        block = blocks[filled]
        start = block[(*at, bank)] if rules.saved_rolls else block[at]
        expected = brute.value(document, theta, state.filled, state.upper, state.fifty, bank)
        assert start == pytest.approx(expected, rel=REL)
        if state.dice is None or state.rolls_left is None:
            continue
        rolls_left = state.rolls_left if rules.saved_rolls else min(state.rolls_left, rules.rerolls)
        mine = solver_actions(game, blocks, filled, at, state.dice, rolls_left)
        theirs = brute.actions(
            document, theta, state.filled, state.upper, state.fifty, state.dice, rolls_left
        )
        assert mine == pytest.approx(theirs, rel=REL)


@settings(max_examples=30, deadline=None)
@given(st.data(), THETAS)
def test_every_turn_start_and_action_is_the_brute_forces(data: st.DataObject, theta: float) -> None:
    """Tiny rule sets (1-3 dice, 1-3 boxes, bonuses, forced order) and Joker ones."""
    joker = data.draw(st.booleans())
    check_against_brute_force(data.draw(tiny_rule_sets(joker=joker)), theta, data)


@settings(max_examples=20, deadline=None)
@given(st.data(), THETAS)
def test_with_saved_rolls_every_turn_start_and_action_is_the_brute_forces(
    data: st.DataObject, theta: float
) -> None:
    """The bank of unused rolls (a cap, or none): one chain over the rolls left, one
    reference per lane for all of it."""
    check_against_brute_force(data.draw(tiny_saved_rule_sets(joker=True)), theta, data)


# --- the ends of the dial: every value finite ----------------------------------------------


def reached_values(blocks: dict[int, Block]) -> Block:
    """Every value of the blocks at a turn start some game reaches (the others are NaN)."""
    values = np.concatenate([block.ravel() for block in blocks.values()])
    reached: Block = values[~np.isnan(values)]
    return reached


@pytest.mark.slow
@pytest.mark.parametrize("theta", [0.5, -0.5])
def test_at_the_ends_of_the_dial_every_turn_start_of_yahtzee_is_finite(theta: float) -> None:
    """E[exp(0.5 X)] overflows a float (X up to 1575 in Yahtzee) and E[exp(-0.5 X)] all but
    vanishes: the certainty equivalents stay in points, each turn's utilities relative to
    its lane's reference. The bold table is above the mean and the careful one below."""
    blocks = solve_game(RiskGame(get_rule_set("yahtzee"), theta))

    assert np.isfinite(reached_values(blocks)).all()
    start = float(blocks[0].flat[0])
    assert start > 254.59 if theta > 0 else start < 254.58  # the mean: 254.5877


def every_action_is_finite(rules: RuleSet, theta: float, every: int = 1) -> None:
    """Every turn start of the table finite; and every turn of every ``every``-th block kept
    step by step, at every turn start a game reaches: each roll's, keep's and box's
    certainty equivalent finite, bar the boxes the Joker forbids (-inf, the worst for either
    sign, never +inf or NaN). The block's own solve takes a max over them, which hides a
    NaN or a -inf: hence the turns."""
    blocks = solve_game(RiskGame(rules, theta))
    assert np.isfinite(reached_values(blocks)).all()
    for filled in list(blocks)[::every]:
        if filled == rules.all_filled:
            continue

        def successor(box: int, filled: int = filled) -> Block:
            return blocks[filled | 1 << box]

        turn = turn_tables(
            rules, filled, successor, Guideposts.reachable(rules, filled), rules.rerolls,
            theta=theta,
        )  # fmt: skip
        for kept in (*turn.rolls, *turn.keeps[1:], turn.start):
            assert np.isfinite(kept).all()
        assert not np.isnan(turn.scores).any()
        assert (turn.scores < np.inf).all()


@pytest.mark.full
@pytest.mark.parametrize("theta", [0.5, -0.5])
def test_at_the_ends_of_the_dial_every_action_of_yahtzee_is_finite(theta: float) -> None:
    every_action_is_finite(get_rule_set("yahtzee"), theta)


@pytest.mark.full
@pytest.mark.parametrize("theta", [0.5, -0.5])
def test_at_the_ends_of_the_dial_maxi_yatzy_is_finite(theta: float) -> None:
    """Six dice and 20 boxes, values up to 374 points to come: every turn start of its
    1,048,576 blocks (minutes), and the turns of one block in 500 (a turn kept step by step
    is a Python call per block: all of them would take an hour)."""
    every_action_is_finite(get_rule_set("maxi-yatzy"), theta, every=500)


# --- near the middle: the mean, and half the variance --------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("theta", [0.001, -0.001])
def test_a_small_risk_moves_the_value_by_half_the_variance_per_unit(theta: float) -> None:
    """ln E[exp(theta X)] = theta mean + theta^2 variance / 2 + O(theta^3), so the certainty
    equivalent is mean + theta variance / 2 + O(theta^2): at theta = 0.001 the slope (CE -
    mean) / theta is variance / 2 within 1 %. The variance is the exact distribution's
    (the forward pass, the ``stats`` command's)."""
    rules = get_rule_set("yahtzee-lower")

    async def mean_and_variance() -> tuple[float, float]:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            scores = await score_distribution(engine, rules, start_state())
            return scores.mean, scores.std**2

    mean, variance = anyio.run(mean_and_variance)
    certain = float(solve_game(RiskGame(rules, theta))[0].flat[0])

    assert (certain - mean) / theta == pytest.approx(variance / 2, rel=0.01)


# --- the dial's values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "theta"),
    [("0.05", 0.05), ("-0.5", -0.5), ("0.5", 0.5), (" 1e-3 ", 0.001), (0.1, 0.1)],
)
def test_a_risk_is_a_number_of_the_dial_to_three_decimals(typed: str | float, theta: float) -> None:
    assert check_theta(typed) == theta


@pytest.mark.parametrize("typed", ["0.501", "-0.6", "0.0005", "1/2", "nan", "inf", "", 0.1234])
def test_any_other_risk_is_refused_naming_the_field(typed: str | float) -> None:
    with pytest.raises(RiskError, match=r"from -0\.5 to 0\.5 with at most 3 decimals") as refused:
        check_theta(typed)
    assert refused.value.field == "risk"


@pytest.mark.parametrize(
    ("theta", "name"), [(0.05, "risk50"), (-0.1, "risk-100"), (0.5, "risk500")]
)
def test_a_risk_tables_namespace_holds_theta_in_thousandths(theta: float, name: str) -> None:
    """No ``+`` or ``.``: a namespace travels in URLs and query strings."""
    rules = get_rule_set("yahtzee")

    assert RiskGame(rules, theta).fingerprint == f"{rules.fingerprint}-{name}"


def test_a_risk_of_0_is_the_mean_table_and_has_no_table_of_its_own() -> None:
    with pytest.raises(RiskError, match="mean table"):
        RiskGame(get_rule_set("yahtzee"), 0.0)


def test_the_family_reads_a_risk_tables_fingerprint_into_its_game() -> None:
    """Jobs, workers, ``status`` and ``prune`` know a risk table by its namespace alone: a
    built-in's with no definition stored, a file's from the one stored beside it; theta's
    thousandths without a sign or a point, never 0 (the mean table's own name)."""
    from memo_solver.games import registry
    from memo_solver.games.yahtzee.rules.rule_file import format_rule_document, rule_set_document

    yahtzee = get_rule_set("yahtzee")
    for theta, name in ((0.05, "risk50"), (-0.5, "risk-500")):
        fingerprint = f"{yahtzee.fingerprint}-{name}"
        owned = registry.value_table(fingerprint)
        assert owned is not None
        assert (owned[0].name, owned[1].game) == ("yahtzee", yahtzee.fingerprint)
        game = registry.game_by_fingerprint(fingerprint, None).game
        assert isinstance(game, RiskGame)
        assert (game.fingerprint, game.theta) == (fingerprint, theta)
    yatzy = get_rule_set("yatzy")
    document = format_rule_document(rule_set_document(yatzy)).encode()
    from_file = registry.game_by_fingerprint(f"{yatzy.fingerprint}-risk-5", document)
    assert from_file.game.name == "yatzy (risk -0.005)"
    for not_a_risk in ("risk0", "risk+50", "risk0.05", "risk050", "risk1000"):
        assert registry.value_table(f"{yahtzee.fingerprint}-{not_a_risk}") is None
    with pytest.raises(RiskError):
        registry.game_by_fingerprint(f"{yahtzee.fingerprint}-risk501", None)
