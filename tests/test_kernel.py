"""The kernel's block contract on games small enough to work out by hand.

A block may hold a vector per guidepost (the value axis), and with ``shift`` a score moves a
lane along that axis instead of adding to it: lane j is "j + 1 points still needed", and the
block holds the best chance of scoring that many more. The same kernel then solves the mean
(width 1, scores added) and the chance of reaching a target, with no second implementation.
"""

from __future__ import annotations

import inspect
import json
from fractions import Fraction
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from memo_solver.games.yahtzee.rules.rule_file import parse_rule_text
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve import forward_kernel, kernel, one_roll
from memo_solver.games.yahtzee.solve.turn import solve_blocks


def one_die(boxes: int, rerolls: int) -> RuleSet:
    """One die, ``boxes`` chance boxes (each scores the die's face), no bonus."""
    return parse_rule_text(
        json.dumps(
            {
                "name": "one-die",
                "dice": 1,
                "rerolls": rerolls,
                "boxes": [{"name": f"chance{i}", "kind": "chance"} for i in range(boxes)],
            }
        )
    )


def at_least(need: int) -> Fraction:
    """The chance that one die shows ``need`` or more."""
    return Fraction(min(6, max(0, 7 - need)), 6)


def test_one_die_with_one_reroll_keeps_what_reaches_the_need() -> None:
    """Needing n from one die with a reroll: keep a first roll of n or more, else reroll, so
    the chance is q + (1 - q) q with q the chance of n or more; the mean keeps 4, 5 and 6."""
    rules = one_die(1, rerolls=1)
    done = np.zeros((*rules.block_shape, 6))
    chance = solve_blocks(rules, [0], {1: done}, width=6, shift=True)[0, 0, 0]
    expected = [at_least(n) + (1 - at_least(n)) * at_least(n) for n in range(1, 7)]
    np.testing.assert_allclose(chance, [float(e) for e in expected], rtol=0, atol=1e-15)
    assert float(expected[5]) == pytest.approx(11 / 36)
    mean = solve_blocks(rules, [0], {1: np.zeros(rules.block_shape)})[0, 0, 0]
    assert mean == pytest.approx(0.5 * 5 + 0.5 * 3.5)  # keep 4, 5, 6 (mean 5), else 3.5


def test_a_score_shifts_the_need_through_the_next_turn() -> None:
    """Two turns of one die, no reroll: the chance that their sum reaches n, for every n up
    to 12, found by the chance of the second turn after the first turn's points."""
    rules = one_die(2, rerolls=0)
    width = 12
    end = np.zeros((*rules.block_shape, width))
    last = solve_blocks(rules, [0b01, 0b10], {0b11: end}, width=width, shift=True)
    for block in last:
        expected = [float(at_least(n)) for n in range(1, width + 1)]
        np.testing.assert_allclose(block[0, 0], expected, rtol=0, atol=1e-15)
    first = solve_blocks(rules, [0], {0b01: last[0], 0b10: last[1]}, width=width, shift=True)
    sums = [a + b for a in range(1, 7) for b in range(1, 7)]
    expected = [sum(s >= n for s in sums) / 36 for n in range(1, width + 1)]
    np.testing.assert_allclose(first[0, 0, 0], expected, rtol=0, atol=1e-15)


def test_a_need_one_roll_cannot_make_is_out_of_reach_and_a_met_one_is_certain() -> None:
    """One die never makes 7 (the end of the game holds 0 for every need) and always makes 1
    (a need the score meets reads as certain, whatever the successor holds)."""
    rules = one_die(1, rerolls=0)
    done = np.zeros((*rules.block_shape, 7))
    chance = solve_blocks(rules, [0], {1: done}, width=7, shift=True)[0, 0, 0]
    assert chance[6] == 0.0  # 7 points from one die
    assert chance[0] == pytest.approx(1.0, abs=1e-15)  # every face makes 1


@given(size=st.integers(min_value=0, max_value=5000), kind=st.sampled_from([np.float64, np.int64]))
@settings(max_examples=60, deadline=None)
def test_a_work_area_starts_on_a_cache_line_and_holds_zeros(
    size: int, kind: type[np.generic]
) -> None:
    """Lane loops read their work area a 64-byte vector at a time: one that began mid-line
    (numba aligns to 32 bytes) made every load span two lines and the kernel 25 % slower."""
    area = kernel.line_aligned((size,), kind)
    assert area.ctypes.data % kernel.CACHE_LINE == 0
    assert area.shape == (size,)
    assert area.dtype == kind
    assert not area.any()


SCREENFUL = 13
"""Parameters a compiled function may take: one a line, with its docstring, in one screen."""


@pytest.mark.parametrize("module", [kernel, forward_kernel, one_roll], ids=lambda m: m.__name__)
def test_the_compiled_loops_take_records_not_every_table_one_by_one(module: ModuleType) -> None:
    """A rule set's tables reach the loops as records (the scoring tables, the dice lattice,
    the batch), built once, so no signature lists 20 arrays that every caller repeats."""
    compiled = {  # numba's functions defined here: each keeps its Python function
        name: inspect.signature(value.py_func).parameters
        for name, value in vars(module).items()
        if getattr(getattr(value, "py_func", None), "__module__", None) == module.__name__
    }
    assert compiled
    longest = max(compiled, key=lambda name: len(compiled[name]))
    assert len(compiled[longest]) <= SCREENFUL, (longest, list(compiled[longest]))
