"""The registry: every game the service can solve on the shared memo, by name.

The engine, the stores, the workers and the operator commands only ever meet a game
through an entry here, so a new game is one package (its family module builds its
entries) and one line in :data:`FAMILIES`, not a branch in each of them. Names are what
operators type and what jobs carry: a Yahtzee-family rule set by its own name
(``yahtzee``, ``yatzy``...), a Dice of Doom board size as ``dice-of-doom-3x3``.

Nothing here imports above the games, and the families are light at import: the command
line reads :data:`FAMILIES` for every ``--help``.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from memo_solver.core.errors import UserError
from memo_solver.games.dice_of_doom import family as dice_of_doom
from memo_solver.games.entry import GameEntry, GameFamily
from memo_solver.games.yahtzee import family as yahtzee

FAMILIES: Final = (yahtzee.FAMILY, dice_of_doom.FAMILY)
"""The registration: every game family, the default first (what ``--game`` means unset)."""


class UnknownGameError(UserError):
    """A name that is no rule set or game; the message lists them all."""

    field = "rules"

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown rule set {name!r} (rule sets and games: {', '.join(names())})")


def family(name: str) -> GameFamily:
    """The family ``--game`` names (the command line offers only these names)."""
    return {f.name: f for f in FAMILIES}[name]


@cache
def registry() -> dict[str, GameEntry]:
    """Built once: every family's games, the families in their order."""
    return {entry.name: entry for f in FAMILIES for entry in f.entries()}


def names() -> list[str]:
    return list(registry())


def get_game(name: str) -> GameEntry:
    try:
        return registry()[name.strip().lower()]
    except KeyError:
        raise UnknownGameError(name) from None


def game_from_definition(document: bytes) -> GameEntry:
    """The game a stored definition defines (raises the family's error when it is bad)."""
    for f in FAMILIES:
        if f.from_definition is not None:
            return f.from_definition(document)
    raise UnknownGameError("(a stored definition)")


def game_of(family_name: str, value: object) -> GameEntry:
    """The game a family's parameter picks: ``("yahtzee", "yazy")``, ``("dice-of-doom", 2)``."""
    return get_game(family(family_name).parameter.game_name(value))
