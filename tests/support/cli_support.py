"""The ``memo-solver`` command as the tests run it (a real process on a store in a temporary
folder), and what every refused command line must look like, checked one way for every test.

Every run passes ``--store``, so the user's own cache is never touched. The values pinned
here come from ``shared/pins.md`` (exact backward DP, cross-checked against published figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memo_solver.cli.parser import build_parser
from memo_solver.core.compiled import CACHE_ENV, cache_dir

USAGE = 2
"""Exit status of bad input: fix the command."""
TEMPFAIL = 75
"""Exit status of store trouble (EX_TEMPFAIL): the same command may work later."""
TINY_RULES = {
    "name": "tiny",
    "dice": 1,
    "rerolls": 1,
    "boxes": [{"name": "chance", "kind": "chance"}],
}
"""A rule-set file's JSON for a whole game solved in a blink: one die, one chance box, one
reroll (keep a 4, 5 or 6, else roll again: the start is worth 4.25)."""


def one_error_line(result: subprocess.CompletedProcess[str], status: int = USAGE) -> str:
    """The single stderr line of a command that refused its input (exit status 2), or that
    the store failed (``status=TEMPFAIL``). Bad input is refused before any work starts; a
    store can fail during a solve, after the one line that says what it set out to solve."""
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    if status == TEMPFAIL and lines[:1] and lines[0].startswith("solving "):
        lines = lines[1:]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memo-solver: error:")
    assert "Traceback" not in result.stderr
    return lines[0]


# ``python -m memo_solver.cli.main`` does nothing (cli.py has no ``__main__`` guard), so the
# tests run the console script installed beside the interpreter.
CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if k != "MEMO_SOLVER_STORE"},
    "OPENBLAS_NUM_THREADS": "1",
    # The compiled code the suite's own processes use, wherever a test puts the cache folder.
    CACHE_ENV: str(cache_dir()),
}
TIMEOUT_S = 120
TOL = 1e-9


PINS = {
    "yahtzee": 254.5877287345,
    "yazy": 165.7573187094,
    "yahtzee-upper": 71.9515297337,
    "yahtzee-upper-no-bonus": 59.1632004354,
    "yahtzee-lower": 139.9712924424,
}


def memo_solver(
    store: Path, *args: str, stdin: str | None = None, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        check=False,
    )


def answer(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def status_store(env: dict[str, str], *args: str, after: tuple[str, ...] = ()) -> str:
    """Which store ``status`` reads, given the environment and the options (before the
    command, and ``after`` it)."""
    result = subprocess.run(
        [str(CLI), *args, "status", *after, "--json"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        check=False,
    )
    return str(answer(result)["store"])


def on_a_terminal(*argv: str, columns: int = 120) -> str:
    """Run a command with a pseudo-terminal as its stdout and stderr, as a person would see it."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=ENV
    )
    os.close(follower)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(timeout=TIMEOUT_S) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace")


# Each command with the arguments it requires, for parsing alone.
COMMANDS: dict[str, list[str]] = {
    "rules": [],
    "advise": ["start"],
    "value": [],
    "precompute": [],
    "play": [],
    "status": [],
    "prune": [],
    "compile": [],
    "export": ["--to", "x.msgpack"],
    "import": ["--from", "x.msgpack"],
    "stats": [],
    "simulate": [],
    "review": ["game.json"],
    "export-table": ["--out", "t.npz"],
    "serve": [],
    "worker": [],
}


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser with its options: a parser is given them when first used (its
    usage written, here), so that a command's start builds its own options only."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parsers: dict[str, argparse.ArgumentParser] = dict(commands.choices)
    for parser in parsers.values():
        parser.format_usage()
    return parsers
