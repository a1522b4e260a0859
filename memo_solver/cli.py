"""The ``memo-solver`` command: player, analyst and operator commands on the embedded store.

Heavy imports (numpy, anyio) wait until a command needs them, so ``--help`` and errors are
instant and a warm ``advise`` stays well under a second as a whole process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from memo_solver.runtime import freeze_startup_objects, keep_freed_memory, pin_blas_threads

if TYPE_CHECKING:
    from memo_solver.engine import Engine
    from memo_solver.rules import RuleSet
    from memo_solver.store import Store

PROG = "memo-solver"
EXIT_USAGE = 2
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
"""


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")


def default_store_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memo-solver")) / "store.sqlite3"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Optimal strategy for Yahtzee-family dice games: advice for any "
        "position, values, and a persistent, lazily filled cache.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--store", type=Path, help=f"SQLite store file (default: ${STORE_ENV} or the cache dir)"
    )
    parser.add_argument(
        "--redis", metavar="URL", help=f"shared Redis store (default: ${REDIS_ENV}, if set)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--json", action="store_true", help="print JSON instead of words")
        return sub

    command("rules", "list the built-in rule sets")
    advise = command("advise", "the best move and what every other move costs")
    advise.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    advise.add_argument("state", help="the state, or - to read JSON states line by line")
    _doom_options(advise)
    value = command("value", "the expected future score of a state (default: the start)")
    value.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
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
    play.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    _game_option(play, "dice-of-doom: against the perfect computer, as in the book")
    play.add_argument(
        "--size", type=int, default=2, help="dice-of-doom: board size, 2 to 5 (default: 2)"
    )
    play.add_argument("--board", help="dice-of-doom: the starting board (default: a random one)")
    play.add_argument(
        "--human", default="a", help="dice-of-doom: the player you are, a or b (default: a)"
    )
    play.add_argument("--seed", type=int, help="dice-of-doom: seed of the random board")
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
    stats.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    stats.add_argument("state", nargs="?", default="start", help="the state (default: start)")
    _doom_options(stats)
    _threshold_option(stats, "also print P(points >= T); repeatable")
    stats.add_argument(
        "--plot", type=Path, metavar="PNG", help="draw the distribution (matplotlib)"
    )
    simulate = command("simulate", "play games with the optimal (or greedy) strategy")
    simulate.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    simulate.add_argument("--games", type=int, default=1000, help="games to play (default: 1000)")
    simulate.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    simulate.add_argument(
        "--policy", choices=("optimal", "greedy"), default="optimal", help="strategy to play"
    )
    simulate.add_argument("--log", type=Path, metavar="FILE", help="write every game as JSON lines")
    simulate.add_argument(
        "--show", action="store_true", help="narrate one game decision by decision"
    )
    _threshold_option(simulate, "also print P(score >= T) and its standard error; repeatable")
    review = command("review", "rate every decision of a played game against the optimal one")
    review.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    review.add_argument("game", help="the game as JSON (a file, or - for standard input)")
    table = command("export-table", "write the strategy table (turn-start values, decisions)")
    table.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    table.add_argument(
        "--format", choices=("npz", "parquet", "jsonl"), default="npz", help="file format"
    )
    table.add_argument("--out", type=Path, required=True, help="the file to write")
    serve = command("serve", "run the HTTP advice service (OpenAPI docs at /docs)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--deadline", type=float, default=10.0, help="seconds before a cold request gets 503"
    )
    serve.add_argument(
        "--cache-mb", type=int, default=256, help="in-process block cache per rule set, MiB"
    )
    serve.add_argument(
        "--doom-limit",
        type=int,
        default=1_000_000,
        help="most positions one Dice of Doom request may solve (default: 1,000,000)",
    )
    worker = commands.add_parser(
        "worker",
        help="run a background worker (see 'memo-solver worker --help')",
        add_help=False,
    )
    worker.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def _game_option(sub: argparse.ArgumentParser, note: str) -> None:
    sub.add_argument(
        "--game",
        choices=("yahtzee", "dice-of-doom"),
        default="yahtzee",
        help=f"the game (default: yahtzee); {note}",
    )


def _threshold_option(sub: argparse.ArgumentParser, help_text: str) -> None:
    """One option for ``stats`` and ``simulate``, so P(score >= T) is asked for alike."""
    sub.add_argument(
        "--threshold", type=int, action="append", default=[], metavar="T", help=help_text
    )


def _doom_options(sub: argparse.ArgumentParser) -> None:
    """Dice of Doom positions: the board is the command's state argument."""
    _game_option(sub, "dice-of-doom takes a board such as 'a-3 b-3 / a-2 b-2' as the state")
    sub.add_argument(
        "--to-move", default="a", help="dice-of-doom: the player to move, a or b (default: a)"
    )
    sub.add_argument(
        "--captured",
        type=int,
        default=0,
        help="dice-of-doom: dice captured so far this turn (default: 0, the turn starts)",
    )
    sub.add_argument(
        "--limit",
        type=int,
        default=2_000_000,
        help="dice-of-doom: most positions one solve may hold (default: 2,000,000)",
    )


def _game_options(sub: argparse.ArgumentParser) -> None:
    """A game for the commands that work on any game of the registry."""
    sub.add_argument(
        "--rules", default="yahtzee", help="rule set, or any game 'status' lists (default: yahtzee)"
    )
    _game_option(sub, "yahtzee takes --rules, dice-of-doom --size")
    sub.add_argument(
        "--size", type=int, choices=(2, 3), default=3, help="dice-of-doom board size (default: 3)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    pin_blas_threads()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        from worker.cli import main as worker_main

        return worker_main(argv[1:], prog=f"{PROG} worker")
    args = build_parser().parse_args(argv)
    if args.command == "worker":
        from worker.cli import main as worker_main

        return worker_main(args.args, prog=f"{PROG} worker")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
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


def _dispatch(args: argparse.Namespace) -> int:
    import sqlite3

    from memo_solver.doom import DoomError
    from memo_solver.games import UnknownGameError
    from memo_solver.rules import UnknownRuleSetError
    from memo_solver.state import StateError
    from memo_solver.store import StoreUnavailableError
    from memo_solver.transfer import TransferError

    try:
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "serve":
            return cmd_serve(args)
        return _run_async(args)
    except (
        StateError,
        UnknownRuleSetError,
        UnknownGameError,
        DoomError,
        StoreUnavailableError,
        TransferError,
    ) as exc:
        raise UsageError(str(exc)) from None
    except sqlite3.Error as exc:
        raise UsageError(f"the store failed: {exc} (check the file, or use --store)") from None


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

    from memo_solver import doom_commands

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
    from memo_solver.rules import get_rule_set

    return get_rule_set(args.rules)


def open_store(args: argparse.Namespace) -> Store:
    """Redis when a URL is given (``--redis`` or the environment), else the SQLite file."""
    url = args.redis or os.environ.get(REDIS_ENV)
    if url and not args.store:
        from memo_solver.redis_store import RedisStore

        return RedisStore(url)
    from memo_solver.sqlite_store import SQLiteStore

    path = args.store or os.environ.get(STORE_ENV) or default_store_path()
    return SQLiteStore(Path(path))


def emit(args: argparse.Namespace, payload: object, text: str) -> None:
    print(json.dumps(payload) if args.json else text)


def cmd_rules(args: argparse.Namespace) -> int:
    from memo_solver.rules import RULE_SETS

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
    from memo_solver.engine import open_engine
    from memo_solver.yahtzee import YahtzeeGame

    rules = _rules(args)
    async with open_store(args) as store, open_engine(YahtzeeGame(rules), store) as engine:
        return await work(engine, rules)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from memo_solver.api import ApiSettings, create_app
    from memo_solver.serving import http_protocol

    if min(args.deadline, args.cache_mb, args.doom_limit) <= 0 or not 0 < args.port < 65536:
        raise UsageError(
            "--deadline, --cache-mb, --doom-limit and --port must be positive (port < 65536)"
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
        http=http_protocol(),  # uvicorn's own, one write per response
    )
    return 0


async def _check_store(args: argparse.Namespace) -> None:
    async with open_store(args) as store:
        await store.coverage("probe")


def _store_name(args: argparse.Namespace) -> str:
    from memo_solver.redis_store import redacted

    url = args.redis or os.environ.get(REDIS_ENV)
    if url and not args.store:
        return redacted(url)
    return str(args.store or os.environ.get(STORE_ENV) or default_store_path())


async def cmd_advise(args: argparse.Namespace) -> int:
    from memo_solver.advice import advise
    from memo_solver.state import StateError, parse_state

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
    from memo_solver.advice import advise
    from memo_solver.state import parse_state

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
    from memo_solver import ops

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
    from memo_solver import review, simulate, stats, table

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
    from memo_solver.play import play_game

    async def work(engine: Engine, rules: RuleSet) -> int:
        return await play_game(engine, rules, sys.stdin, sys.stdout, as_json=args.json)

    return await _with_engine(args, work)


if __name__ == "__main__":
    sys.exit(main())
