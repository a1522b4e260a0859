"""The dice universe of one to six dice and the keep-lattice math, checked against plain
enumeration of every outcome."""

from __future__ import annotations

from collections import Counter
from itertools import product
from math import comb

import numpy as np
import pytest

from memo_solver.games.yahtzee.rules.dice import Dice, dice_universe
from memo_solver.games.yahtzee.solve import kernel

COUNTS = range(1, 7)


@pytest.fixture(params=COUNTS, ids=[f"{n}dice" for n in COUNTS])
def dice(request: pytest.FixtureRequest) -> Dice:
    universe: Dice = dice_universe(request.param)
    return universe


def test_five_dice_make_252_rolls_and_462_keeps() -> None:
    five = dice_universe(5)
    assert five.n_rolls == len(five.rolls) == 252
    assert five.n_keeps == len(five.keeps) == 462
    assert five.keep_of_roll == 462 - 252
    assert five.size_offsets == (0, 1, 7, 28, 84, 210, 462)
    assert five.rolls[0] == (1, 1, 1, 1, 1)
    assert five.rolls[-1] == (6, 6, 6, 6, 6)


def test_six_dice_make_462_rolls_and_924_keeps() -> None:
    six = dice_universe(6)
    assert (six.n_rolls, six.n_keeps) == (462, 924)
    assert six.rolls[-1] == (6,) * 6


def test_the_universe_is_built_once_per_count() -> None:
    assert dice_universe(6) is dice_universe(6)
    assert dice_universe(3) is not dice_universe(4)


@pytest.mark.parametrize("count", [0, 7])
def test_counts_outside_one_to_six_are_refused(count: int) -> None:
    with pytest.raises(ValueError, match=r"dice: expected 1\.\.6"):
        Dice(count)


def test_counts_of_rolls_and_keeps(dice: Dice) -> None:
    n = dice.count
    assert dice.n_rolls == len(dice.rolls) == comb(n + 5, 5)
    assert dice.n_keeps == len(dice.keeps) == comb(n + 6, 6)  # sum over sizes 0..n
    by_size = Counter(len(keep) for keep in dice.keeps)
    assert [by_size[s] for s in range(n + 1)] == [comb(s + 5, 5) for s in range(n + 1)]
    for size in range(n + 1):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        assert all(len(keep) == size for keep in dice.keeps[lo:hi])
        assert dice.keep_sizes[lo:hi].tolist() == [size] * (hi - lo)


def test_keeps_ordered_by_size_then_lexicographically(dice: Dice) -> None:
    assert list(dice.keeps) == sorted(dice.keeps, key=lambda k: (len(k), k))
    assert len(set(dice.keeps)) == dice.n_keeps
    assert all(list(keep) == sorted(keep) for keep in dice.keeps)
    assert dice.keeps[0] == ()


def test_last_keeps_are_the_rolls_in_order(dice: Dice) -> None:
    assert dice.keeps[dice.keep_of_roll :] == dice.rolls
    assert list(dice.rolls) == sorted(dice.rolls)
    all_rolls = {tuple(sorted(r)) for r in product(range(1, 7), repeat=dice.count)}
    assert set(dice.rolls) == all_rolls
    for r, roll in enumerate(dice.rolls):
        assert dice.roll_index[roll] == r
        assert dice.keep_index[roll] == dice.keep_of_roll + r
    for k, keep in enumerate(dice.keeps):
        assert dice.keep_index[keep] == k


def test_counts_sums_and_all_alike_tables(dice: Dice) -> None:
    for k, keep in enumerate(dice.keeps):
        assert dice.keep_counts[k].tolist() == [keep.count(f) for f in range(1, 7)]
    assert np.array_equal(dice.roll_counts, dice.keep_counts[dice.keep_of_roll :])
    assert dice.roll_sums.tolist() == [sum(roll) for roll in dice.rolls]
    alike = [(f,) * dice.count for f in range(1, 7)]
    assert [dice.rolls[r] for r in dice.alike_rolls] == alike
    assert dice.all_alike.tolist() == [roll in alike for roll in dice.rolls]


def test_children_add_one_die(dice: Dice) -> None:
    assert len(dice.children) == dice.count
    for size in range(dice.count):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        children = dice.children[size]
        assert children.shape == (6, hi - lo)
        for col, keep in enumerate(dice.keeps[lo:hi]):
            for face in range(1, 7):
                child = dice.keeps[children[face - 1, col]]
                assert Counter(child) == Counter(keep) + Counter([face])


def test_parents_remove_one_die(dice: Dice) -> None:
    assert len(dice.parents) == dice.count + 1
    for size in range(1, dice.count + 1):
        lo, hi = dice.size_offsets[size], dice.size_offsets[size + 1]
        parents = dice.parents[size]
        assert parents.shape == (min(size, 6), hi - lo)
        for col, keep in enumerate(dice.keeps[lo:hi]):
            expected = {tuple(sorted(keep[:i] + keep[i + 1 :])) for i in range(size)}
            listed = {dice.keeps[p] for p in parents[:, col]}
            # Every distinct parent is listed; padding only repeats one of them.
            assert listed == expected


def test_transition_is_the_chance_of_each_roll_after_each_keep(dice: Dice) -> None:
    """Every keep rerolled, every outcome of the other dice counted: the row is their share."""
    table = dice.transition
    assert table.shape == (dice.n_keeps, dice.n_rolls)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    for k, keep in enumerate(dice.keeps):
        rerolled = dice.count - len(keep)
        seen = Counter(
            dice.roll_index[tuple(sorted(keep + extra))]
            for extra in product(range(1, 7), repeat=rerolled)
        )
        expected = np.zeros(dice.n_rolls)
        expected[list(seen)] = np.array(list(seen.values())) / 6**rerolled
        np.testing.assert_allclose(table[k], expected, rtol=0, atol=1e-12)


def test_sub_keeps_are_all_sub_multisets(dice: Dice) -> None:
    for roll in [dice.rolls[0], dice.rolls[len(dice.rolls) // 2], dice.rolls[-1]]:
        expected = {
            tuple(d for d, keep in zip(roll, choose, strict=True) if keep)
            for choose in product([False, True], repeat=dice.count)
        }
        got = [dice.keeps[k] for k in dice.sub_keeps(roll)]
        assert len(got) == len(set(got))
        assert set(got) == expected
    assert len(dice.sub_keeps((1,) * dice.count)) == dice.count + 1
    distinct = tuple(range(1, dice.count + 1))
    assert len(dice.sub_keeps(distinct)) == 2**dice.count


def _roll_values(dice: Dice) -> np.ndarray:
    return np.random.default_rng(20240607).normal(size=(dice.n_rolls, 3)) * 10.0


def keep_values(dice: Dice, rolls: np.ndarray) -> np.ndarray:
    """The kernel's keep step on a work area whose last rows are ``rolls``."""
    work = np.zeros((dice.n_keeps, rolls.shape[1]))
    work[dice.keep_of_roll :] = rolls
    kernel.keep_values(work, dice.child_rows, rolls.shape[1])
    return work


def best_keep(dice: Dice, keeps: np.ndarray) -> np.ndarray:
    """The kernel's best-keep step on a copy of ``keeps``: the rolls' rows after it."""
    work = keeps.copy()
    kernel.best_keep(work, *dice.parent_rows, keeps.shape[1])
    return work[dice.keep_of_roll :]


def test_keep_values_match_enumerated_expectation(dice: Dice) -> None:
    roll_values = _roll_values(dice)
    keeps = keep_values(dice, roll_values)
    assert np.array_equal(keeps[dice.keep_of_roll :], roll_values)
    # Every keep short of a roll, over all 6^k outcomes of the k dice rerolled.
    for k, keep in enumerate(dice.keeps[: dice.keep_of_roll]):
        outcomes = product(range(1, 7), repeat=dice.count - len(keep))
        rows = [dice.roll_index[tuple(sorted(keep + extra))] for extra in outcomes]
        expected = roll_values[rows].mean(axis=0)
        np.testing.assert_allclose(keeps[k], expected, rtol=0, atol=1e-12)


def test_keep_values_of_constants_are_constant(dice: Dice) -> None:
    keeps = keep_values(dice, np.full((dice.n_rolls, 2), 7.0))
    np.testing.assert_allclose(keeps, 7.0, rtol=0, atol=1e-12)


def test_best_keep_is_max_over_sub_multisets(dice: Dice) -> None:
    keeps = keep_values(dice, _roll_values(dice))
    # Perturb the keeps so that the max is not always the empty or the full keep.
    keeps = keeps + np.random.default_rng(7).normal(size=keeps.shape)
    best = best_keep(dice, keeps)
    assert best.shape == (dice.n_rolls, 3)
    for r, roll in enumerate(dice.rolls):
        expected = keeps[dice.sub_keeps(roll)].max(axis=0)
        assert np.array_equal(best[r], expected)


def test_the_kernel_reads_only_the_lanes_it_is_given(dice: Dice) -> None:
    """A tile narrower than its work area leaves the other lanes as they were."""
    keeps = keep_values(dice, _roll_values(dice))
    work = keeps.copy()
    work[:, 2] = -1.0
    kernel.keep_values(work, dice.child_rows, 2)
    kernel.best_keep(work, *dice.parent_rows, 2)
    assert np.array_equal(work[:, 2], np.full(dice.n_keeps, -1.0))
    assert np.array_equal(work[dice.keep_of_roll :, :2], best_keep(dice, keeps)[:, :2])
