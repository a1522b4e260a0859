"""A brute-force solver of small end games, written from the rule book with plain Python.

It shares no code with the solver: every roll, keep and box is a tuple and a loop. The
tests hold the solver's values, choices and score distributions against it on games a few
boxes from the end, where it takes seconds.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

Roll = tuple[int, ...]
ROLLS: list[Roll] = list(itertools.combinations_with_replacement(range(1, 7), 5))
KEEPS: list[Roll] = [
    k for n in range(6) for k in itertools.combinations_with_replacement(range(1, 7), n)
]
KEEP_ORDER = {k: i for i, k in enumerate(KEEPS)}


@cache
def outcomes(n: int) -> list[tuple[Roll, float]]:
    """Every multiset ``n`` dice can show, with its chance."""
    counts = Counter(tuple(sorted(faces)) for faces in itertools.product(range(1, 7), repeat=n))
    return [(faces, ways / 6**n) for faces, ways in counts.items()]


@cache
def sub_keeps(roll: Roll) -> list[Roll]:
    """Every distinct keep inside the roll, in keep order."""
    inside = {k for n in range(6) for k in itertools.combinations(roll, n)}
    return sorted(inside, key=KEEP_ORDER.__getitem__)


@dataclass(frozen=True)
class Box:
    name: str
    score: Callable[[Roll], int]
    face: int = 0
    """1..6 for an upper box (its points count toward the bonus)."""
    yahtzee: bool = False
    """Scoring 50 here turns later Yahtzees into +100 bonuses (where the game has them)."""


HASKELL_PUBLISHED = {
    "keep 2 2 2": 40.998025624,
    "keep 1 2 2 2": 40.001351082,
    "keep 1": 39.926679721,
    "score ones": 38.301432126,
    "score yahtzee": 34.834789978,
}
"""The reference Haskell example's published action values (Ones and Yahtzee open, upper
total 62, dice 1 2 2 2 6, two rerolls left; pins.md): every brute force must give them."""
HASKELL_TURN_START = 40.430844806


ONES = Box("ones", lambda r: r.count(1), face=1)
FIVES = Box("fives", lambda r: 5 * r.count(5), face=5)
SIXES = Box("sixes", lambda r: 6 * r.count(6), face=6)
YAHTZEE = Box("yahtzee", lambda r: 50 if len(set(r)) == 1 else 0, yahtzee=True)
CHANCE = Box("chance", sum)


@dataclass(frozen=True)
class EndGame:
    """A game with a few boxes left, scored by hand-written rules."""

    boxes: tuple[Box, ...]
    """In scorecard order: ties go to the first."""
    threshold: int = 63
    upper_bonus: int = 0
    yahtzee_bonus: int = 0
    """Per Yahtzee rolled after 50 is in the Yahtzee box, whatever box takes it."""
    rerolls: int = 2

    def scored(self, box: Box, roll: Roll, upper: int, fifty: bool) -> tuple[int, int, bool]:
        """Scoring ``roll`` in ``box``: the points banked (bonuses included), the new upper
        total, and whether the Yahtzee box now holds 50."""
        points = box.score(roll)
        gain, new_upper = points, upper
        if box.face:
            new_upper = upper + points
            if self.upper_bonus and upper < self.threshold <= new_upper:
                gain += self.upper_bonus
        if fifty and len(set(roll)) == 1:
            gain += self.yahtzee_bonus
        return gain, new_upper, fifty or (box.yahtzee and points == 50)

    def box_value(
        self, box: Box, roll: Roll, open_: frozenset[str], upper: int, fifty: bool
    ) -> float:
        """Scoring now, then playing on optimally."""
        gain, new_upper, new_fifty = self.scored(box, roll, upper, fifty)
        return gain + self.turn(open_ - {box.name}, new_upper, new_fifty)[0]

    @cache  # noqa: B019 (a handful of small end games, alive for the test run)
    def choices(
        self, open_: frozenset[str], upper: int, fifty: bool
    ) -> tuple[
        list[dict[Roll, float]], dict[Roll, Box], list[dict[Roll, float]], list[dict[Roll, Roll]]
    ]:
        """Per rerolls left n: the value of each roll, and (n >= 1) of each keep and the keep
        chosen in each roll; with none left, the box chosen. Ties: the better value to
        1e-9, then more dice, then the first keep; the first box."""
        boxes = [b for b in self.boxes if b.name in open_]
        value: dict[Roll, float] = {}
        box_choice: dict[Roll, Box] = {}
        for roll in ROLLS:
            scores = [round(self.box_value(b, roll, open_, upper, fifty), 9) for b in boxes]
            box_choice[roll] = boxes[scores.index(max(scores))]
            value[roll] = self.box_value(box_choice[roll], roll, open_, upper, fifty)
        values: list[dict[Roll, float]] = [value]
        worths: list[dict[Roll, float]] = [{}]
        keep_choice: list[dict[Roll, Roll]] = [{}]
        for _ in range(self.rerolls):
            worth = {
                k: sum(p * value[tuple(sorted(k + o))] for o, p in outcomes(5 - len(k)))
                for k in KEEPS
            }
            rank = {k: (-round(worth[k], 9), -len(k), KEEP_ORDER[k]) for k in KEEPS}
            choice = {roll: min(sub_keeps(roll), key=rank.__getitem__) for roll in ROLLS}
            value = {roll: worth[choice[roll]] for roll in ROLLS}
            values.append(value)
            worths.append(worth)
            keep_choice.append(choice)
        return values, box_choice, worths, keep_choice

    @cache  # noqa: B019
    def turn(
        self, open_: frozenset[str], upper: int, fifty: bool = False
    ) -> tuple[float, dict[int, float]]:
        """The value and the distribution of the points to come from a turn start."""
        if not open_:
            return 0.0, {0: 1.0}
        values, box_choice, _, _ = self.choices(open_, upper, fifty)
        dist: defaultdict[int, float] = defaultdict(float)
        for roll, m in self.last_rolls(open_, upper, fifty).items():
            box = box_choice[roll]
            gain, new_upper, new_fifty = self.scored(box, roll, upper, fifty)
            for points, q in self.turn(open_ - {box.name}, new_upper, new_fifty)[1].items():
                dist[gain + points] += m * q
        start = sum(p * values[self.rerolls][roll] for roll, p in outcomes(5))
        return start, dict(dist)

    @cache  # noqa: B019
    def last_rolls(self, open_: frozenset[str], upper: int, fifty: bool) -> dict[Roll, float]:
        """The chance of each roll the turn ends with: the first roll's mass, moved through
        the keeps chosen."""
        keep_choice = self.choices(open_, upper, fifty)[3]
        mass: dict[Roll, float] = dict(outcomes(5))
        for n in range(self.rerolls, 0, -1):
            moved: defaultdict[Roll, float] = defaultdict(float)
            for roll, m in mass.items():
                k = keep_choice[n][roll]
                for o, p in outcomes(5 - len(k)):
                    moved[tuple(sorted(k + o))] += m * p
            mass = moved
        return mass

    @cache  # noqa: B019
    def p_five_alike(self, open_: frozenset[str], upper: int, fifty: bool = False) -> float:
        """The chance that a turn from here ends with five of a kind, in whatever box."""
        if not open_:
            return 0.0
        box_choice = self.choices(open_, upper, fifty)[1]
        chance = 0.0
        for roll, m in self.last_rolls(open_, upper, fifty).items():
            if len(set(roll)) == 1:
                chance += m
                continue
            box = box_choice[roll]
            _, new_upper, new_fifty = self.scored(box, roll, upper, fifty)
            chance += m * self.p_five_alike(open_ - {box.name}, new_upper, new_fifty)
        return chance

    def actions(
        self, open_: frozenset[str], upper: int, roll: Roll, rerolls: int, fifty: bool = False
    ) -> dict[str, float]:
        """Every action's value in mid-turn, named as a player would say it (``keep 2 2 2``,
        ``keep nothing``, ``score ones``)."""
        named: dict[str, float] = {}
        if rerolls:
            worth = self.choices(open_, upper, fifty)[2][rerolls]
            for k in sub_keeps(roll):
                named["keep " + (" ".join(map(str, k)) or "nothing")] = worth[k]
        for box in self.boxes:
            if box.name in open_:
                named[f"score {box.name}"] = self.box_value(box, roll, open_, upper, fifty)
        return named
