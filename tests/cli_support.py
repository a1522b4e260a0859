"""What every refused command line must look like, checked one way for every test."""

from __future__ import annotations

import subprocess


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that refused its input with exit status 2."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memo-solver: error:")
    assert "Traceback" not in result.stderr
    return lines[0]
