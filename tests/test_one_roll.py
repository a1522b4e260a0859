"""One roll's steps (advice) give the very floats of the whole turn's tables (the strategy).

Advice ranks and shows values to the last bit (ties, ``loss`` 0.0, the bytes of the API's
answers), so computing them for one roll alone must change nothing: the scores of the roll
in every open box and, with rerolls left, every keep's value, equal to the bit to those of
:func:`memo_solver.games.yahtzee.solve.turn.turn_tables`, for every kind of roll (the all-alike
ones under each Joker rule and the +100 included), guidepost and number of rerolls. The
successor blocks are random: the turn's arithmetic is the same on any values.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.one_roll import roll_values
from memo_solver.games.yahtzee.solve.turn import Guideposts, kernel_tables, turn_tables

NAMES = ("yahtzee", "yahtzee-free-joker", "yahtzee-no-joker", "yatzy", "yazy", "maxi-yatzy")


@pytest.mark.parametrize("name", NAMES)
def test_one_rolls_values_are_the_whole_turns_to_the_bit(name: str) -> None:
    rules = RULE_SETS[name]
    rng = random.Random(name)
    dice = rules.universe
    yahtzee = rules.yahtzee_box
    masks = [rng.randrange(rules.all_filled) for _ in range(6)]
    if yahtzee is not None:  # the Joker and the +100 need the Yahtzee box filled
        masks += [
            mask | 1 << yahtzee for mask in masks[:3] if mask | 1 << yahtzee != rules.all_filled
        ]
    for filled in masks:
        blocks = {
            box: rng.uniform(0, 300) + np.random.default_rng(box).random(rules.block_shape) * 50
            for box in rules.open_boxes(filled)
        }
        guidepost = (rng.randrange(rules.n_upper_levels), rng.randrange(rules.n_bonus_levels))
        rolls = sorted(set(dice.alike_rolls.tolist()) | set(rng.sample(range(dice.n_rolls), 12)))
        for rerolls in range(rules.rerolls + 1):
            whole = turn_tables(
                rules, filled, blocks.__getitem__, Guideposts.one(rules, *guidepost), rerolls
            )
            successors = [blocks[box] for box in whole.boxes]
            for roll in rolls:
                boxes, scores, keeps = roll_values(
                    rules, filled, successors, guidepost, roll, rerolls
                )
                assert boxes == whole.boxes
                assert scores.tobytes() == whole.scores[0, :, roll, 0].tobytes(), (filled, roll)
                if rerolls:
                    assert keeps.tobytes() == whole.keeps[rerolls][:, 0].tobytes()


def test_the_joker_forbids_boxes_with_minus_infinity_as_the_turn_does() -> None:
    rules: RuleSet = RULE_SETS["yahtzee"]
    assert rules.yahtzee_box is not None
    filled = 1 << rules.yahtzee_box | 1 << 2  # threes filled: five threes must go below
    blocks = {box: np.zeros(rules.block_shape) for box in rules.open_boxes(filled)}
    threes = rules.universe.roll_index[(3, 3, 3, 3, 3)]
    boxes, scores, _ = roll_values(
        rules, filled, [blocks[box] for box in rules.open_boxes(filled)], (0, 1), threes, 0
    )
    upper = [i for i, box in enumerate(boxes) if rules.categories[box].upper_face]
    assert upper
    assert all(scores[i] == -np.inf for i in upper)
    assert all(np.isfinite(scores[i]) for i in range(len(boxes)) if i not in upper)


def test_the_joker_is_read_from_the_tables_in_force_after_they_are_built_again() -> None:
    """A process that sees many rule sets drops a rule set's kernel tables and builds them
    again, learning its Joker rows in another order: a roll's scores stay the Joker's.
    (Keeping a Joker row's number across that read another situation's row: five ones in
    full house with the Yahtzee box filled were worth 0, not 25, in a late full-suite run.)"""
    rules: RuleSet = RULE_SETS["yahtzee"]
    assert rules.yahtzee_box is not None
    names = [c.name for c in rules.categories]
    filled = rules.all_filled & ~(1 << names.index("full_house"))
    ones = rules.universe.roll_index[(1, 1, 1, 1, 1)]
    block = [np.zeros(rules.block_shape)]
    kernel_tables.cache_clear()  # this scorecard's situation is the tables' first row
    first = roll_values(rules, filled, block, (0, 0), ones, 0)[1]
    assert first.tolist() == [25.0]
    kernel_tables.cache_clear()
    others = np.array([m for m in range(rules.all_filled) if m >> rules.yahtzee_box & 1][:500])
    kernel_tables(rules).joker_rows(others, rules.open_matrix(others))  # rows in a new order
    assert roll_values(rules, filled, block, (0, 0), ones, 0)[1].tolist() == [25.0]
