"""Commit and release notifications over sharded pub/sub, so that no commit is broadcast.

A commit or a release ``SPUBLISH``es the block keys it touched on its group's channel
(``ms:{ns/g}:done``): on a Redis Cluster only the node that owns the group's slot carries
the message, to the processes subscribed there, instead of every node relaying every
commit to every client. A process subscribes to a group's channel the first time one of its
waiters waits on a block of that group, and stays subscribed (a few hundred channels at
most per namespace in use).

One reader per connection: a standalone server has one pub/sub connection, a cluster one
per node that carries a subscribed channel (redis-py moves a channel's subscription to the
new owner after a failover or a slot migration). A waiter never relies on a message alone:
it re-checks every second (:mod:`memo_solver.stores.redis`), so a message lost to a
reconnect or a subscription that lands after the commit costs at most that second.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import ClusterPubSub

from memo_solver.stores.redis_client import FAULTS, Client

log = logging.getLogger(__name__)

_READ_TIMEOUT_S: Final = 1.0
_RETRY_S: Final = 1.0
KEY_SEPARATOR: Final = "\n"
"""Between the block keys of one message (a key never holds a newline)."""


class Notifications:
    """The waiters of one process, by channel and block key, and the readers that wake
    them. Started in the store's task group (:meth:`start`)."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._waiters: dict[str, dict[str, set[anyio.Event]]] = {}
        self._subscribed: set[str] = set()
        self._pubsub: PubSub | ClusterPubSub | None = None
        self._reading: set[int] = set()
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None
        self._new_connection = anyio.Event()

    def start(self, group: TaskGroup) -> None:
        self._group = group

    @contextmanager
    def waiting(self, channel: str, key: str) -> Iterator[anyio.Event]:
        """An event set when a message on ``channel`` names ``key``; register it before
        looking at the store, so that a commit in between is not missed."""
        event = anyio.Event()
        waiters = self._waiters.setdefault(channel, {}).setdefault(key, set())
        waiters.add(event)
        try:
            yield event
        finally:
            waiters.discard(event)
            if not waiters:
                by_key = self._waiters.get(channel, {})
                by_key.pop(key, None)
                if not by_key:
                    self._waiters.pop(channel, None)

    async def subscribe(self, client: Client, channel: str) -> None:
        """Subscribe to ``channel`` once per process; a failure is logged and left to the
        waiter's re-check (the next wait tries again)."""
        if channel in self._subscribed or self._group is None:
            return
        async with self._lock:
            if channel in self._subscribed:
                return
            try:
                if self._pubsub is None:
                    self._pubsub = client.pubsub()
                await self._pubsub.ssubscribe(channel)
            except FAULTS as exc:
                log.info("cannot subscribe to %s at %s (%s)", channel, self._description, exc)
                return
            self._subscribed.add(channel)
            self._start_readers()

    def _start_readers(self) -> None:
        for pubsub in self._connections():
            if id(pubsub) not in self._reading and self._group is not None:
                self._reading.add(id(pubsub))
                self._group.start_soon(self._read, pubsub)

    def _connections(self) -> list[PubSub]:
        if isinstance(self._pubsub, ClusterPubSub):
            return list(self._pubsub.node_pubsub_mapping.values())
        return [self._pubsub] if self._pubsub is not None else []

    async def _read(self, pubsub: PubSub) -> None:
        """Dispatch one connection's messages for as long as the process listens. A lost
        connection is logged and read again (redis-py reconnects and subscribes anew);
        a connection redis-py dropped (its channels moved to another node) ends its
        reader, and the move's new connection gets one of its own."""
        try:
            while pubsub in self._connections():
                try:
                    message = await pubsub.get_message(timeout=_READ_TIMEOUT_S)
                except FAULTS as exc:
                    log.info("notifications from %s lost (%s); retrying", self._description, exc)
                    await anyio.sleep(_RETRY_S)
                    continue
                except RuntimeError:
                    return  # closed under us: no subscription left on it
                if message is not None:
                    self._dispatch(message)
                self._start_readers()
        finally:
            self._reading.discard(id(pubsub))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") != "smessage":
            return
        channel = _text(message["channel"])
        by_key = self._waiters.get(channel)
        if not by_key:
            return
        for key in _text(message["data"]).split(KEY_SEPARATOR):
            for event in by_key.get(key, ()):
                event.set()

    async def aclose(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        self._subscribed.clear()
        if pubsub is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await pubsub.aclose()  # type: ignore[no-untyped-call]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
