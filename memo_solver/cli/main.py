"""The ``memo-solver`` command: player, analyst and operator commands on the embedded store.

Heavy imports (numpy, anyio) wait until a command needs them, so ``--help`` and errors are
instant and a warm ``advise`` stays well under a second as a whole process.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from memo_solver.core.errors import UserError
from memo_solver.core.runtime import freeze_startup_objects, keep_freed_memory, pin_blas_threads
from memo_solver.core.store import StoreUnavailableError

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.core.store import Store
    from memo_solver.games.yahtzee.rules import RuleSet
    from memo_solver.jobs.settings import WorkerSettings

PROG = "memo-solver"
EXIT_USAGE = 2
EXIT_TEMPFAIL = 75
"""sysexits.h's EX_TEMPFAIL: the store failed (unreachable, refused the write, full, or
locked past the timeout); the same command may work later."""
STORE_ENV = "MEMO_SOLVER_STORE"
REDIS_ENV = "MEMO_SOLVER_REDIS_URL"

EXAMPLES = """examples:
  memo-solver rules
  memo-solver advise --rules yahtzee '- x x x x x x x x x x - x 62 False 2 1 2 2 2 6'
  memo-solver advise --rules yahtzee 'open=ones,yahtzee upper=62 dice=12226 rerolls=2' --json
  echo '{"filled": ["chance"], "dice": [6,6,6,6,6]}' | memo-solver advise --rules yahtzee -
  memo-solver value --rules yatzy
  memo-solver precompute --rules yahtzee
  memo-solver --redis redis://127.0.0.1:6379/0 precompute --rules yahtzee --wait
  memo-solver --redis redis://127.0.0.1:6379/0 status
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
--store, --redis and -v go before the command or after it (after it wins).

exit status: 0 done; 2 bad input (fix the command); 75 the store failed: unreachable,
refused the write, full, or locked too long (retry later); 1 internal error; 130 interrupted.
"""


class UsageError(UserError):
    """Bad input a command finds itself (an option out of range, a file it cannot use)."""

    field = "arguments"


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


def default_store_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memo-solver")) / "store.sqlite3"


def build_parser() -> argparse.ArgumentParser:
    from memo_solver.jobs.settings import DESCRIPTION as WORKER_DESCRIPTION
    from memo_solver.jobs.settings import REDIS_HELP as WORKER_REDIS_HELP
    from memo_solver.jobs.settings import add_worker_options

    parser = _Parser(
        prog=PROG,
        description="Optimal strategy for Yahtzee-family dice games: advice for any "
        "position, values, and a persistent, lazily filled cache.",
        epilog=EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    _store_options(parser, on_command=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, help=help_text, description=help_text, formatter_class=_HelpFormatter
        )
        _store_options(sub, on_command=True)
        sub.add_argument("--json", action="store_true", help="print JSON instead of words")
        return sub

    command("rules", "list the built-in rule sets")
    advise = command("advise", "the best move and what every other move costs")
    _rules_option(advise, YAHTZEE)
    advise.add_argument("state", help="the state, or - to read JSON states line by line")
    _doom_options(advise)
    value = command("value", "the expected future score of a state (default: the start)")
    _rules_option(value, None)
    value.add_argument("state", nargs="?", default="start", help="the state (default: start)")
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
    play = command("play", "play a game with advice after every roll")
    _rules_option(play, YAHTZEE)
    _game_option(play, "dice-of-doom: against the perfect computer, as in the book")
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
    status.add_argument(
        "--verify",
        action="store_true",
        help="also decode every stored block and count the damaged ones (reads them all)",
    )
    export = command("export", "copy a rule set's verified blocks from the store elsewhere")
    _game_options(export)
    export.add_argument(
        "--to", required=True, help="a .msgpack file, an SQLite file or a redis:// URL"
    )
    import_ = command("import", "copy a rule set's verified blocks into the store")
    _game_options(import_)
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
    serve.add_argument("--port", type=int, default=8000, help="port")
    serve.add_argument(
        "--deadline", type=float, default=10.0, help="seconds before a cold request gets 503"
    )
    serve.add_argument(
        "--cache-mb", type=int, default=256, help="in-process block cache per rule set, MiB"
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a client has to send a request's headers before it is cut off (default: 10)",
    )
    serve.add_argument(
        "--doom-limit",
        type=int,
        default=1_000_000,
        help="most positions one Dice of Doom request may solve (default: 1,000,000)",
    )
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


WORKER_EXAMPLES = """examples:
  memo-solver worker --redis redis://127.0.0.1:6379/0
  memo-solver --redis redis://127.0.0.1:6379/0 worker --concurrency 2
  memo-solver worker --redis redis://127.0.0.1:6379/0 --check   # exit 0 if one is alive
"""
YAHTZEE = "yahtzee"
DOOM = "dice-of-doom"


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
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS if on_command else False,
        help="log what happens",
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
    sub: argparse.ArgumentParser, game: str, flag: str, *, default: object = None, **kwargs: Any
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


def _option(sub: argparse.ArgumentParser, game: str | None, flag: str, **kwargs: Any) -> None:
    """An option of every game (``game`` None), or of one game only."""
    if game is None:
        sub.add_argument(flag, **kwargs)
    else:
        _for_game(sub, game, flag, **kwargs)


def _rules_option(sub: argparse.ArgumentParser, game: str | None) -> None:
    _option(sub, game, "--rules", default="yahtzee", help="rule set")


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


def _game_option(sub: argparse.ArgumentParser, note: str) -> None:
    sub.add_argument(
        "--game",
        choices=(YAHTZEE, DOOM),
        default=YAHTZEE,
        help=f"the game (default: yahtzee); {note}",
    )


def _doom_options(sub: argparse.ArgumentParser) -> None:
    """Dice of Doom positions: the board is the command's state argument."""
    _game_option(sub, "dice-of-doom takes a board such as 'a-3 b-3 / a-2 b-2' as the state")
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


def _game_options(sub: argparse.ArgumentParser) -> None:
    """A game for the commands that work on any game of the registry."""
    _for_game(
        sub,
        YAHTZEE,
        "--rules",
        default="yahtzee",
        help="rule set, or any game 'status' lists (default: yahtzee)",
    )
    _game_option(sub, "yahtzee takes --rules, dice-of-doom --size")
    _for_game(sub, DOOM, "--size", type=int, choices=(2, 3), default=3, help="board size")


def main(argv: Sequence[str] | None = None) -> int:
    pin_blas_threads()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        if args.command == "worker":
            settings = _worker_settings(args)
        else:
            logging.basicConfig(
                level=logging.DEBUG if args.verbose else logging.WARNING,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            )
            return _dispatch(args)
    except UserError as exc:  # before the store's: a location that cannot be one is bad input
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreUnavailableError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_TEMPFAIL
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (the store keeps every finished block)", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        logging.getLogger(PROG).debug("internal error", exc_info=True)
        print(
            f"{PROG}: internal error: {exc!r} (run with -v to see where; please report it)",
            file=sys.stderr,
        )
        return 1
    # Outside the handlers: a worker that crashes leaves its traceback in its log.
    from memo_solver.cli.worker import run

    return run(settings)


def _worker_settings(args: argparse.Namespace) -> WorkerSettings:
    """A worker's settings on the options as every command resolves them: --redis and -v on
    either side of ``worker``, the command line over the environment."""
    from memo_solver.jobs.settings import SettingsError, settings_of

    if args.store:
        raise UsageError(
            f"--store: a worker serves jobs from Redis only, not an SQLite file; give --redis "
            f"URL (or ${REDIS_ENV})"
        )
    try:
        return settings_of(args)
    except SettingsError as exc:
        raise UsageError(f"{exc} (see '{PROG} worker --help')") from None


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "serve":
            return cmd_serve(args)
        return _run_async(args)
    except Exception as exc:
        fault = _redis_fault(exc, args)
        if fault is None:
            raise
        raise fault from None


def _redis_fault(exc: Exception, args: argparse.Namespace) -> Exception | None:
    """The store error for a Redis error met outside the store (the job commands talk to
    Redis directly), else None. Only a command that loaded redis can meet one: the others
    never pay for importing it (a tenth of a second)."""
    if "redis" not in sys.modules:
        return None
    from redis.exceptions import RedisError

    from memo_solver.stores.redis import store_error

    return store_error(exc, _store_name(args)) if isinstance(exc, RedisError) else None


def _run_async(args: argparse.Namespace) -> int:
    import anyio

    handlers: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
        "advise": cmd_advise,
        "value": cmd_value,
        "precompute": _operate,
        "play": cmd_play,
        "status": _operate,
        "export": _operate,
        "import": _operate,
        "stats": _analyse,
        "simulate": _analyse,
        "review": _analyse,
        "export-table": _analyse,
    }
    keep_freed_memory()
    if getattr(args, "game", "yahtzee") == "dice-of-doom" and args.command in DOOM_COMMANDS:
        return _doom(args)
    return anyio.run(handlers[args.command], args)


DOOM_COMMANDS = ("advise", "stats", "play")


def _doom(args: argparse.Namespace) -> int:
    import anyio

    from memo_solver.cli import doom as doom_commands

    if args.command == "play":
        return doom_commands.play_command(args)
    if args.state in ("-", "start"):
        raise UsageError(
            f"give the board, e.g. {PROG} {args.command} --game dice-of-doom "
            "'a-3 b-3 / a-2 b-2' --to-move a"
        )
    args.board = args.state
    handler = (
        doom_commands.advise_command if args.command == "advise" else doom_commands.stats_command
    )
    return anyio.run(handler, args)


def _rules(args: argparse.Namespace) -> RuleSet:
    from memo_solver.games.yahtzee.rules import get_rule_set

    return get_rule_set(args.rules)


def store_location(args: argparse.Namespace) -> str | Path:
    """The store the options name, for every command alike: a Redis URL, or an SQLite file.

    The command line wins over the environment (``--store`` over ``--redis``); in the
    environment a Redis URL wins over a store file; else the file in the cache folder.
    """
    url = args.redis or os.environ.get(REDIS_ENV)
    if url and not args.store:
        return str(url)
    return Path(args.store or os.environ.get(STORE_ENV) or default_store_path())


def open_store(args: argparse.Namespace) -> Store:
    """Redis when a URL is given (``--redis`` or the environment), else the SQLite file."""
    location = store_location(args)
    if isinstance(location, str):
        from memo_solver.stores.redis import RedisStore

        return RedisStore(location)
    from memo_solver.stores.sqlite import SQLiteStore

    return SQLiteStore(location)


def emit(args: argparse.Namespace, payload: object, text: str) -> None:
    print(json.dumps(payload) if args.json else text)


def cmd_rules(args: argparse.Namespace) -> int:
    from memo_solver.games.yahtzee.rules import RULE_SETS

    rows = [
        {
            "name": r.name,
            "description": r.description,
            "boxes": [c.name for c in r.categories],
            "start_value": r.start_value,
            "fingerprint": r.fingerprint,
        }
        for r in RULE_SETS.values()
    ]
    width = max(len(r["name"]) for r in rows)  # type: ignore[arg-type]
    text = "\n".join(
        f"{r['name']:<{width}}  {r['start_value']:>14.10f}  {r['description']}" for r in rows
    )
    emit(args, rows, text)
    return 0


async def _with_engine(
    args: argparse.Namespace, work: Callable[[Engine, RuleSet], Coroutine[Any, Any, int]]
) -> int:
    """Every solving command runs here: on an engine whose solves show their progress."""
    from memo_solver.cli.progress import SolveProgress
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee.game import YahtzeeGame

    rules = _rules(args)
    with SolveProgress(rules.name) as progress:
        async with (
            open_store(args) as store,
            open_engine(YahtzeeGame(rules), store, on_progress=progress) as engine,
        ):
            return await work(engine, rules)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from memo_solver.service.app import ApiSettings, create_app
    from memo_solver.service.serving import http_protocol

    positive = (args.deadline, args.cache_mb, args.doom_limit, args.header_timeout)
    if min(positive) <= 0 or not 0 < args.port < 65536:
        raise UsageError(
            "--deadline, --cache-mb, --doom-limit, --header-timeout and --port must be "
            "positive (port < 65536)"
        )
    import anyio

    anyio.run(_check_store, args)  # fail now, in one line, if the store cannot be reached
    settings = ApiSettings(
        deadline_s=args.deadline, cache_bytes=args.cache_mb << 20, doom_limit=args.doom_limit
    )
    app = create_app(lambda: open_store(args), settings)
    emit(
        args,
        {"listening": f"http://{args.host}:{args.port}", "store": _store_name(args)},
        f"serving on http://{args.host}:{args.port} (store: {_store_name(args)})",
    )
    keep_freed_memory()
    freeze_startup_objects()
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info" if args.verbose else "warning",
        access_log=args.verbose,  # off: not even formatted (warning level drops it anyway)
        http=http_protocol(args.header_timeout),  # uvicorn's own, one write per response
    )
    return 0


async def _check_store(args: argparse.Namespace) -> None:
    async with open_store(args) as store:
        await store.coverage("probe")


def _store_name(args: argparse.Namespace) -> str:
    from memo_solver.stores.redis import redacted

    location = store_location(args)
    return redacted(location) if isinstance(location, str) else str(location)


async def cmd_advise(args: argparse.Namespace) -> int:
    from memo_solver.games.yahtzee.advice import advise
    from memo_solver.games.yahtzee.state import StateError, parse_state

    async def work(engine: Engine, rules: RuleSet) -> int:
        if args.state != "-":
            advice = await advise(engine, rules, parse_state(args.state, rules))
            emit(args, advice.to_json(), _advice_text(advice))
            return 0
        bad = 0
        for number, line in enumerate(sys.stdin, start=1):
            if not line.strip():
                continue
            try:
                answer = (await advise(engine, rules, parse_state(line, rules))).to_json()
            except StateError as exc:
                bad += 1
                answer = {"error": {"line": number, "field": exc.field, "message": exc.message}}
            print(json.dumps(answer), flush=True)
        return EXIT_USAGE if bad else 0

    return await _with_engine(args, work)


def _advice_text(advice: Any) -> str:
    if advice.game_over:
        return "The game is over: no points are left to win."
    if not advice.actions:
        return f"Roll the dice. Expected final score from here: {advice.value:.4f} more points."
    best = advice.actions[0]
    lines = [
        f"Best: {best.words()}  (expect {best.value:.4f} more points)",
        f"Turn-start value of this scorecard: {advice.turn_start_value:.4f}",
        "",
        f"{'action':<40} {'value':>10} {'loss':>9}",
    ]
    lines += [f"{a.words():<40} {a.value:>10.4f} {a.loss:>9.4f}" for a in advice.actions]
    return "\n".join(lines)


async def cmd_value(args: argparse.Namespace) -> int:
    from memo_solver.games.yahtzee.advice import advise
    from memo_solver.games.yahtzee.state import parse_state

    async def work(engine: Engine, rules: RuleSet) -> int:
        advice = await advise(engine, rules, parse_state(args.state, rules))
        payload = {
            "rules": rules.name,
            "value": advice.value,
            "turn_start_value": advice.turn_start_value,
            # What this query cost: 0 on a warm cache (the rest was there, or others computed it).
            "blocks_computed": engine.counters.computed,
        }
        emit(args, payload, f"{advice.value:.10f}")
        return 0

    return await _with_engine(args, work)


async def _operate(args: argparse.Namespace) -> int:
    from memo_solver.cli import ops

    handlers = {
        "precompute": ops.precompute,
        "status": ops.status,
        "export": ops.transfer,
        "import": ops.transfer,
    }
    async with open_store(args) as store:
        return await handlers[args.command](args, store)


async def _analyse(args: argparse.Namespace) -> int:
    """The analyst commands: each lives in the module that holds its logic."""
    from memo_solver.games.yahtzee import review, simulate, stats, table

    handlers: dict[str, Callable[[argparse.Namespace, Engine, RuleSet], Coroutine[Any, Any, int]]]
    handlers = {
        "stats": stats.command,
        "simulate": simulate.command,
        "review": review.command,
        "export-table": table.command,
    }
    return await _with_engine(
        args, lambda engine, rules: handlers[args.command](args, engine, rules)
    )


async def cmd_play(args: argparse.Namespace) -> int:
    from memo_solver.cli.play import play_game

    async def work(engine: Engine, rules: RuleSet) -> int:
        return await play_game(engine, rules, sys.stdin, sys.stdout, as_json=args.json)

    return await _with_engine(args, work)


if __name__ == "__main__":
    sys.exit(main())
