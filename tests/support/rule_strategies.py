"""Hypothesis strategies for tiny rule sets in the rule-file format, and states inside them.

A tiny rule set has one to three dice and one to three boxes, so that the plain-Python brute
force (``rulebook_brute_force.py``) plays its whole game in well under a second. Every box
kind is drawn whose smallest useful dice count is met: ``upper``, ``chance``, ``all_alike``
and ``straight`` from one die, ``of_a_kind`` and ``pairs`` from two, ``full_house`` from
five, ``villa`` and ``tower`` from six. Below that a full house, villa or tower can never
score, so with the tiny dice counts they are left out (the fixed variants of the tests cover
them with more dice); :func:`tiny_rule_sets` takes larger counts where a test can afford them.

Each draw is valid by the format's rules: distinct box names, parameters fitting the dice
count, fixed points above 0 (a box that never scores is refused), at most one ``all_alike``
box, Joker points on lower boxes only, upper boxes of distinct faces (so that "the upper box
of face f" of the Joker rule is one box), an upper bonus only with upper boxes and with a
threshold they can reach, a Yahtzee bonus and a Joker only with an ``all_alike`` box, and a
Joker only in free order. Keys at their default values are sometimes left out.

A tiny saved-rolls rule set (:func:`tiny_saved_rule_sets`) is a tiny rule set with the bank
of unused rolls, and a cap on it or not, for ``saved_brute_force.py``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from hypothesis import strategies as st

RuleDict = dict[str, Any]

MIN_DICE = {
    "upper": 1,
    "chance": 1,
    "all_alike": 1,
    "straight": 1,
    "of_a_kind": 2,
    "pairs": 2,
    "full_house": 5,
    "villa": 6,
    "tower": 6,
}
"""The fewest dice with which a box of the kind can score at all."""

_POINTS = st.integers(1, 40)
"""Fixed points: a box worth 0 could never score, and the format refuses a box that never does."""


def _optional(draw: st.DrawFn, rules: RuleDict, key: str, value: object, default: object) -> None:
    """Set ``key``, leaving it out now and then when it holds its default."""
    if value != default or draw(st.booleans()):
        rules[key] = value


def _face_list(dice: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, 6), min_size=1, max_size=dice, unique=True)


@st.composite
def _box(draw: st.DrawFn, kind: str, dice: int, free_faces: list[int], joker_odds: int) -> RuleDict:
    """A box of ``kind`` with parameters valid for ``dice`` dice (its name comes later), with
    Joker points once in ``joker_odds`` where it may have them."""
    box: RuleDict = {"kind": kind}
    if kind == "upper":
        box["face"] = draw(st.sampled_from(free_faces))
    elif kind == "of_a_kind":
        box["count"] = draw(st.integers(2, dice))
        box["points"] = draw(st.sampled_from(["those", "all"]) | _POINTS)
    elif kind == "pairs":
        box["count"] = count = draw(st.integers(1, dice // 2))
        if count >= 2:
            _optional(draw, box, "four_as_two_pairs", draw(st.booleans()), False)
    elif kind == "full_house":
        box["points"] = draw(st.just("sum") | _POINTS)
        _optional(draw, box, "five_alike", draw(st.booleans()), False)
    elif kind in ("villa", "tower"):
        box["points"] = draw(st.just("sum") | _POINTS)
    elif kind == "straight":
        box["faces"] = draw(_face_list(dice) | st.lists(_face_list(dice), min_size=1, max_size=3))
        box["points"] = draw(st.just("sum") | _POINTS)
    elif kind == "all_alike":
        box["points"] = draw(_POINTS)
    if kind != "upper" and draw(st.integers(1, joker_odds)) == 1:  # upper: its own face
        box["joker_points"] = draw(st.integers(0, 40))
    return box


@st.composite
def tiny_rule_sets(
    draw: st.DrawFn, max_dice: int = 3, max_boxes: int = 3, joker: bool = False
) -> RuleDict:
    """A valid rule-set dict with 1..``max_dice`` dice and 1..``max_boxes`` boxes.

    ``joker`` draws only Joker variants, where the Joker's rules are more than a rare corner:
    three boxes or more, among them an ``all_alike`` box and an upper box, free order, a free
    or forced Joker, and Joker points on every other lower box or so.
    """
    dice = draw(st.integers(1, max_dice))
    kinds = sorted(kind for kind, least in MIN_DICE.items() if least <= dice)
    count = draw(st.integers(3 if joker else 1, max_boxes))
    alike_at, upper_at = draw(st.permutations(range(count)))[:2] if joker else (None, None)
    boxes: list[RuleDict] = []
    for index in range(count):
        used = {b["kind"] for b in boxes}
        faces = [f for f in range(1, 7) if f not in {b.get("face") for b in boxes}]
        allowed = [k for k in kinds if not (k == "all_alike" and (joker or k in used))]
        placed = {alike_at: "all_alike", upper_at: "upper"}.get(index)
        kind = placed or draw(st.sampled_from(allowed))
        box = draw(_box(kind, dice, faces, joker_odds=2 if joker else 4))
        boxes.append({"name": f"{kind}_{index}", **box})
    rules: RuleDict = {"name": "tiny", "dice": dice}
    _optional(draw, rules, "rerolls", draw(st.integers(0, 2)), 2)
    order = "free" if joker else draw(st.sampled_from(["free", "forced"]))
    _optional(draw, rules, "order", order, "free")
    most_upper = sum(b["face"] * dice for b in boxes if b["kind"] == "upper")
    if most_upper and draw(st.booleans()):
        rules["upper_threshold"] = draw(st.integers(1, most_upper))
        rules["upper_bonus"] = draw(st.integers(1, 50))
    if any(b["kind"] == "all_alike" for b in boxes):
        _optional(draw, rules, "yahtzee_bonus", draw(st.integers(0, 100)), 0)
        jokers = ["free", "forced"] if joker else ["none", "free", "forced"]
        if order == "free":
            _optional(draw, rules, "joker", draw(st.sampled_from(jokers)), "none")
    rules["boxes"] = boxes
    return rules


class TinyState(NamedTuple):
    """A state as the brute force takes it."""

    filled: frozenset[int]
    upper: int
    """The raw total of the filled upper boxes."""
    fifty: bool
    """The ``all_alike`` box holds its points (drawn only where a bonus follows)."""
    rerolls_left: int | None
    dice: tuple[int, ...] | None
    """Sorted; None (with ``rerolls_left``) before the turn's first roll."""


@st.composite
def tiny_states(draw: st.DrawFn, rules: RuleDict) -> TinyState:
    """A state some game of ``rules`` reaches, with at least one box open.

    In forced order the filled boxes are a prefix of the scorecard. The upper total is what
    the filled upper boxes can show (face times 0..dice each). The fifty flag is drawn only
    when it matters and can be true: a Yahtzee bonus, and the ``all_alike`` box filled with
    non-zero points.
    """
    boxes, dice = rules["boxes"], rules.get("dice", 5)
    n = len(boxes)
    if rules.get("order", "free") == "forced":
        filled = frozenset(range(draw(st.integers(0, n - 1))))
    else:
        filled = frozenset(draw(st.sets(st.integers(0, n - 1), max_size=n - 1)))
    upper = sum(
        boxes[i]["face"] * draw(st.integers(0, dice))
        for i in sorted(filled)
        if boxes[i]["kind"] == "upper"
    )
    alike = next((i for i, b in enumerate(boxes) if b["kind"] == "all_alike"), None)
    fifty = (
        alike is not None
        and alike in filled
        and rules.get("yahtzee_bonus", 0) > 0
        and draw(st.booleans())
    )
    if draw(st.integers(0, 3)) == 0:
        return TinyState(filled, upper, fifty, None, None)
    # All dice alike often: that is where the Yahtzee bonus and the Joker come in.
    rolled = draw(
        st.integers(1, 6).map(lambda face: [face] * dice)
        | st.lists(st.integers(1, 6), min_size=dice, max_size=dice)
    )
    rerolls_left = draw(st.integers(0, rules.get("rerolls", 2)))
    return TinyState(filled, upper, fifty, rerolls_left, tuple(sorted(rolled)))


@st.composite
def tiny_saved_rule_sets(
    draw: st.DrawFn, max_dice: int = 3, max_boxes: int = 3, joker: bool = False
) -> RuleDict:
    """A tiny rule set of :func:`tiny_rule_sets` with saved rolls: no cap, or a cap of 0 (the
    game without the rule) to 4."""
    rules = draw(tiny_rule_sets(max_dice, max_boxes, joker))
    boxes = rules.pop("boxes")  # the boxes stay last, as in a rule file
    rules["saved_rolls"] = True
    cap = draw(st.none() | st.integers(0, 4))
    if cap is not None:
        rules["max_saved"] = cap
    rules["boxes"] = boxes
    return rules


class TinySavedState(NamedTuple):
    """A state of a saved-rolls game as ``saved_brute_force.py`` takes it."""

    filled: frozenset[int]
    upper: int
    fifty: bool
    saved: int
    """The bank the turn started with."""
    rolls_left: int | None
    """After the first roll: at most the bank and the turn's own rerolls."""
    dice: tuple[int, ...] | None
    """Sorted; None (with ``rolls_left``) before the turn's first roll."""


@st.composite
def tiny_saved_states(draw: st.DrawFn, rules: RuleDict) -> TinySavedState:
    """A state some game of the saved-rolls ``rules`` reaches, with at least one box open.

    The scorecard is drawn as by :func:`tiny_states`. Each turn before banked at most its
    rerolls, and the cap holds the bank, so a turn start with L boxes filled has a bank of
    0..min(L x rerolls, cap); after the first roll 0..bank + rerolls rolls are left.
    """
    card = draw(tiny_states(rules))
    rerolls = rules.get("rerolls", 2)
    most = len(card.filled) * rerolls
    cap = rules.get("max_saved")
    saved = draw(st.integers(0, most if cap is None else min(most, cap)))
    if card.dice is None:
        return TinySavedState(card.filled, card.upper, card.fifty, saved, None, None)
    rolls_left = draw(st.integers(0, saved + rerolls))
    return TinySavedState(card.filled, card.upper, card.fifty, saved, rolls_left, card.dice)
