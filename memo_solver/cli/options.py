"""The options more than one command takes, each spelled once: where the store is, ``--json``,
a rule set, a need, a game of the registry; and the options of one game only, refused with
another game.

Light on purpose (argparse and the registry's declarations), like every module the parser
reads: the commands' registrations call these as ``--help`` builds each command.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memo_solver.cli.common import REDIS_ENV, STORE_ENV, UsageError
from memo_solver.games import registry
from memo_solver.games.entry import Parameter

YAHTZEE = "yahtzee"
"""The default family's name: the game of the commands whose other families bring their
own side (:mod:`memo_solver.cli.games`)."""
DEFAULT_NEED_CAP = 400
""":data:`memo_solver.games.yahtzee.solve.need.DEFAULT_CAP`, spelled here so that parsing a
command loads no game (a test checks they agree)."""
QUESTION_THREADS = 4
"""Threads a cold need question solves on by default: a player's question is one process
waiting for one answer, unlike precompute and the workers, which scale by process."""


def positive_int(text: str) -> int:
    """A count or a size of one or more: argparse refuses any other in one line that names
    the option."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    """A number of seconds above 0 (see :func:`positive_int`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def tcp_port(text: str) -> int:
    """A TCP port a server can listen on (see :func:`positive_int`)."""
    value = positive_int(text)
    if value > MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_PORT}, got {value}")
    return value


MAX_PORT = 65535


def store_options(
    parser: argparse.ArgumentParser,
    *,
    on_command: bool,
    redis_help: str = f"shared Redis store (default: ${REDIS_ENV}, if set)",
    store_help: str = f"SQLite store file (default: ${STORE_ENV} or the cache dir; it wins "
    "over --redis)",
) -> None:
    """``--store``, ``--redis`` and ``-v``, given before the command or after it.

    Each command takes them again with no default of its own (SUPPRESS), so a value given
    after the command replaces the one given before it, and only when it is given.
    """
    unset = argparse.SUPPRESS if on_command else None
    parser.add_argument("--store", type=Path, default=unset, help=store_help)
    parser.add_argument("--redis", metavar="URL", default=unset, help=redis_help)
    parser.add_argument(
        "--redis-cluster",
        choices=("auto", "yes", "no"),
        default=unset,
        help="whether --redis is a Redis Cluster (default: $MEMO_SOLVER_REDIS_CLUSTER, else "
        "auto: ask the server)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS if on_command else False,
        help="log what happens",
    )


def json_option(parser: argparse.ArgumentParser, *, on_command: bool) -> None:
    """``--json`` before the command or after it, as :func:`store_options` takes theirs."""
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if on_command else False,
        help="print JSON instead of words",
    )


@dataclass(frozen=True)
class _GameOption:
    """An option of one game only, for the commands that play either: refused with the
    other game (rather than silently ignored), and given its default only after that check,
    since argparse cannot tell a default from a value typed."""

    flag: str
    dest: str
    game: str
    default: object


def for_game(
    sub: argparse._ActionsContainer, game: str, flag: str, *, default: object = None, **kwargs: Any
) -> None:
    """Add an option of ``game`` only; see :class:`_GameOption`."""
    help_text = kwargs.pop("help")
    if default not in (None, []) and "default" not in help_text:
        help_text += f" (default: {default})"
    action = sub.add_argument(
        flag, default=argparse.SUPPRESS, help=f"{game}: {help_text}", **kwargs
    )
    known: tuple[_GameOption, ...] = sub.get_default("game_options") or ()
    sub.set_defaults(game_options=(*known, _GameOption(flag, action.dest, game, default)))


def resolve_game_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Refuse an option typed for the other game; give the untyped ones their defaults."""
    options: tuple[_GameOption, ...] = vars(args).pop("game_options", ())
    for option in options:
        if not hasattr(args, option.dest):
            setattr(args, option.dest, copy.copy(option.default))
        elif option.game != args.game:
            own = ", ".join(o.flag for o in options if o.game == args.game)
            parser.error(
                f"{option.flag} is for --game {option.game}, not {args.game}"
                + (f" (which takes {own})" if own else "")
            )


def option_for(sub: argparse._ActionsContainer, game: str | None, flag: str, **kwargs: Any) -> None:
    """An option of every game (``game`` None), or of one game only."""
    if game is None:
        sub.add_argument(flag, **kwargs)
    else:
        for_game(sub, game, flag, **kwargs)


def rules_option(sub: argparse.ArgumentParser, game: str | None) -> None:
    """``--rules`` or ``--rules-file``: one rule set, so never both (argparse refuses the
    pair in one line, whichever command it comes with)."""
    either = sub.add_mutually_exclusive_group()
    option_for(either, game, "--rules", default="yahtzee", help="rule set")
    rules_file_option(either, game)


def rules_file_option(sub: argparse._ActionsContainer, game: str | None) -> None:
    option_for(
        sub,
        game,
        "--rules-file",
        type=Path,
        metavar="FILE",
        help="a rule-set file (JSON; 'rules show yatzy' prints one to start from) instead of "
        "--rules (default: none)",
    )


def threshold_option(sub: argparse.ArgumentParser, help_text: str, game: str | None) -> None:
    """One option for ``stats`` and ``simulate``, so P(score >= T) is asked for alike."""
    option_for(
        sub,
        game,
        "--threshold",
        type=int,
        action="append",
        default=[],
        metavar="T",
        help=f"{help_text}; repeatable (default: none)",
    )


def need_options(
    sub: argparse.ArgumentParser, game: str | None, flag: str, metavar: str, help_text: str
) -> None:
    """The chance objective's options: the need (``--need``, or ``play``'s ``--target``
    final score) and the cap of the table that answers it."""
    option_for(sub, game, flag, type=int, metavar=metavar, help=f"{help_text} (default: none)")
    option_for(
        sub,
        game,
        "--need-threads",
        type=int,
        default=QUESTION_THREADS,
        metavar="N",
        help="threads solving the need table's missing blocks for this question (default: "
        f"{QUESTION_THREADS}, or fewer where fewer cores are free to this process)",
    )
    option_for(
        sub,
        game,
        "--need-cap",
        type=int,
        default=DEFAULT_NEED_CAP,
        metavar="C",
        help="the most points to come the need table answers for; a larger need that the open "
        f"boxes could still reach is refused (default: {DEFAULT_NEED_CAP})",
    )


RISK_HELP = "a number from -0.5 (safe) to 0.5 (bold) with at most 3 decimals; 0 is the mean"


def risk_option(sub: argparse.ArgumentParser, game: str | None, help_text: str) -> None:
    """``--risk THETA``: the risk objective's theta, read as typed (the family checks it,
    naming ``risk`` in its one line)."""
    option_for(
        sub, game, "--risk", metavar="THETA", help=f"{help_text} ({RISK_HELP}; default: none)"
    )


def theta_of(args: argparse.Namespace, beside: str | None = None) -> float | None:
    """``--risk`` checked (the family's one line naming ``risk`` where it is off the dial),
    None without it; given with the option ``beside`` (``need``, ``target``: another
    objective) too, one line saying so."""
    if args.risk is None:
        return None
    if beside is not None and getattr(args, beside) is not None:
        raise UsageError(f"give --{beside} or --risk, not both")
    from memo_solver.games.yahtzee import check_theta

    return check_theta(args.risk)


def game_option(sub: argparse.ArgumentParser, note: str, games: Sequence[str]) -> None:
    """``--game``: one of ``games``, the first by default; ``note`` says what each other
    one takes."""
    sub.add_argument(
        "--game",
        choices=games,
        default=games[0],
        help=f"the game (default: {games[0]})" + (f"; {note}" if note else ""),
    )


def need_table_options(sub: argparse.ArgumentParser, verb: str) -> None:
    """``--need`` and ``--need-cap``: the commands that handle a rule set's stored values
    (precompute, export, import) take its need table the one way."""
    sub.add_argument(
        "--need",
        action="store_true",
        help=f"{verb} the rule set's need table (the best chance of every need up to "
        "--need-cap points to come) instead of its mean values",
    )
    sub.add_argument(
        "--need-cap", type=int, default=400, help="with --need: the table's cap, in points"
    )
    sub.add_argument(
        "--risk",
        metavar="THETA",
        help=f"{verb} the rule set's risk table at THETA (the certainty equivalents of the "
        f"exponential-utility strategy; {RISK_HELP}) instead of its mean values (default: "
        "none, the mean)",
    )


def game_options(sub: argparse.ArgumentParser) -> None:
    """A game for the commands that work on any game of the registry: ``--game`` and each
    family's parameter, the default family's first (it is the one most commands use)."""
    families = registry.FAMILIES
    default, *others = families
    either = sub.add_mutually_exclusive_group()  # as in rules_option
    family_option(either, default.name, default.parameter)
    rules_file_option(either, default.name)
    takes = [f"{default.name} takes {default.parameter.flag}"]
    takes += [f"{family.name} {family.parameter.flag}" for family in others]
    game_option(sub, ", ".join(takes), [family.name for family in families])
    for family in others:
        family_option(sub, family.name, family.parameter)


def family_option(sub: argparse._ActionsContainer, game: str, parameter: Parameter) -> None:
    for_game(
        sub,
        game,
        parameter.flag,
        type=parameter.type,
        choices=parameter.choices,
        default=parameter.default,
        help=parameter.help,
    )
