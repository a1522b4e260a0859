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
from memo_solver.games.entry import GameEntry, GameFamily, ValueTable
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


@cache
def built_in_prints() -> dict[str, GameEntry]:
    """The registry's games by fingerprint."""
    return {entry.game.fingerprint: entry for entry in registry().values()}


def value_table(fingerprint: str) -> tuple[GameFamily, ValueTable] | None:
    """The family that owns a fingerprint and the value table it names there (None when no
    family owns it): the generic layers' one way to read a fingerprint."""
    for f in FAMILIES:
        table = f.value_table(fingerprint)
        if table is not None:
            return f, table
    return None


def game_by_fingerprint(fingerprint: str, definition: bytes | None) -> GameEntry:
    """The game a fingerprint names, any value type: a built-in's table, or one of the game
    that ``definition`` (what the store keeps in the fingerprint's namespace) defines.
    Raises :class:`UnknownGameError`, or the family's error for a bad definition."""
    owned = value_table(fingerprint)
    if owned is None:
        raise UnknownGameError(fingerprint)
    f, table = owned
    game = built_in_prints().get(table.game)
    if game is None and definition is not None and f.from_definition is not None:
        game = f.from_definition(definition)
    if game is None:
        raise UserError(f"the store keeps no definition of the game {fingerprint}", "rules")
    entry = table.entry(game)
    if entry.game.fingerprint != fingerprint:
        raise UserError(f"the definition stored for {fingerprint} is of another game", "rules")
    return entry


def game_of(family_name: str, value: object) -> GameEntry:
    """The game a family's parameter picks: ``("yahtzee", "yazy")``, ``("dice-of-doom", 2)``."""
    return get_game(family(family_name).parameter.game_name(value))
