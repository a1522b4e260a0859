"""The rule set the options name and the engines the commands on it run on: the mean
game's, or a need table's beside it; and the game of the registry the operator commands
name (``--rules R``, or ``--game dice-of-doom --size N``).

Light at import, like the registrations that call it: the store, the engine and the game
load when a command runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo_solver.cli.common import UsageError

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.core.game import Game
    from memo_solver.games.entry import GameEntry
    from memo_solver.games.yahtzee import RuleSet
    from memo_solver.jobs.queue import JobQueue
    from memo_solver.jobs.storage import Location

EngineWork = Callable[["Engine", "RuleSet", "JobQueue | None"], Coroutine[Any, Any, int]]
"""A command on a Yahtzee-family rule set: its engine, the rules, the store's job queue."""
NeedWork = Callable[["Engine", "Engine", "RuleSet"], Coroutine[Any, Any, int]]
"""A command playing for a need or a risk: on the value table's engine, the mean game's, the
rules."""


def on_rules(args: argparse.Namespace, location: Location, work: EngineWork) -> int:
    """Run ``work`` on the engine of the rule set the options name."""
    import anyio

    return anyio.run(_with_engine, rule_set(args), location, work)


def for_need(args: argparse.Namespace, location: Location, work: NeedWork) -> int:
    """Run ``work`` on the engines of the rule set's need table (``--need-cap``, solved on
    ``--need-threads``) and of its mean game."""
    import anyio

    from memo_solver.games.yahtzee import NeedGame

    if args.need_threads < 1:
        raise UsageError(f"--need-threads must be 1 or more, got {args.need_threads}")
    threads = min(args.need_threads, len(os.sched_getaffinity(0)))
    rules = rule_set(args)
    return anyio.run(
        _with_table_engines, rules, location, NeedGame(rules, args.need_cap), threads, work
    )


def for_risk(args: argparse.Namespace, location: Location, work: NeedWork) -> int:
    """Run ``work`` on the engines of the rule set's risk table at ``--risk`` and of its mean
    game: at a risk of 0 the mean game's twice (the mean table is that table)."""
    import anyio

    from memo_solver.games.yahtzee import entry_for, risk_entry_of

    rules = rule_set(args)
    mean = entry_for(rules)
    table = risk_entry_of(mean, args.risk)
    if table is mean:
        return anyio.run(_with_engine, rules, location, lambda mean, _, __: work(mean, mean, rules))
    # One thread, as the mean's own questions: the risk table's cone is the mean cone's size.
    return anyio.run(_with_table_engines, rules, location, table.game, 1, work)


def game(args: argparse.Namespace) -> GameEntry:
    """``--rules R``, or ``--game dice-of-doom --size N``: one game of the registry."""
    from memo_solver.games.registry import family, get_game

    if getattr(args, "rules_file", None) is not None and args.game == "yahtzee":
        from memo_solver.games.yahtzee import entry_for

        return entry_for(rule_set(args))
    parameter = family(args.game).parameter
    return get_game(parameter.game_name(getattr(args, parameter.dest)))


def rule_set(args: argparse.Namespace) -> RuleSet:
    """``--rules NAME``, or the rule set of ``--rules-file FILE``."""
    from memo_solver.games.yahtzee import get_rule_set

    if args.rules_file is None:
        return get_rule_set(args.rules)
    return rules_of_file(args.rules_file)


def rules_of_file(path: Path) -> RuleSet:
    """The rule set of ``--rules-file``, refused when it takes a built-in's name for other
    rules: its answers would be printed under that name (as the service refuses to register
    it, 409). A copy of the built-in itself (``rules show``'s file) is that rule set."""
    from memo_solver.games.yahtzee import RULE_SETS, read_rule_file

    rules = read_rule_file(path)
    built_in = RULE_SETS.get(rules.name)
    if built_in is not None and built_in.fingerprint != rules.fingerprint:
        raise UsageError(
            f"--rules-file: {path} names its rule set {rules.name}, a built-in rule set with "
            "other rules; give it a name of its own"
        )
    return rules


async def _with_engine(rules: RuleSet, location: Location, work: EngineWork) -> int:
    """Every solving command runs here: on an engine whose solves show their progress."""
    from memo_solver.cli.progress import SolveProgress
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee import entry_for
    from memo_solver.jobs.storage import open_store_and_queue

    entry = entry_for(rules)
    with SolveProgress(rules.name) as progress:
        store, queue = open_store_and_queue(location)
        async with (
            store,
            open_engine(
                entry.game, store, on_progress=progress, definition=entry.definition
            ) as engine,
        ):
            return await work(engine, rules, queue)


async def _with_table_engines(
    rules: RuleSet, location: Location, game: Game, threads: int, work: NeedWork
) -> int:
    """The commands playing for a need or a risk: on the value table's engine (``game``:
    its progress shown, the bulk of the work) and the mean game's, whose values break ties,
    on one store."""
    from memo_solver.cli.progress import SolveProgress
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee import entry_for
    from memo_solver.jobs.storage import open_store_and_queue

    entry = entry_for(rules)
    with SolveProgress(game.name) as progress:
        store, _ = open_store_and_queue(location)
        async with (
            store,
            open_engine(entry.game, store, definition=entry.definition) as mean,
            open_engine(
                game, store, on_progress=progress, definition=entry.definition, threads=threads
            ) as engine,
        ):
            return await work(engine, mean, rules)
