"""When two values count as equal: the one tie rule of advice, the strategy and play.

Equal choices reached by different float sums differ in the last bit, and a choice must not
depend on that: values that round to the same number of 1e-9 ticks are tied. Kept apart from
:mod:`memo_solver.games.yahtzee.analysis.policy` (whose compiled loops rank by the same ticks) so
that advice can rank with it without importing the compiler.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from memo_solver.games.yahtzee.rules.rule_set import FloatArray

TIE_DECIMALS: Final = 9
TIE_SCALE: Final = 10.0**TIE_DECIMALS
"""Values are tied when they round to the same number of 1e-9 ticks: ``rint(v * 1e9)``,
the very steps of ``numpy.round(v, 9)`` before its division, so :func:`tie` and the
compiled choices rank alike."""


def tie(values: FloatArray) -> FloatArray:
    """The tie rule's key: advice ranks by it, so that it names the move the strategy
    plays."""
    rounded: FloatArray = np.round(values, TIE_DECIMALS)
    return rounded
