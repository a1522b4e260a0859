"""``memo-solver serve`` refusing to start: a bad value, a port in use, a host of another
machine, each one line naming what to change.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support.cli_support import (
    memo_solver,
    one_error_line,
)

from memo_solver.cli.common import EXIT_UNAVAILABLE


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--workers", "0", "must be 1 or more, got 0"),
        ("--header-timeout", "0", "must be more than 0, got 0"),
        ("--deadline", "nan", "must be more than 0, got nan"),
        ("--cold-budget", "-1", "must be 1 or more, got -1"),
        ("--need-budget", "0", "must be 1 or more, got 0"),
        ("--rule-engines", "0", "must be 1 or more, got 0"),
        ("--cache-mb", "lots", "expected a whole number, got 'lots'"),
        ("--port", "99999", "must be 1 to 65535, got 99999"),
    ],
)
def test_serve_refuses_a_bad_value_naming_its_option_alone(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    line = one_error_line(memo_solver(tmp_path / "s.sqlite3", "serve", option, value))
    assert line.startswith(f"memo-solver: error: argument {option}: {says} (see ")
    assert line.count("--") == 2, line  # the option and the help's


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_serve_on_a_port_in_use_says_so_before_serving(tmp_path: Path) -> None:
    """Status 69 (EX_UNAVAILABLE): the command is right, the port is another's."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        for workers in ("1", "2"):
            result = memo_solver(
                tmp_path / "s.sqlite3", "serve", "--port", str(port), "--workers", workers
            )
            line = one_error_line(result, EXIT_UNAVAILABLE)
            assert line == (
                f"memo-solver: error: cannot listen on 127.0.0.1:{port}: Address already in use "
                "(choose another --port)"
            )
            assert result.stdout == ""


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_serve_on_a_host_of_another_machine_is_bad_input(tmp_path: Path) -> None:
    """192.0.2.1 is TEST-NET-1 (RFC 5737): documentation's, never a machine's own."""
    result = memo_solver(tmp_path / "s.sqlite3", "serve", "--host", "192.0.2.1")
    assert one_error_line(result).startswith(
        "memo-solver: error: --host 192.0.2.1: not an address of this machine"
    )
    assert result.stdout == ""
