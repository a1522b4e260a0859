"""A real Redis Cluster for the tests: ``redis-server`` processes on free loopback ports.

By default three masters that share the 16,384 slots evenly; ``replicas=1`` gives each
master a replica, for failover tests. Every node is a :class:`RedisServer` (AOF, its own
data folder and ``nodes.conf``), and the cluster is built the way an operator's
``redis-cli --cluster create`` builds it (slots assigned, nodes met, replicas attached),
with no prompt, then awaited on what the nodes say (``cluster_state:ok`` on every node,
the same slot map everywhere, replicas' links up), never on a fixed sleep.

    with RedisCluster(masters=3) as cluster:
        url = cluster.url                  # one node's URL: any will do
        seeds = cluster.seeds              # "redis://127.0.0.1:p1,127.0.0.1:p2,..."
        master = cluster.master_for_key("ms:{1:abc/7}:blocks")
        cluster.failover_of(master)        # with replicas=1: kill it, await the promotion
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

import redis
from redis.crc import key_slot

from support.redis_server import RedisServer, free_port

SLOTS = 16384
NODE_TIMEOUT_MS = 5000
"""How long a silent node takes to be marked failed: long enough that a node starved of
CPU on a busy 2-core machine is not failed over; failover tests ask for 1 s (production
keeps Redis's default of 15 s)."""
READY_S = 30.0


class RedisCluster:
    """Masters (and replicas) on 127.0.0.1, each slot range assigned, nodes met."""

    def __init__(
        self,
        data_dir: Path,
        *,
        masters: int = 3,
        replicas: int = 0,
        node_timeout_ms: int = NODE_TIMEOUT_MS,
        binary: str | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.masters: list[RedisServer] = []
        self.replicas: list[RedisServer] = []
        self._binary = binary
        self._counts = (masters, replicas)
        self._node_timeout_ms = node_timeout_ms
        self._bus: dict[int, int] = {}
        """Each node's cluster bus port, by its port."""

    # -- what the tests read ---------------------------------------------------------------

    @property
    def nodes(self) -> list[RedisServer]:
        return [*self.masters, *self.replicas]

    @property
    def url(self) -> str:
        """The first running master's URL: any node serves as the way in."""
        return next(node for node in self.masters if node.running).url

    @property
    def seeds(self) -> str:
        """Every master as a seed list: a URL, then host:port pairs."""
        running = [node for node in self.masters if node.running]
        return ",".join([running[0].url, *(f"127.0.0.1:{node.port}" for node in running[1:])])

    @contextmanager
    def client(self) -> Iterator[redis.RedisCluster]:
        """A sync cluster client, every node's connections closed at the end (redis-py's
        own close leaves one open now and then, which a test's end then reports)."""
        client = redis.RedisCluster.from_url(self.url)
        try:
            yield client
        finally:
            for node in client.get_nodes():  # type: ignore[no-untyped-call]
                if node.redis_connection is not None:
                    node.redis_connection.connection_pool.disconnect()
            client.close()

    def master_for_key(self, key: str) -> RedisServer:
        """The running master that owns ``key``'s slot now."""
        slot = key_slot(key.encode())
        for node in self.masters:
            if node.running and slot in self._slots_of(node):
                return node
        raise LookupError(f"no running master owns slot {slot}")

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        masters, replicas = self._counts
        for index in range(masters * (1 + replicas)):
            bus = free_port()  # else port + 10000, maybe past 65535
            cluster_args = [
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self._node_timeout_ms),
                "--cluster-port", str(bus),
                "--repl-diskless-sync-delay", "0",  # a replica's first sync at once, not in 5 s
            ]  # fmt: skip
            node = RedisServer(
                self.data_dir / f"node-{index}", binary=self._binary, extra_args=cluster_args
            ).start()
            (self.masters if index < masters else self.replicas).append(node)
            self._bus[node.port] = bus
        first = self.masters[0]
        for index, node in enumerate(self.masters):
            low, high = index * SLOTS // masters, (index + 1) * SLOTS // masters - 1
            with node.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        with first.client() as client:
            for node in self.nodes[1:]:
                client.execute_command(
                    "CLUSTER", "MEET", "127.0.0.1", node.port, self._bus[node.port]
                )
        self._wait("every node to know every other", self._all_met)
        for index, replica in enumerate(self.replicas):
            master = self.masters[index % masters]
            with replica.client() as client:
                client.execute_command("CLUSTER", "REPLICATE", self._node_id(master))
        self._wait("the cluster to be ready", self._ready)
        return self

    def kill(self, node: RedisServer) -> None:
        """Crash one node (SIGKILL)."""
        node.kill()

    def failover_of(self, master: RedisServer) -> RedisServer:
        """Kill ``master`` and wait until its replica serves its slots: the new master."""
        slots = self._slots_of(master)
        replica = next(r for r in self.replicas if self._master_of(r) == self._node_id(master))
        master.kill()

        def promoted() -> bool:
            with replica.client() as client:
                role = client.info("replication")["role"]
            return role == "master" and self._ready()

        self._wait("the replica to take over", promoted)
        self.masters = [replica if node is master else node for node in self.masters]
        self.replicas.remove(replica)
        assert self._slots_of(replica) == slots
        return replica

    def flushall(self) -> None:
        """Empty every master (their replicas follow)."""
        for node in self.masters:
            if node.running:
                with node.client() as client:
                    client.flushall()

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _node_id(self, node: RedisServer) -> str:
        with node.client() as client:
            return str(client.execute_command("CLUSTER", "MYID").decode())

    def _master_of(self, replica: RedisServer) -> str | None:
        with replica.client() as client:
            for line in client.execute_command("CLUSTER", "NODES").decode().splitlines():
                fields = line.split()
                if "myself" in fields[2]:
                    return fields[3] if fields[3] != "-" else None
        return None

    def _slots_of(self, node: RedisServer) -> set[int]:
        with node.client() as client:
            for line in client.execute_command("CLUSTER", "NODES").decode().splitlines():
                fields = line.split()
                if "myself" in fields[2]:
                    return set(_expand(fields[8:]))
        return set()

    def _all_met(self) -> bool:
        for node in self.nodes:
            with node.client() as client:
                known = client.execute_command("CLUSTER", "NODES").decode().splitlines()
            if len(known) < len(self.nodes) or any("handshake" in line for line in known):
                return False
        return True

    def _ready(self) -> bool:
        """Every running node says ok and sees the same slot map; replicas are in sync."""
        maps = set()
        for node in self.nodes:
            if not node.running:
                continue
            with node.client() as client:
                if client.execute_command("CLUSTER", "INFO").decode().find("cluster_state:ok") < 0:
                    return False
                maps.add(repr(sorted(map(repr, client.execute_command("CLUSTER", "SLOTS")))))
                info = client.info("replication")
                if info["role"] == "slave" and info.get("master_link_status") != "up":
                    return False
        return len(maps) == 1

    @staticmethod
    def _wait(what: str, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + READY_S
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {READY_S} s waiting for {what}")
            time.sleep(0.02)


def _expand(ranges: list[str]) -> Iterator[int]:
    for item in ranges:
        if item.startswith("["):
            continue  # a slot being migrated or imported
        low, _, high = item.partition("-")
        yield from range(int(low), int(high or low) + 1)
