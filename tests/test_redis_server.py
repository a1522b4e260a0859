"""The test helper that runs a real redis-server: start, crash, restart, ports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.redis_server import RedisServer, ensure_redis_server, free_port


@pytest.fixture(scope="module")
def redis_binary() -> str:
    return ensure_redis_server()


@pytest.fixture
def server(redis_binary: str, tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis", binary=redis_binary) as running:
        yield running


def test_start_ping_stop(server: RedisServer) -> None:
    assert server.running
    assert server.pid is not None
    assert server.url == f"redis://127.0.0.1:{server.port}/0"
    with server.client() as client:
        assert client.ping()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        assert client.config_get("save") == {"save": ""}
    server.stop()
    assert not server.running
    assert server.pid is None
    server.stop()  # stopping a stopped server is a no-op


def test_kill_then_restart_keeps_what_was_written(server: RedisServer) -> None:
    port, first_pid = server.port, server.pid
    with server.client() as client:
        client.set("solved:block", b"\x00\x01bytes")
        client.hset("blocks", mapping={"a": b"1", "b": b"2"})
    server.wait_written()
    server.kill()
    assert not server.running
    assert (server.data_dir / "appendonlydir").is_dir()

    server.restart()
    assert server.port == port
    assert server.pid != first_pid
    with server.client() as client:
        assert client.get("solved:block") == b"\x00\x01bytes"
        assert client.hgetall("blocks") == {b"a": b"1", b"b": b"2"}


def test_two_servers_get_different_free_ports(redis_binary: str, tmp_path: Path) -> None:
    with (
        RedisServer(tmp_path / "one", binary=redis_binary) as one,
        RedisServer(tmp_path / "two", binary=redis_binary) as two,
    ):
        assert one.port != two.port
        assert one.url != two.url
        with one.client() as a, two.client() as b:
            a.set("where", "one")
            b.set("where", "two")
            assert a.get("where") == b"one"
            assert b.get("where") == b"two"
    assert free_port() > 0
