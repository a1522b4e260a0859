"""What scoring a roll in a box does to the scorecard: the one rule, in two forms side by side.

Scoring the dice in an open box banks the box's points, which the Joker rule decides for a
five of a kind once the Yahtzee box is filled (it may also forbid boxes then); moves the
upper total and banks the upper bonus with the score that reaches the threshold, once;
records a 50 in the Yahtzee box, after which every five of a kind banks the +100 bonus.

The rule comes in two forms, because its callers see the scorecard two ways:

- the scalar form, :func:`score`, :func:`roll_points` and :func:`after`, takes one
  :class:`State` as a player sees it (the real upper total, the 50 recorded whatever the
  bonus rules): advice, the review of a game and the interactive table, one decision at a
  time;
- the vectorized form, :func:`points` (the Joker rule over rolls and open boxes) and
  :func:`land` (where guideposts land and what they bank, over any broadcast of boxes,
  points and guideposts), takes guideposts as the solver stores them (the upper total capped
  at the threshold, one level without an upper bonus; the flag only under a +100 rule, see
  :func:`memo_solver.games.yahtzee.rules.state.guidepost`): the turn math, the exact distribution
  and the simulation, which score whole arrays at once.

They are written next to each other so that a rule changes in both at once, and
``tests/test_scoring.py`` checks that they agree on every roll, box and scorecard of small
rule sets. Which rolls are five of a kind comes from one table,
:attr:`memo_solver.games.yahtzee.rules.dice.Dice.all_alike`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.rules.dice import FACES
from memo_solver.games.yahtzee.rules.rule_set import FloatArray, RuleSet
from memo_solver.games.yahtzee.rules.state import State

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_FACE_RANGE = np.arange(1, FACES + 1)


# --- the scalar form --------------------------------------------------------------------------


class Scored(NamedTuple):
    """What scoring the dice in one box banks at once."""

    points: int
    """The box's points, the Joker's included."""
    upper_bonus: int
    """The upper bonus, banked by the score that reaches the threshold."""
    extra: int
    """The +100 for a five of a kind once the Yahtzee box holds 50."""

    @property
    def bonus(self) -> int:
        return self.upper_bonus + self.extra


def score(rules: RuleSet, state: State, box: int) -> Scored | None:
    """Score the state's dice in the open ``box``; None where the Joker rule forbids it."""
    if state.dice is None:
        raise ValueError("no dice to score: the turn has not started")
    roll = rules.universe.roll_index[state.dice]
    points = roll_points(rules, state.filled, box, roll)
    if points is None:
        return None
    category = rules.categories[box]
    upper_bonus = 0
    reached = state.upper < rules.upper_threshold <= state.upper + points
    if category.upper_face and rules.upper_bonus and reached:
        upper_bonus = rules.upper_bonus
    extra = 0
    if rules.yahtzee_bonus and state.yahtzee_bonus and rules.universe.all_alike[roll]:
        extra = rules.yahtzee_bonus
    return Scored(points, upper_bonus, extra)


def next_turn_start(rules: RuleSet, state: State, box: int, points: int) -> State:
    """The next turn's start once ``points`` are scored in ``box``: the box filled, the real
    upper total moved, a 50 in the Yahtzee box recorded (whatever the bonus rules), and under
    saved rolls the rolls left carried to the bank."""
    category = rules.categories[box]
    upper = state.upper + (points if category.upper_face else 0)
    fifty = state.yahtzee_bonus or (category.is_yahtzee and points > 0)
    saved = rules.carried(state.rerolls_left or 0)
    return State(state.filled | 1 << box, upper, fifty, None, None, saved)


def roll_points(rules: RuleSet, filled: int, box: int, roll: int) -> int | None:
    """The points of roll ``roll`` (an index) in the open ``box``, the Joker's included; None
    where the Joker rule forbids the box: :func:`points` for one cell."""
    category = rules.categories[box]
    plain = int(category.scores[roll])
    yahtzee = rules.yahtzee_box
    if rules.joker == "none" or yahtzee is None or not filled >> yahtzee & 1:
        return plain
    if not rules.universe.all_alike[roll]:
        return plain
    face = rules.universe.rolls[roll][0]
    opened = [rules.categories[c] for c in rules.open_boxes(filled)]
    upper_open = any(c.upper_face == face for c in opened)
    joker = category.joker_points or plain
    if rules.joker == "free":
        return plain if upper_open else joker
    if upper_open:
        legal = category.upper_face == face
    else:  # a lower box while one is open, else any (upper) box
        legal = not category.upper_face or all(c.upper_face for c in opened)
    return joker if legal else None


# --- the vectorized form ----------------------------------------------------------------------


def points(rules: RuleSet, filled: int, boxes: list[int]) -> FloatArray:
    """(len(boxes), n_rolls): what scoring each roll in each open box gives, -inf where
    illegal.

    Only the six all-alike rolls differ from the plain score tables, and only when the
    Yahtzee box is filled and the rule set has a Joker.
    """
    table = rules.scores[boxes]
    yahtzee = rules.yahtzee_box
    if rules.joker == "none" or yahtzee is None or not filled >> yahtzee & 1:
        return table
    faces = rules.upper_faces[boxes]
    joker = np.array([rules.categories[c].joker_points for c in boxes], dtype=np.float64)
    upper_open = np.zeros(FACES + 1, dtype=bool)  # [g]: is the upper box of face g open?
    upper_open[faces] = True
    upper_open = upper_open[1:]
    alike = rules.universe.alike_rolls
    plain = table[:, alike]  # (C, 6): ordinary scores of the Yahtzee of face g
    with_joker = np.where(joker[:, None] > 0, joker[:, None], plain)
    if rules.joker == "forced":
        is_upper = faces > 0
        fallback = ~is_upper if (~is_upper).any() else is_upper
        legal = np.where(
            upper_open[None, :], faces[:, None] == _FACE_RANGE[None, :], fallback[:, None]
        )
        table[:, alike] = np.where(legal, with_joker, -np.inf)
    else:
        table[:, alike] = np.where(~upper_open[None, :], with_joker, plain)
    return table


@dataclass(frozen=True)
class Landing:
    """Where guideposts land and what they bank beyond the points: each array as large as
    the arguments it depends on (broadcast it where a whole shape is needed)."""

    upper: IntArray
    """The upper level after: the total capped at the threshold (0 without an upper bonus)."""
    flag: IntArray
    """The bonus level after: 1 once the Yahtzee box holds 50 (always 0 without a +100)."""
    upper_bonus: IntArray
    extra: IntArray
    """The +100 banked for a five of a kind."""
    fifty: BoolArray
    """50 went in the Yahtzee box: the chance of it is what a player asks about."""


def land(
    rules: RuleSet,
    box: int | IntArray,
    points: IntArray,
    five: bool | BoolArray,
    upper: IntArray,
    flag: IntArray,
) -> Landing:
    """Score ``points`` (finite: what :func:`points` gives) in ``box`` from guideposts at
    ``upper`` and ``flag``, ``five`` where the roll is five of a kind; the arguments
    broadcast against each other. A whole block's classes of rolls, or a turn of many games,
    cost a dozen array operations."""
    yahtzee = rules.yahtzee_box
    if isinstance(box, int):
        is_upper: bool | BoolArray = rules.categories[box].upper_face > 0
        is_yahtzee: bool | BoolArray = box == yahtzee
    else:
        is_upper = rules.upper_faces[box] > 0
        is_yahtzee = False if yahtzee is None else box == yahtzee
    upper_after = upper
    upper_bonus: IntArray = np.zeros(np.shape(upper), dtype=np.int64)
    if rules.upper_bonus and np.any(is_upper):
        raw = upper + (points if isinstance(box, int) else np.where(is_upper, points, 0))
        crossed = (upper < rules.upper_threshold) & (raw >= rules.upper_threshold)
        upper_bonus = np.where(crossed, rules.upper_bonus, 0)
        upper_after = np.minimum(raw, rules.upper_threshold)
    fifty: BoolArray = np.logical_and(is_yahtzee, points > 0)
    flag_after: IntArray = np.where(fifty, 1, flag) if rules.yahtzee_bonus else flag
    return Landing(upper_after, flag_after, upper_bonus, extra_bonus(rules, five, flag), fifty)


def extra_bonus(rules: RuleSet, five: bool | BoolArray, flag: IntArray) -> IntArray:
    """The +100 that a five of a kind (``five``) banks from guideposts with bonus level
    ``flag``: the flag says the Yahtzee box holds 50."""
    if not rules.yahtzee_bonus:
        return np.zeros(np.shape(flag), dtype=np.int64)
    extra: IntArray = np.where(np.logical_and(five, flag == 1), rules.yahtzee_bonus, 0)
    return extra
