"""The product on a real Redis Cluster: three masters on loopback (tests/support/redis_cluster.py).

What an operator does, through any node: every command, the service and the workers work
(the store contract itself runs on the cluster in tests/test_store.py); a seed list works;
another database is refused; a rule set's blocks and its commands spread over every master;
live workers are seen through every node; readiness writes on every master; a commit wakes
a waiter connected through another node; faults of a cluster that is down are worded as
such (CLI: one line, exit 75; HTTP: 503 with Retry-After); a master failover is survived
by the same processes, without a restart.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest
import redis
from support.api_support import api_client, error_of
from support.redis_cluster import RedisCluster
from support.worker_support import (
    Children,
    check,
    cli,
    cli_json,
    start_workers,
    stored_blocks,
    wait_for,
    with_store,
)

from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.game import Block
from memo_solver.core.store import StoreUnavailableError
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import read_rule_file
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.service.settings import ADMIN_TOKEN_ENV
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore

TOL = 1e-9
YAHTZEE = YahtzeeGame(RULE_SETS["yahtzee"])
LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])
LOWER_NS = namespace(LOWER)
LOWER_PIN = RULE_SETS["yahtzee-lower"].start_value
YAHTZEE_PIN = 254.5877287345
NOTIFIED_WITHIN_S = 0.4  # test_redis_store.NOTIFIED_WITHIN_S: far below the 1 s re-check
TOKEN = "cluster-test-token"


def own_cluster(tmp_path: Path, binary: str, replicas: int = 0) -> RedisCluster:
    """A cluster for one test that breaks it: a node silent for a second is failed."""
    return RedisCluster(
        tmp_path / "cluster", replicas=replicas, node_timeout_ms=1000, binary=binary
    )


def node_urls(cluster: RedisCluster) -> list[str]:
    return [node.url for node in cluster.masters]


def test_every_command_works_through_any_node_and_a_seed_list(
    redis_cluster: RedisCluster, cluster_url: str
) -> None:
    first, second, third = node_urls(redis_cluster)
    solved = cli_json(first, "precompute", "--rules", "yahtzee-lower", "--here")
    assert solved["value"] == pytest.approx(LOWER_PIN, abs=TOL)
    for url in (second, third, redis_cluster.seeds):
        value = cli_json(url, "value", "--rules", "yahtzee-lower")
        assert value["value"] == pytest.approx(LOWER_PIN, abs=TOL)
        status = cli_json(url, "status")
        assert status["rule_sets"]["yahtzee-lower"]["blocks_done"] == LOWER.block_count
        assert sorted(node["address"] for node in status["nodes"]) == sorted(
            f"127.0.0.1:{node.port}" for node in redis_cluster.masters
        )
    with redis_cluster.client() as r:
        assert stored_blocks(r, LOWER_NS) == LOWER.block_count


def test_a_database_other_than_0_is_refused_in_one_line(redis_cluster: RedisCluster) -> None:
    url = redis_cluster.url.removesuffix("/0") + "/2"
    done = cli(url, "status")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert "names database 2, but a Redis Cluster has only database 0" in line


def test_a_cluster_node_reached_as_one_server_is_worded_as_such(cluster_url: str) -> None:
    cli_json(cluster_url, "precompute", "--rules", "yahtzee-lower", "--here")
    done = cli(cluster_url, "--redis-cluster", "no", "status")  # every group: some elsewhere
    assert done.returncode == 75, done.stderr
    (line,) = done.stderr.splitlines()
    assert "is a cluster node" in line
    assert "connect as a cluster" in line


def test_a_rule_sets_blocks_spread_over_every_master(
    redis_cluster: RedisCluster, cluster_url: str
) -> None:
    """The whole yahtzee game: each master holds about a third of the blocks and reports
    its own memory; no key holds more than a group's 2 MB."""
    cli_json(cluster_url, "precompute", "--rules", "yahtzee", "--here", timeout=300)
    status = cli_json(cluster_url, "status")
    shares = [node["blocks"].get("yahtzee", 0) / YAHTZEE.block_count for node in status["nodes"]]
    assert sum(shares) == pytest.approx(1.0)
    assert len(shares) == 3
    assert all(0.2 < share < 0.5 for share in shares), shares
    assert all(node["used_memory"] > 0 for node in status["nodes"])
    with redis_cluster.client() as r:
        layout = redis_keys.Layout(
            namespace(YAHTZEE), int(r.get(redis_keys.layout(namespace(YAHTZEE))) or 0)
        )
        largest = max(int(r.memory_usage(group) or 0) for group in layout.block_groups())
    assert largest < redis_keys.GROUP_BYTES


def test_two_workers_on_two_nodes_solve_a_precompute_asked_through_a_third(
    redis_cluster: RedisCluster, cluster_url: str, children: Children
) -> None:
    first, second, third = node_urls(redis_cluster)
    with redis_cluster.client() as r:
        start_workers(children, r, first, ["w1"])
        start_workers(children, r, second, ["w2"])
    solved = cli_json(third, "precompute", "--rules", "yahtzee", "--wait", timeout=300)
    assert solved["value"] == pytest.approx(YAHTZEE_PIN, abs=TOL)
    for url in (first, second, third):
        assert check(url, "--id", "w*").returncode == 0
        status = cli_json(url, "status")
        assert sorted(w["id"] for w in status["workers"]) == ["w1", "w2"]

    def counted() -> int | None:
        workers = cli_json(third, "status")["workers"]
        total = sum(int(w["blocks_computed"]) for w in workers)
        return total if total >= YAHTZEE.block_count else None

    # Exactly once: the heartbeats' counters add up to the game's blocks (a beat may lag).
    assert wait_for("the workers' final counters", counted, 30) == YAHTZEE.block_count
    assert "CROSSSLOT" not in children.logs()
    assert "MOVED" not in children.logs()


async def test_a_commit_through_one_node_wakes_a_waiter_on_another(
    redis_cluster: RedisCluster, cluster_url: str
) -> None:
    first, second, _ = node_urls(redis_cluster)
    async with RedisStore(first) as waiter, RedisStore(second) as holder:
        assert (await holder.try_claim(LOWER_NS, ["k"], "holder", 30))["k"].value == "claimed"
        woke_at: list[float] = []

        async def wait() -> None:
            await waiter.wait(LOWER_NS, "k", 10)
            woke_at.append(time.monotonic())

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.sleep(0.3)  # the waiter looked, found the claim, and waits
            committed_at = time.monotonic()
            await holder.commit(LOWER_NS, {"k": b"v"}, "holder")
        assert woke_at[0] - committed_at < NOTIFIED_WITHIN_S


async def test_a_store_closed_from_a_cancelled_scope_closes_its_connections_to_every_node(
    redis_cluster: RedisCluster, cluster_url: str
) -> None:
    """A worker that gives up waiting for a lost cluster drops its store from inside a
    timeout: the close runs all the same, so no node's connection is left open for the
    collector to find ("Unclosed ClusterNode object" on every reconnection)."""

    def connections() -> list[int]:
        counts = []
        for node in redis_cluster.masters:
            with redis.Redis.from_url(node.url) as observer:
                counts.append(len(observer.client_list()))
        return counts

    before = connections()
    store = RedisStore(cluster_url)
    await store.ping()
    assert connections() != before
    with anyio.CancelScope() as timeout:
        timeout.cancel()
        await store.aclose()
    with anyio.fail_after(5):
        while True:  # until every server has seen its connection go
            if connections() == before:
                break
            await anyio.sleep(0.01)


async def test_readiness_writes_on_every_master_and_the_api_answers_through_any_node(
    redis_cluster: RedisCluster, cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    store = RedisStore(cluster_url)
    try:
        await store.ping()
        tags = store.probe_tags(await store.client())
        owners = {redis_cluster.master_for_key(redis_keys.probe(tag, "x")).port for tag in tags}
        assert owners == {node.port for node in redis_cluster.masters}
    finally:
        await store.aclose()
    cli_json(cluster_url, "precompute", "--rules", "yahtzee-lower", "--here")
    async with api_client(redis_cluster.masters[2].url) as client:
        assert (await client.get("/readyz")).status_code == 200
        coverage = (await client.get("/v1/rules/yahtzee-lower/coverage")).json()
        assert coverage["blocks_done"] == LOWER.block_count
        advice = await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
        assert advice.json()["value"] == pytest.approx(LOWER_PIN, abs=TOL)
        queued = await client.post(
            "/v1/jobs/precompute",
            json={"rules": "yahtzee-lower"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert queued.status_code == 202, queued.text


def test_a_cluster_that_is_down_is_a_503_and_one_line(redis_binary: str, tmp_path: Path) -> None:
    """A master lost with no replica: its slots are served by no one, and the cluster says
    it is down. Every surface words it so: never "internal error", never a 500."""
    with own_cluster(tmp_path, redis_binary) as cluster:
        url = cluster.masters[0].url
        cli_json(url, "precompute", "--rules", "yahtzee-lower", "--here")
        cluster.kill(cluster.masters[2])
        with redis.Redis.from_url(url) as node:
            wait_for(
                "the cluster to call itself down",
                lambda: b"cluster_state:fail" in node.execute_command("CLUSTER", "INFO"),
                30,
            )
        done = cli(url, "status")
        assert done.returncode == 75, done.stderr
        (line,) = done.stderr.splitlines()
        assert "internal error" not in line
        assert "Redis Cluster at" in line
        assert "is down" in line

        async def asked() -> None:
            async with api_client(url) as client:
                response = await client.get("/readyz")
                assert response.status_code == 503
                assert "Retry-After" in response.headers
                answer = await client.post("/v1/value", json={"rules": "yahtzee", "state": "start"})
                assert "is down" in error_of(answer, 503, "store")
                assert "Retry-After" in answer.headers

        anyio.run(asked)


@pytest.mark.slow
def test_a_master_failover_is_survived_without_a_restart(
    redis_binary: str, tmp_path: Path, children: Children
) -> None:
    """A worker keeps going when a master dies and its replica takes over: it logs the
    fault, tries again (1 s, then doubling) and finishes the precompute with the pinned
    value; no process is restarted."""
    with RedisCluster(
        tmp_path / "failover", replicas=1, node_timeout_ms=1000, binary=redis_binary
    ) as cluster:
        url = cluster.seeds
        with cluster.client() as r:
            (worker,) = start_workers(children, r, url, ["w1"])
            cli_json(url, "precompute", "--rules", "yahtzee")
            wait_for(
                "a tenth of the blocks", lambda: stored_blocks(r, namespace(YAHTZEE)) > 800, 60
            )
        victim = cluster.master_for_key(redis_keys.layout(namespace(YAHTZEE)))
        cluster.failover_of(victim)
        # Meanwhile a question is answered right, or refused in one line: never wrong.
        late = cli(url, "value", "--rules", "yahtzee-lower", "open=chance", "--json")
        if late.returncode == 0:
            assert json.loads(late.stdout)["value"] == pytest.approx(70 / 3, abs=TOL)
        else:
            assert late.returncode == 75, late.stderr
        # The worker may be between two tries (its heartbeat lapsed): wait for it.
        solved = cli_json(
            url, "precompute", "--rules", "yahtzee", "--wait", "--wait-for-workers", timeout=300
        )
        assert solved["value"] == pytest.approx(YAHTZEE_PIN, abs=TOL)
        assert worker.process.poll() is None, worker.text()
        with cluster.client() as r:
            assert stored_blocks(r, namespace(YAHTZEE)) == YAHTZEE.block_count


async def test_a_store_keeps_serving_after_a_failover(redis_binary: str, tmp_path: Path) -> None:
    with RedisCluster(
        tmp_path / "store", replicas=1, node_timeout_ms=1000, binary=redis_binary
    ) as cluster:
        async with RedisStore(cluster.url) as store:
            async with open_engine(LOWER, store) as engine:
                await engine.block(LOWER.root())
            victim = cluster.master_for_key(redis_keys.layout(LOWER_NS))
            if victim.url == cluster.url:
                victim = next(node for node in cluster.masters if node.url != cluster.url)
            cluster.failover_of(victim)
            with anyio.fail_after(30):
                while True:
                    try:
                        found = await store.get_many(LOWER_NS, [LOWER.root()])
                        break
                    except StoreUnavailableError:
                        await anyio.sleep(0.1)
            assert set(found) == {LOWER.root()}
            assert (await store.coverage(LOWER_NS)).blocks == LOWER.block_count


# --- saved rolls: a costlier game through workers on the cluster (hardening 4's -m full) --------

SAVED_FILE = Path(__file__).parent.parent / "examples" / "rules" / "yatzy-saved.json"
SAVED = YahtzeeGame(read_rule_file(SAVED_FILE))
SAVED_PIN = 280.4109275551
"""Yatzy with saved rolls (test_saved_rolls.py pins it beside the bottom-up pass)."""


def table_hash(blocks: Mapping[str, Block]) -> str:
    digest = hashlib.sha256()
    for key in sorted(blocks):
        digest.update(key.encode() + blocks[key].tobytes())
    return digest.hexdigest()


def one_process_table(game: YahtzeeGame) -> dict[str, Block]:
    """Every block, solved layer by layer in this process: no store, no claims."""
    blocks: dict[str, Block] = {}
    for layer in game.layers(game.root()):
        blocks |= zip(layer, game.solve_many(layer, blocks), strict=True)
    return blocks


def stored_table(url: str, game: YahtzeeGame) -> dict[str, Block]:
    async def read(store: RedisStore) -> dict[str, Block]:
        async with open_engine(game, store) as engine:
            return await engine.stored(await store.keys(namespace(game)))

    return with_store(url, read)


@pytest.mark.full
def test_saved_rolls_through_two_workers_a_killed_worker_and_a_failover(
    redis_binary: str, tmp_path: Path, children: Children
) -> None:
    """Yatzy with saved rolls (32,768 blocks, each 10 times a plain one) queued on a cluster
    of three masters with a replica each, two workers on two nodes: one worker is SIGKILLed
    mid-layer and a master fails over mid-solve; a third worker joins, and the job completes
    with the one-process table to the bit, no master holding more than 45 % of the blocks."""
    with own_cluster(tmp_path, redis_binary, replicas=1) as cluster:
        first, second = node_urls(cluster)[:2]
        ns = namespace(SAVED)
        with cluster.client() as r:
            killed, _ = (
                *start_workers(children, r, first, ["s1"]),
                *start_workers(children, r, second, ["s2"]),
            )
            cli_json(cluster.seeds, "precompute", "--rules-file", str(SAVED_FILE))
            wait_for("a tenth of the blocks", lambda: stored_blocks(r, ns) > 3_000, 300)
            killed.process.kill()  # SIGKILL: its claims lapse, its chunk goes to another
            wait_for("a fifth of the blocks", lambda: stored_blocks(r, ns) > 6_000, 300)
        cluster.failover_of(cluster.master_for_key(redis_keys.layout(ns)))
        with cluster.client() as r:
            start_workers(children, r, cluster.seeds, ["s3"])
        solved = cli_json(
            cluster.seeds, "precompute", "--rules-file", str(SAVED_FILE), "--wait",
            "--wait-for-workers", timeout=900,
        )  # fmt: skip
        assert solved["value"] == pytest.approx(SAVED_PIN, abs=TOL)
        status = cli_json(cluster.seeds, "status", "--rules-file", str(SAVED_FILE))
        held = [node["blocks"].get(SAVED.name, 0) for node in status["nodes"]]
        assert sum(held) == SAVED.block_count
        assert max(held) <= 0.45 * SAVED.block_count, held
        assert table_hash(stored_table(cluster.seeds, SAVED)) == table_hash(
            one_process_table(SAVED)
        )
