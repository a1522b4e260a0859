"""What a Redis address may say, and how every fault is worded (pure logic: no server).

- one URL, or a cluster's seed nodes separated by commas (URLs, or host:port after the
  first URL, sharing its password and options);
- ``cluster=yes|no|auto`` in the URL, put there by ``--redis-cluster`` or
  ``$MEMO_SOLVER_REDIS_CLUSTER`` unless the URL says it already;
- a cluster has only database 0: another is refused in one line naming it;
- no message ever shows a password;
- cluster faults are outages (try again), a MOVED reached through a standalone client is a
  misconfiguration, and none of them is "cannot reach Redis".
"""

from __future__ import annotations

import pytest
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ConnectionError,
    MasterDownError,
    MovedError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from memo_solver.core.store import StoreLocationError, StoreRefusedError, StoreUnavailableError
from memo_solver.stores.redis_client import (
    ClusterMode,
    parse_address,
    store_error,
    with_cluster_mode,
)


def test_one_url_is_asked_whether_it_is_a_cluster() -> None:
    address = parse_address("redis://127.0.0.1:6379/0")
    assert address.urls == ("redis://127.0.0.1:6379/0",)
    assert address.mode is ClusterMode.AUTO
    assert address.database == 0


def test_seed_nodes_share_the_first_urls_password_and_options() -> None:
    address = parse_address("redis://:pw@h1:7000/0?socket_timeout=2,h2:7001, redis://h3:7002")
    assert address.urls == (
        "redis://:pw@h1:7000/0?socket_timeout=2",
        "redis://:pw@h2:7001/0?socket_timeout=2",
        "redis://h3:7002",
    )
    assert (
        address.description
        == "redis://:***@h1:7000/0?socket_timeout=2,redis://:***@h2:7001/0?socket_timeout=2,redis://h3:7002"
    )
    assert "pw" not in address.description


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("redis://h1:7000/2,h2:7001", "names database 2, but a Redis Cluster has only database 0"),
        ("redis://h1:7000/3?cluster=yes", "drop the /3 from the URL"),
        ("redis://h1:7000/0?cluster=no,h2:7001", "lists 2 seed nodes, which only a cluster has"),
        ("redis://h1:7000/0?cluster=maybe", "cluster=maybe must be auto, yes or no"),
        ("redis://h1:7000/0,h2", "seed node 'h2' is not host:port"),
        ("redis://h1:7000/zero", "the database must be a number"),
        ("redis://:secret@h1:port/0", "bad Redis URL redis://<unreadable address>"),
    ],
)
def test_a_bad_address_is_refused_in_one_line_naming_what_is_wrong(url: str, words: str) -> None:
    with pytest.raises(StoreLocationError) as refused:
        parse_address(url)
    message = str(refused.value)
    assert words in message
    assert "\n" not in message
    assert "secret" not in message


def test_the_option_or_the_environment_put_the_mode_in_the_url_unless_it_says_it() -> None:
    assert with_cluster_mode("redis://h:1/0", "yes") == "redis://h:1/0?cluster=yes"
    assert with_cluster_mode("redis://h:1/0?a=b,h2:2", "NO") == "redis://h:1/0?a=b&cluster=no,h2:2"
    assert with_cluster_mode("redis://h:1/0?cluster=no", "yes") == "redis://h:1/0?cluster=no"
    assert with_cluster_mode("redis://h:1/0", "auto") == "redis://h:1/0"
    assert with_cluster_mode("redis://h:1/0", None) == "redis://h:1/0"
    assert parse_address(with_cluster_mode("redis://h:1/0", "yes")).mode is ClusterMode.YES
    with pytest.raises(StoreLocationError, match="take auto, yes or no, not 'sometimes'"):
        with_cluster_mode("redis://h:1/0", "sometimes")


@pytest.mark.parametrize(
    ("fault", "kind", "words"),
    [
        (ClusterDownError("CLUSTERDOWN The cluster is down"), StoreUnavailableError, "is down"),
        (MasterDownError("MASTERDOWN Link with MASTER is down"), StoreUnavailableError, "failover"),
        (TryAgainError("TRYAGAIN"), StoreUnavailableError, "is moving a slot"),
        (
            SlotNotCoveredError("slot 7 not covered"),
            StoreUnavailableError,
            "has no master for a slot",
        ),
        (RedisClusterException("no nodes"), StoreUnavailableError, "Redis Cluster at"),
        (MovedError("3999 127.0.0.1:7001"), StoreRefusedError, "connect as a cluster"),
        (AskError("3999 127.0.0.1:7001"), StoreRefusedError, "is a cluster node"),
        (ConnectionError("refused"), StoreUnavailableError, "cannot reach Redis"),
    ],
)
def test_every_fault_is_worded_for_what_it_is(
    fault: Exception, kind: type[StoreUnavailableError], words: str
) -> None:
    error = store_error(fault, "redis://h:7000/0")
    assert type(error) is kind
    assert words in str(error)
    assert "\n" not in str(error)
    if not isinstance(fault, ConnectionError):
        assert "cannot reach" not in str(error)
