"""Rule sets as data: boxes with score tables over the rolls, and the bonus, Joker and
fill-order rules.

A rule set carries everything the solver needs and nothing it can derive; its fingerprint
(a hash of that content, not of its name) goes into every cache key, so changing a score
table can never serve values computed under the old rules. Rule sets are read from their
files by :mod:`memo_solver.games.yahtzee.rules.rule_file`; the built-ins are such files too
(:mod:`memo_solver.games.yahtzee.rules.catalog`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.rules.dice import FACES, Dice, dice_universe

FloatArray = npt.NDArray[np.float64]
Joker = Literal["forced", "free", "none"]
Order = Literal["free", "forced"]
Precision = Literal["float64", "float32"]

DEFAULT_DICE: Final = 5
DEFAULT_ORDER: Final[Order] = "free"
DEFAULT_PRECISION: Final[Precision] = "float64"


@dataclass(frozen=True, eq=False)
class Category:
    """One box of the scorecard."""

    name: str
    """snake_case name users type, e.g. ``three_of_a_kind``."""
    label: str
    """What a player reads on the scorecard, e.g. ``Three of a Kind``."""
    scores: FloatArray = field(repr=False)
    """(n_rolls,) points this box gives each roll, in the order of the rule set's
    :attr:`~memo_solver.games.yahtzee.rules.dice.Dice.rolls`."""
    kind: Mapping[str, object] = field(repr=False)
    """Its scoring as the rule-set file says it: ``{"kind": "upper", "face": 1}``."""
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
    start_value: float | None = None
    """Published or cross-checked expected final score from the empty scorecard: the
    built-ins know theirs, a rule set from a file does not."""
    dice: int = DEFAULT_DICE
    order: Order = DEFAULT_ORDER
    """``forced``: the next open box in scorecard order is the only one a score may go in."""
    rerolls: int = 2
    upper_threshold: int = 63
    upper_bonus: int = 0
    yahtzee_bonus: int = 0
    joker: Joker = "none"
    saved_rolls: bool = False
    """Unused rolls carry over: a turn adds its ``rerolls + 1`` rolls to the bank of rolls
    saved by the turns before, the first roll is made, and whatever is left when the turn
    scores is the next turn's bank (official Maxi Yatzy)."""
    max_saved: int | None = None
    """With :attr:`saved_rolls`, the most rolls a bank may carry into the next turn (a house
    rule; None: no cap, 0: the game without the rule)."""
    precision: Precision = DEFAULT_PRECISION
    """How a store keeps the values: ``float32`` halves a whole table (an opt-in of rule
    files; the built-ins keep float64). Every value solved is then rounded to float32, in
    the memo as in the store, so a value is the same whoever computed or read it; each
    rounding is within 2**-24 of the value, and a turn adds at most that much of the largest
    value to its successors' error (a turn's expectations and maxima never widen an error),
    so the start value is within boxes * 2**-24 * largest value (20 boxes: 1.2e-6 of it)."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Other names for boxes, alias to box name: what a published variant's own scorecard
    calls them (``Count 1s`` for ``ones``), so that its players can type what they read.
    Labels only: they stay out of the fingerprint, and blocks stored before an alias was
    added still serve the rule set."""

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over the rules' content (names of boxes included, their
        aliases not)."""
        content: dict[str, object] = {
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
        # New in the file format: hashed only away from their defaults, so that every rule
        # set written before keeps its fingerprint and its cached blocks.
        if self.dice != DEFAULT_DICE:
            content["dice"] = self.dice
        if self.order != DEFAULT_ORDER:
            content["order"] = self.order
        if self.saved_rolls:
            content["saved_rolls"] = True
        if self.max_saved is not None:
            content["max_saved"] = self.max_saved
        if self.precision != DEFAULT_PRECISION:
            content["precision"] = self.precision
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
        return digest[:16]

    @property
    def universe(self) -> Dice:
        """The rolls and keeps of this rule set's dice."""
        return dice_universe(self.dice)

    def open_boxes(self, filled: int) -> list[int]:
        """The boxes a score may go in now: every open one, or under forced order the
        first open one."""
        open_ = [c for c in range(len(self.categories)) if not filled >> c & 1]
        return open_[:1] if self.order == "forced" else open_

    def open_matrix(self, masks: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """(N, C): :meth:`open_boxes` for N filled masks at once (the kernel's batches)."""
        boxes = np.arange(len(self.categories), dtype=np.int64)
        open_: npt.NDArray[np.bool_] = (masks[:, None] >> boxes[None, :] & 1) == 0
        if self.order == "forced":
            first = np.argmax(open_, axis=1)
            open_ &= boxes[None, :] == first[:, None]
        return open_

    def filled_counts(self, masks: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """(N,): how many boxes each of N filled masks has filled."""
        boxes = np.arange(len(self.categories), dtype=np.int64)
        counts: npt.NDArray[np.int64] = (masks[:, None] >> boxes[None, :] & 1).sum(axis=1)
        return counts

    def reachable_masks(self, filled: int) -> list[int]:
        """Every filled mask a game reaches from ``filled`` (itself included), fewest boxes
        first: supersets, or under forced order the longer prefixes."""
        if self.order == "forced":
            n = len(self.categories)
            return [(1 << k) - 1 for k in range(filled.bit_count(), n + 1)]
        free = [c for c in range(len(self.categories)) if not filled >> c & 1]
        subsets = np.arange(1 << len(free), dtype=np.int64)
        masks = np.full_like(subsets, filled)
        filled_count = np.zeros_like(subsets)
        for i, box in enumerate(free):  # a million masks (Maxi Yatzy) in vectorized steps
            bit = subsets >> i & 1
            masks |= bit << box
            filled_count += bit
        order = np.argsort(filled_count, kind="stable")
        ordered: list[int] = masks[order].tolist()
        return ordered

    def layers(self, filled: int) -> list[list[int]]:
        """:meth:`reachable_masks` grouped by boxes filled, the most first: every mask's
        successors are in an earlier group, so a whole game solves one layer at a time."""
        by_count: dict[int, list[int]] = {}
        for mask in self.reachable_masks(filled):
            by_count.setdefault(mask.bit_count(), []).append(mask)
        return [by_count[count] for count in sorted(by_count, reverse=True)]

    @property
    def block_count(self) -> int:
        """Filled masks a game can reach: every subset, or under forced order the prefixes."""
        n = len(self.categories)
        return n + 1 if self.order == "forced" else 1 << n

    def cone_turn_starts(self, filled: int) -> int:
        """Turn starts (guideposts) a cold solve from ``filled`` may have to compute: every
        block a game reaches from it, times the guideposts a block holds (its levels, and
        with saved rolls its banks, more with each box filled); what a service weighs before
        it takes on a cold question, and what a whole game's store may hold. An upper bound,
        as a block's shape is: levels no game reaches count too (``maxi-yatzy`` with saved
        rolls: 1.87 billion, of which 1.27 billion are reached)."""
        return self._cone_turn_starts[filled.bit_count()]

    @cached_property
    def _cone_turn_starts(self) -> tuple[int, ...]:
        """:meth:`cone_turn_starts` by boxes filled, which alone decide it: a cold question
        weighs its cone at each request."""
        boxes = len(self.categories)
        levels = self.n_upper_levels * self.n_bonus_levels
        cones = []
        for done in range(boxes + 1):
            open_ = boxes - done
            # The blocks with ``more`` boxes filled after these: one under forced order (the
            # longer prefix), else every choice of the open boxes; each holds the same banks.
            blocks = (
                (1 if self.order == "forced" else math.comb(open_, more))
                * self.saved_levels(done + more)
                for more in range(open_ + 1)
            )
            cones.append(sum(blocks) * levels)
        return tuple(cones)

    def is_reachable(self, filled: int) -> bool:
        """Whether some game fills exactly these boxes (under forced order: a prefix)."""
        if not 0 <= filled <= self.all_filled:
            return False
        return self.order == "free" or filled & (filled + 1) == 0

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
        """The levels of a block: (upper levels, bonus levels), what every turn start of a
        rule set without saved rolls is indexed by."""
        return (self.n_upper_levels, self.n_bonus_levels)

    def saved_levels(self, filled_count: int) -> int:
        """Banks a turn start with ``filled_count`` boxes filled may hold, 0 up: each turn
        before saved at most its rerolls, and the cap holds it; 1 (the empty bank) without
        saved rolls."""
        if not self.saved_rolls:
            return 1
        most = filled_count * self.rerolls
        return 1 + (most if self.max_saved is None else min(most, self.max_saved))

    def turn_cost(self, filled_count: int) -> float:
        """A block's turn beside a plain turn's (one score step, then a round per reroll):
        with saved rolls its chain has a round per roll a bank may leave and a score step
        per bank a score may carry (Maxi Yatzy's: 8 times a plain turn with 5 boxes filled,
        22 times with 15; measured 9 and 19)."""
        if not self.saved_rolls:
            return 1.0
        last = self.saved_levels(filled_count) - 1 + self.rerolls  # rolls left at most
        scores = min(last, self.saved_levels(filled_count + 1) - 1) + 1
        return (scores + last) / (1 + self.rerolls)

    def block_shape_of(self, filled: int) -> tuple[int, ...]:
        """The shape of the block of ``filled``: its levels, then with saved rolls the bank
        (which grows by a turn's rerolls with each box filled)."""
        if not self.saved_rolls:
            return self.block_shape
        return (*self.block_shape, self.saved_levels(filled.bit_count()))

    def carried(self, rolls_left: int) -> int:
        """The bank the next turn starts with when a turn scores with ``rolls_left``."""
        if not self.saved_rolls:
            return 0
        return rolls_left if self.max_saved is None else min(rolls_left, self.max_saved)

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
        a Joker Yahtzee scores there (:func:`memo_solver.games.yahtzee.solve.scoring.points` scores
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
        return _upper_totals(faces, self.dice)

    def hopeless_levels(self, filled: int) -> int:
        """How many upper levels, from 0, can no longer make the bonus with these boxes
        filled: each open upper box adds at most the dice times its face, and a level that
        falls short even so never banks the bonus, nor does any level it leads to. Nothing
        else reads the upper total, so below this level every turn start with the same bank
        and flags is worth the same (what a store keeps once)."""
        if self.n_upper_levels == 1:
            return 0
        faces = self.upper_faces * ((filled >> np.arange(len(self.categories)) & 1) == 0)
        return max(0, self.upper_threshold - self.dice * int(faces.sum()))

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


class SavedRollsError(UserError):
    """A question the family does not answer yet for a rule set with saved rolls: refused
    in one line that names the rule set, never answered as if no bank were carried."""

    field = "rules"


def refuse_saved_rolls(rules: RuleSet, what: str) -> None:
    """Refuse ``what`` (a need table, a simulation...) for ``rules`` if they save rolls: each
    concern that does not follow the bank yet calls this where its work starts, before any
    solve."""
    if rules.saved_rolls:
        raise SavedRollsError(
            f"{what}: not available yet for a rule set with saved rolls ({rules.name})"
        )


def _bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


@lru_cache(maxsize=64)
def _upper_totals(faces: frozenset[int], dice: int) -> npt.NDArray[np.bool_]:
    reachable = np.zeros(dice * sum(range(1, FACES + 1)) + 1, dtype=bool)
    reachable[0] = True
    for face in faces:
        step = reachable.copy()
        for count in range(1, dice + 1):
            step[count * face :] |= reachable[: reachable.size - count * face]
        reachable = step
    reachable.setflags(write=False)
    return reachable


def normalize_name(name: str) -> str:
    return "_".join(name.strip().lower().replace("-", " ").replace("_", " ").split())
