"""A brute force of any rule set in the rule-file format, written from the rule book alone.

It reads the rule-set dict (the parsed JSON of a rule file) and plays the game with tuples,
loops and :func:`functools.cache`: no numpy, nothing of the solver. Every box kind scores by
its own plain rule, trying every choice of faces the rule allows, so that a slip in the
solver's tables cannot be copied here. It is exhaustive and slow on purpose, so it is meant
for tiny games: a few dice and a few boxes, where a whole game takes well under a second.

A state is (filled box indexes, raw upper total, fifty flag, rerolls left, sorted dice or
None before the turn's first roll). The fifty flag says the ``all_alike`` box holds its
non-zero points: every later roll of all dice alike then banks the Yahtzee bonus.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

Roll = tuple[int, ...]
FACES = range(1, 7)
Rules = Mapping[str, Any]


# --- the dice ---------------------------------------------------------------------------------


@cache
def outcomes(n: int) -> tuple[tuple[Roll, float], ...]:
    """Every sorted roll of ``n`` dice with its chance, counted over the 6**n ordered throws."""
    counts = Counter(tuple(sorted(throw)) for throw in itertools.product(FACES, repeat=n))
    return tuple((roll, ways / 6**n) for roll, ways in sorted(counts.items()))


@cache
def keeps_in(roll: Roll) -> tuple[Roll, ...]:
    """Every distinct sub-multiset of the roll, from keeping nothing to keeping all of it."""
    return tuple(
        sorted({kept for n in range(len(roll) + 1) for kept in itertools.combinations(roll, n)})
    )


def keep_name(kept: Roll) -> str:
    return "keep " + (" ".join(map(str, kept)) or "nothing")


def all_alike(roll: Roll) -> bool:
    return len(set(roll)) == 1


# --- the boxes ----------------------------------------------------------------------------------


def _upper(box: Rules, roll: Roll) -> int:
    return sum(die for die in roll if die == box["face"])


def _of_a_kind(box: Rules, roll: Roll) -> int:
    count, points = box["count"], box["points"]
    best = 0
    for face in FACES:
        if roll.count(face) >= count:
            if points == "those":
                best = max(best, count * face)
            elif points == "all":
                best = max(best, sum(roll))
            else:
                best = max(best, points)
    return best


def _pairs(box: Rules, roll: Roll) -> int:
    """The pairs on offer, one per face showing two dice (two per face showing four, with the
    modifier); every choice of ``count`` of them is tried."""
    per_face = 2 if box.get("four_as_two_pairs", False) else 1
    on_offer = [face for face in FACES for _ in range(min(per_face, roll.count(face) // 2))]
    choices = itertools.combinations(on_offer, box["count"])
    return max((2 * sum(chosen) for chosen in choices), default=0)


def _fixed_or_sum(box: Rules, sums: Iterable[int]) -> int:
    """A box worth fixed points or the sum of the dice it uses, over the ways the roll fits."""
    fits = list(sums)
    if not fits:
        return 0
    points = box.get("points", "sum")  # villa and tower count their dice unless told
    return max(fits) if points == "sum" else int(points)


def _two_groups(roll: Roll, big: int, small: int) -> list[int]:
    """The sums ``big * a + small * b`` over different faces a, b showing that many dice."""
    return [
        big * a + small * b
        for a in FACES
        for b in FACES
        if a != b and roll.count(a) >= big and roll.count(b) >= small
    ]


def _full_house(box: Rules, roll: Roll) -> int:
    sums = _two_groups(roll, 3, 2)
    if box.get("five_alike", False):
        sums += [5 * face for face in FACES if roll.count(face) >= 5]
    return _fixed_or_sum(box, sums)


def _villa(box: Rules, roll: Roll) -> int:
    return _fixed_or_sum(box, _two_groups(roll, 3, 3))


def _tower(box: Rules, roll: Roll) -> int:
    return _fixed_or_sum(box, _two_groups(roll, 4, 2))


def _straight(box: Rules, roll: Roll) -> int:
    faces = box["faces"]
    lists = faces if isinstance(faces[0], list) else [faces]
    return _fixed_or_sum(box, [sum(needed) for needed in lists if set(needed) <= set(roll)])


def _chance(box: Rules, roll: Roll) -> int:
    return sum(roll)


def _all_alike(box: Rules, roll: Roll) -> int:
    return int(box["points"]) if all_alike(roll) else 0


KINDS: dict[str, Callable[[Rules, Roll], int]] = {
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


def plain_points(box: Rules, roll: Roll) -> int:
    """What the roll scores in the box by the box's own rule (no Joker)."""
    return KINDS[box["kind"]](box, roll)


# --- the game -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Game:
    """The rule set, frozen so that the cached functions below can key on it."""

    text: str
    """The rule-set dict as canonical JSON: equal rule sets share their cached values."""

    @cached_property
    def rules(self) -> Rules:
        decoded: Rules = json.loads(self.text)
        return decoded

    @cached_property
    def boxes(self) -> tuple[Rules, ...]:
        return tuple(self.rules["boxes"])

    @cached_property
    def dice(self) -> int:
        return int(self.rules.get("dice", 5))

    @cached_property
    def rerolls(self) -> int:
        return int(self.rules.get("rerolls", 2))

    @cached_property
    def alike_box(self) -> int | None:
        return next((i for i, b in enumerate(self.boxes) if b["kind"] == "all_alike"), None)


def game_of(rules: Rules) -> Game:
    return Game(json.dumps(rules, sort_keys=True))


def legal_points(game: Game, filled: frozenset[int], roll: Roll) -> dict[int, int]:
    """The open boxes the roll may be scored in, with the points each scores there.

    Forced order leaves only the first open box. The Joker rule applies once the
    ``all_alike`` box is filled (with its points or with 0) and the roll is all alike.
    """
    rules, boxes = game.rules, game.boxes
    open_ = [i for i in range(len(boxes)) if i not in filled]
    if rules.get("order", "free") == "forced":
        return {open_[0]: plain_points(boxes[open_[0]], roll)}
    plain = {i: plain_points(boxes[i], roll) for i in open_}
    joker = rules.get("joker", "none")
    alike = game.alike_box
    if joker == "none" or alike is None or alike not in filled or not all_alike(roll):
        return plain
    face = roll[0]
    upper = [i for i in open_ if boxes[i]["kind"] == "upper"]
    matching = [i for i in upper if boxes[i]["face"] == face]
    joker_points = {i: boxes[i].get("joker_points", 0) or plain[i] for i in open_}
    if joker == "free":
        return plain if matching else joker_points
    # forced
    if matching:
        return {i: plain[i] for i in matching}
    lower = [i for i in open_ if i not in upper]
    if lower:
        return {i: joker_points[i] for i in lower}
    return {i: plain[i] for i in upper}


def scored(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, roll: Roll, box: int, points: int
) -> tuple[int, tuple[frozenset[int], int, bool]]:
    """Scoring ``points`` in ``box``: what it banks (bonuses included) and the next turn's start.

    The upper bonus comes with the score that takes the upper total to the threshold or past
    it; the Yahtzee bonus with every roll of all dice alike once the fifty flag is up.
    """
    rules, kind = game.rules, game.boxes[box]["kind"]
    gain = points
    new_upper = upper
    if kind == "upper":
        new_upper = upper + points
        threshold = rules.get("upper_threshold", 63)
        if upper < threshold <= new_upper:
            gain += rules.get("upper_bonus", 0)
    if fifty and all_alike(roll):
        gain += rules.get("yahtzee_bonus", 0)
    new_fifty = fifty or (kind == "all_alike" and points > 0)
    return gain, (filled | {box}, new_upper, new_fifty)


@cache
def _turn_start(game: Game, filled: frozenset[int], upper: int, fifty: bool) -> float:
    if len(filled) == len(game.boxes):
        return 0.0
    values = _roll_values(game, filled, upper, fifty, game.rerolls)
    return sum(chance * values[roll] for roll, chance in outcomes(game.dice))


@cache
def _score_values(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, roll: Roll
) -> dict[int, float]:
    """Each legal box's worth: what it banks now and the next turn start's value."""
    worth = {}
    for box, points in legal_points(game, filled, roll).items():
        gain, after = scored(game, filled, upper, fifty, roll, box, points)
        worth[box] = gain + _turn_start(game, *after)
    return worth


@cache
def _keep_values(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int
) -> dict[Roll, float]:
    """With ``rerolls_left`` >= 1: each keep's worth, the average over what the reroll shows."""
    after = _roll_values(game, filled, upper, fifty, rerolls_left - 1)
    worth = {}
    for n in range(game.dice + 1):
        for kept in itertools.combinations_with_replacement(FACES, n):
            worth[kept] = sum(
                chance * after[tuple(sorted(kept + rolled))]
                for rolled, chance in outcomes(game.dice - n)
            )
    return worth


@cache
def _roll_values(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, rerolls_left: int
) -> dict[Roll, float]:
    """The value of each roll with ``rerolls_left`` to go: its best action's worth."""
    return {
        roll: max(_action_values(game, filled, upper, fifty, roll, rerolls_left).values())
        for roll, _ in outcomes(game.dice)
    }


def _action_values(
    game: Game, filled: frozenset[int], upper: int, fifty: bool, roll: Roll, rerolls_left: int
) -> dict[str, float]:
    named = {}
    if rerolls_left:
        worth = _keep_values(game, filled, upper, fifty, rerolls_left)
        named = {keep_name(kept): worth[kept] for kept in keeps_in(roll)}
    boxes = game.boxes
    for box, value in _score_values(game, filled, upper, fifty, roll).items():
        named["score " + boxes[box]["name"]] = value
    return named


# --- the interface the tests use ------------------------------------------------------------------


def value(rules: Rules, filled: Iterable[int], upper: int, fifty: bool) -> float:
    """A turn start's value: the expected points still to come, bonuses included."""
    return _turn_start(game_of(rules), frozenset(filled), upper, fifty)


def actions(
    rules: Rules, filled: Iterable[int], upper: int, fifty: bool, dice: Roll, rerolls_left: int
) -> dict[str, float]:
    """Every legal action's value mid-turn: ``keep 1 2``, ``keep nothing``, ``score NAME``.

    With rerolls left every distinct keep is offered (keeping all the dice too); a box the
    forced order or the Joker rule forbids is absent.
    """
    game = game_of(rules)
    if len(dice) != game.dice:
        raise ValueError(f"expected {game.dice} dice, got {dice}")
    filled = frozenset(filled)
    if len(filled) == len(game.boxes):
        raise ValueError("the game is over: every box is filled")
    return _action_values(game, filled, upper, fifty, tuple(sorted(dice)), rerolls_left)


def state_value(
    rules: Rules,
    filled: Iterable[int],
    upper: int,
    fifty: bool,
    dice: Roll | None,
    rerolls_left: int | None,
) -> float:
    """Any state's value: the turn start's before the roll, else the best action's."""
    if dice is None or rerolls_left is None:
        return value(rules, filled, upper, fifty)
    return max(actions(rules, filled, upper, fifty, dice, rerolls_left).values())
