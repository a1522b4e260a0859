"""The deployment files: docker-compose.yml and docker-compose.cluster.yml against the
Compose specification, then what the schema cannot say (persistence, health, scaling,
wiring), and the Dockerfile's basics.

The schema check runs ``check-jsonschema``, which bundles the Compose specification's
schema, so it works offline; nothing here needs Docker. The cluster file's node command
lines and its init script run for real, on loopback: they form a cluster.
"""

from __future__ import annotations

import http.server
import ipaddress
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import yaml
from support.redis_server import RedisServer, free_port

from memo_solver.stores.redis_client import (
    CLUSTER_ENV,
    ClusterMode,
    parse_address,
    with_cluster_mode,
)

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
CLUSTER_COMPOSE = ROOT / "docker-compose.cluster.yml"
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


def _mounts(service: Service) -> list[tuple[str, str]]:
    mounts = []
    for mount in service.get("volumes", []):
        if isinstance(mount, str):
            source, target = mount.split(":")[:2]
            mounts.append((source, target))
        else:
            mounts.append((mount.get("source"), mount.get("target")))
    return mounts


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


@pytest.mark.parametrize("path", [COMPOSE, CLUSTER_COMPOSE], ids=lambda path: path.name)
def test_compose_file_is_valid_against_the_compose_specification(path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(path),
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
    mounts = _mounts(redis_service)
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


# -- docker-compose.cluster.yml: a 3-master Redis Cluster with a replica each -----------------

CLUSTER_MASTERS = 3
INIT = "cluster-init"


@pytest.fixture(scope="module")
def cluster_compose() -> dict[str, Any]:
    loaded = yaml.safe_load(CLUSTER_COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), "docker-compose.cluster.yml is not a mapping"
    return loaded


@pytest.fixture(scope="module")
def cluster_nodes(cluster_compose: dict[str, Any]) -> dict[str, Service]:
    """The services that run a Redis Cluster node, by name."""
    nodes = {
        name: service
        for name, service in cluster_compose["services"].items()
        if _command(service.get("command", []))[:1] == ["redis-server"]
    }
    for name, service in nodes.items():
        assert _option(_command(service["command"]), "cluster-enabled") == "yes", name
    return nodes


@pytest.fixture(scope="module")
def cluster_init(cluster_compose: dict[str, Any]) -> Service:
    service: Service = cluster_compose["services"][INIT]
    return service


def _init_script(init: Service) -> list[str]:
    """The init service's command line as its shell runs it: Compose turns each ``$$``
    into ``$``, and would replace any other ``$`` with the host's environment."""
    words = [*_command(init["entrypoint"]), *_command(init["command"])]
    for word in words:
        assert "$" not in word.replace("$$", ""), f"a `$` Compose would interpolate: {word!r}"
    return [word.replace("$$", "$") for word in words]


def test_cluster_file_is_a_project_of_its_own(
    compose: dict[str, Any], cluster_compose: dict[str, Any]
) -> None:
    assert "version" not in cluster_compose
    # Its own name: containers, network and volumes never mix with the standalone stack's.
    assert cluster_compose.get("name"), "the cluster file names no project"
    assert cluster_compose["name"] != compose.get("name", ROOT.name)
    assert set(cluster_compose["services"]) >= {INIT, "worker", "api"}
    assert "redis" not in cluster_compose["services"], "a standalone Redis beside the cluster"


def test_the_cluster_has_three_masters_and_a_replica_for_each(
    cluster_nodes: dict[str, Service], cluster_init: Service
) -> None:
    env = _environment(cluster_init)
    replicas = int(env["CLUSTER_REPLICAS"])
    assert replicas == 1, env
    assert len(cluster_nodes) == CLUSTER_MASTERS * (1 + replicas), sorted(cluster_nodes)
    # The init service forms the cluster of exactly these nodes, on their default port.
    listed = [urlsplit(f"redis://{node}") for node in env["CLUSTER_NODES"].split()]
    assert sorted(url.hostname or "" for url in listed) == sorted(cluster_nodes), listed
    assert {url.port for url in listed} == {6379}, listed
    for service in cluster_nodes.values():
        assert _option(_command(service["command"]), "port") in {None, "6379"}


def test_every_cluster_node_persists_with_aof_on_a_volume_of_its_own(
    cluster_compose: dict[str, Any], cluster_nodes: dict[str, Service]
) -> None:
    sources = []
    for name, service in cluster_nodes.items():
        assert str(service["image"]).split(":") == ["redis", "7"], name
        words = _command(service["command"])
        assert _option(words, "appendonly") == "yes", (name, words)
        assert _option(words, "appendfsync") == "everysec", (name, words)
        # The node's cluster state lives beside its data (the image's working folder, /data).
        config = _option(words, "cluster-config-file")
        assert config is not None, (name, words)
        assert "/" not in config, (name, config)
        assert _option(words, "dir") in {None, "/data"}, (name, words)
        mounts = [(source, target) for source, target in _mounts(service) if target == "/data"]
        assert len(mounts) == 1, (name, _mounts(service))
        sources.append(mounts[0][0])
    assert len(set(sources)) == len(sources), f"nodes share a volume: {sources}"
    assert set(sources) <= set(cluster_compose.get("volumes") or {}), sources


def test_every_cluster_node_announces_its_service_name_to_clients(
    cluster_nodes: dict[str, Service],
) -> None:
    # MOVED replies and the slot map name the node by the name Docker's DNS resolves.
    for name, service in cluster_nodes.items():
        words = _command(service["command"])
        assert _option(words, "cluster-announce-hostname") == name, (name, words)
        assert _option(words, "cluster-preferred-endpoint-type") == "hostname", (name, words)


def test_cluster_nodes_keep_fixed_addresses_no_other_container_can_take(
    cluster_compose: dict[str, Any], cluster_nodes: dict[str, Service]
) -> None:
    (pool,) = cluster_compose["networks"]["default"]["ipam"]["config"]
    subnet = ipaddress.IPv4Network(pool["subnet"])
    dynamic = ipaddress.IPv4Network(pool["ip_range"])
    assert dynamic.subnet_of(subnet), pool
    addresses = [
        ipaddress.IPv4Address(service["networks"]["default"]["ipv4_address"])
        for service in cluster_nodes.values()
    ]
    assert len(set(addresses)) == len(addresses), addresses
    for address in addresses:
        assert address in subnet, (address, pool)
        assert address not in dynamic, (address, pool)


def test_cluster_nodes_check_their_health_and_restart(cluster_nodes: dict[str, Service]) -> None:
    for name, service in cluster_nodes.items():
        # Alive, not "in a cluster": the init service waits for this before it forms one.
        assert _healthcheck(service) == ["redis-cli", "ping"], name
        assert service["restart"] == "unless-stopped", name


def test_the_init_service_runs_once_after_every_node_is_healthy(
    cluster_nodes: dict[str, Service], cluster_init: Service
) -> None:
    assert str(cluster_init["image"]).split(":")[0] == "redis"  # its redis-cli
    assert cluster_init["restart"] == "no"
    depends_on = cluster_init["depends_on"]
    assert isinstance(depends_on, dict), "the list form of depends_on waits for no health"
    assert set(depends_on) == set(cluster_nodes), depends_on
    assert {dep["condition"] for dep in depends_on.values()} == {"service_healthy"}
    script = " ".join(_init_script(cluster_init))
    assert "redis-cli --cluster create $CLUSTER_NODES" in script
    assert '--cluster-replicas "$CLUSTER_REPLICAS" --cluster-yes' in script


@pytest.mark.parametrize("name", ["worker", "api"])
def test_workers_and_api_start_once_the_cluster_is_formed(
    cluster_compose: dict[str, Any], name: str
) -> None:
    depends_on = cluster_compose["services"][name]["depends_on"]
    assert depends_on == {INIT: {"condition": "service_completed_successfully"}}, depends_on


@pytest.mark.parametrize("name", ["worker", "api"])
def test_workers_and_api_point_at_every_cluster_node_as_a_cluster(
    cluster_compose: dict[str, Any], cluster_nodes: dict[str, Service], name: str
) -> None:
    env = _environment(cluster_compose["services"][name])
    assert env[CLUSTER_ENV] == "yes", env
    address = parse_address(env["MEMO_SOLVER_REDIS_URL"])  # as the processes read it
    assert address.database == 0
    seeds = [urlsplit(url) for url in address.urls]
    assert sorted(url.hostname or "" for url in seeds) == sorted(cluster_nodes), seeds
    assert {url.port for url in seeds} == {6379}, seeds
    assert {url.scheme for url in seeds} == {"redis"}, seeds
    # Told, not detected: the processes never take a node for a standalone Redis.
    told = parse_address(with_cluster_mode(env["MEMO_SOLVER_REDIS_URL"], "yes"))
    assert told.mode is ClusterMode.YES


@pytest.mark.parametrize("name", ["worker", "api"])
def test_cluster_workers_and_api_are_the_standalone_ones_but_for_redis(
    compose: dict[str, Any], cluster_compose: dict[str, Any], name: str
) -> None:
    # Same image, command, scaling, health checks, restart and stop: only where Redis is
    # and what they wait for differ, so the two files cannot drift apart.
    def but_for_redis(service: Service) -> Service:
        env = _environment(service)
        kept = {key: value for key, value in env.items() if not key.startswith("MEMO_SOLVER_REDIS")}
        rest = {key: value for key, value in service.items() if key != "depends_on"}
        return rest | {"environment": kept}

    standalone = compose["services"][name]
    clustered = cluster_compose["services"][name]
    assert but_for_redis(clustered) == but_for_redis(standalone)
    assert _healthcheck(clustered) == _healthcheck(standalone)


@pytest.mark.slow  # about 6 s, mostly waits inside redis-cli and Redis (CPU: about 1 s)
def test_the_init_script_forms_the_cluster_from_the_nodes_command_lines_and_runs_again(
    tmp_path: Path,
    redis_binary: str,
    cluster_compose: dict[str, Any],
    cluster_nodes: dict[str, Service],
    cluster_init: Service,
) -> None:
    """The compose file's own lines on loopback: each node started from its command with
    its port, bus port and folder changed, then the init script run as its container would,
    twice, the second time after every node restarted (`down`, then `up`)."""
    binary = redis_binary
    redis_cli = str(Path(binary).with_name("redis-cli"))
    assert Path(redis_cli).exists(), "redis-cli is not beside redis-server"
    servers: dict[str, RedisServer] = {}

    def start(name: str, service: Service) -> RedisServer:
        words = _command(service["command"])[1:]
        # "localhost" stands for the service name Docker's DNS would resolve.
        words[words.index("--cluster-announce-hostname") + 1] = "localhost"
        server = servers[name] = RedisServer(
            tmp_path / name, binary=binary, extra_args=[*words, "--cluster-port", str(free_port())]
        )
        return server.start()

    try:
        for name, service in sorted(cluster_nodes.items()):
            start(name, service)
        nodes = " ".join(f"127.0.0.1:{server.port}" for server in servers.values())
        env = _environment(cluster_init) | {"CLUSTER_NODES": nodes, "CLUSTER_WAIT_S": "30"}
        env |= {"PATH": f"{Path(redis_cli).parent}:{os.environ['PATH']}"}

        def init(listed: str = nodes) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                _init_script(cluster_init),
                env=env | {"CLUSTER_NODES": listed},
                capture_output=True,
                text=True,
                timeout=60,
            )

        first = init()
        assert first.returncode == 0, first.stdout + first.stderr
        assert "forming a cluster of 6 nodes" in first.stdout, first.stdout
        roles = _roles(servers)
        assert sorted(roles.values()) == ["master"] * 3 + ["slave"] * 3, roles

        # Clients follow redirections to the announced name; the data spreads over masters.
        some = next(iter(servers.values()))
        with redis.RedisCluster(host="127.0.0.1", port=some.port) as client:
            for index in range(30):
                client.set(f"key:{index}", index)
        with some.client() as plain:
            redirected = [str(exc) for index in range(30) if (exc := _error(plain, f"key:{index}"))]
        assert redirected, "all 30 keys on the node asked"
        assert all(" localhost:" in reply for reply in redirected), redirected
        for name in (name for name, role in roles.items() if role == "master"):
            with servers[name].client() as node:
                assert node.dbsize() > 0, f"master {name} holds none of 30 keys"

        # The workers' and the API's settings reach it: `status` through them names the
        # three masters.
        worker = {
            key: value
            for key, value in _environment(cluster_compose["services"]["worker"]).items()
            if key.startswith("MEMO_SOLVER_REDIS")
        }
        for name, server in servers.items():
            worker["MEMO_SOLVER_REDIS_URL"] = worker["MEMO_SOLVER_REDIS_URL"].replace(
                f"{name}:6379", f"127.0.0.1:{server.port}"
            )
        status = subprocess.run(
            [str(Path(sys.executable).with_name("memo-solver")), "status"],
            env=os.environ | worker,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stdout + status.stderr
        assert "\nnodes: 3, " in status.stdout, status.stdout
        for server in servers.values():
            server.wait_written()

        # Every node's cluster state and AOF are in its folder (the volume): a restart of
        # them all finds the same cluster, and the init script sees it and only waits.
        for name in sorted(roles, key=lambda name: roles[name] == "master"):
            servers[name].stop()  # replicas first: no master waits for one to catch up
        for server in servers.values():
            server.start()
            assert (server.data_dir / "nodes.conf").is_file()
        again = init()
        assert again.returncode == 0, again.stdout + again.stderr
        assert "already form a cluster" in again.stdout, again.stdout
        assert "forming" not in again.stdout
        with redis.RedisCluster(host="127.0.0.1", port=some.port) as client:
            assert [int(client.get(f"key:{index}") or -1) for index in range(30)] == list(range(30))

        # A node that lost its volume (in no cluster while the others are) is not papered
        # over: the script stops and says how to repair.
        stray = start("stray", next(iter(cluster_nodes.values())))
        mixed = init(f"{nodes} 127.0.0.1:{stray.port}")
        assert mixed.returncode == 1, mixed.stdout + mixed.stderr
        assert "1 of 7 nodes are in no cluster" in mixed.stderr, mixed.stderr
    finally:
        for server in servers.values():
            server.close()


def _roles(servers: dict[str, RedisServer]) -> dict[str, str]:
    roles = {}
    for name, server in servers.items():
        with server.client() as client:
            roles[name] = str(client.info("replication")["role"])
    return roles


def _error(client: redis.Redis, key: str) -> str | None:
    """The error a single node answers for ``key`` (a MOVED for another node's), or None."""
    try:
        client.get(key)
    except redis.ResponseError as exc:
        return str(exc)
    return None
