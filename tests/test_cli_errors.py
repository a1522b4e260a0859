"""How the command refuses and fails, as a real process: bad input is one stderr line and
exit status 2 (fix the command), store trouble one line and 75 (retry later), a reader that
leaves early 141; never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from support.cli_support import (
    CLI,
    ENV,
    TEMPFAIL,
    TIMEOUT_S,
    TINY_RULES,
    answer,
    memo_solver,
    one_error_line,
)
from support.redis_server import RedisServer, free_port
from support.store_faults import FULL, on_every_connection, redis_at_maxmemory, store_file

from memo_solver.cli import main as memo_cli


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["advise", "dice=4 rerolls=1"],
        pytest.param(["simulate", "--show", "--games", "3"], marks=pytest.mark.full),
    ],
)
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    tmp_path: Path, args: list[str]
) -> None:
    """``| head -1`` closes the pipe while the command still writes: no error line, and
    141 (128 + SIGPIPE), what a shell reports for a tool that the signal ends. Here the
    reader has left before the command starts, so every run meets the closed pipe (with
    ``head`` the command only meets it when it writes after head has gone: one run in six)."""
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(TINY_RULES))
    store = tmp_path / "s.db"
    answer(memo_solver(store, "value", "--rules-file", str(tiny), "--json"))  # warm: no solve line
    command = subprocess.Popen(
        [str(CLI), "--store", str(store), *args, "--rules-file", str(tiny)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert command.stdout is not None
    command.stdout.close()
    _, errors = command.communicate(timeout=TIMEOUT_S)
    assert (command.returncode, errors) == (141, "")


# --- bad input ----------------------------------------------------------------------------------


def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path / "store.sqlite3"


BAD_INPUT: list[tuple[str, list[str], str, Callable[[Path], Path] | None]] = [
    ("four-dice", ["advise", "open=ones,yahtzee upper=62 dice=1222"], "expected 5 dice", None),
    ("six-dice", ["advise", "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6 6"], "dice", None),
    ("face-7", ["advise", "open=ones,yahtzee upper=62 dice=12227"], "face 7", None),
    ("face-0-json", ["advise", '{"dice": [0, 1, 2, 3, 4]}'], "face 0", None),
    ("unknown-box", ["advise", "filled=fooes"], "unknown box 'fooes'", None),
    ("box-twice", ["advise", "filled=twos,twos upper=4"], "listed twice", None),
    ("box-of-another-rule-set", ["advise", "filled=one_pair"], "one_pair", None),
    (
        "box-of-yazy-unknown",
        ["advise", "--rules", "yazy", "filled=chance"],
        "or their aliases Count 1s,",
        None,
    ),
    ("upper-3-with-twos", ["advise", "filled=twos upper=3"], "upper total 3", None),
    ("upper-40-with-ones", ["advise", "filled=ones upper=40"], "upper total 40", None),
    ("upper-negative", ["advise", "upper=-1"], "0 or more", None),
    ("rerolls-3", ["advise", "dice=12345 rerolls=3"], "rerolls_left", None),
    ("rerolls-1-without-dice", ["advise", "rerolls=1"], "rerolls left can only be 2", None),
    ("bonus-with-yahtzee-open", ["advise", "bonus=yes"], "yahtzee_bonus", None),
    ("malformed-json", ["advise", '{"filled": ['], "malformed JSON", None),
    ("json-unknown-key", ["advise", '{"filed": []}'], "unknown key", None),
    ("wrong-mark-count", ["advise", "- x - 0 False"], "marks", None),
    ("empty-state", ["advise", "  "], "empty", None),
    ("value-bad-state", ["value", "upper=7"], "upper total 7", None),
    ("unknown-rule-set", ["advise", "--rules", "yahtzee-deluxe", "start"], "unknown rule", None),
    ("unknown-command", ["frobnicate"], "invalid choice", None),
    ("unknown-option", ["advise", "--frobnicate", "start"], "unrecognized arguments", None),
    ("missing-state", ["advise"], "required", None),
    (
        "store-under-proc",
        ["value", "--rules", "yahtzee-upper"],
        "cannot open the store",
        lambda tmp: Path("/proc/memo-solver-test/store.sqlite3"),
    ),
    (
        "store-under-a-file",
        ["value", "--rules", "yahtzee-upper"],
        "cannot open the store",
        _a_file,
    ),
    ("store-is-a-folder", ["status"], "cannot open the store", lambda tmp: tmp),
]


@pytest.mark.parametrize(
    ("args", "expected", "store_at"),
    [case[1:] for case in BAD_INPUT],
    ids=[case[0] for case in BAD_INPUT],
)
def test_bad_input_is_one_line_on_stderr_and_exit_status_2(
    tmp_path: Path,
    args: list[str],
    expected: str,
    store_at: Callable[[Path], Path] | None,
) -> None:
    store = store_at(tmp_path) if store_at else tmp_path / "store.sqlite3"
    result = memo_solver(store, *args)

    assert expected in one_error_line(result)
    assert result.stdout == ""


EXITS_LIKE_PYTHON = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran"))
threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
from memo_solver.cli.main import run
run()
"""
"""The console command's entry with an exit callback and a thread still running."""


@pytest.mark.parametrize(
    ("args", "status"), [(["value", "--json"], 0), (["value", "--rules", "no-such-game"], 2)]
)
def test_the_command_leaves_as_an_exit_would_less_the_modules_teardown(
    tmp_path: Path, args: list[str], status: int
) -> None:
    """The console command skips the interpreter's teardown of its modules (0.15 to 0.25 s
    of a cold advice), not what an exit owes first: other threads finished, exit callbacks
    run after them, the answer written, and the command's own status."""
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(TINY_RULES))
    rules = ["--rules-file", str(tiny)] if "--rules" not in args else []
    done = subprocess.run(
        [sys.executable, "-c", EXITS_LIKE_PYTHON, "--store", str(tmp_path / "s.db"), *args, *rules],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )
    assert done.returncode == status, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "atexit ran"
    assert "thread done" in lines
    answers = [line for line in lines if line.startswith("{")]
    if status == 0:
        assert json.loads(answers[0])["value"] > 0
    else:
        assert not answers
        assert "no-such-game" in one_error_line(done)


# --- store trouble: exit status 75 (retry later), never 2 (fix the command) -------------------


def on_redis(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``memo-solver --redis URL ARGS`` (no ``--store``: it would win over ``--redis``)."""
    return subprocess.run(
        [str(CLI), "--redis", url, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


def test_help_documents_the_exit_statuses(tmp_path: Path) -> None:
    words = " ".join(memo_solver(tmp_path / "s.sqlite3", "--help").stdout.split())
    assert "2 bad input (fix the command)" in words
    assert "75 the store failed: unreachable, refused the write, full, or locked" in words


@pytest.mark.parametrize(
    "args", [["value", "--rules", "yahtzee-lower"], ["status"], ["precompute", "--rules", "yazy"]]
)
def test_a_redis_with_nothing_listening_exits_75_in_one_line(args: list[str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    line = one_error_line(on_redis(url, *args), TEMPFAIL)
    assert line.startswith(f"memo-solver: error: cannot reach Redis at {url}")


def test_bad_input_is_still_2_while_the_store_is_down() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    assert "upper total 7" in one_error_line(on_redis(url, "value", "upper=7"))


def test_a_full_sqlite_store_exits_75_in_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process: SQLite's page limit is a setting of each connection the command opens.
    Before the error, the one line that says what the command set out to solve."""
    path = anyio.run(store_file, tmp_path / "memo.sqlite")
    on_every_connection(monkeypatch, FULL)
    status = memo_cli.main(["--store", str(path), "value", "--rules", "yahtzee-lower"])
    lines = capsys.readouterr().err.splitlines()
    assert status == TEMPFAIL
    assert lines == [lines[0], lines[-1]], lines
    assert lines[0].startswith("solving yahtzee-lower: 128 blocks to compute")
    assert lines[-1].startswith(f"memo-solver: error: the store {path} is full")


@pytest.mark.parametrize("mode", ["auto", "no"])
@pytest.mark.parametrize("args", [["status"], ["value", "--rules", "yahtzee-lower"]])
def test_a_redis_database_the_server_does_not_have_is_bad_input(
    redis_url: str, mode: str, args: list[str]
) -> None:
    """A server has 16 databases unless configured otherwise: /99999 is a typo to fix
    (2), not an outage to wait out (75)."""
    url = redis_url.removesuffix("/0") + "/99999"
    line = one_error_line(on_redis(url, "--redis-cluster", mode, *args))
    assert "names database 99999, which the server refuses (DB index is out of range)" in line


@pytest.mark.parametrize(
    "args", [["value", "--rules", "yahtzee-lower"], ["precompute", "--rules", "yahtzee-lower"]]
)
def test_a_redis_at_maxmemory_exits_75_saying_it_refused_the_write(
    fresh_redis: RedisServer, args: list[str]
) -> None:
    """``value`` claims blocks through the store; ``precompute`` queues a job on Redis
    directly: both say what Redis answered, not that it cannot be reached."""
    with fresh_redis.client() as client, redis_at_maxmemory(client):
        line = one_error_line(on_redis(fresh_redis.url, *args), TEMPFAIL)
    assert line.startswith(f"memo-solver: error: Redis at {fresh_redis.url} refused the write: OOM")
    assert "cannot reach" not in line


@pytest.mark.parametrize("url", ["redis://:s3cret@[bad", "redis://:s3cret@host:port/0"])
def test_an_unreadable_redis_url_is_one_line_and_keeps_its_password(
    tmp_path: Path, url: str
) -> None:
    result = subprocess.run(
        [str(CLI), "--redis", url, "status"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    line = one_error_line(result)
    assert "bad Redis URL" in line
    assert "s3cret" not in result.stderr
