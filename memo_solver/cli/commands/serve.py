"""``memo-solver serve``: the HTTP service's options and the handler that checks them, the
store and the address before uvicorn starts, so that each failure is one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from memo_solver.cli.command import Command
from memo_solver.cli.common import (
    EXIT_UNAVAILABLE,
    PROG,
    Output,
    UsageError,
    store_location,
    store_name,
)
from memo_solver.cli.options import positive_float, positive_int, tcp_port
from memo_solver.core.runtime import freeze_startup_objects

if TYPE_CHECKING:
    from memo_solver.jobs.storage import Location


def _serve_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=tcp_port, default=8000, help="port")
    serve.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="server processes on the port, sharing the store, each with its own block cache "
        "(default: 1; about one per core)",
    )
    serve.add_argument(
        "--deadline",
        type=positive_float,
        default=10.0,
        help="seconds before a cold request gets 503",
    )
    serve.add_argument(
        "--cache-mb",
        type=positive_int,
        default=256,
        help="in-process block cache per rule set, MiB",
    )
    serve.add_argument(
        "--header-timeout",
        type=positive_float,
        default=10.0,
        help="seconds a client has to send a request's headers before it is cut off (default: 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=positive_float,
        help="seconds a client has to send a request's body once its headers are in, before it "
        "is cut off (default: $MEMO_SOLVER_BODY_TIMEOUT, else 10)",
    )
    serve.add_argument(
        "--max-connections",
        type=positive_int,
        help="open connections per server process; past it the one waiting longest for its "
        "client is closed (default: $MEMO_SOLVER_MAX_CONNECTIONS, else half the process's "
        "descriptor limit)",
    )
    serve.add_argument(
        "--doom-limit",
        type=positive_int,
        default=1_000_000,
        help="most positions one Dice of Doom request may solve (default: 1,000,000)",
    )
    serve.add_argument(
        "--cold-budget",
        type=positive_int,
        default=2_500_000,
        help="most turn starts a cold rule-set request may solve here; past it the state goes "
        "to the workers (503) or is refused (422) (default: 2,500,000: the whole yatzy)",
    )
    serve.add_argument(
        "--need-budget",
        type=positive_int,
        default=30_000_000,
        help="most chances (turn starts times needs) a cold request with a need may solve here; "
        "past it, the state goes to the workers (503) or is refused (422) (default: "
        "30,000,000: nine open yahtzee boxes)",
    )
    serve.add_argument(
        "--rule-engines",
        type=positive_int,
        default=16,
        help="engines kept open for rule sets not built in, least recently used "
        "closed first; they share --cache-mb (default: 16)",
    )
    _serve_limits(serve)


def _serve_limits(serve: argparse.ArgumentParser) -> None:
    """What an anonymous client may cost: registrations and solves past the cold budget.
    Each option's default is its environment variable's (argparse reads it as the option's
    text, so a bad one is refused as a bad option would be), else the service's."""
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
        type=positive_int,
        default=from_env(WHOLE_GAME_QUEUE_ENV, defaults.whole_game_queue),
        help="most such solves queued or running at once; past it, 429; the operator's "
        f"precompute is never counted (default: ${WHOLE_GAME_QUEUE_ENV}, else "
        f"{defaults.whole_game_queue})",
    )
    serve.add_argument(
        "--whole-game-max",
        type=positive_int,
        default=from_env(WHOLE_GAME_MAX_ENV, defaults.whole_game_max),
        help="most turn starts one such solve may have; past it, 422 (default: "
        f"${WHOLE_GAME_MAX_ENV}, else {defaults.whole_game_max:,}: every built-in)",
    )


def _serve(args: argparse.Namespace, out: Output) -> int:
    import anyio

    from memo_solver.jobs.storage import open_store_and_queue
    from memo_solver.service.app import create_app
    from memo_solver.service.serving import (
        BODY_TIMEOUT_ENV,
        MAX_CONNECTIONS_ENV,
        connection_limits,
        http_protocol,
    )
    from memo_solver.service.settings import REGISTRATION, WHOLE_GAME_SOLVES, ApiSettings

    # The options' values are checked as they are parsed (their types); these two may come
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
    out.emit(
        {"listening": listening, "store": store_name(args), "workers": args.workers},
        f"serving on {listening} (store: {store_name(args)}{processes})",
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


SERVE = Command(
    "serve", "run the HTTP advice service (OpenAPI docs at /docs)", _serve_options, _serve
)
