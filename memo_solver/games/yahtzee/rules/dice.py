"""The dice universe of one to six six-sided dice, built once per dice count and cached.

Every array here is indexed the same way everywhere else in the package:

- a *roll* is a sorted multiset of all the dice; with five dice there are 252 of them, with
  six 462, in lexicographic order;
- a *keep* is a sorted multiset of zero to all the dice (462 with five dice, 924 with six),
  ordered by size and then lexicographically, so the last keeps are exactly the rolls in
  roll order (keeping every die of roll ``r`` is keep ``keep_of_roll + r``).

The turn math walks keeps size by size: a keep of ``s`` dice is worth the average of its six
*children* (the keeps of ``s + 1`` dice made by adding one die of each face), and the best
keep inside a roll is found from each keep's *parents* (one die fewer). Both tables are
stored column-first and padded, so that a whole size level is one vectorized gather.

A rule set names its dice count and reads its universe from :func:`dice_universe`; nothing
in the package assumes five dice.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from itertools import combinations_with_replacement
from math import factorial
from typing import Final

import numpy as np
import numpy.typing as npt

FACES: Final = 6
MAX_DICE: Final = 6
"""Six dice make 924 keeps; a seventh would double the tables for no game anyone plays."""

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _multisets(size: int) -> list[tuple[int, ...]]:
    return list(combinations_with_replacement(range(1, FACES + 1), size))


def _counts(multisets: tuple[tuple[int, ...], ...]) -> IntArray:
    counts = np.zeros((len(multisets), FACES), dtype=np.int64)
    for row, faces in enumerate(multisets):
        for face in faces:
            counts[row, face - 1] += 1
    return counts


class Dice:
    """Rolls, keeps and the lattices between them for ``count`` dice (a few ms to build)."""

    def __init__(self, count: int) -> None:
        if not 1 <= count <= MAX_DICE:
            raise ValueError(f"dice: expected 1..{MAX_DICE}, got {count}")
        self.count: Final = count
        self.keeps: Final = tuple(keep for size in range(count + 1) for keep in _multisets(size))
        self.n_keeps: Final = len(self.keeps)
        self.keep_of_roll: Final = self.n_keeps - len(_multisets(count))
        self.rolls: Final = self.keeps[self.keep_of_roll :]
        self.n_rolls: Final = len(self.rolls)
        self.keep_index: Final = {keep: i for i, keep in enumerate(self.keeps)}
        self.roll_index: Final = {roll: i for i, roll in enumerate(self.rolls)}
        self.keep_counts: Final = _counts(self.keeps)
        """(n_keeps, 6): how many dice of each face a keep holds."""
        self.keep_sizes: Final = self.keep_counts.sum(axis=1)
        self.roll_counts: Final = self.keep_counts[self.keep_of_roll :]
        """(n_rolls, 6): how many dice of each face a roll shows: the one table the score
        tables and the rules read."""
        self.roll_sums: Final = np.array([sum(roll) for roll in self.rolls], dtype=np.int64)
        self.all_alike: Final = self.roll_counts.max(axis=1) == count
        """(n_rolls,): every die shows one face, whichever box takes the roll: where the
        all-alike (Yahtzee) box scores, and the Joker and the Yahtzee bonus come in."""
        self.alike_rolls: Final = np.flatnonzero(self.all_alike)
        """Index of the all-alike roll of each face 1..6."""
        self.size_offsets: Final = tuple(
            sum(len(_multisets(s)) for s in range(size)) for size in range(count + 2)
        )
        """Keeps of size ``s`` occupy ``size_offsets[s]:size_offsets[s + 1]``."""
        self.children: Final = self._children()
        self.parents: Final = self._parents()

    def __repr__(self) -> str:
        return f"Dice({self.count})"

    def _level(self, size: int) -> tuple[tuple[int, ...], ...]:
        return self.keeps[self.size_offsets[size] : self.size_offsets[size + 1]]

    def _children(self) -> tuple[IntArray, ...]:
        """For each size 0..count-1, (6, n_s): the keep made by adding one die of each face."""
        levels = []
        for size in range(self.count):
            rows = [
                [self.keep_index[tuple(sorted((*keep, f)))] for f in range(1, FACES + 1)]
                for keep in self._level(size)
            ]
            levels.append(np.array(rows, dtype=np.int64).T.copy())
        return tuple(levels)

    def _parents(self) -> tuple[IntArray, ...]:
        """For each size 1..count (index 0 unused), (min(s, 6), n_s): the keeps with one die
        fewer.

        A keep has as many parents as distinct faces, at most ``s``; shorter rows are padded
        by repeating the first parent, which leaves a max over the column unchanged. Columns
        first, so that a max over parents is an elementwise max of contiguous slabs.
        """
        levels = [np.zeros((0, 1), dtype=np.int64)]
        for size in range(1, self.count + 1):
            width = min(size, FACES)
            rows = []
            for keep in self._level(size):
                parents = [
                    self.keep_index[keep[:i] + keep[i + 1 :]]
                    for i in range(len(keep))
                    if i == 0 or keep[i] != keep[i - 1]
                ]
                rows.append(parents + [parents[0]] * (width - len(parents)))
            levels.append(np.array(rows, dtype=np.int64).T.copy())
        return tuple(levels)

    @cached_property
    def child_rows(self) -> IntArray:
        """(keep_of_roll, 6): the children of every keep short of a roll, row by keep: the
        form the compiled kernel walks."""
        return np.ascontiguousarray(np.concatenate([c.T for c in self.children]))

    @cached_property
    def parent_rows(self) -> tuple[IntArray, IntArray]:
        """(n_keeps, 6) the parents of every keep, row by keep (row 0 unused), and (n_keeps,)
        how many each has: one per distinct face, with no padding to walk."""
        rows = np.zeros((self.n_keeps, FACES), dtype=np.int64)
        for size in range(1, self.count + 1):
            lo, hi = self.size_offsets[size], self.size_offsets[size + 1]
            rows[lo:hi, : self.parents[size].shape[0]] = self.parents[size].T
        counts: IntArray = (self.keep_counts > 0).sum(axis=1)
        return rows, counts

    @cached_property
    def transition(self) -> FloatArray:
        """(n_keeps, n_rolls): the chance of each roll after keeping each keep and rolling
        the rest; row 0 (keep nothing) is the first roll's.

        Built size by size from the only rolls a keep can reach, itself plus each multiset of
        the dice rolled (the keeps of that size, whose chances are their multinomials), so
        six dice cost a millisecond, not the tenth of a second of trying every keep against
        every roll that a cold command's start would pay."""
        fact = np.array([factorial(n) for n in range(self.count + 1)], dtype=np.float64)
        code = (self.count + 1) ** np.arange(FACES, dtype=np.int64)  # counts as one number
        roll_codes = self.roll_counts @ code
        by_code = np.argsort(roll_codes)
        chance: FloatArray = np.zeros((self.n_keeps, self.n_rolls))
        for size in range(self.count + 1):
            rolled = self.count - size
            keeps = self.keep_counts[self.size_offsets[size] : self.size_offsets[size + 1]]
            rests = self.keep_counts[self.size_offsets[rolled] : self.size_offsets[rolled + 1]]
            ways = fact[rolled] / np.prod(fact[rests], axis=1)
            landed = (keeps @ code)[:, None] + (rests @ code)[None, :]
            rolls = by_code[np.searchsorted(roll_codes, landed, sorter=by_code)]
            chance[self.size_offsets[size] + np.arange(len(keeps))[:, None], rolls] = (
                ways / float(FACES) ** rolled
            )
        return chance

    def sub_keeps(self, roll: tuple[int, ...]) -> list[int]:
        """Every distinct keep inside ``roll`` (keeping nothing and keeping all included)."""
        counts = self.keep_counts[self.roll_index[roll] + self.keep_of_roll]
        inside = np.all(self.keep_counts <= counts, axis=1)
        return [int(k) for k in np.flatnonzero(inside)]


@lru_cache(maxsize=MAX_DICE)
def dice_universe(count: int) -> Dice:
    """The universe of ``count`` dice, built on first use."""
    return Dice(count)
