"""Shared fixtures: every store implementation, a real Redis, and a solve's process tuning."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from pathlib import Path

import pytest
import redis
from support.cli_support import TINY_RULES
from support.redis_cluster import RedisCluster
from support.redis_server import RedisServer, ensure_redis_server, free_port
from support.worker_support import Children

from memo_solver.core.store import Store
from memo_solver.stores import redis_keys
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore


async def _memory(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return MemoryStore()


async def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return SQLiteStore(tmp_path / "store" / "memo.sqlite")


async def _redis(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The session's redis-server (started on first use), emptied for this test."""
    server: RedisServer = request.getfixturevalue("redis_server")
    with server.client() as client:
        client.flushall()
    return RedisStore(server.url)


CONTRACT_NAMESPACE = "1:contract"
"""The namespace the store contract tests use (tests/test_store.py NS)."""


async def _redis_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The session's three-master Redis Cluster, emptied for this test, reached through a
    node that does not own the contract namespace's layout record (the client follows the
    slot map to the others)."""
    request.getfixturevalue("cluster_url")  # emptied
    cluster: RedisCluster = request.getfixturevalue("redis_cluster")
    owner = cluster.master_for_key(redis_keys.layout(CONTRACT_NAMESPACE))
    return RedisStore(next(node.url for node in cluster.masters if node is not owner))


# One factory per store implementation; a new store joins every contract test by adding a line.
# A factory gets the fixture request (for session resources such as the Redis server) and the
# test's temporary folder.
STORE_FACTORIES: dict[str, Callable[[pytest.FixtureRequest, Path], Awaitable[Store]]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "redis": _redis,
    "redis-cluster": _redis_cluster,
}


QUICK_FILES: frozenset[str] = frozenset(
    {
        "test_dice.py",
        "test_turn.py",
        "test_rules.py",
        "test_state.py",
        "test_benchmarks.py",
        "test_codec.py",
        "test_packing.py",
        "test_advice.py",
        "test_engine.py",
        "test_doom_rules.py",
        "test_doom_tree.py",
        "test_doom_game.py",
        "test_games_conformance.py",
        "test_scoring.py",
        "test_errors.py",
        "test_layers.py",
        "test_rulebook_brute_force.py",
        "test_saved_brute_force.py",
        "test_cli_commands.py",
        "test_job_kinds.py",
        "test_review_risk.py",
        "test_saved_memory.py",
    }
)
"""The pure solver and parsing tests: ``-m quick`` runs those of them that are not slow, in
this process, on the in-memory store (the README's quick loop: under a minute). A file joins
by adding its name; its tests that need a server, a child process or another store stay out
(:func:`pytest_itemcollected`)."""
_OUTSIDE: frozenset[str] = frozenset(
    {
        "redis_server",
        "redis_url",
        "r",
        "fresh_redis",
        "cluster_redis",
        "redis_cluster",
        "cluster_url",
        "children",
    }
)
"""Fixtures that reach outside the test's process: a Redis server, child processes."""


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark ``quick`` the tests of :data:`QUICK_FILES` that are not slow, use no fixture of
    :data:`_OUTSIDE`, and run the store fixture (where they take it) on the memory store only:
    by file, so a pure test is quick without a decorator of its own."""
    _name_the_id(item)
    if item.path.name not in QUICK_FILES or item.get_closest_marker("slow") is not None:
        return
    if _OUTSIDE & set(getattr(item, "fixturenames", ())):
        return
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("store", "memory") != "memory":
        return
    item.add_marker(pytest.mark.quick)


def _name_the_id(item: pytest.Item) -> None:
    """Give a test whose id is not its name the id its name says.

    pytest 9.2 builds a test function's id from its original name and its parametrization;
    schemathesis names each operation's test ``test_x[POST /v1/value]`` but gives it
    neither, so the fuzz's tests of every operation share the id ``test_x``. The suite runs
    under pytest-xdist, which hands tests to its workers by id: it would run one operation
    of the fuzz and drop the others (tests/test_markers.py checks that ids are unique)."""
    named = f"{item.parent.nodeid}::{item.name}" if item.parent is not None else item.nodeid
    if item.nodeid != named:
        from _pytest.nodeid import NodeId  # pytest 9.2: older ones never get here

        item._id = NodeId.parse(named)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the ``full`` tests (half a CPU minute to a few CPU minutes each) unless the ``-m``
    expression names ``full``: ``-m full`` runs them, ``-m slow`` the slow ones without them. (An
    ``-m 'not full'`` in addopts would do for a bare run, but any ``-m`` on the command line
    replaces it, so ``-m slow`` would run them too.)"""
    if re.search(r"\bfull\b", config.option.markexpr or ""):
        return
    full = [item for item in items if item.get_closest_marker("full") is not None]
    if full:
        config.hook.pytest_deselected(items=full)
        items[:] = [item for item in items if item.get_closest_marker("full") is None]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item (``item.rep_call``): teardown code can then
    tell whether the test failed (tests/test_worker.py prints its processes' logs)."""
    report: pytest.TestReport = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def tiny_rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``cli_support.TINY_RULES`` as a rule-set file: one die, one chance box, one reroll."""
    path = tmp_path_factory.mktemp("tiny-rules") / "tiny.json"
    path.write_text(json.dumps(TINY_RULES))
    return path


@pytest.fixture(scope="session")
def redis_binary() -> str:
    """The redis-server binary (installed with apt-get first where that is possible)."""
    return ensure_redis_server()


@pytest.fixture(scope="session")
def redis_server(
    redis_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisServer]:
    """One real redis-server for the whole session; tests that share it FLUSHALL first."""
    with RedisServer(tmp_path_factory.mktemp("redis-session"), binary=redis_binary) as server:
        yield server


@pytest.fixture(scope="session")
def cluster_redis(
    redis_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisServer]:
    """A one-node Redis Cluster that owns every slot: it refuses a command or a script
    whose keys are in more than one slot (CROSSSLOT), as a real cluster does, and
    answers CLUSTER KEYSLOT. Tests that share it FLUSHALL first."""
    cluster_args = [
        "--cluster-enabled", "yes",
        "--cluster-port", str(free_port()),  # else port + 10000, maybe past 65535
        "--cluster-config-file", "nodes.conf",
    ]  # fmt: skip
    folder = tmp_path_factory.mktemp("redis-cluster")
    with RedisServer(folder, binary=redis_binary, extra_args=cluster_args) as server:
        with server.client() as client:
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            deadline = time.monotonic() + 10
            while client.cluster("info")["cluster_state"] != "ok":
                assert time.monotonic() < deadline, "the one-node cluster never got ready"
                time.sleep(0.02)
        yield server


@pytest.fixture(scope="session")
def redis_cluster(
    redis_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisCluster]:
    """A real Redis Cluster of three masters for the whole session (tests/support/redis_cluster.py);
    tests that share it empty it first (``cluster_url``). A test that kills nodes starts a
    cluster of its own."""
    with RedisCluster(tmp_path_factory.mktemp("cluster"), binary=redis_binary) as cluster:
        yield cluster


@pytest.fixture
def cluster_url(redis_cluster: RedisCluster) -> str:
    """The session cluster, emptied for this test: one master's URL."""
    redis_cluster.flushall()
    return redis_cluster.url


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session Redis, emptied for this test."""
    with redis_server.client() as client:
        client.flushall()
    return redis_server.url


@pytest.fixture
def fresh_redis(redis_binary: str, tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own (its own port and data folder): for crash tests."""
    with RedisServer(tmp_path / "redis", binary=redis_binary) as server:
        yield server


@pytest.fixture(params=list(STORE_FACTORIES), ids=list(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, empty store of each kind, entered (``async with``) and closed after the test.

    Entering starts what the store runs in the background (Redis: its notification
    listener). The ``async with`` lives in a task of its own because pytest-asyncio runs a
    fixture's setup and teardown in different tasks, and a task group must be left in the
    task that entered it.
    """
    opened = await STORE_FACTORIES[request.param](request, tmp_path)
    entered, leave = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with opened:
            entered.set()
            await leave.wait()

    holder = asyncio.create_task(hold())
    entered_or_failed = asyncio.ensure_future(entered.wait())
    await asyncio.wait({holder, entered_or_failed}, return_when=asyncio.FIRST_COMPLETED)
    if holder.done():
        entered_or_failed.cancel()
        await holder  # entering failed: raise its error
    try:
        yield opened
    finally:
        leave.set()
        await holder


@pytest.fixture
def children(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Children]:
    folder = tmp_path / "logs"
    folder.mkdir()
    group = Children(folder)
    try:
        yield group
    finally:
        group.kill_all()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(group.logs())


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


@pytest.fixture(params=["sqlite", "redis"])
def store_of(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[list[str], Callable[[], Store]]:
    """The store options of the command line, and a way to open the same store here."""
    if request.param == "sqlite":
        path = tmp_path / "memo.sqlite3"
        return ["--store", str(path)], lambda: SQLiteStore(path)
    url: str = request.getfixturevalue("redis_url")
    return ["--redis", url], lambda: RedisStore(url)
