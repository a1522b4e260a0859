"""The target policy (play for the best chance of N more points) as choices, and its exact
distribution.

The forward pass under the target policy (:func:`memo_solver.games.yahtzee.analysis.distribution.
target_pass`) moves the mass turn by turn by the policy's choices; the chance objective's
value comes from the kernel's backward values. Two roads to one number: P(points to come
>= N) under the target policy must equal the value to 1e-9, and be at least the mean
policy's P(>= N) from its own exact distribution, itself held to the brute force's
(``need_brute_force.mean_policy_distribution``), on tiny rule sets of every kind and end
games of the built-ins. Where every action ties (a need met, or past the reach) the mean
policy plays, and the ties the chance leaves are broken by the mean policy's choice.
"""

from __future__ import annotations

from itertools import combinations

import anyio
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support import need_brute_force as brute
from support.rule_strategies import TinyState, tiny_rule_sets, tiny_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.need_advice import advise_need
from memo_solver.games.yahtzee.analysis.distribution import (
    Distribution,
    Scores,
    score_distribution,
    target_distribution,
)
from memo_solver.games.yahtzee.analysis.policy import target_policy, turn_policy
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.need import (
    DEFAULT_CAP,
    NeedBeyondCapError,
    NeedGame,
    reach,
    width,
)
from memo_solver.games.yahtzee.solve.turn import Guideposts, solve_blocks, turn_tables
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9
YAHTZEE = RULE_SETS["yahtzee"]
OPEN = (10, 11, 12)
"""Large straight, Yahtzee and Chance: an end game where the need and the mean part ways."""


def both_policies(
    rules: RuleSet, state: State, need: int, cap: int = 400
) -> tuple[float, Scores, Distribution]:
    """The chance objective's value of ``state`` for ``need``, the target policy's
    distribution and the mean policy's, on fresh engines over one memory store."""

    async def run() -> tuple[float, Scores, Distribution]:
        store = MemoryStore()
        async with (
            open_engine(YahtzeeGame(rules), store) as mean,
            open_engine(NeedGame(rules, cap), store) as chance,
        ):
            advice = await advise_need(chance, mean, rules, state, need)
            target = await target_distribution(mean, chance, rules, state, need)
            return advice.probability, target, await score_distribution(mean, rules, state)

    return anyio.run(run)


def ours(tiny: TinyState) -> State:
    return State(
        sum(1 << box for box in tiny.filled), tiny.upper, tiny.fifty, tiny.rerolls_left, tiny.dice
    )


def assert_target_reaches_its_value(value: float, target: Scores, mean: Scores, need: int) -> None:
    assert target.probabilities.sum() == pytest.approx(1.0, abs=1e-12)
    assert target.survival(need) == pytest.approx(value, abs=TOL)
    assert target.survival(need) >= mean.survival(need) - TOL


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_target_policy_reaches_the_need_as_often_as_its_value(data: st.DataObject) -> None:
    """Tiny variants, any reachable state, needs from below 0 to past the most: the target
    policy's P(>= N) by the forward pass is the value, at least the mean policy's P(>= N),
    and the mean policy's whole distribution is the brute force's."""
    tiny_rules = data.draw(tiny_rule_sets(), label="rules")
    tiny = data.draw(tiny_states(tiny_rules), label="state")
    args = (tiny_rules, tiny.filled, tiny.upper, tiny.fifty)
    most = brute.most_points(*args)
    need = data.draw(st.integers(-1, most + 2), label="need")
    brute.forget()
    value, target, mean = both_policies(parse_rule_set(tiny_rules), ours(tiny), need)
    assert_target_reaches_its_value(value, target, mean, need)
    expected = brute.mean_policy_distribution(*args, tiny.dice, tiny.rerolls_left)
    points = np.zeros(max(mean.probabilities.size, max(expected) + 1))
    for total, chance in expected.items():
        points[total] = chance
    assert mean.probabilities == pytest.approx(points[: mean.probabilities.size], abs=TOL)
    assert points[mean.probabilities.size :].sum() == pytest.approx(0.0, abs=TOL)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_joker_variants_reach_the_need_as_often_as_their_value(data: st.DataObject) -> None:
    tiny_rules = data.draw(tiny_rule_sets(max_boxes=4, joker=True), label="rules")
    tiny = data.draw(tiny_states(tiny_rules), label="state")
    most = brute.most_points(tiny_rules, tiny.filled, tiny.upper, tiny.fifty)
    need = data.draw(st.integers(1, most), label="need")
    value, target, mean = both_policies(parse_rule_set(tiny_rules), ours(tiny), need)
    assert_target_reaches_its_value(value, target, mean, need)


@st.composite
def end_games(draw: st.DrawFn, rules: RuleSet, most_open: int) -> State:
    """A reachable state of a built-in with one to ``most_open`` boxes open, at a turn start
    or with dice."""
    boxes = range(len(rules.categories))
    open_ = draw(st.sets(st.sampled_from(boxes), min_size=1, max_size=most_open), label="open")
    filled = rules.all_filled & ~sum(1 << box for box in open_)
    guideposts = Guideposts.reachable(rules, filled)
    at = draw(st.integers(0, guideposts.upper.size - 1), label="guidepost")
    upper, bonus = int(guideposts.upper[at]), bool(guideposts.bonus[at])
    if draw(st.booleans()):
        return State(filled, upper, bonus, None, None)
    dice = tuple(sorted(draw(st.lists(st.integers(1, 6), min_size=5, max_size=5))))
    return State(filled, upper, bonus, draw(st.integers(0, rules.rerolls)), dice)


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_end_games_of_yahtzee_reach_the_need_as_often_as_their_value(
    data: st.DataObject,
) -> None:
    state = data.draw(end_games(YAHTZEE, 3), label="state")
    most = min(DEFAULT_CAP, reach(YAHTZEE, state.filled))  # past the cap: refused, not played
    need = data.draw(st.integers(1, most), label="need")
    value, target, mean = both_policies(YAHTZEE, state, need)
    assert_target_reaches_its_value(value, target, mean, need)


def test_a_need_met_or_out_of_reach_is_played_by_the_mean_policy() -> None:
    """Needs of 0 or less, and past the reach of the open boxes, tie every action: the
    target policy's distribution is then the mean policy's, to the last bit."""
    state = State(YAHTZEE.all_filled & ~sum(1 << box for box in OPEN), 0, False, None, None)
    top = reach(YAHTZEE, state.filled)
    for need in (-5, 0, top + 1):
        _, target, mean = both_policies(YAHTZEE, state, need)
        np.testing.assert_array_equal(target.probabilities, mean.probabilities)


def test_playing_for_a_need_costs_points_and_gains_chance() -> None:
    """Large straight, Yahtzee and Chance open: needing 60 more, the target policy gives up
    some of the mean's points for a better chance of 60 than the mean policy's."""
    state = State(YAHTZEE.all_filled & ~sum(1 << box for box in OPEN), 0, False, None, None)
    value, target, mean = both_policies(YAHTZEE, state, 60)
    assert value > mean.survival(60) + 0.001
    assert target.mean < mean.mean - 0.1


def test_a_turn_s_steps_on_the_value_axis_are_the_block_solver_s() -> None:
    """The turn kept step by step (:func:`turn_tables`, what the target policy chooses
    from) for lanes at any need starts where the block solver's chance of that need is:
    one kernel, two uses."""
    rules = YAHTZEE
    filled = rules.all_filled & ~sum(1 << box for box in OPEN)
    wide = width(rules, 400, filled)
    chances = {rules.all_filled: np.zeros((*rules.block_shape, wide))}
    for count in (1, 2, 3):  # each layer from the one after it, all at one width
        masks = [rules.all_filled & ~sum(1 << b for b in o) for o in combinations(OPEN, count)]
        solved = solve_blocks(rules, masks, chances, width=wide, shift=True)
        chances |= zip(masks, solved, strict=True)
    guideposts = Guideposts.reachable(rules, filled)
    guide = np.repeat(np.arange(guideposts.upper.size), 4)
    steps = np.tile(np.array([0, 59, 149, wide - 1], dtype=np.int64), guideposts.upper.size)
    lanes = Guideposts(rules, guideposts.upper[guide], guideposts.bonus[guide])
    tables = turn_tables(
        rules, filled, lambda box: chances[filled | 1 << box], lanes, rules.rerolls,
        steps=steps, width=wide, shift=True,
    )  # fmt: skip
    expected = chances[filled][guideposts.upper[guide], guideposts.bonus[guide], steps]
    np.testing.assert_array_equal(tables.start[0], expected)


def test_ties_of_the_chance_go_to_the_mean_policy_s_choice() -> None:
    """Every action hopeless (the successors' chances all 0, a need more than one turn can
    bank): each choice of the target policy is the mean policy's, keep and box alike."""
    rules = YAHTZEE
    filled = rules.all_filled & ~sum(1 << box for box in OPEN)
    mean_blocks = {rules.all_filled: solve_blocks(rules, [rules.all_filled], {})[0]}
    for count in (1, 2):  # the blocks below, each layer from the one after it
        masks = [rules.all_filled & ~sum(1 << b for b in o) for o in combinations(OPEN, count)]
        mean_blocks |= zip(masks, solve_blocks(rules, masks, mean_blocks), strict=True)
    guideposts = Guideposts.reachable(rules, filled)
    mean = turn_policy(rules, filled, lambda box: mean_blocks[filled | 1 << box], guideposts)
    wide = width(rules, 400, filled)
    hopeless = np.zeros((*rules.block_shape, wide))
    lanes = np.arange(guideposts.upper.size, dtype=np.int64)
    steps = np.full(lanes.size, wide - 1, dtype=np.int64)  # need = the reach: past any turn
    target = target_policy(rules, filled, mean, guideposts, lambda _: hopeless, lanes, steps, wide)
    assert (target.tables.scores[np.isfinite(target.tables.scores)] == 0).all()
    np.testing.assert_array_equal(target.box, mean.box)
    for n in range(1, rules.rerolls + 1):
        np.testing.assert_array_equal(target.keep[n], mean.keep[n])


def test_a_need_above_the_cap_that_the_boxes_could_reach_is_refused() -> None:
    rules = RULE_SETS["yahtzee-upper"]

    async def run() -> None:
        store = MemoryStore()
        async with (
            open_engine(YahtzeeGame(rules), store) as mean,
            open_engine(NeedGame(rules, 20), store) as chance,
        ):
            with pytest.raises(NeedBeyondCapError, match="cap of 20"):
                await target_distribution(mean, chance, rules, State(0, 0, False, None, None), 21)

    anyio.run(run)
