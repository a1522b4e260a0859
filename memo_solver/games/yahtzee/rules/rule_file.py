"""Rule-set files: JSON in, a validated :class:`RuleSet` out, and back.

A rule set reaches the solver only through :func:`parse_rule_set`, from a player's file, an
HTTP body or the built-in files alike, so a bad definition is refused with one error naming
its field before anything is solved or stored. The format is documented in the README
("Rule-set files"); :func:`rule_set_document` writes a rule set back in it, so that ``rules
show`` output read again gives the same rule set and the same fingerprint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final, cast

from memo_solver.games.yahtzee.rules.dice import MAX_DICE, dice_universe
from memo_solver.games.yahtzee.rules.kinds import KINDS, MAX_POINTS, Params, RuleFileError, describe
from memo_solver.games.yahtzee.rules.rule_set import (
    DEFAULT_DICE,
    DEFAULT_ORDER,
    DEFAULT_PRECISION,
    Category,
    Joker,
    Order,
    Precision,
    RuleSet,
    normalize_name,
)

MAX_BOXES: Final = 20
"""2**20 blocks: Maxi Yatzy's sheet, the largest anyone plays."""
MAX_REROLLS: Final = 5
MAX_SAVED: Final = MAX_BOXES * MAX_REROLLS
"""No bank can hold more: every turn before saved all its rerolls."""
MAX_RULE_BYTES: Final = 64 * 1024
"""A rule set is a few kilobytes; the HTTP API and the store refuse more."""
PLAY_COMMANDS: Final = ("quit", "q", "help", "undo", "all")
"""Words ``memo-solver play`` reads as commands, so no box or alias may be called so."""

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_FINGERPRINT = re.compile(r"[0-9a-f]{16}")
_BOX_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_TOP_KEYS: Final = (
    "name",
    "description",
    "dice",
    "rerolls",
    "order",
    "upper_threshold",
    "upper_bonus",
    "yahtzee_bonus",
    "joker",
    "saved_rolls",
    "max_saved",
    "precision",
    "boxes",
)
_BOX_KEYS: Final = ("name", "label", "aliases", "joker_points", "kind")
_TOO_DEEP: Final = "JSON nested deeper than a rule set is"


def parse_rule_text(text: str | bytes, start_value: float | None = None) -> RuleSet:
    """A rule set from JSON text (a file's or a request's)."""
    if len(text) > MAX_RULE_BYTES:
        raise RuleFileError("rules", f"a rule set is at most {MAX_RULE_BYTES} bytes")
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise RuleFileError("rules", f"not JSON: {error}") from None
    except RecursionError:  # the parser's own limit: the file's shape is a few levels deep
        raise RuleFileError("rules", _TOO_DEEP) from None
    return parse_rule_set(data, start_value)


def rule_text(data: object) -> str:
    """A definition that came parsed (inline in a request) as the text
    :func:`parse_rule_text` reads, keys sorted: one rule set sent twice is one text."""
    try:
        return json.dumps(data, sort_keys=True)
    except RecursionError:  # what a request's parser let through may still be too deep here
        raise RuleFileError("rules", _TOO_DEEP) from None


def is_rule_set_name(text: str) -> bool:
    """Whether ``text`` has the form of a rule set's name (or of a fingerprint): no other
    text can name a registration."""
    return _NAME.fullmatch(text) is not None


def read_rule_file(path: str | Path) -> RuleSet:
    """A rule set from a file; a file that cannot be read is an error naming it."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise RuleFileError("rules_file", f"cannot read {path}: {error.strerror}") from None
    try:
        return parse_rule_text(text)
    except RuleFileError as error:
        raise RuleFileError(error.field or "rules", f"{error.message} (in {path})") from None


def parse_rule_set(data: object, start_value: float | None = None) -> RuleSet:
    """Validate a parsed rule-set definition and build its rule set."""
    top = _object(data, "rules")
    _known(top, _TOP_KEYS, "")
    name = _string(top, "name", required=True)
    if not _NAME.fullmatch(name) or _FINGERPRINT.fullmatch(name):
        raise RuleFileError(
            "name",
            f"expected 1-40 lowercase letters, digits and '-', not 16 hex digits (those "
            f"name fingerprints), got {describe(name)}",
        )
    dice = _integer(top, "dice", 1, MAX_DICE, DEFAULT_DICE)
    rerolls = _integer(top, "rerolls", 0, MAX_REROLLS, 2)
    order = cast(Order, _word(top, "order", ("free", "forced"), DEFAULT_ORDER))
    joker = cast(Joker, _word(top, "joker", ("none", "free", "forced"), "none"))
    threshold = _integer(top, "upper_threshold", 1, MAX_POINTS, 63)
    upper_bonus = _integer(top, "upper_bonus", 0, MAX_POINTS, 0)
    yahtzee_bonus = _integer(top, "yahtzee_bonus", 0, MAX_POINTS, 0)
    saved_rolls, max_saved = _saved_rolls(top)
    precision = cast(Precision, _word(top, "precision", ("float64", "float32"), DEFAULT_PRECISION))
    raw_boxes = top.get("boxes")
    if not isinstance(raw_boxes, list) or not 1 <= len(raw_boxes) <= MAX_BOXES:
        raise RuleFileError(
            "boxes", f"expected a list of 1..{MAX_BOXES} boxes, got {describe(raw_boxes)}"
        )
    categories, aliases = _boxes(raw_boxes, dice)
    rules = RuleSet(
        name=name,
        description=_string(top, "description") or f"rule set {name}",
        categories=categories,
        start_value=start_value,
        dice=dice,
        order=order,
        rerolls=rerolls,
        upper_threshold=threshold,
        upper_bonus=upper_bonus,
        yahtzee_bonus=yahtzee_bonus,
        joker=joker,
        saved_rolls=saved_rolls,
        max_saved=max_saved,
        precision=precision,
        aliases=aliases,
    )
    _check_rules(rules)
    return rules


def _saved_rolls(top: Mapping[str, object]) -> tuple[bool, int | None]:
    """The saved-rolls rule and its cap: a cap means nothing without the rule, so it is a
    mistake to say."""
    saved = top.get("saved_rolls", False)
    if saved is None:
        saved = False
    if not isinstance(saved, bool):
        raise RuleFileError("saved_rolls", f"expected true or false, got {describe(saved)}")
    if top.get("max_saved") is None:
        return saved, None
    cap = _integer(top, "max_saved", 0, MAX_SAVED, 0)
    if not saved:
        raise RuleFileError("max_saved", 'a cap on saved rolls needs "saved_rolls": true')
    return saved, cap


def _check_rules(rules: RuleSet) -> None:
    """What no single box shows: the bonus reachable, the five-alike box where needed."""
    if rules.upper_bonus:
        most = rules.dice * sum(int(f) for f in rules.upper_faces)
        if most < rules.upper_threshold:
            raise RuleFileError(
                "upper_threshold",
                f"no upper total reaches {rules.upper_threshold}: the upper boxes make at "
                f"most {most} with {rules.dice} dice",
            )
    alike = [c.name for c in rules.categories if c.is_yahtzee]
    if len(alike) > 1:
        raise RuleFileError("boxes", f"at most one all_alike box, got {', '.join(alike)}")
    if rules.joker != "none" and not alike:
        raise RuleFileError("joker", "a Joker rule needs an all_alike box (the Yahtzee)")
    if rules.joker != "none" and rules.order == "forced":
        raise RuleFileError(
            "joker", "a Joker picks among open boxes; with order forced there is no pick"
        )
    if rules.yahtzee_bonus and not alike:
        raise RuleFileError("yahtzee_bonus", "a Yahtzee bonus needs an all_alike box")


def _boxes(raw_boxes: list[object], dice: int) -> tuple[tuple[Category, ...], dict[str, str]]:
    universe = dice_universe(dice)
    categories: list[Category] = []
    aliases: dict[str, str] = {}
    taken: dict[str, str] = {}  # every spelling a player may type, to what it is
    faces: dict[int, str] = {}
    spellings: list[tuple[str, str, list[str]]] = []
    for i, raw in enumerate(raw_boxes):
        where = f"boxes[{i}]"
        box = _object(raw, where)
        name = _string(box, "name", required=True, where=where)
        if not _BOX_NAME.fullmatch(name):
            raise RuleFileError(
                f"{where}.name",
                f"expected snake_case (a-z, 0-9, _; 1-40, a letter first), got {describe(name)}",
            )
        _claim(taken, name, f"box {name}", f"{where}.name")
        kind = box.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            raise RuleFileError(
                f"{where}.kind", f"unknown kind {describe(kind)} (kinds: {', '.join(KINDS)})"
            )
        # Keys beyond the common ones belong to the kind, which refuses any it does not read.
        params = Params({k: v for k, v in box.items() if k not in _BOX_KEYS}, where, universe)
        scores = KINDS[kind](params)
        params.done(kind)
        if not scores.any():
            raise RuleFileError(where, f"no roll of {dice} dice scores in box {name}")
        face = params.canonical.get("face")
        upper_face = face if kind == "upper" and isinstance(face, int) else 0
        if upper_face in faces:
            raise RuleFileError(
                f"{where}.face", f"face {upper_face} has an upper box already ({faces[upper_face]})"
            )
        if upper_face:
            faces[upper_face] = name
        joker_points = _integer(box, "joker_points", 0, MAX_POINTS, 0, where=where)
        if joker_points and upper_face:
            raise RuleFileError(
                f"{where}.joker_points", "an upper box scores its own face under a Joker"
            )
        spellings.append((where, name, _aliases(box, where)))
        label = _string(box, "label", where=where) or default_label(name)
        categories.append(
            Category(
                name=name,
                label=label,
                scores=scores,
                kind={"kind": kind, **params.canonical},
                upper_face=upper_face,
                joker_points=joker_points,
                is_yahtzee=kind == "all_alike",
            )
        )
    # Aliases after every name: an alias that is another box's name is the alias's fault.
    for where, name, box_aliases in spellings:
        for alias in box_aliases:
            _claim(taken, normalize_name(alias), f"box {name}'s alias", f"{where}.aliases")
            aliases[alias] = name
    return tuple(categories), aliases


def _claim(taken: dict[str, str], spelling: str, owner: str, field: str) -> None:
    if spelling in PLAY_COMMANDS:
        raise RuleFileError(field, f"{spelling!r} is a play command ({', '.join(PLAY_COMMANDS)})")
    if spelling in taken:
        raise RuleFileError(field, f"{spelling!r} is taken already ({taken[spelling]})")
    taken[spelling] = owner


def _aliases(box: Mapping[str, object], where: str) -> list[str]:
    raw = box.get("aliases", [])
    if not isinstance(raw, list) or not all(isinstance(a, str) and a.strip() for a in raw):
        raise RuleFileError(
            f"{where}.aliases", f"expected a list of names players type, got {describe(raw)}"
        )
    return cast(list[str], raw)


def default_label(name: str) -> str:
    """What a scorecard prints for a box without a label: ``Three of a Kind``."""
    return name.replace("_", " ").title().replace(" Of ", " of ").replace(" A ", " a ")


def rule_set_document(rules: RuleSet) -> dict[str, object]:
    """The rule set as its file: every top-level rule spelled out, each box's label and
    aliases only where it has them."""
    aliases: dict[str, list[str]] = {}
    for alias, name in rules.aliases.items():
        aliases.setdefault(name, []).append(alias)
    boxes: list[dict[str, object]] = []
    for category in rules.categories:
        box: dict[str, object] = {"name": category.name, **category.kind}
        if category.label != default_label(category.name):
            box["label"] = category.label
        if category.joker_points:
            box["joker_points"] = category.joker_points
        if category.name in aliases:
            box["aliases"] = aliases[category.name]
        boxes.append(box)
    document: dict[str, object] = {
        "name": rules.name,
        "description": rules.description,
        "dice": rules.dice,
        "rerolls": rules.rerolls,
        "order": rules.order,
        "upper_threshold": rules.upper_threshold,
        "upper_bonus": rules.upper_bonus,
        "yahtzee_bonus": rules.yahtzee_bonus,
        "joker": rules.joker,
    }
    if rules.saved_rolls:  # only where set: the documents of every other rule set unchanged
        document["saved_rolls"] = True
    if rules.max_saved is not None:
        document["max_saved"] = rules.max_saved
    if rules.precision != DEFAULT_PRECISION:
        document["precision"] = rules.precision
    document["boxes"] = boxes
    return document


# --- readers that name the field they refuse ---------------------------------------------------


def _object(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise RuleFileError(where, f"expected a JSON object, got {describe(value)}")
    return cast(Mapping[str, object], value)


def _known(obj: Mapping[str, object], keys: tuple[str, ...], where: str) -> None:
    for key in obj:
        if key not in keys:
            field = f"{where}.{key}" if where else key
            raise RuleFileError(field, f"unknown key (keys: {', '.join(k for k in keys)})")


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _string(obj: Mapping[str, object], key: str, *, required: bool = False, where: str = "") -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise RuleFileError(
            _path(where, key), f"expected a string of 1..200 characters, got {describe(value)}"
        )
    return value


def _integer(
    obj: Mapping[str, object], key: str, low: int, high: int, default: int, *, where: str = ""
) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RuleFileError(
            _path(where, key), f"expected an integer {low}..{high}, got {describe(value)}"
        )
    return value


def _word(obj: Mapping[str, object], key: str, words: tuple[str, ...], default: str) -> str:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str) or value not in words:
        raise RuleFileError(key, f"expected one of {', '.join(words)}, got {describe(value)}")
    return value


def format_rule_document(document: Mapping[str, object]) -> str:
    """A rule-set file as people read it: the rules one per line, each box on one line."""
    lines = []
    for key, value in document.items():
        if key == "boxes" and isinstance(value, list):
            boxes = ",\n".join(f"    {json.dumps(box)}" for box in value)
            lines.append(f'  "boxes": [\n{boxes}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
