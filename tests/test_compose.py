"""The deployment files: docker-compose.yml against the Compose specification, then what
the schema cannot say (persistence, health, scaling, wiring), and the Dockerfile's basics.

The schema check runs ``check-jsonschema``, which bundles the Compose specification's
schema, so it works offline; nothing here needs Docker.
"""

from __future__ import annotations

import http.server
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
VOLUME = "redis-data"

Service = dict[str, Any]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), "docker-compose.yml is not a mapping"
    return loaded


@pytest.fixture(scope="module")
def redis_service(compose: dict[str, Any]) -> Service:
    service: Service = compose["services"]["redis"]
    return service


@pytest.fixture(scope="module")
def worker_service(compose: dict[str, Any]) -> Service:
    service: Service = compose["services"]["worker"]
    return service


@pytest.fixture(scope="module")
def api_service(compose: dict[str, Any]) -> Service:
    service: Service = compose["services"]["api"]
    return service


def _command(value: str | list[str]) -> list[str]:
    """A command in either form (string or list), as its words."""
    return shlex.split(value) if isinstance(value, str) else [str(word) for word in value]


def _option(words: list[str], name: str) -> str | None:
    """The value of ``--name value`` among redis-server's arguments."""
    for i, word in enumerate(words[:-1]):
        if word.lower() == f"--{name}":
            return words[i + 1].lower()
    return None


def _environment(service: Service) -> dict[str, str]:
    """A service's environment in either form (mapping, or list of NAME=value)."""
    env = service.get("environment", {})
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {name: "" if value is None else str(value) for name, value in env.items()}


def _seconds(duration: str | int) -> float:
    """A Compose duration ("1m30s", "30s", "500ms") in seconds."""
    if isinstance(duration, int):
        return float(duration)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", duration)
    assert parts, f"not a duration: {duration!r}"
    assert "".join(n + u for n, u in parts) == duration, f"not a duration: {duration!r}"
    return sum(float(number) * units[unit] for number, unit in parts)


def _healthcheck(service: Service) -> list[str]:
    check = service.get("healthcheck")
    assert check, "no healthcheck"
    assert not check.get("disable", False), "healthcheck disabled"
    test = _command(check["test"])
    if test[0] == "CMD-SHELL":
        test = shlex.split(" ".join(test[1:]))
    elif test[0] == "CMD":
        test = test[1:]
    assert test, "empty healthcheck test"
    for field in ("interval", "timeout"):
        assert field in check, f"healthcheck sets no {field}"
        assert _seconds(check[field]) > 0
    assert int(check["retries"]) >= 1
    return test


def test_compose_file_is_valid_against_the_compose_specification() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(COMPOSE),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"check-jsonschema:\n{done.stdout}{done.stderr}"


def test_compose_file_has_no_obsolete_version_key(compose: dict[str, Any]) -> None:
    assert "version" not in compose, "the Compose specification dropped `version:`"
    assert set(compose["services"]) >= {"redis", "worker", "api"}


def test_redis_persists_with_an_append_only_file_synced_every_second(
    redis_service: Service,
) -> None:
    assert str(redis_service["image"]).split(":")[0] == "redis"
    words = _command(redis_service["command"])
    assert _option(words, "appendonly") == "yes", words
    assert _option(words, "appendfsync") == "everysec", words


def test_redis_data_lives_on_the_named_volume(
    compose: dict[str, Any], redis_service: Service
) -> None:
    assert VOLUME in (compose.get("volumes") or {}), f"top-level volumes lack {VOLUME}"
    mounts = []
    for mount in redis_service.get("volumes", []):
        if isinstance(mount, str):
            source, target = mount.split(":")[:2]
            mounts.append((source, target))
        else:
            mounts.append((mount.get("source"), mount.get("target")))
    assert (VOLUME, "/data") in mounts, mounts


def test_workers_scale_to_at_least_two(worker_service: Service) -> None:
    replicas = worker_service["deploy"]["replicas"]
    assert type(replicas) is int, f"replicas is {replicas!r}, not an integer"
    assert replicas >= 2


def test_workers_start_once_redis_is_healthy(worker_service: Service) -> None:
    depends_on = worker_service["depends_on"]
    assert isinstance(depends_on, dict), "the list form of depends_on waits for no health"
    assert depends_on["redis"]["condition"] == "service_healthy"


def test_both_services_check_their_health(redis_service: Service, worker_service: Service) -> None:
    assert _healthcheck(redis_service)[:2] == ["redis-cli", "ping"]
    assert _healthcheck(worker_service) == ["python", "-m", "worker", "--check"]


def test_workers_restart_and_stop_gracefully(worker_service: Service) -> None:
    assert worker_service["restart"] == "unless-stopped"
    # Long enough to release claims (and finish a block) before Docker's SIGKILL.
    assert _seconds(worker_service["stop_grace_period"]) >= 10


def test_workers_point_at_the_redis_service(
    compose: dict[str, Any], worker_service: Service
) -> None:
    env = _environment(worker_service)
    assert "MEMO_SOLVER_REDIS_URL" in env, sorted(env)
    url = urlsplit(env["MEMO_SOLVER_REDIS_URL"])
    assert url.scheme in {"redis", "rediss"}, url
    assert url.hostname == "redis", url
    assert url.hostname in compose["services"], url
    assert url.port in {None, 6379}, url


def test_api_serves_on_port_8000_from_the_same_image(
    api_service: Service, worker_service: Service
) -> None:
    assert api_service["build"] == worker_service["build"]
    words = _command(api_service["command"])
    assert words[:2] == ["memo-solver", "serve"], words
    assert words[words.index("--host") + 1] == "0.0.0.0", words
    assert words[words.index("--port") + 1] == "8000", words
    published = []
    for port in api_service["ports"]:
        if isinstance(port, dict):
            published.append((str(port.get("published")), str(port["target"])))
        else:
            host_side, _, container = str(port).rpartition(":")
            published.append((host_side.rpartition(":")[2], container.split("/")[0]))
    assert ("8000", "8000") in published, published


def test_api_points_at_redis_and_takes_the_operator_token_from_the_host(
    compose: dict[str, Any], api_service: Service
) -> None:
    env = _environment(api_service)
    url = urlsplit(env["MEMO_SOLVER_REDIS_URL"])
    assert url.scheme in {"redis", "rediss"}, url
    assert url.hostname == "redis", url
    assert url.hostname in compose["services"], url
    # Interpolated from the host's environment, empty (endpoints disabled) when unset:
    # never a token written into the file.
    assert env["MEMO_SOLVER_ADMIN_TOKEN"] == "${MEMO_SOLVER_ADMIN_TOKEN:-}", env


def test_api_checks_readiness_and_starts_once_redis_is_healthy(api_service: Service) -> None:
    test = _healthcheck(api_service)
    assert test[:2] == ["python", "-c"], test
    assert "http://127.0.0.1:8000/readyz" in " ".join(test), test
    depends_on = api_service["depends_on"]
    assert isinstance(depends_on, dict), "the list form of depends_on waits for no health"
    assert depends_on["redis"]["condition"] == "service_healthy"
    assert api_service["restart"] == "unless-stopped"


def test_api_health_check_passes_on_200_and_fails_when_nothing_listens(
    api_service: Service,
) -> None:
    test = _healthcheck(api_service)
    code = test[test.index("-c") + 1]
    seen: list[str] = []

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200 if self.path == "/readyz" else 404)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    def check(port: int) -> int:
        done = subprocess.run(
            [sys.executable, "-c", code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")],
            capture_output=True,
            timeout=30,
            check=False,
        )
        return done.returncode

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ready) as server:
        port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            assert check(port) == 0
        finally:
            server.shutdown()
    assert seen == ["/readyz"], seen
    assert check(port) != 0  # the server is gone: connection refused


def test_dockerfile_installs_the_project_and_runs_the_worker_unprivileged() -> None:
    lines = [
        line.strip()
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    text = "\n".join(lines)
    assert lines[0].startswith("FROM python:3.11-slim"), lines[0]
    assert "pip install --no-cache-dir ." in text
    assert "OPENBLAS_NUM_THREADS=1" in text
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users, "the image runs as root"
    assert users[-1] not in {"root", "0"}, users
    cmd = [line for line in lines if line.startswith("CMD ")]
    assert cmd[-1] == 'CMD ["python", "-m", "worker"]', cmd


def test_the_image_compiles_the_solver_at_build_time_into_a_folder_of_its_user() -> None:
    lines = [
        line.strip()
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    settings = [
        found.group(1)
        for line in lines
        if line.startswith("ENV ")
        and (found := re.search(r"\bMEMO_SOLVER_COMPILE_CACHE=(\S+)", line))
    ]
    assert len(settings) == 1, "the image does not name its compile cache folder"
    users = [i for i, line in enumerate(lines) if line.startswith("USER ")]
    user = lines[users[-1]].split()[1]
    # Under the user's home (useradd --create-home): written at build time, and again at run
    # time when a container's CPU needs its own machine code.
    assert settings[0].startswith(f"/home/{user}/"), settings
    assert any("useradd --create-home" in line and user in line for line in lines)
    install = next(i for i, line in enumerate(lines) if "pip install" in line)
    compiles = [i for i, line in enumerate(lines) if line == "RUN memo-solver compile"]
    assert compiles, "the image does not compile the solver at build time"
    # As the user that runs the containers, into the folder they read, after the install.
    assert compiles[0] > max(install, users[-1]), lines


def test_dockerignore_keeps_the_venv_and_git_out_of_the_build() -> None:
    patterns = {
        line.strip().rstrip("/")
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv"} <= patterns, patterns
    assert not {"pyproject.toml", "memo_solver", "worker", "README.md"} & patterns
