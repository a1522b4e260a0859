"""The ``memo-solver`` command: player, analyst and operator commands on the embedded store.

This is the entry: the command line, parsed by :mod:`memo_solver.cli.parser`, names one
command of the table (:mod:`memo_solver.cli.commands`), whose handler gets the options and
where its answer goes (the typed ``--json``; ``-v`` sets the log here); and here every
error a command ends with becomes its one line and exit status. The command modules and
every layer below them see no exit status but their own.

Heavy imports (numpy, anyio) wait until a command needs them, so ``--help`` and errors are
instant and a warm ``advise`` stays well under a second as a whole process.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import NoReturn

from memo_solver.cli.command import Detached, Run
from memo_solver.cli.commands import commands
from memo_solver.cli.common import (
    EXIT_PIPE,
    EXIT_TEMPFAIL,
    EXIT_USAGE,
    PROG,
    Output,
    leave_interrupted,
    store_name,
)
from memo_solver.cli.parser import build_parser
from memo_solver.core.errors import UserError
from memo_solver.core.runtime import pin_blas_threads
from memo_solver.core.store import StoreUnavailableError


def main(argv: Sequence[str] | None = None) -> int:
    pin_blas_threads()
    warnings.formatwarning = _format_warning
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse's refusal (its line written), --help, --version
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        run = commands()[args.command].run
        if isinstance(run, Detached):
            work = run.settle(args)
        else:
            logging.basicConfig(
                level=logging.DEBUG if args.verbose else logging.WARNING,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            )
            status = _dispatch(run, args)
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
    return work()


def run() -> NoReturn:
    """The console command: :func:`main`, then out of the process without the
    interpreter's teardown of its modules.

    Tearing numba's modules down (its type registries, LLVM's objects) costs a process
    0.15 to 0.25 s of CPU after its answer is written: a fifth of a cold ``advise``, paid by
    every command that solved anything. Nothing of the answer waits for it: stores are
    closed and files written inside :func:`main`. What a normal exit does that matters is
    done here first, in its order: other threads joined, the ``atexit`` callbacks
    (logging's flush, temporary folders' removal), the standard streams' buffers."""
    status = main()
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # A reader gone, or a closed stream: the status already says so.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


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


def _dispatch(run: Run, args: argparse.Namespace) -> int:
    try:
        return run(args, Output(args.json))
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

    return store_error(exc, store_name(args)) if isinstance(exc, FAULTS[:2]) else None


if __name__ == "__main__":
    sys.exit(main())
