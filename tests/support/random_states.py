"""A random valid state of any rule set, for the tests and the benchmarks alike.

The benchmarks (``scripts/bench/``) put ``tests/`` on their path to import it, so a state
they time is one the tests check the rules accept.
"""

from __future__ import annotations

import random

import numpy as np

from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State

FACES = 6


def random_state(rules: RuleSet, rng: random.Random, filled: int, *, rolled: bool = True) -> State:
    """A valid state with this filled mask: an upper total the filled upper boxes can make,
    the Yahtzee bonus only with the Yahtzee box filled, the rule set's dice at random (all
    alike one time in ten: where the bonuses and the Joker rules come in) and rerolls left,
    or neither before the turn's first roll."""
    totals = [int(t) for t in np.flatnonzero(rules.upper_totals(filled))]
    box = rules.yahtzee_box
    bonus = box is not None and bool(filled >> box & 1) and rng.random() < 0.5
    if not rolled:
        return State(filled, rng.choice(totals), bonus, None, None)
    dice: tuple[int, ...]
    if rng.random() < 0.1:
        dice = (rng.randint(1, FACES),) * rules.dice
    else:
        dice = tuple(sorted(rng.randint(1, FACES) for _ in range(rules.dice)))
    return State(filled, rng.choice(totals), bonus, rng.randint(0, rules.rerolls), dice)


def late_state(rules: RuleSet, rng: random.Random, open_boxes: int) -> State:
    """A random rolled state with exactly ``open_boxes`` boxes open: a late position, cheap to
    solve cold (the benchmarks' cold questions)."""
    opened = sum(1 << b for b in rng.sample(range(len(rules.categories)), open_boxes))
    return random_state(rules, rng, rules.all_filled & ~opened)
