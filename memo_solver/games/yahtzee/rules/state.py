"""Game states as users type them: three input forms, one validator, errors naming the field.

A state is a point inside a game: which boxes are filled, the upper-section total so far,
whether the Yahtzee box holds 50, and, once the turn's dice are rolled, the dice and the
rerolls left. Under a rule set with saved rolls a turn start also holds the bank of rolls
saved by the turns before, and the dice come with the rolls left (bank and rerolls
alike). People type states by hand or paste them from other programs, so every form
funnels into one validator. It rejects every state no game can reach (the solver never
computes those), and says what would be right, because the person reading the error is
the one who has to fix it.

The form is told by how the text starts:

- JSON, ``{"filled": ["twos"], "upper": 8, "dice": [1, 2, 2, 2, 6], "rerolls_left": 2}``,
  what the HTTP API speaks (``"saved": 4`` at a turn start, ``"rolls_left": 6`` with dice
  under saved rolls);
- the line of Glenn's reference Haskell program, one ``-``/``x`` mark per box, then the upper
  total, the bonus flag, and optionally rerolls left and the dice
  (``- x x x x x x x x x x - x 62 False 2 1 2 2 2 6``), so its states can be pasted in to
  compare answers (it has no bank, so it is refused under saved rolls);
- the short form for typing, ``filled=twos,threes upper=8 bonus=no dice=12226 rerolls=2``,
  or ``open=ones,yahtzee`` for "everything but these", or the word ``start`` (``saved=4``
  and ``rolls=6`` under saved rolls).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Final, TypeGuard

import numpy as np

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.rules.dice import FACES
from memo_solver.games.yahtzee.rules.rule_set import RuleSet


class StateError(UserError):
    """A state the user typed is invalid; ``field`` names what is wrong, and so does the
    CLI's line (``upper: upper total 5 cannot be made ...``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class State:
    """A point inside a game: the scorecard, and the turn's dice once they are rolled."""

    filled: int
    """Bit ``i`` is set when box ``i`` of the rule set is filled."""
    upper: int
    """The real upper-section total, not capped: it decides what the open boxes can add."""
    yahtzee_bonus: bool
    """The Yahtzee box holds 50, so another Yahtzee earns the bonus."""
    rerolls_left: int | None
    """None exactly when ``dice`` is None, before the turn's first roll. Under saved rolls,
    the rolls left: the bank and the turn's rerolls together, which is what the player may
    still roll (in the plain game the two words count the same thing)."""
    dice: tuple[int, ...] | None
    """The faces of the rule set's dice in ascending order, the order rolls are indexed in."""
    saved: int = 0
    """The bank a turn starts with, under saved rolls; 0 once the dice are rolled (the
    rolls left count it then) and under rule sets without saved rolls."""


def start_state() -> State:
    """The empty scorecard before the first roll, the same under every rule set."""
    return State(filled=0, upper=0, yahtzee_bonus=False, rerolls_left=None, dice=None)


def first_roll(state: State, rules: RuleSet, dice: tuple[int, ...]) -> State:
    """A turn start once its first roll shows ``dice``: the turn's rerolls left, and under
    saved rolls the bank with them."""
    return State(state.filled, state.upper, state.yahtzee_bonus, state.saved + rules.rerolls, dice)


def guidepost(state: State, rules: RuleSet) -> tuple[int, ...]:
    """(upper level, bonus level), then the bank under saved rolls: where the state's values
    sit in its block array (of shape ``rules.block_shape_of(state.filled)``).

    Totals past the threshold collapse onto it because the upper bonus is banked by then,
    and a rule set without a bonus keeps a single level because the level changes nothing.
    """
    upper = min(state.upper, rules.upper_threshold) if rules.n_upper_levels > 1 else 0
    bonus = int(state.yahtzee_bonus) if rules.n_bonus_levels > 1 else 0
    return (upper, bonus, state.saved) if rules.saved_rolls else (upper, bonus)


def parse_state(text: str, rules: RuleSet) -> State:
    """Read a state in any of the three forms, telling them apart by how the text starts."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):  # a JSON array is JSON too, and gets JSON's message
        return state_from_json(_decode_json(stripped), rules)
    tokens = stripped.split()
    if not tokens:
        raise StateError("state", "the state is empty; type start for the empty scorecard")
    if tokens[0].lower() in _MARKS:
        return _parse_reference_line(tokens, rules)
    return _parse_short(tokens, rules)


_JSON_KEYS: Final = (
    "filled",
    "upper",
    "yahtzee_bonus",
    "saved",
    "rerolls_left",
    "rolls_left",
    "dice",
)


def _json_keys(rules: RuleSet) -> list[str]:
    """The keys of the rule set's states: the bank and the rolls left under saved rolls,
    the rerolls left otherwise. The others' keys are still read, to be refused by name
    rather than as unknown."""
    other = ("rerolls_left",) if rules.saved_rolls else ("saved", "rolls_left")
    return [key for key in _JSON_KEYS if key not in other]


def state_from_json(obj: object, rules: RuleSet) -> State:
    """Read the JSON form from an already-decoded value, as the HTTP API receives it.

    A key that is null counts as absent, so that clients may send every key every time.
    """
    if not isinstance(obj, dict):
        raise StateError("state", f"expected a JSON object, got {_show(obj)}")
    for key in obj:
        if key not in _JSON_KEYS:
            keys = ", ".join(_json_keys(rules))
            raise StateError(str(key), f"unknown key; the keys are {keys}")
    names = obj.get("filled")
    if names is None:
        names = []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise StateError("filled", f"expected a list of box names, got {_show(names)}")
    bonus = obj.get("yahtzee_bonus")
    if bonus is None:
        bonus = False
    if not isinstance(bonus, bool):
        raise StateError("yahtzee_bonus", f"expected true or false, got {_show(bonus)}")
    dice = obj.get("dice")
    if dice is not None and not (isinstance(dice, list) and all(_is_int(d) for d in dice)):
        raise StateError(
            "dice", f"expected a list of {rules.dice} faces or null, got {_show(dice)}"
        )
    upper = _json_int(obj, "upper")
    return _build(
        rules,
        filled=_filled_mask(names, rules),
        upper=0 if upper is None else upper,
        bonus=bonus,
        dice=dice,
        rerolls=_json_int(obj, "rerolls_left"),
        saved=_json_int(obj, "saved"),
        rolls_left=_json_int(obj, "rolls_left"),
    )


def state_to_json(state: State, rules: RuleSet) -> dict[str, object]:
    """The canonical JSON form: every key of the rule set's states present, boxes in
    scorecard order. Under saved rolls the bank is null once the dice are rolled, as the
    rolls left are before: the rolls left count the bank then."""
    dice = None if state.dice is None else list(state.dice)
    card: dict[str, object] = {
        "filled": _box_names(state.filled, rules),
        "upper": state.upper,
        "yahtzee_bonus": state.yahtzee_bonus,
    }
    if rules.saved_rolls:
        started = state.dice is None
        return {
            **card,
            "saved": state.saved if started else None,
            "rolls_left": state.rerolls_left,
            "dice": dice,
        }
    return {**card, "rerolls_left": state.rerolls_left, "dice": dice}


def format_state(state: State, rules: RuleSet) -> str:
    """The short form, kept short: values equal to their defaults are left out.

    Boxes are listed as ``filled=`` or ``open=``, whichever names fewer, because late in a
    game the open boxes are what a player thinks about.
    """
    if state == start_state():
        return "start"
    tokens = []
    if state.filled:
        filled = _box_names(state.filled, rules)
        open_ = _box_names(rules.all_filled & ~state.filled, rules)
        if len(filled) <= len(open_):
            tokens.append("filled=" + ",".join(filled))
        else:
            tokens.append("open=" + (",".join(open_) or "none"))
    if state.upper:
        tokens.append(f"upper={state.upper}")
    if state.yahtzee_bonus:
        tokens.append("bonus=yes")
    if state.saved:
        tokens.append(f"saved={state.saved}")
    if state.dice is not None:
        tokens.append("dice=" + "".join(map(str, state.dice)))
        tokens.append(f"{'rolls' if rules.saved_rolls else 'rerolls'}={state.rerolls_left}")
    return " ".join(tokens)


# --- the three forms ------------------------------------------------------------------------


def _decode_json(text: str) -> object:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except StateError:
        raise
    except ValueError as exc:  # a syntax error, or a number past Python's digit limit
        raise StateError("state", f"malformed JSON: {exc}") from None
    except RecursionError:
        raise StateError("state", "malformed JSON: nested too deeply") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Refuse repeated keys, which json.loads would silently resolve to the last one."""
    obj: dict[str, object] = {}
    for key, value in pairs:
        if key in obj:
            raise StateError(key, "the key is given twice")
        obj[key] = value
    return obj


def _json_int(obj: dict[str, object], key: str) -> int | None:
    value = obj.get(key)
    if value is None or _is_int(value):
        return value
    raise StateError(key, f"expected a whole number, got {_show(value)}")


def _is_int(value: object) -> TypeGuard[int]:
    """JSON's true and false decode to Python bools, which are ints; they are not numbers here."""
    return isinstance(value, int) and not isinstance(value, bool)


_MARKS: Final = {"-": False, "x": True}
_REFERENCE_FLAGS: Final = {"true": True, "false": False}


def _parse_reference_line(tokens: list[str], rules: RuleSet) -> State:
    if rules.saved_rolls:
        raise StateError(
            "state",
            f"rule set {rules.name} saves unused rolls, and the reference line has no bank "
            f"to say them in; use the short form (saved=4, rolls=6) or JSON",
        )
    n_boxes = len(rules.categories)
    marks = [_MARKS[t.lower()] for t in takewhile(lambda t: t.lower() in _MARKS, tokens)]
    if len(marks) != n_boxes:
        raise StateError(
            "marks",
            f"expected {n_boxes} marks (- open, x filled) for rule set {rules.name}, "
            f"got {len(marks)}",
        )
    rest = tokens[n_boxes:]
    if not rest:
        raise StateError("upper", "the upper total is missing after the marks")
    if len(rest) == 1:
        raise StateError("yahtzee_bonus", "the bonus flag (True or False) is missing")
    flag = _REFERENCE_FLAGS.get(rest[1].lower())
    if flag is None:
        raise StateError("yahtzee_bonus", f"expected True or False, got {_show(rest[1])}")
    turn = rest[2:]
    return _build(
        rules,
        filled=sum(1 << i for i, mark in enumerate(marks) if mark),
        upper=_parse_int(rest[0], "upper"),
        bonus=flag,
        dice=[_parse_int(face, "dice") for face in turn[1:]] if turn else None,
        rerolls=_parse_int(turn[0], "rerolls_left") if turn else None,
    )


_SHORT_FIELDS: Final = {
    "filled": "filled",
    "open": "filled",
    "upper": "upper",
    "bonus": "yahtzee_bonus",
    "saved": "saved",
    "dice": "dice",
    "rerolls": "rerolls_left",
    "rolls": "rolls_left",
}


def _short_keys(rules: RuleSet) -> str:
    """The short form's keys for the rule set's states, as its messages list them."""
    fields = _json_keys(rules)
    return ", ".join(key for key, field in _SHORT_FIELDS.items() if field in fields)


_SHORT_FLAGS: Final = {
    "yes": True,
    "no": False,
    "true": True,
    "false": False,
    "1": True,
    "0": False,
}


def _parse_short(tokens: list[str], rules: RuleSet) -> State:
    if [t.lower() for t in tokens] == ["start"]:
        return start_state()
    values: dict[str, str] = {}
    for token in tokens:
        key, equals, value = token.partition("=")
        key = key.lower()
        if not equals:
            raise StateError(
                "state",
                f"expected key=value, got {_show(token)}; the keys are "
                f"{_short_keys(rules)}, and start alone is the empty scorecard",
            )
        if key not in _SHORT_FIELDS:
            raise StateError(key, f"unknown key; the keys are {_short_keys(rules)}")
        if key in values:
            raise StateError(_SHORT_FIELDS[key], f"{key}= is given twice")
        values[key] = value
    if "filled" in values and "open" in values:
        raise StateError("filled", "give filled= or open=, not both")
    if "open" in values:
        filled = rules.all_filled & ~_filled_mask(_name_list(values["open"]), rules)
    else:
        filled = _filled_mask(_name_list(values.get("filled", "")), rules)
    bonus = _SHORT_FLAGS.get(values.get("bonus", "no").lower())
    if bonus is None:
        raise StateError("yahtzee_bonus", f"expected yes or no, got {_show(values['bonus'])}")
    return _build(
        rules,
        filled=filled,
        upper=_parse_int(values["upper"], "upper") if "upper" in values else 0,
        bonus=bonus,
        dice=_parse_dice(values["dice"], rules.dice) if "dice" in values else None,
        rerolls=_short_int(values, "rerolls"),
        saved=_short_int(values, "saved"),
        rolls_left=_short_int(values, "rolls"),
    )


def _short_int(values: dict[str, str], key: str) -> int | None:
    return _parse_int(values[key], _SHORT_FIELDS[key]) if key in values else None


def _name_list(value: str) -> list[str]:
    """``none`` (or nothing) is the empty list, so that ``open=none`` can say the game is over."""
    return [] if value.lower() in ("", "none") else value.split(",")


def _parse_dice(value: str, count: int) -> list[int]:
    """``12226`` or ``1,2,2,2,6``: digits alone are quicker to type, commas match the JSON."""
    if "," in value:
        return [_parse_int(face, "dice") for face in value.split(",")]
    if not re.fullmatch("[0-9]*", value):
        example = example_dice(count)
        raise StateError(
            "dice",
            f"expected faces like {''.join(example)} or {','.join(example)}, got {_show(value)}",
        )
    return [int(face) for face in value]


def example_dice(count: int) -> str:
    """Dice to show in a message, as many as the rule set has: ``12226`` for five."""
    return "122266"[:count]


def _parse_int(text: str, field: str) -> int:
    if re.fullmatch("-?[0-9]+", text):
        with contextlib.suppress(ValueError):  # past Python's limit of 4300 digits
            return int(text)
    raise StateError(field, f"expected a whole number, got {_show(text)}")


def _show(value: object) -> str:
    """Echo bad input in one short line, however long it was: strings as Python, rest as JSON."""
    shown = repr(value) if isinstance(value, str) else json.dumps(value, default=repr)
    return shown if len(shown) <= 40 else shown[:37] + "..."


# --- validation, shared by every form ---------------------------------------------------------


def _filled_mask(names: Sequence[str], rules: RuleSet) -> int:
    mask = 0
    for name in names:
        try:
            index = rules.category_index(name)
        except KeyError as exc:
            raise StateError("filled", str(exc.args[0])) from None
        if mask >> index & 1:
            raise StateError("filled", f"{rules.categories[index].name!r} is listed twice")
        mask |= 1 << index
    return mask


def _build(
    rules: RuleSet,
    *,
    filled: int,
    upper: int,
    bonus: bool,
    dice: list[int] | None,
    rerolls: int | None = None,
    saved: int | None = None,
    rolls_left: int | None = None,
) -> State:
    """Check the parts against the rules and each other, then assemble the state.

    ``rerolls`` is the plain game's count and ``saved`` and ``rolls_left`` the saved-rolls
    game's; a form passes whichever it was given (None: not given), and the rule set says
    which it may give.
    """
    _check_order(filled, rules)
    _check_upper(upper, filled, rules)
    _check_bonus(bonus, filled, rules)
    field, left = _rolls_field(rules, rerolls, saved, rolls_left)
    _check_bank(saved, filled, rules)
    bank = saved or 0
    first = bank + rules.rerolls  # what the turn's first roll leaves
    if dice is None:
        if left is not None and left != first:
            raise StateError(
                field,
                f"without dice the turn has not started, so {field.replace('_', ' ')} can only "
                f"be {first} ({_allowance(rules, filled, bank)}), got {left}; give the dice too",
            )
        return State(filled, upper, bonus, None, None, bank)
    if filled == rules.all_filled:
        raise StateError("dice", "the game is over: every box is filled")
    if len(dice) != rules.dice:
        raise StateError("dice", f"expected {rules.dice} dice, got {len(dice)}")
    for face in dice:
        if not 1 <= face <= FACES:
            raise StateError("dice", f"face {face} is outside 1..{FACES}")
    if left is None:
        left = first
    # A form sends the bank its turn started with; without it, any bank the turn may have had.
    most = (rules.saved_levels(filled.bit_count()) - 1 if saved is None else saved) + rules.rerolls
    if not 0 <= left <= most:
        raise StateError(
            field, f"must be 0..{most} for {_allowance(rules, filled, saved)}, got {left}"
        )
    return State(filled, upper, bonus, left, tuple(sorted(dice)))


def _rolls_field(
    rules: RuleSet, rerolls: int | None, saved: int | None, rolls_left: int | None
) -> tuple[str, int | None]:
    """The field that counts what is left of the turn under these rules, and its value.
    The other game's fields are refused, except what a form that sends every field sends:
    null, or a bank of 0 where there are no banks (which is true)."""
    if rules.saved_rolls:
        if rerolls is not None:
            raise StateError(
                "rerolls_left",
                f"rule set {rules.name} saves unused rolls, so its states count the rolls "
                f"left: use rolls_left (rolls= in the short form), and saved (saved=) for "
                f"the bank a turn starts with",
            )
        return "rolls_left", rolls_left
    if saved:
        raise StateError(
            "saved",
            f"rule set {rules.name} has no saved rolls, so a turn starts with none, got {saved}",
        )
    if rolls_left is not None:
        raise StateError(
            "rolls_left",
            f"rule set {rules.name} has no saved rolls, so its states count the rerolls left: "
            f"use rerolls_left (rerolls= in the short form)",
        )
    return "rerolls_left", rerolls


def _check_bank(saved: int | None, filled: int, rules: RuleSet) -> None:
    if saved is None or 0 <= saved < rules.saved_levels(filled.bit_count()):
        return
    cap = "" if rules.max_saved is None else f", at most {rules.max_saved} carried"
    raise StateError(
        "saved",
        f"{_bank_range(rules, filled)} (rule set {rules.name}: {rules.rerolls} rerolls a "
        f"turn{cap}), got {saved}",
    )


def _bank_range(rules: RuleSet, filled: int) -> str:
    """The banks a turn start with ``filled`` may hold, in words."""
    count = filled.bit_count()
    boxes = "no box" if count == 0 else "1 box" if count == 1 else f"{count} boxes"
    most = rules.saved_levels(count) - 1
    return f"with {boxes} filled a bank holds {f'0..{most} rolls' if most else 'no rolls'}"


def _allowance(rules: RuleSet, filled: int, saved: int | None) -> str:
    """Why a turn has the rolls it has: the rule set, and under saved rolls the bank the
    turn started with (``saved``), or the banks it may have started with (None)."""
    if not rules.saved_rolls:
        return f"rule set {rules.name}"
    bank = _bank_range(rules, filled) + "," if saved is None else f"{saved} saved"
    return f"rule set {rules.name}: {bank} and {rules.rerolls} rerolls a turn"


def _check_order(filled: int, rules: RuleSet) -> None:
    if rules.is_reachable(filled):
        return
    first_open = next(c for c in range(len(rules.categories)) if not filled >> c & 1)
    raise StateError(
        "filled",
        f"rule set {rules.name} fills its boxes in scorecard order, so every box before "
        f"the last filled one is filled; {rules.categories[first_open].name} is open",
    )


def _check_upper(upper: int, filled: int, rules: RuleSet) -> None:
    if upper < 0:
        raise StateError("upper", f"the upper total must be 0 or more, got {upper}")
    possible = rules.upper_totals(filled)
    if upper < possible.size and possible[upper]:
        return
    boxes = [c.name for i, c in enumerate(rules.categories) if c.upper_face and filled >> i & 1]
    made_with = f"{', '.join(boxes)} filled" if boxes else "no upper box filled"
    totals = _spans([int(t) for t in np.flatnonzero(possible)])
    raise StateError(
        "upper", f"upper total {upper} cannot be made with {made_with} (possible: {totals})"
    )


def _spans(values: list[int]) -> str:
    """Sorted numbers with runs of three or more shortened, as in ``0..15, 17, 19``."""
    parts: list[str] = []
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or values[end] != values[end - 1] + 1:
            run = values[start:end]
            parts.extend([f"{run[0]}..{run[-1]}"] if len(run) >= 3 else map(str, run))
            start = end
    return ", ".join(parts)


def _check_bonus(bonus: bool, filled: int, rules: RuleSet) -> None:
    if not bonus:
        return
    box = rules.yahtzee_box
    if box is None:
        raise StateError(
            "yahtzee_bonus", f"rule set {rules.name} has no yahtzee box, so it has no bonus"
        )
    if not filled >> box & 1:
        name = rules.categories[box].name
        raise StateError("yahtzee_bonus", f"the {name} box is open; the bonus needs 50 in it")


def _box_names(mask: int, rules: RuleSet) -> list[str]:
    return [c.name for i, c in enumerate(rules.categories) if mask >> i & 1]
