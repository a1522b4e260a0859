"""What every command module shares: the program's name and exit statuses, the errors that
end a command in one line, and where a command's answer goes.

Below every other CLI module (it imports none of them), so that the command modules and
:mod:`memo_solver.cli.main`, which calls them, form no cycle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from memo_solver.core.errors import UserError

PROG: Final = "memo-solver"
EXIT_USAGE: Final = 2
EXIT_TEMPFAIL: Final = 75
"""sysexits.h's EX_TEMPFAIL: the store failed (unreachable, refused the write, full, or
locked past the timeout); the same command may work later."""
EXIT_UNAVAILABLE: Final = 69
"""sysexits.h's EX_UNAVAILABLE: what the command needs is not there: no live worker for
``precompute --wait``, or a port ``serve`` cannot listen on (another server holds it)."""
EXIT_PIPE: Final = 141
"""Standard output's reader left before the answer was written (``| head``): 128 + SIGPIPE,
what a shell reports for a tool the signal ends; quiet, like such a tool."""
STORE_ENV: Final = "MEMO_SOLVER_STORE"
REDIS_ENV: Final = "MEMO_SOLVER_REDIS_URL"


class UsageError(UserError):
    """Bad input a command finds itself (an option out of range, a file it cannot use)."""

    field = "arguments"


@dataclass(frozen=True)
class Output:
    """Where a command's answer goes: words for a person, or JSON with ``--json``."""

    json: bool = False

    def emit(self, payload: object, text: str) -> None:
        print(json.dumps(payload) if self.json else text)
