"""A worker's settings: the environment configures a container, the command line wins.

Every knob a deployment needs (Redis URL, concurrency, lease length, id) has an
environment variable, so ``docker-compose.yml`` needs no command line; where both are
given, the command line is what the operator typed last, and it wins.
"""

from __future__ import annotations

import socket

import pytest

from worker.settings import (
    DEFAULT_REDIS_URL,
    ENV_CONCURRENCY,
    ENV_JOB_TTL_S,
    ENV_LEASE_S,
    ENV_REDIS_URL,
    ENV_WORKER_ID,
    settings_from,
)

ENVIRONMENT = {
    ENV_REDIS_URL: "redis://from-env:6379/1",
    ENV_CONCURRENCY: "3",
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
    assert settings.job_ttl_s == 86_400  # a finished job's record is kept a day
    assert settings.worker_id.startswith(f"{socket.gethostname()}:")


def test_the_environment_configures_a_worker(environment: pytest.MonkeyPatch) -> None:
    settings = settings_from([])
    assert settings.redis_url == "redis://from-env:6379/1"
    assert settings.concurrency == 3
    assert settings.lease_s == 4.5
    assert settings.worker_id == "env-worker"
    assert settings.job_ttl_s == 3600
    assert settings.stale_job_s == 3 * 4.5  # three leases (more than five heartbeats of 2 s)


def test_the_command_line_overrides_the_environment(environment: pytest.MonkeyPatch) -> None:
    typed = ["--redis", "redis://typed:6379/2", "--concurrency", "2", "--lease", "6"]
    settings = settings_from([*typed, "--id", "cli", "--job-ttl", "60"])
    assert settings.redis_url == "redis://typed:6379/2"
    assert settings.concurrency == 2
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


@pytest.mark.parametrize("option", ["--concurrency", "--lease", "--job-ttl"])
def test_zero_on_the_command_line_is_refused_not_replaced_by_the_environment(
    environment: pytest.MonkeyPatch, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        settings_from([option, "0"])
    assert stopped.value.code == 2
    assert "must be positive" in capsys.readouterr().err
