"""What every refused command line must look like, checked one way for every test."""

from __future__ import annotations

import subprocess

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
