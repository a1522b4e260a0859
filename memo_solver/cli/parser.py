"""The ``memo-solver`` command line: every command, its options and their help.

Light on purpose (argparse, the game registry's declarations, a worker's options: no numpy,
no store), so that ``--help`` and a mistyped option answer at once. The games offered come
from the registry (:data:`memo_solver.games.registry.FAMILIES`, read as the parser is
built): each family's parameter (``--rules``, ``--size``) is an option of the commands
that work on any game; ``advise``, ``stats`` and ``play`` have code of their own per game,
so they offer the games they have.
"""

from __future__ import annotations

import argparse
import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from memo_solver.cli.common import EXIT_USAGE, PROG, REDIS_ENV, STORE_ENV
from memo_solver.cli.worker_options import (
    DESCRIPTION as WORKER_DESCRIPTION,
    REDIS_HELP as WORKER_REDIS_HELP,
    add_worker_options,
)
from memo_solver.core.cache import CACHE_MB_ENV, DEFAULT_CACHE_MB
from memo_solver.games import registry
from memo_solver.games.entry import Parameter
from memo_solver.service.settings import (
    REGISTRATION,
    REGISTRATION_ENV,
    REGISTRATION_QUOTA_ENV,
    WHOLE_GAME_MAX_ENV,
    WHOLE_GAME_QUEUE_ENV,
    WHOLE_GAME_SOLVES,
    WHOLE_GAME_SOLVES_ENV,
    ApiSettings,
)

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
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """A command's own parse, then its game-specific options checked against --game."""
        parsed, rest = super().parse_known_args(args, namespace)
        _resolve_game_options(parsed, self)
        return parsed, rest


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
    _store_options(parser, on_command=False)
    _json_option(parser, on_command=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, help=help_text, description=help_text, formatter_class=_HelpFormatter
        )
        _store_options(sub, on_command=True)
        _json_option(sub, on_command=True)
        return sub

    rules = command("rules", "list the built-in rule sets, or print one as its file")
    rules.add_argument(
        "action", nargs="?", choices=("list", "show"), default="list", help="(default: list)"
    )
    rules.add_argument("name", nargs="?", help="with show: the built-in rule set to print")
    advise = command("advise", "the best move and what every other move costs")
    _rules_option(advise, YAHTZEE)
    advise.add_argument("state", help="the state, or - to read JSON states line by line")
    _doom_options(advise)
    _need_options(
        advise, YAHTZEE, "--need", "N", "rank the moves by their best chance of N more points"
    )
    _for_game(
        advise,
        YAHTZEE,
        "--opponent",
        metavar="STATE",
        help="rank the moves by their chance of finishing above this opponent (their state; "
        "they play for points; default: none)",
    )
    _for_game(
        advise, YAHTZEE, "--score", type=int, default=0, help="with --opponent: your banked score"
    )
    _for_game(
        advise,
        YAHTZEE,
        "--opponent-score",
        type=int,
        default=0,
        help="with --opponent: the opponent's banked score",
    )
    value = command(
        "value",
        "the expected future score of a state (default: the start), or with --need its best "
        "chance of N more points",
    )
    _rules_option(value, None)
    value.add_argument(
        "state",
        nargs="?",
        default="start",
        help="the state, or - to read JSON states line by line (default: start)",
    )
    _need_options(value, None, "--need", "N", "the best chance of N more points instead")
    precompute = command(
        "precompute",
        "solve a whole rule set into the store (resumable); with --redis, queue it for the "
        "workers and print the job id",
    )
    _game_options(precompute)
    precompute.add_argument(
        "--wait",
        action="store_true",
        help="with --redis: follow the job until it is done; with no live worker, say so and "
        "exit with status 69 (the job stays queued)",
    )
    precompute.add_argument(
        "--wait-for-workers",
        action="store_true",
        help="with --wait: keep waiting when no worker is alive yet",
    )
    precompute.add_argument(
        "--here", action="store_true", help="with --redis: solve in this process, not a job"
    )
    precompute.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads solving each batch of blocks here (default: 1; workers take their own "
        "--threads)",
    )
    precompute.add_argument(
        "--cache-mb",
        type=int,
        help=f"memo bound solving here, MiB (default: ${CACHE_MB_ENV}, else {DEFAULT_CACHE_MB})",
    )
    _need_table_options(precompute, "solve")
    precompute.add_argument(
        "--max-table-mb",
        type=int,
        default=4096,
        help="with --need: refuse a table larger than this many MiB (the full yahtzee table "
        "at the default cap is 1,624 MiB; default: 4096)",
    )
    play = command("play", "play a game with advice after every roll")
    _rules_option(play, YAHTZEE)
    _game_option(play, "dice-of-doom: against the perfect computer, as in the book", PLAYED)
    _need_options(
        play, YAHTZEE, "--target", "T", "play for the best chance of a final score of T or more"
    )
    _for_game(play, DOOM, "--size", type=int, default=2, help="board size, 2 to 5")
    _for_game(play, DOOM, "--board", help="the starting board (default: a random one)")
    _for_game(play, DOOM, "--human", default="a", help="the player you are, a or b")
    _for_game(
        play, DOOM, "--seed", type=int, help="seed of the random board (default: a fresh one)"
    )
    _for_game(
        play,
        DOOM,
        "--limit",
        type=int,
        default=2_000_000,
        help="most positions the computer's solve may hold",
    )
    status = command(
        "status", "what the store holds per rule set (with --redis: workers and jobs too)"
    )
    _rules_file_option(status, None)
    status.add_argument(
        "--verify",
        action="store_true",
        help="also decode every stored block and count the damaged ones (reads them all)",
    )
    prune = command(
        "prune",
        "delete the store's namespaces that no built-in game and no stored rule-set "
        "definition names (blocks nobody can ask for, or of an older store format)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list what would go, with its blocks; delete nothing"
    )
    prune.add_argument(
        "--unused-for",
        type=float,
        metavar="DAYS",
        help="instead, remove the registered rule sets nobody asked about for DAYS days (with "
        "their blocks unless another name shares them); one registered before this was "
        "recorded counts as asked about at the first such prune (default: none: prune the "
        "namespaces no one can name)",
    )
    prune.epilog = PRUNE_EXAMPLES
    compile_ = command(
        "compile",
        "compile the solver's loops for this CPU into the compile cache (seconds, once per "
        "install and CPU), so that no later process pays it",
    )
    compile_.epilog = COMPILE_EXAMPLES
    export = command("export", "copy a rule set's verified blocks from the store elsewhere")
    _game_options(export)
    _need_table_options(export, "copy")
    export.add_argument(
        "--to", required=True, help="a .msgpack file, an SQLite file or a redis:// URL"
    )
    import_ = command("import", "copy a rule set's verified blocks into the store")
    _game_options(import_)
    _need_table_options(import_, "copy")
    import_.add_argument(
        "--from",
        dest="source",
        required=True,
        help="a .msgpack file, an SQLite file or a redis:// URL",
    )
    stats = command("stats", "the exact distribution of the points to come under optimal play")
    _rules_option(stats, YAHTZEE)
    stats.add_argument("state", nargs="?", default="start", help="the state (default: start)")
    _doom_options(stats)
    _threshold_option(stats, "also print P(points >= T)", YAHTZEE)
    _need_options(
        stats,
        YAHTZEE,
        "--need",
        "N",
        "the distribution when playing for the best chance of N more points, beside optimal "
        "play for points",
    )
    _for_game(
        stats,
        YAHTZEE,
        "--plot",
        type=Path,
        metavar="PNG",
        help="draw the distribution (matplotlib; default: no plot)",
    )
    simulate = command("simulate", "play games with the optimal (or greedy) strategy")
    _rules_option(simulate, None)
    simulate.add_argument("--games", type=int, default=1000, help="games to play")
    simulate.add_argument("--seed", type=int, default=0, help="random seed")
    simulate.add_argument(
        "--policy", choices=("optimal", "greedy"), default="optimal", help="strategy to play"
    )
    simulate.add_argument(
        "--log", type=Path, metavar="FILE", help="write every game as JSON lines (default: no log)"
    )
    simulate.add_argument(
        "--show", action="store_true", help="narrate one game decision by decision"
    )
    _threshold_option(simulate, "also print P(score >= T) and its standard error", None)
    _need_options(
        simulate, None, "--need", "N", "play for the best chance of a final score of N or more"
    )
    review = command("review", "rate every decision of a played game against the optimal one")
    _rules_option(review, None)
    review.add_argument("game", help="the game as JSON (a file, or - for standard input)")
    table = command("export-table", "write the strategy table (turn-start values, decisions)")
    _rules_option(table, None)
    table.add_argument(
        "--format",
        choices=("npz", "parquet", "jsonl"),
        help="file format (default: from the --out file's extension, .npz, .jsonl or "
        ".parquet; npz for a name without one)",
    )
    table.add_argument("--out", type=Path, required=True, help="the file to write")
    serve = command("serve", "run the HTTP advice service (OpenAPI docs at /docs)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=_port, default=8000, help="port")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="server processes on the port, sharing the store, each with its own block cache "
        "(default: 1; about one per core)",
    )
    serve.add_argument(
        "--deadline",
        type=_positive_float,
        default=10.0,
        help="seconds before a cold request gets 503",
    )
    serve.add_argument(
        "--cache-mb",
        type=_positive_int,
        default=256,
        help="in-process block cache per rule set, MiB",
    )
    serve.add_argument(
        "--header-timeout",
        type=_positive_float,
        default=10.0,
        help="seconds a client has to send a request's headers before it is cut off (default: 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=_positive_float,
        help="seconds a client has to send a request's body once its headers are in, before it "
        "is cut off (default: $MEMO_SOLVER_BODY_TIMEOUT, else 10)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive_int,
        help="open connections per server process; past it the one waiting longest for its "
        "client is closed (default: $MEMO_SOLVER_MAX_CONNECTIONS, else half the process's "
        "descriptor limit)",
    )
    serve.add_argument(
        "--doom-limit",
        type=_positive_int,
        default=1_000_000,
        help="most positions one Dice of Doom request may solve (default: 1,000,000)",
    )
    serve.add_argument(
        "--cold-budget",
        type=_positive_int,
        default=2_500_000,
        help="most turn starts a cold rule-set request may solve here; past it the state goes "
        "to the workers (503) or is refused (422) (default: 2,500,000: the whole yatzy)",
    )
    serve.add_argument(
        "--need-budget",
        type=_positive_int,
        default=30_000_000,
        help="most chances (turn starts times needs) a cold request with a need may solve here; "
        "past it, the state goes to the workers (503) or is refused (422) (default: "
        "30,000,000: nine open yahtzee boxes)",
    )
    serve.add_argument(
        "--rule-engines",
        type=_positive_int,
        default=16,
        help="engines kept open for rule sets not built in, least recently used "
        "closed first; they share --cache-mb (default: 16)",
    )
    _serve_limits(serve)
    worker = commands.add_parser(
        "worker",
        help="run a background worker on the shared Redis",
        description=WORKER_DESCRIPTION,
        epilog=WORKER_EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    # --store is refused with a word on what to give instead, so the help leaves it out.
    _store_options(
        worker, on_command=True, redis_help=WORKER_REDIS_HELP, store_help=argparse.SUPPRESS
    )
    add_worker_options(worker)
    return parser


def _serve_limits(serve: argparse.ArgumentParser) -> None:
    """What an anonymous client may cost: registrations and solves past the cold budget.
    Each option's default is its environment variable's (argparse reads it as the option's
    text, so a bad one is refused as a bad option would be), else the service's."""
    defaults = ApiSettings()

    def from_env(variable: str, default: object) -> str:
        return os.environ.get(variable, str(default))

    serve.add_argument(
        "--registration",
        choices=REGISTRATION,
        default=from_env(REGISTRATION_ENV, defaults.registration),
        help="who may register a rule set (POST /v1/rules): anyone, or only with the operator "
        "token (then the players' page sends a pasted rule set inline) (default: "
        f"${REGISTRATION_ENV}, else {defaults.registration})",
    )
    serve.add_argument(
        "--registration-quota",
        type=int,
        default=from_env(REGISTRATION_QUOTA_ENV, defaults.registration_quota),
        help="most rule sets the store may hold registered; past it, 429 (default: "
        f"${REGISTRATION_QUOTA_ENV}, else {defaults.registration_quota})",
    )
    serve.add_argument(
        "--whole-game-solves",
        choices=WHOLE_GAME_SOLVES,
        default=from_env(WHOLE_GAME_SOLVES_ENV, defaults.whole_game_solves),
        help="who may start a solve past --cold-budget (queued for the workers, else run "
        "in the server's background: POST /v1/solve): nobody, "
        "clients on this machine (127.0.0.1, ::1), or anyone; others get 422 (default: "
        f"${WHOLE_GAME_SOLVES_ENV}, else {defaults.whole_game_solves})",
    )
    serve.add_argument(
        "--whole-game-queue",
        type=_positive_int,
        default=from_env(WHOLE_GAME_QUEUE_ENV, defaults.whole_game_queue),
        help="most such solves queued or running at once; past it, 429; the operator's "
        f"precompute is never counted (default: ${WHOLE_GAME_QUEUE_ENV}, else "
        f"{defaults.whole_game_queue})",
    )
    serve.add_argument(
        "--whole-game-max",
        type=_positive_int,
        default=from_env(WHOLE_GAME_MAX_ENV, defaults.whole_game_max),
        help="most turn starts one such solve may have; past it, 422 (default: "
        f"${WHOLE_GAME_MAX_ENV}, else {defaults.whole_game_max:,}: every built-in)",
    )


WORKER_EXAMPLES = """examples:
  memo-solver worker --redis redis://127.0.0.1:6379/0
  memo-solver --redis redis://127.0.0.1:6379/0 worker --concurrency 2
  memo-solver worker --redis redis://127.0.0.1:6379/0 --check   # exit 0 if one is alive
"""
PRUNE_EXAMPLES = """examples:
  memo-solver prune --dry-run
  memo-solver --redis redis://127.0.0.1:6379/0 prune --dry-run --json
  memo-solver --redis redis://127.0.0.1:6379/0 prune
  memo-solver --redis redis://127.0.0.1:6379/0 prune --unused-for 90 --dry-run
"""
COMPILE_EXAMPLES = """examples:
  memo-solver compile
  memo-solver compile --json
  MEMO_SOLVER_COMPILE_CACHE=/var/cache/memo-solver memo-solver compile

The cache folder is $MEMO_SOLVER_COMPILE_CACHE if set, else $NUMBA_CACHE_DIR, else the
user's cache folder (~/.cache/memo-solver/compiled on Linux). Machine code is kept per CPU
model: on another CPU the first process compiles again. A folder that cannot be written is
not an error: each process compiles in memory instead, with one warning.
"""
YAHTZEE = "yahtzee"
DEFAULT_NEED_CAP = 400
QUESTION_THREADS = 4
"""Threads a cold need question solves on by default: a player's question is one process
waiting for one answer, unlike precompute and the workers, which scale by process."""
""":data:`memo_solver.games.yahtzee.solve.need.DEFAULT_CAP`, spelled here so that parsing a
command loads no game (a test checks they agree)."""
DOOM = "dice-of-doom"
PLAYED = (YAHTZEE, DOOM)
"""The games ``advise``, ``stats`` and ``play`` have code for (the Yahtzee family's in
:mod:`memo_solver.cli.main` and :mod:`memo_solver.cli.analysis`, Dice of Doom's in
:mod:`memo_solver.cli.doom`); every game of the registry has the operator commands."""


def _positive_int(text: str) -> int:
    """A count or a size of one or more: argparse refuses any other in one line that names
    the option."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    """A number of seconds above 0 (see :func:`_positive_int`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _port(text: str) -> int:
    """A TCP port a server can listen on (see :func:`_positive_int`)."""
    value = _positive_int(text)
    if value > MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_PORT}, got {value}")
    return value


MAX_PORT = 65535


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


def _store_options(
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


def _json_option(parser: argparse.ArgumentParser, *, on_command: bool) -> None:
    """``--json`` before the command or after it, as :func:`_store_options` takes theirs."""
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


def _for_game(
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


def _resolve_game_options(args: argparse.Namespace, parser: _Parser) -> None:
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


def _option(sub: argparse._ActionsContainer, game: str | None, flag: str, **kwargs: Any) -> None:
    """An option of every game (``game`` None), or of one game only."""
    if game is None:
        sub.add_argument(flag, **kwargs)
    else:
        _for_game(sub, game, flag, **kwargs)


def _rules_option(sub: argparse.ArgumentParser, game: str | None) -> None:
    """``--rules`` or ``--rules-file``: one rule set, so never both (argparse refuses the
    pair in one line, whichever command it comes with)."""
    either = sub.add_mutually_exclusive_group()
    _option(either, game, "--rules", default="yahtzee", help="rule set")
    _rules_file_option(either, game)


def _rules_file_option(sub: argparse._ActionsContainer, game: str | None) -> None:
    _option(
        sub,
        game,
        "--rules-file",
        type=Path,
        metavar="FILE",
        help="a rule-set file (JSON; 'rules show yatzy' prints one to start from) instead of "
        "--rules (default: none)",
    )


def _threshold_option(sub: argparse.ArgumentParser, help_text: str, game: str | None) -> None:
    """One option for ``stats`` and ``simulate``, so P(score >= T) is asked for alike."""
    _option(
        sub,
        game,
        "--threshold",
        type=int,
        action="append",
        default=[],
        metavar="T",
        help=f"{help_text}; repeatable (default: none)",
    )


def _need_options(
    sub: argparse.ArgumentParser, game: str | None, flag: str, metavar: str, help_text: str
) -> None:
    """The chance objective's options: the need (``--need``, or ``play``'s ``--target``
    final score) and the cap of the table that answers it."""
    _option(sub, game, flag, type=int, metavar=metavar, help=f"{help_text} (default: none)")
    _option(
        sub,
        game,
        "--need-threads",
        type=int,
        default=QUESTION_THREADS,
        metavar="N",
        help="threads solving the need table's missing blocks for this question (default: "
        f"{QUESTION_THREADS}, or fewer where fewer cores are free to this process)",
    )
    _option(
        sub,
        game,
        "--need-cap",
        type=int,
        default=DEFAULT_NEED_CAP,
        metavar="C",
        help="the most points to come the need table answers for; a larger need that the open "
        f"boxes could still reach is refused (default: {DEFAULT_NEED_CAP})",
    )


def _game_option(sub: argparse.ArgumentParser, note: str, games: Sequence[str]) -> None:
    sub.add_argument(
        "--game",
        choices=games,
        default=games[0],
        help=f"the game (default: {games[0]}); {note}",
    )


def _doom_options(sub: argparse.ArgumentParser) -> None:
    """Dice of Doom positions: the board is the command's state argument."""
    _game_option(sub, "dice-of-doom takes a board such as 'a-3 b-3 / a-2 b-2' as the state", PLAYED)
    _for_game(sub, DOOM, "--to-move", default="a", help="the player to move, a or b")
    _for_game(
        sub,
        DOOM,
        "--captured",
        type=int,
        default=0,
        help="dice captured so far this turn (default: 0, the turn starts)",
    )
    _for_game(
        sub,
        DOOM,
        "--limit",
        type=int,
        default=2_000_000,
        help="most positions one solve may hold (default: 2,000,000)",
    )


def _need_table_options(sub: argparse.ArgumentParser, verb: str) -> None:
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


def _game_options(sub: argparse.ArgumentParser) -> None:
    """A game for the commands that work on any game of the registry: ``--game`` and each
    family's parameter, the default family's first (it is the one most commands use)."""
    families = registry.FAMILIES
    default, *others = families
    either = sub.add_mutually_exclusive_group()  # as in _rules_option
    _family_option(either, default.name, default.parameter)
    _rules_file_option(either, default.name)
    takes = [f"{default.name} takes {default.parameter.flag}"]
    takes += [f"{family.name} {family.parameter.flag}" for family in others]
    _game_option(sub, ", ".join(takes), [family.name for family in families])
    for family in others:
        _family_option(sub, family.name, family.parameter)


def _family_option(sub: argparse._ActionsContainer, game: str, parameter: Parameter) -> None:
    _for_game(
        sub,
        game,
        parameter.flag,
        type=parameter.type,
        choices=parameter.choices,
        default=parameter.default,
        help=parameter.help,
    )
