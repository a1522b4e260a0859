"""Rule sets as data: boxes with score tables over the 252 rolls, and the bonus and Joker rules.

A rule set carries everything the solver needs and nothing it can derive; its fingerprint
(a hash of that content, not of its name) goes into every cache key, so changing a score
table can never serve values computed under the old rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.dice import (
    DICE,
    FACES,
    FIVE_OF_A_KIND,
    ROLL_COUNTS,
    ROLL_MAX_COUNT,
    ROLL_SUMS,
)

FloatArray = npt.NDArray[np.float64]
Joker = Literal["forced", "free", "none"]

UPPER_NAMES: Final = ("ones", "twos", "threes", "fours", "fives", "sixes")


class UnknownRuleSetError(UserError):
    """Raised for a rule-set name that is not built in; the message lists the valid ones."""

    field = "rules"


@dataclass(frozen=True, eq=False)
class Category:
    """One box of the scorecard."""

    name: str
    """snake_case name users type, e.g. ``three_of_a_kind``."""
    label: str
    """What a player reads on the scorecard, e.g. ``Three of a Kind``."""
    scores: FloatArray = field(repr=False)
    """(252,) points this box gives each roll, in :data:`memo_solver.games.yahtzee.dice.ROLLS`
    order."""
    upper_face: int = 0
    """1..6 for the upper section (counts toward the upper bonus), 0 otherwise."""
    joker_points: int = 0
    """Fixed points a Joker Yahtzee scores here (Full House 25, straights 30/40), 0 if none."""
    is_yahtzee: bool = False
    """The five-of-a-kind box whose 50 enables the +100 bonus and the Joker."""


@dataclass(frozen=True, eq=False)
class RuleSet:
    """A complete solitaire game: its boxes, rolls per turn, bonuses and Joker rule."""

    name: str
    description: str
    categories: tuple[Category, ...]
    start_value: float
    """Published or cross-checked expected final score from the empty scorecard."""
    rerolls: int = 2
    upper_threshold: int = 63
    upper_bonus: int = 0
    yahtzee_bonus: int = 0
    joker: Joker = "none"
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Other names for boxes, alias to box name: what a published variant's own scorecard
    calls them (``Count 1s`` for ``ones``), so that its players can type what they read.
    Labels only: they stay out of the fingerprint, and blocks stored before an alias was
    added still serve the rule set."""

    def __post_init__(self) -> None:
        names = {c.name for c in self.categories}
        seen: set[str] = set()
        for alias, box in self.aliases.items():
            spelled = normalize_name(alias)
            if box not in names:
                raise ValueError(f"rule set {self.name}: alias {alias!r} names no box ({box!r})")
            if spelled in names or spelled in seen:
                raise ValueError(f"rule set {self.name}: alias {alias!r} is taken already")
            seen.add(spelled)

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over the rules' content (names of boxes included, their
        aliases not)."""
        content = {
            "rerolls": self.rerolls,
            "upper_threshold": self.upper_threshold,
            "upper_bonus": self.upper_bonus,
            "yahtzee_bonus": self.yahtzee_bonus,
            "joker": self.joker,
            "categories": [
                [c.name, c.upper_face, c.joker_points, c.is_yahtzee, c.scores.tolist()]
                for c in self.categories
            ],
        }
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        return digest[:16]

    @property
    def n_upper_levels(self) -> int:
        """Upper totals tracked per block: 0..threshold, or one level if there is no bonus."""
        return self.upper_threshold + 1 if self.upper_bonus else 1

    @property
    def n_bonus_levels(self) -> int:
        """Yahtzee-bonus flag levels per block: two with a +100 bonus, else one."""
        return 2 if self.yahtzee_bonus else 1

    @property
    def block_shape(self) -> tuple[int, int]:
        return (self.n_upper_levels, self.n_bonus_levels)

    @property
    def all_filled(self) -> int:
        return (1 << len(self.categories)) - 1

    @cached_property
    def yahtzee_box(self) -> int | None:
        """Index of the Yahtzee box, if the rule set has one."""
        return next((i for i, c in enumerate(self.categories) if c.is_yahtzee), None)

    @cached_property
    def scores(self) -> FloatArray:
        """(C, 252) every box's points for every roll."""
        return np.stack([c.scores for c in self.categories])

    @cached_property
    def possible_points(self) -> tuple[tuple[int, ...], ...]:
        """Per box, ascending: every score a game can put in it, so that a scorecard typed
        by hand can be checked box by box.

        That is what the box's table gives some roll, and under a Joker rule the fixed points
        a Joker Yahtzee scores there (:func:`memo_solver.games.yahtzee.scoring.points` scores
        nothing else outside the tables). A scratch is the table's 0, so a box no roll leaves at 0
        (Chance) has no 0.
        """
        joker = self.joker != "none" and self.yahtzee_box is not None
        return tuple(
            tuple(
                sorted(
                    {int(points) for points in category.scores}
                    | ({category.joker_points} if joker and category.joker_points else set())
                )
            )
            for category in self.categories
        )

    @cached_property
    def upper_faces(self) -> npt.NDArray[np.int64]:
        return np.array([c.upper_face for c in self.categories], dtype=np.int64)

    def upper_totals(self, filled: int) -> npt.NDArray[np.bool_]:
        """(106,): which real upper totals the filled upper boxes can add up to."""
        faces = frozenset(int(f) for f in self.upper_faces[_bits(filled)] if f)
        return _upper_totals(faces)

    def reachable_upper(self, filled: int) -> npt.NDArray[np.int64]:
        """The block's upper levels some game can reach: totals capped at the threshold."""
        if self.n_upper_levels == 1:
            return np.zeros(1, dtype=np.int64)
        totals = np.flatnonzero(self.upper_totals(filled))
        return np.unique(np.minimum(totals, self.upper_threshold))

    @cached_property
    def _box_index(self) -> dict[str, int]:
        """Boxes by their exact names, the form every JSON state uses."""
        return {
            c.name: i for i, c in enumerate(self.categories) if normalize_name(c.name) == c.name
        }

    @cached_property
    def _spellings(self) -> dict[str, int]:
        """Boxes by their names and aliases, both as :func:`normalize_name` writes them."""
        index = {c.name: i for i, c in enumerate(self.categories)}
        for alias, box in self.aliases.items():
            index[normalize_name(alias)] = index[box]
        return index

    def category_index(self, name: str) -> int:
        """Find a box by name or alias: case-insensitive, spaces and hyphens read as
        underscores.

        Raises KeyError with the valid names (and aliases) in its message.
        """
        exact = self._box_index.get(name)
        if exact is not None:
            return exact
        found = self._spellings.get(normalize_name(name))
        if found is not None:
            return found
        valid = ", ".join(c.name for c in self.categories)
        if self.aliases:
            valid += f"; or their aliases {', '.join(self.aliases)}"
        raise KeyError(f"unknown box {name!r} for rule set {self.name} (boxes: {valid})")


MAX_UPPER_TOTAL: Final = DICE * sum(range(1, FACES + 1))


def _bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


@lru_cache(maxsize=64)
def _upper_totals(faces: frozenset[int]) -> npt.NDArray[np.bool_]:
    reachable = np.zeros(MAX_UPPER_TOTAL + 1, dtype=bool)
    reachable[0] = True
    for face in faces:
        step = reachable.copy()
        for count in range(1, DICE + 1):
            step[count * face :] |= reachable[: reachable.size - count * face]
        reachable = step
    reachable.setflags(write=False)
    return reachable


def normalize_name(name: str) -> str:
    return "_".join(name.strip().lower().replace("-", " ").replace("_", " ").split())


# --- score tables, vectorized over the 252 rolls -------------------------------------------

_COUNTS = ROLL_COUNTS
_SUMS = ROLL_SUMS.astype(np.float64)
_FACE_VALUES = np.arange(1, FACES + 1)


def _upper(face: int) -> FloatArray:
    return (_COUNTS[:, face - 1] * face).astype(np.float64)


def _sum_if(mask: npt.NDArray[np.bool_]) -> FloatArray:
    return np.where(mask, _SUMS, 0.0)


def _fixed_if(mask: npt.NDArray[np.bool_], points: int) -> FloatArray:
    return np.where(mask, float(points), 0.0)


def _has_run(*faces: int) -> npt.NDArray[np.bool_]:
    has: npt.NDArray[np.bool_] = np.all(_COUNTS[:, [f - 1 for f in faces]] >= 1, axis=1)
    return has


def _highest_of_a_kind(n: int) -> FloatArray:
    """n times the highest face showing at least n times (Scandinavian scoring), else 0."""
    best = np.max(np.where(_COUNTS >= n, _FACE_VALUES, 0), axis=1)
    scores: FloatArray = (best * n).astype(np.float64)
    return scores


def _two_pairs() -> FloatArray:
    """Two pairs of different faces, scoring the four dice; four of a kind is not two pairs."""
    pairs = np.where(_COUNTS >= 2, _FACE_VALUES, 0)
    return np.where((pairs > 0).sum(axis=1) == 2, 2.0 * pairs.sum(axis=1), 0.0)


_FULL_HOUSE = np.sort(_COUNTS, axis=1)[:, -2:].tolist()
_IS_FULL_HOUSE = np.array([pair == [2, 3] for pair in _FULL_HOUSE])
_SMALL_STRAIGHT = _has_run(1, 2, 3, 4) | _has_run(2, 3, 4, 5) | _has_run(3, 4, 5, 6)
_LARGE_STRAIGHT = _has_run(1, 2, 3, 4, 5) | _has_run(2, 3, 4, 5, 6)


def _box(name: str, scores: FloatArray, **kwargs: int | bool) -> Category:
    label = name.replace("_", " ").title().replace(" Of ", " of ").replace(" A ", " a ")
    return Category(name=name, label=label, scores=scores, **kwargs)  # type: ignore[arg-type]


def _upper_boxes() -> tuple[Category, ...]:
    return tuple(_box(n, _upper(f), upper_face=f) for f, n in enumerate(UPPER_NAMES, start=1))


def _yahtzee_lower() -> tuple[Category, ...]:
    return (
        _box("three_of_a_kind", _sum_if(ROLL_MAX_COUNT >= 3)),
        _box("four_of_a_kind", _sum_if(ROLL_MAX_COUNT >= 4)),
        _box("full_house", _fixed_if(_IS_FULL_HOUSE, 25), joker_points=25),
        _box("small_straight", _fixed_if(_SMALL_STRAIGHT, 30), joker_points=30),
        _box("large_straight", _fixed_if(_LARGE_STRAIGHT, 40), joker_points=40),
        _box("yahtzee", _fixed_if(FIVE_OF_A_KIND, 50), is_yahtzee=True),
        _box("chance", _SUMS.copy()),
    )


def _yatzy_boxes() -> tuple[Category, ...]:
    return (
        *_upper_boxes(),
        _box("one_pair", _highest_of_a_kind(2)),
        _box("two_pairs", _two_pairs()),
        _box("three_of_a_kind", _highest_of_a_kind(3)),
        _box("four_of_a_kind", _highest_of_a_kind(4)),
        _box("small_straight", _fixed_if(_has_run(1, 2, 3, 4, 5), 15)),
        _box("large_straight", _fixed_if(_has_run(2, 3, 4, 5, 6), 20)),
        _box("full_house", _sum_if(_IS_FULL_HOUSE)),
        _box("chance", _SUMS.copy()),
        _box("yatzy", _fixed_if(FIVE_OF_A_KIND, 50), is_yahtzee=True),
    )


def _yazy_boxes() -> tuple[Category, ...]:
    return (
        *_upper_boxes(),
        _box("three_of_a_kind", _sum_if(ROLL_MAX_COUNT >= 3)),
        _box("four_of_a_kind", _sum_if(ROLL_MAX_COUNT >= 4)),
        _box("full_house", _fixed_if(_IS_FULL_HOUSE, 25)),
        _box("straight", _fixed_if(_LARGE_STRAIGHT, 40)),
        _box("yazy", _fixed_if(FIVE_OF_A_KIND, 50), is_yahtzee=True),
    )


YAZY_ALIASES: Final = {
    **{f"Count {face}s": name for face, name in enumerate(UPPER_NAMES, start=1)},
    "3 of a kind": "three_of_a_kind",
    "4 of a kind": "four_of_a_kind",
    "3 + 2": "full_house",
    "Sequence of 5": "straight",
    "5 of a kind": "yazy",
}
"""The box names of the post that introduced yazy, which its players type."""


def _define() -> dict[str, RuleSet]:
    full = (*_upper_boxes(), *_yahtzee_lower())
    rule_sets = (
        RuleSet(
            "yahtzee",
            "Hasbro official: 13 boxes, upper bonus 35 at 63, +100 per extra Yahtzee, forced Joker",
            full,
            254.5877287345,
            upper_bonus=35,
            yahtzee_bonus=100,
            joker="forced",
        ),
        RuleSet(
            "yahtzee-free-joker",
            "As yahtzee, but a Joker Yahtzee may go in any open box (Verhoeff's rules)",
            full,
            254.5896094820,
            upper_bonus=35,
            yahtzee_bonus=100,
            joker="free",
        ),
        RuleSet(
            "yahtzee-no-joker",
            "As yahtzee without any Joker: the rules of Glenn's reference Haskell program",
            full,
            253.9702411898,
            upper_bonus=35,
            yahtzee_bonus=100,
        ),
        RuleSet(
            "yahtzee-no-joker-no-bonus",
            "As yahtzee with neither the Joker nor the +100 Yahtzee bonus (Glenn's 245.87)",
            full,
            245.8707745141,
            upper_bonus=35,
        ),
        RuleSet(
            "yazy",
            "11 boxes, no Chance, no small straight, no bonuses",
            _yazy_boxes(),
            165.7573187094,
            aliases=YAZY_ALIASES,
        ),
        RuleSet(
            "yahtzee-upper",
            "Ones to Sixes only, upper bonus 35 at 63",
            _upper_boxes(),
            71.9515297337,
            upper_bonus=35,
        ),
        RuleSet(
            "yahtzee-upper-no-bonus",
            "Ones to Sixes only, no bonus",
            _upper_boxes(),
            59.1632004354,
        ),
        RuleSet(
            "yahtzee-lower",
            "The seven lower boxes of Yahtzee, no bonus, no Joker",
            _yahtzee_lower(),
            139.9712924424,
        ),
        RuleSet(
            "yatzy",
            "Scandinavian: 15 boxes with pairs, fixed straights 15/20, bonus 50 at 63",
            _yatzy_boxes(),
            248.4399893779,
            upper_bonus=50,
        ),
    )
    return {r.name: r for r in rule_sets}


RULE_SETS: Final[dict[str, RuleSet]] = _define()


def get_rule_set(name: str) -> RuleSet:
    try:
        return RULE_SETS[name.strip().lower()]
    except KeyError:
        valid = ", ".join(RULE_SETS)
        raise UnknownRuleSetError(f"unknown rule set {name!r} (built in: {valid})") from None
