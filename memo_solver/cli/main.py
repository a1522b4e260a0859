"""The ``memo-solver`` command: player, analyst and operator commands on the embedded store.

This is the edge: the command line, parsed by :mod:`memo_solver.cli.parser`, becomes
typed values here (a game of the registry, a rule set, options as dataclasses, the
store's location, where the answer goes) and the store and its job queue are opened
here; the command modules and every layer below them never see the parsed namespace.

Heavy imports (numpy, anyio) wait until a command needs them, so ``--help`` and errors are
instant and a warm ``advise`` stays well under a second as a whole process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo_solver.cli.common import (
    EXIT_PIPE,
    EXIT_TEMPFAIL,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    PROG,
    REDIS_ENV,
    STORE_ENV,
    Output,
    UsageError,
    leave_interrupted,
)
from memo_solver.cli.parser import DOOM, build_parser
from memo_solver.core.cache import memo_bytes
from memo_solver.core.errors import UserError
from memo_solver.core.runtime import freeze_startup_objects, pin_blas_threads
from memo_solver.core.store import StoreUnavailableError

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.games.entry import GameEntry
    from memo_solver.games.yahtzee import RuleSet
    from memo_solver.jobs.queue import JobQueue
    from memo_solver.jobs.settings import WorkerSettings
    from memo_solver.jobs.storage import Location

EngineWork = Callable[["Engine", "RuleSet", "JobQueue | None"], Coroutine[Any, Any, int]]
NeedWork = Callable[["Engine", "Engine", "RuleSet"], Coroutine[Any, Any, int]]
"""A command playing for a need: on the need table's engine, the mean game's, the rules."""
"""A command on a Yahtzee-family rule set: its engine, the rules, the store's job queue."""


def main(argv: Sequence[str] | None = None) -> int:
    pin_blas_threads()
    warnings.formatwarning = _format_warning
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse's refusal (its line written), --help, --version
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if args.command == "worker":
            settings = _worker_settings(args)
        else:
            logging.basicConfig(
                level=logging.DEBUG if args.verbose else logging.WARNING,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            )
            status = _dispatch(args)
            sys.stdout.flush()  # here, where a reader that has gone is met by the handler
            return status
    except BrokenPipeError:  # before OSError's: a reader that has gone is no bad input
        return _reader_gone()
    except UserError as exc:  # before the store's: a location that cannot be one is bad input
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreUnavailableError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_TEMPFAIL
    except KeyboardInterrupt:
        leave_interrupted()
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


def _reader_gone() -> int:
    """Standard output's reader left early (``| head -1``): stop without a word, as a
    tool that SIGPIPE ends does, with the status a shell reports for one (128 + 13), so that
    ``set -o pipefail`` still sees the answer was cut short. Standard output goes to
    /dev/null first: the interpreter flushes it once more at exit, and that flush would
    meet the closed pipe again and print Python's own complaint."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE


_PYTHON_FORMAT_WARNING = warnings.formatwarning


def _format_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    """The package's own warnings (a compile cache folder it cannot use) speak to the person
    running the command: one line, like its errors; other libraries' keep Python's form."""
    if category.__module__.startswith("memo_solver."):
        return f"{PROG}: warning: {message}\n"
    return _PYTHON_FORMAT_WARNING(message, category, filename, lineno, line)


def _worker_settings(args: argparse.Namespace) -> WorkerSettings:
    """A worker's settings on the options as every command resolves them: --redis and -v on
    either side of ``worker``, the command line over the environment."""
    from memo_solver.cli.worker_options import settings_of
    from memo_solver.jobs.settings import SettingsError

    if args.store:
        raise UsageError(
            f"--store: a worker serves jobs from Redis only, not an SQLite file; give --redis "
            f"URL (or ${REDIS_ENV})"
        )
    if args.json:
        raise UsageError("--json: a worker prints no answer, only its log")
    try:
        return settings_of(args)
    except SettingsError as exc:
        raise UsageError(f"{exc} (see '{PROG} worker --help')") from None


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "rules":
            return cmd_rules(args.action, args.name, Output(args.json))
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "compile":
            from memo_solver.cli.compiled import compile_command

            return compile_command(Output(args.json))
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
    from memo_solver.stores.redis_client import FAULTS, store_error

    return store_error(exc, _store_name(args)) if isinstance(exc, FAULTS[:2]) else None


DOOM_COMMANDS = ("advise", "stats", "play")
OPERATIONS = ("precompute", "status", "prune", "export", "import")


def _run_async(args: argparse.Namespace) -> int:
    import anyio

    location, out = store_location(args), Output(args.json)
    if args.command in OPERATIONS:
        return anyio.run(_operate, args, location, out)
    if args.command in DOOM_COMMANDS and args.game == DOOM:
        return _doom(args, location, out)
    if getattr(args, "opponent", None) is not None:
        if args.need is not None:
            raise UsageError("give --need or --opponent, not both")
        beat = _beat_work(args, out)
        return anyio.run(_with_engine, _rule_set(args), location, beat)
    need = getattr(args, "target" if args.command == "play" else "need", None)
    if need is not None:
        work = _need_work(args, out, need)
        if args.need_threads < 1:
            raise UsageError(f"--need-threads must be 1 or more, got {args.need_threads}")
        threads = min(args.need_threads, len(os.sched_getaffinity(0)))
        return anyio.run(
            _with_need_engines, _rule_set(args), location, args.need_cap, threads, work
        )
    return anyio.run(_with_engine, _rule_set(args), location, _engine_work(args, out))


def _doom(args: argparse.Namespace, location: Location, out: Output) -> int:
    import anyio

    from memo_solver.cli import doom

    if args.command == "play":
        return doom.play_command(doom.PlayOptions.from_args(args), out)
    if args.state in ("-", "start"):
        raise UsageError(
            f"give the board, e.g. {PROG} {args.command} --game dice-of-doom "
            "'a-3 b-3 / a-2 b-2' --to-move a"
        )
    position = doom.PositionOptions(args.state, args.to_move, args.captured, args.limit)
    if args.command == "advise":
        return anyio.run(doom.advise_command, position, location, out)
    return anyio.run(doom.stats_command, position, out)


def store_location(args: argparse.Namespace) -> Location:
    """The store the options name, for every command alike: a Redis URL, or an SQLite file.

    The command line wins over the environment (``--store`` over ``--redis``); in the
    environment a Redis URL wins over a store file; else the file in the cache folder.
    """
    url = args.redis or os.environ.get(REDIS_ENV)
    if url and not args.store:
        from memo_solver.stores.redis_client import CLUSTER_ENV, with_cluster_mode

        mode = getattr(args, "redis_cluster", None) or os.environ.get(CLUSTER_ENV)
        return with_cluster_mode(str(url), mode)
    return Path(args.store or os.environ.get(STORE_ENV) or default_store_path())


def default_store_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memo-solver")) / "store.sqlite3"


def _store_name(args: argparse.Namespace) -> str:
    from memo_solver.stores.redis_client import redacted

    location = store_location(args)
    return redacted(location) if isinstance(location, str) else str(location)


def cmd_rules(action: str, name: str | None, out: Output) -> int:
    from memo_solver.games.yahtzee import RULE_SETS, get_rule_set

    if action == "show":
        from memo_solver.games.yahtzee import format_rule_document, rule_set_document

        if name is None:
            raise UsageError("rules show: name the built-in rule set to print, e.g. yatzy")
        document = rule_set_document(get_rule_set(name))
        out.emit(document, format_rule_document(document).rstrip("\n"))
        return 0
    if name is not None:
        raise UsageError(f"rules list takes no name (did you mean 'rules show {name}'?)")

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
    out.emit(rows, text)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import anyio

    from memo_solver.jobs.storage import open_store_and_queue
    from memo_solver.service.app import ApiSettings, create_app
    from memo_solver.service.serving import (
        BODY_TIMEOUT_ENV,
        MAX_CONNECTIONS_ENV,
        connection_limits,
        http_protocol,
    )
    from memo_solver.service.settings import REGISTRATION, WHOLE_GAME_SOLVES

    # The options' values are checked as they are parsed (parser.py); these two may come
    # from the environment instead, so they are checked here.
    body_timeout, max_connections = connection_limits(args.body_timeout, args.max_connections)
    for variable, value in (
        (BODY_TIMEOUT_ENV, body_timeout),
        (MAX_CONNECTIONS_ENV, max_connections),
    ):
        if not value > 0:
            raise UsageError(f"${variable} must be more than 0, got {value}")
    if args.registration_quota < 0:
        raise UsageError("--registration-quota must be 0 or more")
    for option, value, choices in (
        ("--registration", args.registration, REGISTRATION),
        ("--whole-game-solves", args.whole_game_solves, WHOLE_GAME_SOLVES),
    ):  # argparse checks a given option's choice, not one from the environment
        if value not in choices:
            raise UsageError(f"{option} must be one of {', '.join(choices)}, got {value!r}")

    location = store_location(args)
    anyio.run(_check_store, location)  # fail now, in one line, if the store cannot be reached
    taken = _address_taken(args.host, args.port)
    if taken is not None:
        print(f"{PROG}: error: {taken}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    settings = ApiSettings(
        deadline_s=args.deadline,
        cache_bytes=args.cache_mb << 20,
        doom_limit=args.doom_limit,
        cold_budget=args.cold_budget,
        need_budget=args.need_budget,
        rule_engines=args.rule_engines,
        registration=args.registration,
        registration_quota=args.registration_quota,
        whole_game_solves=args.whole_game_solves,
        whole_game_queue=args.whole_game_queue,
        whole_game_max=args.whole_game_max,
    )
    uvicorn_options = {
        "host": args.host,
        "port": args.port,
        "log_level": "info" if args.verbose else "warning",
        "access_log": args.verbose,  # off: not even formatted (warning level drops it anyway)
        # uvicorn's own, one write per response
        "http": http_protocol(args.header_timeout, body_timeout, max_connections),
    }
    listening = f"http://{args.host}:{args.port}"
    processes = f", {args.workers} processes" if args.workers > 1 else ""
    Output(args.json).emit(
        {"listening": listening, "store": _store_name(args), "workers": args.workers},
        f"serving on {listening} (store: {_store_name(args)}{processes})",
    )
    if args.workers > 1:
        from memo_solver.service.processes import run_processes

        run_processes(args.workers, location, settings, uvicorn_options)
        return 0
    import uvicorn

    app = create_app(lambda: open_store_and_queue(location), settings)
    freeze_startup_objects()
    uvicorn.run(app, **uvicorn_options)
    return 0


def _address_taken(host: str, port: int) -> str | None:
    """Why the server cannot listen on ``host:port`` (a port in use, or one this user may
    not take), else None; a host that is no address of this machine is bad input.

    The address is bound once here, as uvicorn binds it, and let go: so that the failure is
    one line before "serving on" rather than uvicorn's log line and status 3 after it. A
    process that takes the port in the moment between still meets uvicorn's own."""
    import errno
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror as exc:
            raise UsageError(f"--host {host}: no such address ({exc.strerror})") from None
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise UsageError(
                    f"--host {host}: not an address of this machine ({exc.strerror})"
                ) from None
            return f"cannot listen on {host}:{port}: {exc.strerror} (choose another --port)"
    return None


async def _check_store(location: Location) -> None:
    from memo_solver.jobs.storage import open_store_and_queue

    store, _ = open_store_and_queue(location)
    async with store:
        await store.coverage("probe")


# --- the operator commands: any game of the registry ------------------------------------------


async def _operate(args: argparse.Namespace, location: Location, out: Output) -> int:
    from memo_solver.cli import ops
    from memo_solver.jobs.storage import open_store_and_queue

    store, queue = open_store_and_queue(location)
    async with store:
        if args.command == "status":
            also = None
            if args.rules_file is not None:
                from memo_solver.games.yahtzee import entry_for

                also = entry_for(_rules_of_file(args.rules_file))
            return await ops.status(args.verify, store, queue, location, out, also)
        if args.command == "prune":
            from memo_solver.cli.prune import prune, prune_unused

            if args.unused_for is not None:
                return await prune_unused(args.unused_for, args.dry_run, store, queue, out)
            return await prune(args.dry_run, store, out)
        entry = _game(args)
        if args.need:  # precompute, export and import: the rule set's need table
            entry = ops.need_table(entry, args.need_cap, getattr(args, "max_table_mb", None))
        if args.command == "precompute":
            if args.threads < 1:
                raise UsageError(f"--threads must be 1 or more, got {args.threads}")
            options = ops.PrecomputeOptions(
                args.wait, args.wait_for_workers, args.here, args.threads, memo_bytes(args.cache_mb)
            )
            return await ops.precompute(entry, options, store, queue, out)
        if args.command == "export":
            return await ops.transfer("export", entry, args.to, store, out)
        return await ops.transfer("import", entry, args.source, store, out)


def _game(args: argparse.Namespace) -> GameEntry:
    """``--rules R``, or ``--game dice-of-doom --size N``: one game of the registry."""
    from memo_solver.games.registry import family, get_game

    if getattr(args, "rules_file", None) is not None and args.game == "yahtzee":
        from memo_solver.games.yahtzee import entry_for

        return entry_for(_rule_set(args))
    parameter = family(args.game).parameter
    return get_game(parameter.game_name(getattr(args, parameter.dest)))


def _rule_set(args: argparse.Namespace) -> RuleSet:
    """``--rules NAME``, or the rule set of ``--rules-file FILE``."""
    from memo_solver.games.yahtzee import get_rule_set

    if args.rules_file is None:
        return get_rule_set(args.rules)
    return _rules_of_file(args.rules_file)


def _rules_of_file(path: Path) -> RuleSet:
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


# --- the commands on a Yahtzee-family rule set ------------------------------------------------


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


async def _with_need_engines(
    rules: RuleSet, location: Location, cap: int, threads: int, work: NeedWork
) -> int:
    """The commands playing for a need: on the need table's engine (its progress shown,
    the bulk of the work) and the mean game's, whose values break ties, on one store."""
    from memo_solver.cli.progress import SolveProgress
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee import NeedGame, entry_for
    from memo_solver.jobs.storage import open_store_and_queue

    entry, game = entry_for(rules), NeedGame(rules, cap)
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


def _need_work(args: argparse.Namespace, out: Output, need: int) -> NeedWork:
    """``advise``, ``value``, ``stats``, ``simulate`` or ``play`` playing for ``need``
    (``play``: a final score)."""
    if args.command in ("stats", "simulate"):
        from memo_solver.cli import analysis

        if args.command == "stats":
            stats = analysis.StatsOptions.from_args(args)
            return lambda engine, mean, rules: analysis.need_stats_command(
                stats, need, engine, mean, rules, out
            )
        games = analysis.SimulateOptions.from_args(args)
        return lambda engine, mean, rules: analysis.simulate_command(
            games, mean, rules, out, need=(engine, need)
        )
    if args.command == "advise":
        return lambda engine, mean, rules: _advise_need(args.state, need, engine, mean, rules, out)
    if args.command == "value":
        return lambda engine, mean, rules: _value_need(args.state, need, engine, mean, rules, out)

    async def play(engine: Engine, mean: Engine, rules: RuleSet) -> int:
        from memo_solver.cli.play import Target, play_game

        target = Target(engine, need)
        return await play_game(mean, rules, sys.stdin, sys.stdout, as_json=out.json, target=target)

    return play


def _chance_rows(actions: Sequence[Any]) -> list[str]:
    """Every action with its chance, best first, beside its expected points and loss."""
    rows = ["", f"{'action':<40} {'chance':>9} {'value':>10} {'loss':>9}"]
    return rows + [
        f"{a.action.words():<40} {a.probability:>9.6f} {a.action.value:>10.4f} "
        f"{a.action.loss:>9.4f}"
        for a in actions
    ]


def _beat_work(args: argparse.Namespace, out: Output) -> EngineWork:
    """``advise --opponent``: every move's chance of finishing above the opponent."""

    async def beat(engine: Engine, rules: RuleSet, _: object) -> int:
        from memo_solver.games.yahtzee import Opponent, StateError, advise_beat, parse_state

        try:
            them = parse_state(args.opponent, rules)
        except StateError as exc:
            raise UsageError(f"--opponent: {exc.message}") from None
        state = parse_state(args.state, rules)
        opponent = Opponent(them, args.opponent_score)
        advice = await advise_beat(engine, rules, state, args.score, opponent)
        out.emit(advice.to_json(), _beat_text(advice))
        return 0

    return beat


def _beat_text(advice: Any) -> str:
    them = (
        f"the opponent finishes with {advice.opponent_mean:.2f} on average, "
        f"{advice.opponent_best} at best"
    )
    if not advice.actions:
        return f"Chance to finish above the opponent: {advice.probability:.6f} ({them})"
    best = advice.actions[0]
    lines = [
        f"Best to finish above the opponent: {best.action.words()}  "
        f"(chance {best.probability:.6f}; {them})",
        f"Best for points: {advice.mean.actions[0].words()}",
    ]
    return "\n".join(lines + _chance_rows(advice.actions))


def _engine_work(args: argparse.Namespace, out: Output) -> EngineWork:
    """The command to run on the rule set's engine, its options typed. The analyst
    commands' module loads only for them: it would slow a quick ``advise``."""
    command = args.command
    if command == "advise":
        return lambda engine, rules, _: _advise(args.state, engine, rules, out)
    if command == "value":
        return lambda engine, rules, _: _value(args.state, engine, rules, out)
    if command == "play":
        return lambda engine, rules, _: _play(engine, rules, out)
    from memo_solver.cli import analysis

    if command == "stats":
        stats = analysis.StatsOptions.from_args(args)
        return lambda engine, rules, queue: analysis.stats_command(stats, engine, rules, queue, out)
    if command == "simulate":
        games = analysis.SimulateOptions.from_args(args)
        return lambda engine, rules, _: analysis.simulate_command(games, engine, rules, out)
    if command == "review":
        source: str = args.game
        return lambda engine, rules, _: analysis.review_command(source, engine, rules, out)
    table = analysis.TableOptions.from_args(args)
    return lambda engine, rules, _: analysis.export_table_command(table, engine, rules, out)


async def _advise(state_text: str, engine: Engine, rules: RuleSet, out: Output) -> int:
    from memo_solver.games.yahtzee import advise, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        advice = await advise(engine, rules, parse_state(text, rules))
        return advice.to_json(), _advice_text(advice)

    return await _answer_states(state_text, answer, out)


async def _advise_need(
    state_text: str, need: int, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_need, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        advice = await advise_need(engine, mean, rules, parse_state(text, rules), need)
        return advice.to_json(), _need_advice_text(advice)

    return await _answer_states(state_text, answer, out)


async def _answer_states(
    state_text: str,
    answer: Callable[[str], Awaitable[tuple[dict[str, object], str]]],
    out: Output,
) -> int:
    """One state's answer, or with ``-`` one JSON line per state read from standard input
    (a bad line answered with its error, the others still answered; exit 2 if any was)."""
    from memo_solver.games.yahtzee import StateError

    if state_text != "-":
        out.emit(*await answer(state_text))
        return 0
    bad = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            payload, _ = await answer(line)
        except StateError as exc:
            bad += 1
            payload = {"error": {"line": number, "field": exc.field, "message": exc.message}}
        print(json.dumps(payload), flush=True)
    return EXIT_USAGE if bad else 0


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


def _need_advice_text(advice: Any) -> str:
    need = advice.need
    if advice.mean.game_over:
        met = "met" if need <= 0 else "missed"
        return f"The game is over: no points are left to win, and a need of {need} is {met}."
    if not advice.actions:
        return (
            f"Roll the dice. Best chance of {need} more points from here: "
            f"{advice.probability:.6f} (expect {advice.mean.value:.4f} more points)"
        )
    best = advice.actions[0]
    lines = [
        f"Best for {need} more points: {best.action.words()}  (chance {best.probability:.6f})",
        f"Chance before this turn's first roll: {advice.turn_start_probability:.6f}",
        f"Best for points: {advice.mean.actions[0].words()}",
    ]
    return "\n".join(lines + _chance_rows(advice.actions))


async def _value_need(
    state_text: str, need: int, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_need, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        before = engine.counters.computed + mean.counters.computed
        advice = await advise_need(engine, mean, rules, parse_state(text, rules), need)
        payload = {
            "rules": rules.name,
            "need": need,
            "cap": advice.cap,
            "probability": advice.probability,
            "turn_start_probability": advice.turn_start_probability,
            "value": advice.mean.value,
            "blocks_computed": engine.counters.computed + mean.counters.computed - before,
        }
        return payload, f"{advice.probability:.10f}"

    return await _answer_states(state_text, answer, out)


async def _value(state_text: str, engine: Engine, rules: RuleSet, out: Output) -> int:
    from memo_solver.games.yahtzee import advise, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        before = engine.counters.computed
        advice = await advise(engine, rules, parse_state(text, rules))
        payload = {
            "rules": rules.name,
            "value": advice.value,
            "turn_start_value": advice.turn_start_value,
            # What this state cost: 0 on a warm cache (it was there, or others computed it).
            "blocks_computed": engine.counters.computed - before,
        }
        return payload, f"{advice.value:.10f}"

    return await _answer_states(state_text, answer, out)


async def _play(engine: Engine, rules: RuleSet, out: Output) -> int:
    from memo_solver.cli.play import play_game

    return await play_game(engine, rules, sys.stdin, sys.stdout, as_json=out.json)


if __name__ == "__main__":
    sys.exit(main())
