"""A worker's settings: the environment configures a container, the command line wins.

Every knob a deployment needs (Redis URL, concurrency, lease length, id) has an
environment variable, so ``docker-compose.yml`` needs no command line; where both are
given, the command line is what the operator typed last, and it wins. ``memo-solver
worker`` resolves its options as every other command does: ``--redis`` and ``-v`` before
or after ``worker``, the value after it winning.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
import redis
from support.cli_support import one_error_line
from support.worker_support import ENV, HEARTBEAT_S, Children, heartbeat, start_workers, wait_for

from memo_solver.cli.parser import build_parser
from memo_solver.cli.worker_options import settings_from, settings_of
from memo_solver.jobs.settings import (
    DEFAULT_REDIS_URL,
    ENV_CONCURRENCY,
    ENV_JOB_TTL_S,
    ENV_LEASE_S,
    ENV_REDIS_URL,
    ENV_THREADS,
    ENV_WORKER_ID,
    WorkerSettings,
)

ENVIRONMENT = {
    ENV_REDIS_URL: "redis://from-env:6379/1",
    ENV_CONCURRENCY: "3",
    ENV_THREADS: "2",
    ENV_LEASE_S: "4.5",
    ENV_WORKER_ID: "env-worker",
    ENV_JOB_TTL_S: "3600",
}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_without_environment_or_options_the_defaults_apply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    settings = settings_from([])
    assert (settings.redis_url, settings.concurrency, settings.lease_s) == (
        DEFAULT_REDIS_URL,
        1,
        10.0,
    )
    assert settings.threads == 1  # workers scale by process
    assert settings.job_ttl_s == 86_400  # a finished job's record is kept a day
    assert settings.worker_id.startswith(f"{socket.gethostname()}:")


def test_the_environment_configures_a_worker(environment: pytest.MonkeyPatch) -> None:
    settings = settings_from([])
    assert settings.redis_url == "redis://from-env:6379/1"
    assert settings.concurrency == 3
    assert settings.threads == 2
    assert settings.lease_s == 4.5
    assert settings.worker_id == "env-worker"
    assert settings.job_ttl_s == 3600
    assert settings.stale_job_s == 3 * 4.5  # three leases (more than five heartbeats of 2 s)


def test_the_command_line_overrides_the_environment(environment: pytest.MonkeyPatch) -> None:
    typed = ["--redis", "redis://typed:6379/2", "--concurrency", "2", "--lease", "6"]
    settings = settings_from([*typed, "--id", "cli", "--job-ttl", "60", "--threads", "4"])
    assert settings.redis_url == "redis://typed:6379/2"
    assert settings.concurrency == 2
    assert settings.threads == 4
    assert settings.lease_s == 6.0
    assert settings.worker_id == "cli"
    assert settings.job_ttl_s == 60


@pytest.mark.parametrize(
    ("variable", "value"),
    [(ENV_CONCURRENCY, "two"), (ENV_LEASE_S, "ten"), (ENV_LEASE_S, "-1"), (ENV_JOB_TTL_S, "0")],
)
def test_a_bad_number_in_the_environment_is_a_usage_error(
    environment: pytest.MonkeyPatch, variable: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.setenv(variable, value)
    with pytest.raises(SystemExit) as stopped:
        settings_from([])
    assert stopped.value.code == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--concurrency", "--threads", "--lease", "--job-ttl"])
def test_zero_on_the_command_line_is_refused_not_replaced_by_the_environment(
    environment: pytest.MonkeyPatch, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        settings_from([option, "0"])
    assert stopped.value.code == 2
    assert "must be positive" in capsys.readouterr().err


# --- memo-solver worker: the options of every command, on either side --------------------------


def memo_solver_worker(*argv: str) -> WorkerSettings:
    """The settings ``memo-solver ARGV`` gives the worker it starts."""
    args = build_parser().parse_args(list(argv))
    assert args.command == "worker"
    return settings_of(args)


@pytest.mark.parametrize(
    ("argv", "url"),
    [
        (["--redis", "redis://before:6379/1", "worker"], "redis://before:6379/1"),
        (["worker", "--redis", "redis://after:6379/2"], "redis://after:6379/2"),
        (
            ["--redis", "redis://before/1", "worker", "--redis", "redis://after/2"],
            "redis://after/2",
        ),
        (["worker"], "redis://from-env:6379/1"),
    ],
    ids=["before", "after", "after-wins", "environment"],
)
def test_the_redis_named_on_either_side_of_worker_wins_over_the_environment(
    environment: pytest.MonkeyPatch, argv: list[str], url: str
) -> None:
    assert memo_solver_worker(*argv).redis_url == url


@pytest.mark.parametrize("argv", [["-v", "worker"], ["worker", "-v"], ["--verbose", "worker"]])
def test_verbose_reaches_the_worker_from_either_side(argv: list[str]) -> None:
    assert memo_solver_worker(*argv).verbose
    assert not memo_solver_worker("worker").verbose


def test_the_check_looks_for_the_id_given_else_this_hosts_workers(
    environment: pytest.MonkeyPatch,
) -> None:
    assert memo_solver_worker("worker", "--check", "--id", "w1").check_pattern == "w1"
    assert settings_from(["--check"]).check_pattern == f"{socket.gethostname()}:*"
    assert settings_from(["--check"]).worker_id == "env-worker"


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memo_solver", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )


@pytest.mark.parametrize(
    "argv", [["--store", "s.db", "worker"], ["worker", "--store", "s.db", "--check"]]
)
def test_a_worker_refuses_a_store_file_it_cannot_serve(argv: list[str]) -> None:
    assert "a worker serves jobs from Redis only" in one_error_line(run_cli(*argv))


def test_a_bad_worker_option_is_one_line(environment: pytest.MonkeyPatch) -> None:
    assert "must be positive" in one_error_line(run_cli("worker", "--lease", "0"))


@pytest.mark.parametrize("side", ["before", "after"])
def test_the_check_asks_the_redis_named_on_either_side(
    redis_url: str, r: redis.Redis, children: Children, side: str
) -> None:
    start_workers(children, r, redis_url, ["w1"])
    named = ["--redis", redis_url]
    argv = [*named, "worker"] if side == "before" else ["worker", *named]
    alive = run_cli(*argv, "--check", "--id", "w1")
    assert alive.returncode == 0, alive.stderr
    assert alive.stdout.strip() == "worker check: 1 live (w1)"
    missing = run_cli(*argv, "--check", "--id", "w2")
    assert missing.returncode == 1
    assert f"no live worker matching 'w2' at {redis_url}" in missing.stderr


def test_a_worker_serves_the_redis_named_before_the_command(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    command = ["--redis", redis_url, "worker", "--id", "global", "--heartbeat", str(HEARTBEAT_S)]
    children.spawn("global", [sys.executable, "-m", "memo_solver", *command])
    wait_for("the worker's heartbeat in the Redis named", lambda: heartbeat(r, "global"), 30)
