"""The analyst commands: ``stats``, ``simulate``, ``review`` and ``export-table``, their
options and handlers; the work and its words are :mod:`memo_solver.cli.analysis`'s, loaded
when one runs (it would slow every ``--help``). Another family's side of ``stats`` comes
with its own module (:mod:`memo_solver.cli.games`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from memo_solver.cli.command import Command, on_store
from memo_solver.cli.common import DEFAULT_EXPORT_TABLE_MB, EXPORT_TABLE_MB_ENV, Output
from memo_solver.cli.games import family_options, game_choice, played
from memo_solver.cli.options import (
    YAHTZEE,
    for_game,
    need_options,
    risk_option,
    rules_option,
    theta_of,
    threshold_option,
)

if TYPE_CHECKING:
    from memo_solver.jobs.storage import Location


def _stats_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, YAHTZEE)
    sub.add_argument("state", nargs="?", default="start", help="the state (default: start)")
    game_choice(sub, "stats")
    family_options(sub, "stats")
    threshold_option(sub, "also print P(points >= T)", YAHTZEE)
    need_options(
        sub,
        YAHTZEE,
        "--need",
        "N",
        "the distribution when playing for the best chance of N more points, beside optimal "
        "play for points",
    )
    risk_option(
        sub,
        YAHTZEE,
        "the distribution when playing at risk THETA: the strategy of the best certainty "
        "equivalent, E[exp(THETA x points)] at its best",
    )
    for_game(
        sub,
        YAHTZEE,
        "--plot",
        type=Path,
        metavar="PNG",
        help="draw the distribution (matplotlib; default: no plot)",
    )


def _stats(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import analysis, engines

    options = analysis.StatsOptions.from_args(args)
    need: int | None = args.need
    theta = theta_of(args, "need")
    if theta is not None:
        return engines.for_risk(
            args,
            location,
            lambda engine, mean, rules: analysis.risk_stats_command(
                options, theta, engine, mean, rules, out
            ),
        )
    if need is not None:
        return engines.for_need(
            args,
            location,
            lambda engine, mean, rules: analysis.need_stats_command(
                options, need, engine, mean, rules, out
            ),
        )
    return engines.on_rules(
        args,
        location,
        lambda engine, rules, queue: analysis.stats_command(options, engine, rules, queue, out),
    )


STATS = Command(
    "stats",
    "the exact distribution of the points to come under optimal play",
    _stats_options,
    on_store(played("stats", _stats)),
)


def _simulate_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, None)
    sub.add_argument("--games", type=int, default=1000, help="games to play")
    sub.add_argument("--seed", type=int, default=0, help="random seed")
    sub.add_argument(
        "--policy", choices=("optimal", "greedy"), default="optimal", help="strategy to play"
    )
    sub.add_argument(
        "--log", type=Path, metavar="FILE", help="write every game as JSON lines (default: no log)"
    )
    sub.add_argument("--show", action="store_true", help="narrate one game decision by decision")
    threshold_option(sub, "also print P(score >= T) and its standard error", None)
    need_options(sub, None, "--need", "N", "play for the best chance of a final score of N or more")
    risk_option(sub, None, "play the strategy of the best certainty equivalent at risk THETA")


def _simulate(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import analysis, engines

    options = analysis.SimulateOptions.from_args(args)
    need: int | None = args.need
    theta = theta_of(args, "need")
    if theta is not None:
        return engines.for_risk(
            args,
            location,
            lambda engine, _, rules: analysis.simulate_command(
                options, engine, rules, out, theta=theta
            ),
        )
    if need is not None:
        return engines.for_need(
            args,
            location,
            lambda engine, mean, rules: analysis.simulate_command(
                options, mean, rules, out, need=(engine, need)
            ),
        )
    return engines.on_rules(
        args,
        location,
        lambda engine, rules, _: analysis.simulate_command(options, engine, rules, out),
    )


SIMULATE = Command(
    "simulate",
    "play games with the optimal (or greedy) strategy",
    _simulate_options,
    on_store(_simulate),
)


def _review_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, None)
    sub.add_argument("game", help="the game as JSON (a file, or - for standard input)")
    risk_option(sub, None, "grade against the strategy of risk THETA, by certainty equivalents")


def _review(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import analysis, engines

    source: str = args.game
    theta = theta_of(args)
    if theta is not None:
        from memo_solver.games.yahtzee import AtRisk

        return engines.for_risk(
            args,
            location,
            lambda engine, mean, rules: analysis.review_command(
                source, mean, rules, out, AtRisk(engine, theta)
            ),
        )
    return engines.on_rules(
        args,
        location,
        lambda engine, rules, _: analysis.review_command(source, engine, rules, out),
    )


REVIEW = Command(
    "review",
    "rate every decision of a played game against the optimal one",
    _review_options,
    on_store(_review),
)


def _table_options(sub: argparse.ArgumentParser) -> None:
    rules_option(sub, None)
    sub.add_argument(
        "--format",
        choices=("npz", "parquet", "jsonl"),
        help="file format (default: from the --out file's extension, .npz, .jsonl or "
        ".parquet; npz for a name without one)",
    )
    sub.add_argument("--out", type=Path, required=True, help="the file to write")
    sub.add_argument(
        "--max-memory-mb",
        type=int,
        help="refuse, before any solve, a table that takes more memory than this many MiB "
        f"to write (default: ${EXPORT_TABLE_MB_ENV}, else {DEFAULT_EXPORT_TABLE_MB})",
    )


def _table(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import analysis, engines

    options = analysis.TableOptions.from_args(args)
    return engines.on_rules(
        args,
        location,
        lambda engine, rules, _: analysis.export_table_command(options, engine, rules, out),
    )


EXPORT_TABLE = Command(
    "export-table",
    "write the strategy table (turn-start values, decisions)",
    _table_options,
    on_store(_table),
)
