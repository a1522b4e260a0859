"""The records one call of the kernel takes per batch, as plain named tuples (no numba here,
so that :mod:`~memo_solver.games.yahtzee.solve.turn`, which builds them, and the compiled
modules, which read them, share them without importing each other)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class LaneSets(NamedTuple):
    """Per lane set (:meth:`KernelTables.lane_set_of`), the reachable levels of a block with
    that set, first in its row, and how many they are."""

    levels: IntArray
    counts: IntArray


class Batch(NamedTuple):
    """Blocks solved by one call of the kernel, as it reads them (a named tuple: the kernel
    takes it whole): each block's open boxes first in its row (``open_boxes[b, :n_open[b]]``),
    the row of ``successors`` each lands on, and its Joker row
    (:meth:`KernelTables.joker_rows`: read the tables' ``adjust`` after building the batch,
    which may add rows to it)."""

    filled: IntArray
    n_open: IntArray
    open_boxes: IntArray
    succ_rows: IntArray
    successors: FloatArray
    """(distinct successors, values): each successor block raveled, once."""
    joker: IntArray
