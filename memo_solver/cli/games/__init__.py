"""Each game family's own command line, found by the family's name.

The default family (the Yahtzee family) owns the commands its games are played with
(``advise``, ``stats``, ``play``...); another family brings its side of those commands
(its options, what ``--game``'s help says of it, its handler) and any commands of its
own in one module or package here named for it (``dice-of-doom``: ``dice_of_doom/``),
whose ``CLI`` is a :class:`~memo_solver.cli.command.FamilyCommands`. The parser and the
handlers ask here for the families of the registry, in its order, so a new family's
commands are new files here and no edit to the generic ones: the families live below the
command line and cannot hand it commands themselves (as ``service/routes/games/`` for
routes).

Light on purpose, like each family's ``CLI`` module: every ``--help`` reads them; a
handler imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING

from memo_solver.cli.command import Command, FamilyCommands, Side, StoreRun
from memo_solver.cli.common import Output
from memo_solver.cli.options import game_option
from memo_solver.games import registry

if TYPE_CHECKING:
    from memo_solver.jobs.storage import Location


def family_commands(family: str) -> FamilyCommands:
    """What the family's module here brings, or nothing when it has none."""
    name = f"{__name__}.{family.replace('-', '_')}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:  # the module is there, and fails to import: say so
            raise
        return FamilyCommands()
    cli: FamilyCommands = module.CLI
    return cli


def own_commands() -> list[Command]:
    """The commands the registered families bring of their own, in the registry's order."""
    return [command for f in registry.FAMILIES for command in family_commands(f.name).commands]


def sides(command: str) -> dict[str, Side]:
    """The families' sides of a shared command, by family name, in the registry's order."""
    found = {f.name: family_commands(f.name).sides.get(command) for f in registry.FAMILIES}
    return {name: side for name, side in found.items() if side is not None}


def game_choice(sub: argparse.ArgumentParser, command: str) -> None:
    """``--game`` for a shared command: the default family, or a family with a side of it."""
    others = sides(command)
    note = "; ".join(side.note for side in others.values())
    game_option(sub, note, [registry.FAMILIES[0].name, *others])


def family_options(sub: argparse.ArgumentParser, command: str) -> None:
    """Each family's own options of a shared command, each refused with another game."""
    for family, side in sides(command).items():
        side.options(sub, family)


def played(command: str, run: StoreRun) -> StoreRun:
    """A shared command's handler: the side of the family ``--game`` names, else ``run``
    (the default family's)."""

    def either(args: argparse.Namespace, location: Location, out: Output) -> int:
        side = sides(command).get(args.game)
        return (run if side is None else side.run)(args, location, out)

    return either
