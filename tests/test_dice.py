"""The dice universe and the keep-lattice math, checked against brute force."""

from __future__ import annotations

from collections import Counter
from itertools import product

import numpy as np
import pytest

from memo_solver.games.yahtzee import dice, turn


def test_counts_of_rolls_and_keeps() -> None:
    assert dice.N_ROLLS == len(dice.ROLLS) == 252
    assert dice.N_KEEPS == len(dice.KEEPS) == 462
    assert dice.KEEP_OF_ROLL == 462 - 252
    by_size = Counter(len(keep) for keep in dice.KEEPS)
    assert [by_size[s] for s in range(6)] == [1, 6, 21, 56, 126, 252]
    assert dice.SIZE_OFFSETS == (0, 1, 7, 28, 84, 210, 462)
    for size in range(6):
        lo, hi = dice.SIZE_OFFSETS[size], dice.SIZE_OFFSETS[size + 1]
        assert all(len(keep) == size for keep in dice.KEEPS[lo:hi])


def test_keeps_ordered_by_size_then_lexicographically() -> None:
    assert list(dice.KEEPS) == sorted(dice.KEEPS, key=lambda k: (len(k), k))
    assert len(set(dice.KEEPS)) == dice.N_KEEPS
    assert all(list(keep) == sorted(keep) for keep in dice.KEEPS)
    assert dice.KEEPS[0] == ()
    assert dice.ROLLS[0] == (1, 1, 1, 1, 1)
    assert dice.ROLLS[-1] == (6, 6, 6, 6, 6)


def test_last_keeps_are_the_rolls_in_order() -> None:
    assert dice.KEEPS[dice.KEEP_OF_ROLL :] == dice.ROLLS
    assert list(dice.ROLLS) == sorted(dice.ROLLS)
    all_rolls = {tuple(sorted(r)) for r in product(range(1, 7), repeat=5)}
    assert set(dice.ROLLS) == all_rolls
    for r, roll in enumerate(dice.ROLLS):
        assert dice.ROLL_INDEX[roll] == r
        assert dice.KEEP_INDEX[roll] == dice.KEEP_OF_ROLL + r
    for k, keep in enumerate(dice.KEEPS):
        assert dice.KEEP_INDEX[keep] == k


def test_counts_and_sums_tables() -> None:
    for k, keep in enumerate(dice.KEEPS):
        assert dice.KEEP_COUNTS[k].tolist() == [keep.count(f) for f in range(1, 7)]
    assert np.array_equal(dice.ROLL_COUNTS, dice.KEEP_COUNTS[dice.KEEP_OF_ROLL :])
    assert dice.ROLL_SUMS.tolist() == [sum(roll) for roll in dice.ROLLS]
    assert [dice.ROLLS[r] for r in dice.YAHTZEE_ROLLS] == [(f,) * 5 for f in range(1, 7)]


def test_children_add_one_die() -> None:
    assert len(dice.CHILDREN) == 5
    for size in range(5):
        lo, hi = dice.SIZE_OFFSETS[size], dice.SIZE_OFFSETS[size + 1]
        children = dice.CHILDREN[size]
        assert children.shape == (6, hi - lo)
        for col, keep in enumerate(dice.KEEPS[lo:hi]):
            for face in range(1, 7):
                child = dice.KEEPS[children[face - 1, col]]
                assert Counter(child) == Counter(keep) + Counter([face])


def test_parents_remove_one_die() -> None:
    assert len(dice.PARENTS) == 6
    for size in range(1, 6):
        lo, hi = dice.SIZE_OFFSETS[size], dice.SIZE_OFFSETS[size + 1]
        parents = dice.PARENTS[size]
        assert parents.shape == (min(size, 6), hi - lo)
        for col, keep in enumerate(dice.KEEPS[lo:hi]):
            expected = {tuple(sorted(keep[:i] + keep[i + 1 :])) for i in range(size)}
            listed = {dice.KEEPS[p] for p in parents[:, col]}
            # Every distinct parent is listed; padding only repeats one of them.
            assert listed == expected


def test_sub_keeps_are_all_sub_multisets() -> None:
    for roll in [(1, 1, 1, 1, 1), (1, 2, 3, 4, 5), (2, 2, 3, 3, 3), (1, 2, 2, 2, 6)]:
        expected = set()
        for choose in product([False, True], repeat=5):
            expected.add(tuple(d for d, keep in zip(roll, choose, strict=True) if keep))
        got = [dice.KEEPS[k] for k in dice.sub_keeps(roll)]
        assert len(got) == len(set(got))
        assert set(got) == expected
    assert len(dice.sub_keeps((1, 1, 1, 1, 1))) == 6
    assert len(dice.sub_keeps((1, 2, 3, 4, 5))) == 32


@pytest.fixture(scope="module")
def roll_values() -> np.ndarray:
    return np.random.default_rng(20240607).normal(size=(dice.N_ROLLS, 3)) * 10.0


def test_keep_values_match_enumerated_expectation(roll_values: np.ndarray) -> None:
    keeps = turn.keep_values(roll_values)
    assert keeps.shape == (dice.N_KEEPS, 3)
    assert np.array_equal(keeps[dice.KEEP_OF_ROLL :], roll_values)
    # Every keep of sizes 1..4 and the empty keep (all 6^5 outcomes): 23,112 outcomes.
    for k, keep in enumerate(dice.KEEPS[: dice.KEEP_OF_ROLL]):
        outcomes = product(range(1, 7), repeat=5 - len(keep))
        rows = [dice.ROLL_INDEX[tuple(sorted(keep + extra))] for extra in outcomes]
        expected = roll_values[rows].mean(axis=0)
        np.testing.assert_allclose(keeps[k], expected, rtol=0, atol=1e-12)


def test_keep_values_of_constants_are_constant() -> None:
    keeps = turn.keep_values(np.full((dice.N_ROLLS, 2), 7.0))
    np.testing.assert_allclose(keeps, 7.0, rtol=0, atol=1e-12)


def test_best_keep_is_max_over_sub_multisets(roll_values: np.ndarray) -> None:
    keeps = turn.keep_values(roll_values)
    # Perturb the keeps so that the max is not always the empty or the full keep.
    keeps = keeps + np.random.default_rng(7).normal(size=keeps.shape)
    best = turn.best_keep(keeps)
    assert best.shape == (dice.N_ROLLS, 3)
    for r, roll in enumerate(dice.ROLLS):
        expected = keeps[dice.sub_keeps(roll)].max(axis=0)
        assert np.array_equal(best[r], expected)


def test_best_keep_does_not_modify_its_input(roll_values: np.ndarray) -> None:
    keeps = turn.keep_values(roll_values)
    before = keeps.copy()
    turn.best_keep(keeps)
    assert np.array_equal(keeps, before)
