"""The scoring vocabulary: every kind of box a rule-set file may name, and its score table.

A kind reads its parameters from the box's definition through a :class:`Params` reader,
which validates each one as it is read and refuses any it was not asked for; the same
function then builds the table of points over the rolls of the rule set's dice. So a kind's
parameters, their checks and their meaning are written in one place, and every built-in
rule set is defined through this vocabulary like any file a player writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import numpy as np

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.rules.dice import FACES, BoolArray, Dice, FloatArray, IntArray

_FACE_VALUES: Final = np.arange(1, FACES + 1)
MAX_POINTS: Final = 10_000
"""The most points a rule-set file may write anywhere: a box's fixed points, a Joker's, a
bonus, the upper threshold. Far above any published game (Maxi Yatzy's Yatzy is worth 100),
and small enough that every score is exact: a whole game banks at most 20 boxes x (10,000 +
a 10,000 Yahtzee bonus) + a 10,000 upper bonus = 410,000 points, far inside the integers a
float64 holds exactly (2**53), and one turn's points fit the int16 of a simulated game's
record."""


class RuleFileError(UserError):
    """A rule-set definition that is not valid; ``field`` is the path to the bad entry
    (``boxes[3].count``), and the CLI's line starts with it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def describe(value: object) -> str:
    """A value as JSON would show it, shortened: errors quote what the user wrote."""
    text = "null" if value is None else repr(value) if isinstance(value, str) else str(value)
    text = {"True": "true", "False": "false"}.get(text, text)
    return text if len(text) <= 40 else text[:37] + "..."


class Params:
    """A box's kind parameters, read and checked one at a time; :meth:`done` refuses the
    rest. What was read, with defaults left out, is :attr:`canonical`: what ``rules show``
    writes back."""

    def __init__(self, raw: Mapping[str, object], where: str, dice: Dice) -> None:
        self._raw = raw
        self._where = where
        self.dice = dice
        self.canonical: dict[str, object] = {}
        self._read: set[str] = set()

    def error(self, key: str, message: str) -> RuleFileError:
        return RuleFileError(f"{self._where}.{key}", message)

    def _get(self, key: str, default: object = None) -> object:
        self._read.add(key)
        return self._raw.get(key, default)

    def integer(self, key: str, low: int, high: int) -> int:
        value = self._get(key)
        if value is None:
            raise self.error(key, f"required: an integer {low}..{high}")
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.error(key, f"expected an integer {low}..{high}, got {describe(value)}")
        self.canonical[key] = value
        return value

    def points(self, words: tuple[str, ...], default: str | None = None) -> str | int:
        """``points``: one of ``words``, or fixed points (an integer 0..:data:`MAX_POINTS`)."""
        value = self._get("points", default)
        choices = " or ".join(f'"{w}"' for w in words)
        if isinstance(value, str) and value in words:
            if value != default:
                self.canonical["points"] = value
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value <= MAX_POINTS:
                raise self.error(
                    "points", f"expected fixed points 0..{MAX_POINTS}, got {describe(value)}"
                )
            self.canonical["points"] = value
            return value
        got = "nothing" if value is None else describe(value)
        raise self.error("points", f"expected {choices} or fixed points (an integer), got {got}")

    def flag(self, key: str) -> bool:
        value = self._get(key, False)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {describe(value)}")
        if value:
            self.canonical[key] = True
        return value

    def face_lists(self, key: str) -> list[tuple[int, ...]]:
        """A list of distinct faces, or a list of such lists (any one of them scores)."""
        value = self._get(key)
        shape = "a list of distinct faces 1..6, or a list of such lists"
        if not isinstance(value, list) or not value:
            raise self.error(key, f"expected {shape}, got {describe(value)}")
        lists = value if all(isinstance(v, list) for v in value) else [value]
        parsed: list[tuple[int, ...]] = []
        for faces in lists:
            ok = all(isinstance(f, int) and not isinstance(f, bool) and 1 <= f <= 6 for f in faces)
            if not faces or not ok or len(set(faces)) != len(faces):
                raise self.error(key, f"expected {shape}, got {describe(value)}")
            parsed.append(tuple(sorted(faces)))
        self.canonical[key] = [list(f) for f in parsed] if len(parsed) > 1 else list(parsed[0])
        return parsed

    def done(self, kind: str) -> None:
        extra = [k for k in self._raw if k not in self._read]
        if extra:
            allowed = ", ".join(sorted(self._read)) or "none"
            raise self.error(extra[0], f"unknown key for kind {kind} (its keys: {allowed})")


# --- the kinds -----------------------------------------------------------------------------


def _fixed_or(
    points: str | int, has: BoolArray | np.bool_, best: IntArray | FloatArray
) -> FloatArray:
    """The table of a kind that scores where ``has``: ``best`` points, or fixed ones."""
    scores = best if isinstance(points, str) else np.full(has.shape, points)
    table: FloatArray = np.where(has, scores, 0).astype(np.float64)
    return table


def _upper(p: Params) -> FloatArray:
    face = p.integer("face", 1, FACES)
    table: FloatArray = (p.dice.roll_counts[:, face - 1] * face).astype(np.float64)
    return table


def _of_a_kind(p: Params) -> FloatArray:
    count = p.integer("count", 2, p.dice.count)
    points = p.points(("those", "all"))
    counts = p.dice.roll_counts
    has = counts.max(axis=1) >= count
    if points == "those":
        best = np.max(np.where(counts >= count, _FACE_VALUES, 0), axis=1) * count
        return _fixed_or(points, has, best)
    return _fixed_or(points, has, p.dice.roll_sums)


def _pairs(p: Params) -> FloatArray:
    count = p.integer("count", 1, 3)
    split_fours = p.flag("four_as_two_pairs")
    if split_fours and count < 2:
        raise p.error("four_as_two_pairs", "only two or three pairs can take a four of a kind")
    counts = p.dice.roll_counts
    # Every pair the dice hold, as its face (0 where none), best first.
    first = np.where(counts >= 2, _FACE_VALUES, 0)
    second = np.where(counts >= 4, _FACE_VALUES, 0) if split_fours else np.zeros_like(first)
    pairs = -np.sort(-np.concatenate([first, second], axis=1), axis=1)[:, :count]
    has = (pairs > 0).all(axis=1)
    return _fixed_or("sum", has, 2 * pairs.sum(axis=1))


def _groups(dice: Dice, large: int, small: int) -> tuple[BoolArray, IntArray]:
    """Rolls holding ``large`` dice of one face and ``small`` of another, and the best sum
    ``large * a + small * b`` of those dice."""
    counts = dice.roll_counts
    a = _FACE_VALUES[:, None]
    b = _FACE_VALUES[None, :]
    fits = (counts[:, :, None] >= large) & (counts[:, None, :] >= small) & (a != b)
    sums = np.where(fits, large * a + small * b, 0).reshape(len(counts), -1)
    return fits.reshape(len(counts), -1).any(axis=1), sums.max(axis=1)


def _full_house(p: Params) -> FloatArray:
    points = p.points(("sum",))
    has, best = _groups(p.dice, 3, 2)
    if p.flag("five_alike"):
        five = p.dice.roll_counts >= 5
        has = has | five.any(axis=1)
        best = np.maximum(best, np.max(np.where(five, 5 * _FACE_VALUES, 0), axis=1))
    return _fixed_or(points, has, best)


def _villa(p: Params) -> FloatArray:
    points = p.points(("sum",), default="sum")
    return _fixed_or(points, *_groups(p.dice, 3, 3))


def _tower(p: Params) -> FloatArray:
    points = p.points(("sum",), default="sum")
    return _fixed_or(points, *_groups(p.dice, 4, 2))


def _straight(p: Params) -> FloatArray:
    runs = p.face_lists("faces")
    points = p.points(("sum",))
    counts = p.dice.roll_counts
    shows = np.stack([np.all(counts[:, [f - 1 for f in run]] >= 1, axis=1) for run in runs])
    sums = np.array([sum(run) for run in runs])[:, None]
    return _fixed_or(points, shows.any(axis=0), np.max(np.where(shows, sums, 0), axis=0))


def _chance(p: Params) -> FloatArray:
    table: FloatArray = p.dice.roll_sums.astype(np.float64)
    return table


def _all_alike(p: Params) -> FloatArray:
    points = p.points(())
    return _fixed_or(points, p.dice.all_alike, p.dice.roll_sums)


KINDS: Final[dict[str, Callable[[Params], FloatArray]]] = {
    "upper": _upper,
    "of_a_kind": _of_a_kind,
    "pairs": _pairs,
    "full_house": _full_house,
    "villa": _villa,
    "tower": _tower,
    "straight": _straight,
    "chance": _chance,
    "all_alike": _all_alike,
}
"""Kind name to the function that reads its parameters and builds its table."""
