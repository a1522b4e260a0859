"""The strategy's compiled choices and where they take the dice, against plain enumerations.

:mod:`memo_solver.games.yahtzee.analysis.policy` walks the dice lattices in compiled loops; these
tests hold each loop to an answer computed without the lattices: every sub-keep of a roll
ranked by the tie rule, every throw of the rerolled dice, numpy's own rounding.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from memo_solver.games.yahtzee.analysis.policy import (
    block_choices,
    choose_keeps,
    outcomes,
    turn_policy,
)
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.dice import FACES, Dice, dice_universe
from memo_solver.games.yahtzee.rules.rule_set import FloatArray
from memo_solver.games.yahtzee.rules.ties import tie
from memo_solver.games.yahtzee.solve.turn import Guideposts


def _random_keeps(dice: Dice, width: int, rng: np.random.Generator) -> np.ndarray:
    """A keep inside each roll, drawn at random per roll and lane: any choice at all."""
    inside = [dice.sub_keeps(roll) for roll in dice.rolls]
    return np.array([[rng.choice(keeps) for _ in range(width)] for keeps in inside])


def _enumerated(dice: Dice, keep: np.ndarray, rolls: FloatArray) -> FloatArray:
    """One reroll by listing every throw: keep ``keep[r, t]`` of roll r, throw the other
    dice, each face sequence 1/6^m."""
    after = np.zeros_like(rolls)
    for r, t in product(range(dice.n_rolls), range(rolls.shape[1])):
        kept = dice.keeps[keep[r, t]]
        thrown = dice.count - len(kept)
        for faces in product(range(1, FACES + 1), repeat=thrown):
            after[dice.roll_index[tuple(sorted(kept + faces))], t] += rolls[r, t] / FACES**thrown
    return after


@pytest.mark.parametrize(("count", "rerolls"), [(1, 1), (2, 2), (3, 2), (4, 1)])
def test_outcomes_follow_every_throw_of_the_rerolled_dice(count: int, rerolls: int) -> None:
    dice = dice_universe(count)
    rng = np.random.default_rng(count)
    width = 3
    keep = [np.empty((0, 0), dtype=np.int64)]
    keep += [_random_keeps(dice, width, rng) for _ in range(rerolls)]
    rolls = rng.random((dice.n_rolls, width))
    rolls /= rolls.sum(axis=0)

    expected = rolls
    for n in range(rerolls, 0, -1):
        expected = _enumerated(dice, keep[n], expected)
    ends = outcomes(dice, keep, rolls, rerolls)

    assert np.abs(ends - expected).max() < 1e-15
    assert np.abs(ends.sum(axis=0) - 1).max() < 1e-15


def test_outcomes_of_the_first_roll_are_the_transition_chances() -> None:
    """Keeping nothing before each reroll: the rolls of five fresh dice, whatever came."""
    dice = dice_universe(5)
    keep_nothing = np.zeros((dice.n_rolls, 2), dtype=np.int64)
    start = np.zeros((dice.n_rolls, 2))
    start[0, 0] = start[-1, 1] = 1.0
    ends = outcomes(dice, [keep_nothing, keep_nothing], start, 1)
    assert np.abs(ends - dice.transition[0][:, None]).max() < 1e-16


def test_no_reroll_left_leaves_the_rolls_as_they_are() -> None:
    dice = dice_universe(5)
    rolls = np.random.default_rng(0).random((dice.n_rolls, 4))
    assert np.array_equal(outcomes(dice, [np.empty((0, 0), dtype=np.int64)], rolls, 0), rolls)


@pytest.mark.parametrize(("count", "width"), [(1, 1), (3, 5), (5, 130), (6, 3)])
def test_the_keep_choice_ranks_every_sub_keep_by_the_tie_rule(count: int, width: int) -> None:
    """Any dice count, past one vector of lanes: best value to 1e-9, then the most dice,
    then the first keep, among the keeps inside the roll."""
    dice = dice_universe(count)
    rng = np.random.default_rng(width)
    keeps = (rng.integers(0, 4, size=(dice.n_keeps, width)) * 0.5).astype(np.float64)
    keeps += rng.choice([0.0, 3e-12, -3e-12], size=keeps.shape)  # below the tie level

    chosen = choose_keeps(dice, keeps)
    for r, roll in enumerate(dice.rolls):
        inside = dice.sub_keeps(roll)
        for t in range(width):
            best = max(inside, key=lambda k: (round(keeps[k, t], 9), len(dice.keeps[k]), -k))
            assert chosen[r, t] == best


@pytest.mark.parametrize("value", [-1.0, np.nan, 1e12])
def test_keep_values_outside_the_tie_keys_range_are_refused(value: float) -> None:
    dice = dice_universe(2)
    keeps = np.ones((dice.n_keeps, 2))
    keeps[3, 1] = value
    with pytest.raises(ValueError, match="out of the range"):
        choose_keeps(dice, keeps)


@pytest.mark.parametrize("name", ["yahtzee", "yahtzee-lower", "yazy"])
def test_the_box_chosen_is_the_first_best_by_the_tie_key(name: str) -> None:
    """The compiled box choice against numpy's rounding and argmax (the first best), on
    turn tables with many near ties: successors whose values differ by float noise."""
    rules = RULE_SETS[name]
    rng = np.random.default_rng(3)
    for filled in [0, 0b1011, rules.all_filled & ~0b10001]:
        if filled == rules.all_filled or not rules.open_boxes(filled):
            continue
        guideposts = Guideposts.reachable(rules, filled)
        coarse = {
            box: rng.integers(0, 3, size=rules.block_shape) * 10.0
            + rng.choice([0.0, 1e-12], size=rules.block_shape)
            for box in rules.open_boxes(filled)
        }
        policy = turn_policy(rules, filled, coarse.__getitem__, guideposts)
        assert np.array_equal(policy.box, tie(policy.tables.scores[0]).argmax(axis=0))


def test_a_full_scorecard_has_no_choices() -> None:
    rules = RULE_SETS["yahtzee-upper"]
    codes = np.zeros((rules.universe.n_rolls, rules.universe.n_keeps), dtype=np.uint8)
    with pytest.raises(ValueError, match="every box filled"):
        block_choices(rules, [rules.all_filled], np.zeros, codes, [np.array([0])])
