"""The ``memo-solver`` command line: the program's own options and help, and a parser for
every command of the table (:mod:`memo_solver.cli.commands`), each with its options.

Light on purpose (argparse, the registrations, the game registry's declarations, a
worker's options: no numpy, no store), so that ``--help`` and a mistyped option answer at
once. The games offered come from the registry (:data:`memo_solver.games.registry.FAMILIES`,
read as the parser is built): each family's parameter (``--rules``, ``--size``) is an
option of the commands that work on any game; ``advise``, ``stats`` and ``play`` have code
of their own per game, so they offer the games that have a side of them
(:mod:`memo_solver.cli.games`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from typing import Any, NoReturn

from memo_solver.cli.command import Command, Options
from memo_solver.cli.commands import commands
from memo_solver.cli.common import EXIT_USAGE, PROG
from memo_solver.cli.options import json_option, resolve_game_options, store_options

EXAMPLES = """examples:
  memo-solver rules
  memo-solver rules show yatzy > house.json       # then edit house.json
  memo-solver advise --rules-file house.json start
  memo-solver advise --rules yahtzee '- x x x x x x x x x x - x 62 False 2 1 2 2 2 6'
  memo-solver advise --rules yahtzee 'open=ones,yahtzee upper=62 dice=12226 rerolls=2' --json
  echo '{"filled": ["chance"], "dice": [6,6,6,6,6]}' | memo-solver advise --rules yahtzee -
  memo-solver value --rules yatzy
  memo-solver advise --rules yahtzee 'open=chance,yahtzee dice=66653 rerolls=1' --need 40
  memo-solver play --rules yahtzee --target 250
  memo-solver advise --rules yahtzee 'open=chance,sixes dice=66653 rerolls=1' --score 180 \
      --opponent 'open=chance,yahtzee,sixes' --opponent-score 170
  memo-solver precompute --rules yahtzee
  memo-solver precompute --rules maxi-yatzy --threads 2
  memo-solver --redis redis://127.0.0.1:6379/0 precompute --rules yahtzee --wait
  memo-solver --redis redis://127.0.0.1:6379/0 status
  memo-solver compile
  memo-solver export --rules yahtzee --to yahtzee.msgpack
  memo-solver --redis redis://127.0.0.1:6379/0 import --rules yahtzee --from yahtzee.msgpack
  memo-solver worker --redis redis://127.0.0.1:6379/0
  memo-solver --redis redis://127.0.0.1:6379/0 serve --host 0.0.0.0 --port 8000
  memo-solver play --rules yahtzee
  memo-solver status --json
  memo-solver stats --rules yahtzee-free-joker --threshold 300 --plot dist.png
  memo-solver simulate --rules yahtzee --games 10000 --seed 1
  memo-solver review --rules yahtzee game.json
  memo-solver export-table --rules yazy --format jsonl --out yazy.jsonl
  memo-solver advise --game dice-of-doom 'a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3' --to-move a
  memo-solver stats --game dice-of-doom 'a-3 a-3 / b-2 b-3' --to-move a --json
  memo-solver play --game dice-of-doom --board 'a-3 b-3 / a-2 b-2'
  memo-solver --redis redis://127.0.0.1:6379/0 precompute --game dice-of-doom --size 3 --wait

states: JSON ({"filled": [...], "upper": 62, "yahtzee_bonus": false, "rerolls_left": 2,
"dice": [1,2,2,2,6]}), the reference Haskell line (- x x ... 62 False 2 1 2 2 2 6), or the
short form (filled=twos,threes upper=8 bonus=no dice=12226 rerolls=2; open=... ; start).
The store is one SQLite file in your cache folder; --store PATH or $MEMO_SOLVER_STORE
choose another; --redis URL or $MEMO_SOLVER_REDIS_URL share one Redis with the workers.
--store, --redis, --redis-cluster, -v and --json go before the command or after it (after
it wins).
A Redis Cluster: --redis names any node, or several seeds: redis://h1:7000,h2:7001.

exit status: 0 done; 2 bad input (fix the command); 75 the store failed: unreachable,
refused the write, full, or locked too long (retry later); 69 what the command needs is not
there (precompute --wait: no live worker; serve: the port is in use); 1 internal error;
130 interrupted; 141 the output's reader left early (| head), quietly.
"""


class _Parser(argparse.ArgumentParser):
    """The program's parser, and each command's: a command's parser is given its options
    when it is first used (its arguments parsed, its help or usage written), so a command's
    start builds its own options and imports what they read, not every command's (``serve``
    reads the service's settings, ``worker`` the workers')."""

    def __init__(self, *args: Any, options: Options | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._options = options

    def _given_options(self) -> None:
        if self._options is not None:
            options, self._options = self._options, None
            options(self)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """A command's own parse, then its game-specific options checked against --game."""
        self._given_options()
        parsed, rest = super().parse_known_args(args, namespace)
        resolve_game_options(parsed, self)
        return parsed, rest

    def format_usage(self) -> str:
        self._given_options()
        return super().format_usage()

    def format_help(self) -> str:
        self._given_options()
        return super().format_help()


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help, as ``(default: ...)``, unless the help says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        unset = action.default is None or action.default is argparse.SUPPRESS
        if "default" in help_text or unset or action.nargs == 0 or action.default == []:
            return help_text
        return f"{help_text} (default: %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Optimal strategy for Yahtzee-family dice games: advice for any "
        "position, values, and a persistent, lazily filled cache.",
        epilog=EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    store_options(parser, on_command=False)
    json_option(parser, on_command=False)
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in commands().values():
        subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.help if command.description is None else command.description,
            epilog=command.epilog,
            formatter_class=_HelpFormatter,
            options=partial(_command_options, command),
        )
    return parser


def _command_options(command: Command, sub: argparse.ArgumentParser) -> None:
    if command.shared_options:
        store_options(sub, on_command=True)
        json_option(sub, on_command=True)
    command.options(sub)


class _Version(argparse.Action):
    """``--version`` from the package metadata, read only when asked: reading it costs
    every other command's start a few milliseconds."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import version

        print(f"{PROG} {version('memo-solver')}")
        parser.exit()
