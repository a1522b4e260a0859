"""The player commands: ``advise``, ``value`` and ``play``, their options and handlers.

A handler reads its options, chooses the objective (points, a need, an opponent) and hands
the work to the engines of the rule set (:mod:`memo_solver.cli.engines`); what is
answered, and in which words, is :mod:`memo_solver.cli.answers`'s, and the play table is
:mod:`memo_solver.cli.play`'s. Another family's side of ``advise`` and ``play`` comes with
its own module (:mod:`memo_solver.cli.games`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memo_solver.cli.command import Command, on_store
from memo_solver.cli.common import Output, UsageError
from memo_solver.cli.games import family_options, game_choice, played
from memo_solver.cli.options import (
    YAHTZEE,
    for_game,
    need_options,
    risk_option,
    rules_option,
    theta_of,
)

if TYPE_CHECKING:
    from memo_solver.cli.engines import NeedWork
    from memo_solver.cli.play import Target
    from memo_solver.core.engine import Engine
    from memo_solver.games.yahtzee import AtRisk, RuleSet
    from memo_solver.jobs.storage import Location

STATES = "the state, or - to read JSON states line by line"


def _advise_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, YAHTZEE)
    sub.add_argument("state", help=STATES)
    game_choice(sub, "advise")
    family_options(sub, "advise")
    need_options(
        sub, YAHTZEE, "--need", "N", "rank the moves by their best chance of N more points"
    )
    risk_option(sub, YAHTZEE, "rank the moves by their certainty equivalent at risk THETA")
    for_game(
        sub,
        YAHTZEE,
        "--opponent",
        metavar="STATE",
        help="rank the moves by their chance of finishing above this opponent (their state; "
        "they play for points; default: none)",
    )
    for_game(
        sub, YAHTZEE, "--score", type=int, default=0, help="with --opponent: your banked score"
    )
    for_game(
        sub,
        YAHTZEE,
        "--opponent-score",
        type=int,
        default=0,
        help="with --opponent: the opponent's banked score",
    )


def _advise(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import answers, engines

    if args.risk is not None and (args.need is not None or args.opponent is not None):
        raise UsageError("give --risk alone, not with --need or --opponent")
    if args.opponent is not None:
        if args.need is not None:
            raise UsageError("give --need or --opponent, not both")
        return engines.on_rules(
            args, location, lambda engine, rules, _: answers.beat(args, engine, rules, out)
        )
    theta = theta_of(args)
    if theta is not None:
        return engines.for_risk(
            args,
            location,
            lambda engine, mean, rules: answers.advise_risk(
                args.state, theta, engine, mean, rules, out
            ),
        )
    need: int | None = args.need
    if need is not None:
        return engines.for_need(
            args,
            location,
            lambda engine, mean, rules: answers.advise_need(
                args.state, need, engine, mean, rules, out
            ),
        )
    return engines.on_rules(
        args, location, lambda engine, rules, _: answers.advise(args.state, engine, rules, out)
    )


ADVISE = Command(
    "advise",
    "the best move and what every other move costs",
    _advise_options,
    on_store(played("advise", _advise)),
)


def _value_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, None)
    sub.add_argument("state", nargs="?", default="start", help=f"{STATES} (default: start)")
    need_options(sub, None, "--need", "N", "the best chance of N more points instead")
    risk_option(sub, None, "the certainty equivalent at risk THETA instead")


def _value(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import answers, engines

    theta = theta_of(args, "need")
    if theta is not None:
        return engines.for_risk(
            args,
            location,
            lambda engine, mean, rules: answers.value_risk(
                args.state, theta, engine, mean, rules, out
            ),
        )
    need: int | None = args.need
    if need is not None:
        return engines.for_need(
            args,
            location,
            lambda engine, mean, rules: answers.value_need(
                args.state, need, engine, mean, rules, out
            ),
        )
    return engines.on_rules(
        args, location, lambda engine, rules, _: answers.value(args.state, engine, rules, out)
    )


VALUE = Command(
    "value",
    "the expected future score of a state (default: the start), or with --need its best "
    "chance of N more points, or with --risk its certainty equivalent",
    _value_options,
    on_store(_value),
)


def _play_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, YAHTZEE)
    game_choice(sub, "play")
    need_options(
        sub, YAHTZEE, "--target", "T", "play for the best chance of a final score of T or more"
    )
    risk_option(sub, YAHTZEE, "rank the moves by their certainty equivalent at risk THETA")
    family_options(sub, "play")


def _play(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import engines

    target: int | None = args.target
    theta = theta_of(args, "target")
    if theta is not None:
        return engines.for_risk(args, location, _at_risk(theta, out))
    if target is None:
        return engines.on_rules(
            args, location, lambda engine, rules, _: _play_game(engine, rules, out)
        )

    async def for_target(engine: Engine, mean: Engine, rules: RuleSet) -> int:
        from memo_solver.cli.play import Target

        return await _play_game(mean, rules, out, Target(engine, target))

    return engines.for_need(args, location, for_target)


def _at_risk(theta: float, out: Output) -> NeedWork:
    """The game played at risk ``theta``, on the risk table's engine beside the mean game's."""

    async def play(engine: Engine, mean: Engine, rules: RuleSet) -> int:
        from memo_solver.games.yahtzee import AtRisk

        return await _play_game(mean, rules, out, risk=AtRisk(engine, theta))

    return play


async def _play_game(
    engine: Engine,
    rules: RuleSet,
    out: Output,
    target: Target | None = None,
    risk: AtRisk | None = None,
) -> int:
    from memo_solver.cli.play import play_game

    return await play_game(
        engine, rules, sys.stdin, sys.stdout, as_json=out.json, target=target, risk=risk
    )


PLAY = Command(
    "play",
    "play a game with advice after every roll",
    _play_options,
    on_store(played("play", _play)),
)
