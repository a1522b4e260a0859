"""The dice universe of five six-sided dice, built once at import (about 2 ms).

Every array here is indexed the same way everywhere else in the package:

- a *roll* is a sorted multiset of five faces; there are 252 of them, in lexicographic order;
- a *keep* is a sorted multiset of zero to five faces; there are 462 of them, ordered by
  size and then lexicographically, so the last 252 keeps are exactly the rolls in roll
  order (keeping all five dice of roll ``r`` is keep ``KEEP_OF_ROLL + r``).

The turn math walks keeps size by size: a keep of ``s`` dice is worth the average of its six
*children* (the keeps of ``s + 1`` dice made by adding one die of each face), and the best
keep inside a roll is found from each keep's *parents* (one die fewer). Both tables are
stored column-first and padded, so that a whole size level is one vectorized gather.
"""

from __future__ import annotations

from itertools import combinations_with_replacement
from typing import Final

import numpy as np
import numpy.typing as npt

FACES: Final = 6
DICE: Final = 5

IntArray = npt.NDArray[np.int64]


def _multisets(size: int) -> list[tuple[int, ...]]:
    return list(combinations_with_replacement(range(1, FACES + 1), size))


KEEPS: Final[tuple[tuple[int, ...], ...]] = tuple(
    keep for size in range(DICE + 1) for keep in _multisets(size)
)
ROLLS: Final[tuple[tuple[int, ...], ...]] = KEEPS[-252:]
N_KEEPS: Final = len(KEEPS)
N_ROLLS: Final = len(ROLLS)
KEEP_OF_ROLL: Final = N_KEEPS - N_ROLLS

KEEP_INDEX: Final[dict[tuple[int, ...], int]] = {keep: i for i, keep in enumerate(KEEPS)}
ROLL_INDEX: Final[dict[tuple[int, ...], int]] = {roll: i for i, roll in enumerate(ROLLS)}


def _counts(multisets: tuple[tuple[int, ...], ...]) -> IntArray:
    counts = np.zeros((len(multisets), FACES), dtype=np.int64)
    for row, faces in enumerate(multisets):
        for face in faces:
            counts[row, face - 1] += 1
    return counts


KEEP_COUNTS: Final = _counts(KEEPS)
"""(462, 6): how many dice of each face a keep holds."""

# --- the properties of each roll, the one table the score tables and the rules read -----------

ROLL_COUNTS: Final = KEEP_COUNTS[KEEP_OF_ROLL:]
"""(252, 6): how many dice of each face a roll shows."""
ROLL_SUMS: Final = np.array([sum(roll) for roll in ROLLS], dtype=np.int64)
ROLL_MAX_COUNT: Final = ROLL_COUNTS.max(axis=1)
"""(252,): the most dice showing one face."""
FIVE_OF_A_KIND: Final = ROLL_MAX_COUNT == DICE
"""(252,): the roll is five of a kind, whichever box takes it: where the Yahtzee box scores,
and the Joker and the +100 bonus come in."""
YAHTZEE_ROLLS: Final = np.flatnonzero(FIVE_OF_A_KIND)
"""Index of the five-of-a-kind roll of each face 1..6."""

SIZE_OFFSETS: Final[tuple[int, ...]] = tuple(
    sum(len(_multisets(s)) for s in range(size)) for size in range(DICE + 2)
)
"""Keeps of size ``s`` occupy ``SIZE_OFFSETS[s]:SIZE_OFFSETS[s + 1]``."""


def _children() -> tuple[IntArray, ...]:
    """For each size 0..4, (6, n_s): the keep made by adding one die of each face."""
    levels = []
    for size in range(DICE):
        keeps = KEEPS[SIZE_OFFSETS[size] : SIZE_OFFSETS[size + 1]]
        rows = [[KEEP_INDEX[tuple(sorted((*keep, f)))] for f in range(1, 7)] for keep in keeps]
        levels.append(np.array(rows, dtype=np.int64).T.copy())
    return tuple(levels)


def _parents() -> tuple[IntArray, ...]:
    """For each size 1..5 (index 0 unused), (min(s, 6), n_s): the keeps with one die fewer.

    A keep has as many parents as distinct faces, at most ``s``; shorter rows are padded by
    repeating the first parent, which leaves a max over the column unchanged. Columns first,
    so that a max over parents is an elementwise max of contiguous slabs.
    """
    levels = [np.zeros((0, 1), dtype=np.int64)]
    for size in range(1, DICE + 1):
        keeps = KEEPS[SIZE_OFFSETS[size] : SIZE_OFFSETS[size + 1]]
        width = min(size, FACES)
        rows = []
        for keep in keeps:
            parents = [
                KEEP_INDEX[keep[:i] + keep[i + 1 :]]
                for i in range(len(keep))
                if i == 0 or keep[i] != keep[i - 1]
            ]
            rows.append(parents + [parents[0]] * (width - len(parents)))
        levels.append(np.array(rows, dtype=np.int64).T.copy())
    return tuple(levels)


CHILDREN: Final = _children()
PARENTS: Final = _parents()


def sub_keeps(roll: tuple[int, ...]) -> list[int]:
    """Every distinct keep inside ``roll`` (keeping nothing and keeping all five included)."""
    counts = KEEP_COUNTS[ROLL_INDEX[roll] + KEEP_OF_ROLL]
    inside = np.all(KEEP_COUNTS <= counts, axis=1)
    return [int(k) for k in np.flatnonzero(inside)]
