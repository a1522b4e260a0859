"""How a process reaches Redis: one address, a standalone server or a Redis Cluster.

An address is a URL (``redis://[:password@]host:port/0``, ``rediss://`` for TLS,
``unix://`` for a socket), or, for a cluster, a comma-separated list of seed nodes: URLs or
bare ``host:port`` pairs after the first URL (``redis://h1:7000,h2:7001``). Any node of a
cluster will do: the client learns the slot map from it.

Whether it is a cluster is asked of the server itself (``INFO cluster``) on the first
command, unless the operator says so: ``?cluster=yes`` or ``?cluster=no`` in the URL
(``--redis-cluster`` and ``$MEMO_SOLVER_REDIS_CLUSTER`` put it there). A cluster has only
database 0, so a URL naming another is refused in one line before anything is sent.

Every fault is worded here, once, for what it is (:func:`store_error`): an unreachable
server, a refusal, a full Redis, a cluster that is down or failing over, a slot that no
master serves, a cluster node reached as if it were a standalone server.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import (
    AskError,
    AuthenticationError,
    ClusterDownError,
    NoPermissionError,
    OutOfMemoryError,
    RedisClusterException,
    RedisError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)

from memo_solver.core.store import (
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
)

Client = aioredis.Redis | RedisCluster
"""Either client: both speak the commands the store and the job queue send."""

FAULTS: Final = (RedisError, RedisClusterException, OSError)
"""Everything a Redis command can raise for an outage or a refusal (redis-py's cluster
errors are not all ``RedisError``)."""

SOCKET_TIMEOUT_S: Final = 5.0
"""The longest wait for one reply: a hung Redis fails a command after this instead of
hanging it. ``?socket_timeout=`` in the URL overrides it; a blocking read (a worker's
XREADGROUP) blocks for less."""
CONNECT_TIMEOUT_S: Final = 5.0
"""The longest wait to connect (``?socket_connect_timeout=``)."""
HEALTH_CHECK_INTERVAL_S: Final = 10
"""A connection idle this long is PINGed before its next command, so one that a Redis
restart dropped while idle is replaced instead of failing that command
(``?health_check_interval=``)."""
MAX_CONNECTIONS: Final = 32
"""Connections per server. The standalone pool blocks when they are all busy; the cluster
client's fail instead, so the store bounds its own concurrent commands by this number and
gives each node twice as many (the job queue and the notifications use some too)."""
CLUSTER_RETRIES: Final = 3
"""How often the cluster client follows a MOVED, retries a TRYAGAIN or re-learns the slot
map after a failed node, backing off up to half a second, before it gives up on a command
(and the fault is reported)."""

CLUSTER_ENV: Final = "MEMO_SOLVER_REDIS_CLUSTER"
"""``auto`` (the default), ``yes`` or ``no``: whether the Redis address is a cluster."""


class ClusterMode(enum.Enum):
    AUTO = "auto"
    """Ask the server (``INFO cluster``) on the first command."""
    YES = "yes"
    NO = "no"


_MODE_PARAMETER: Final = "cluster"
_SCHEMES: Final = ("redis", "rediss", "unix")


@dataclass(frozen=True)
class Address:
    """A parsed Redis address: its URLs (one, or a cluster's seeds) and what it is."""

    urls: tuple[str, ...]
    mode: ClusterMode
    database: int

    @property
    def description(self) -> str:
        return ",".join(redacted(url) for url in self.urls)

    @property
    def socket_timeout_s(self) -> float:
        """The reply timeout in force: the URL's ``?socket_timeout=``, else the default."""
        given = dict(parse_qsl(urlsplit(self.urls[0]).query)).get("socket_timeout")
        return SOCKET_TIMEOUT_S if given is None else float(given)


def with_cluster_mode(url: str, mode: str | None) -> str:
    """The address with ``mode`` (auto, yes or no: the option's or the environment's) in
    its query, unless the URL already says it, so that it travels wherever the address
    goes (the service, the workers' jobs). None or auto leaves it as it is."""
    if mode and mode.lower() not in {m.value for m in ClusterMode}:
        raise StoreLocationError(
            f"--redis-cluster and ${CLUSTER_ENV} take auto, yes or no, not {mode!r}"
        )
    if not mode or mode.lower() == ClusterMode.AUTO.value:
        return url
    head, comma, rest = url.partition(",")
    try:
        parts = urlsplit(head)
    except ValueError:
        return url  # parse_address words what is wrong with it
    query = parse_qsl(parts.query)
    if any(name == _MODE_PARAMETER for name, _ in query):
        return url
    query.append((_MODE_PARAMETER, mode.lower()))
    return urlunsplit(parts._replace(query=urlencode(query))) + comma + rest


def parse_address(text: str) -> Address:
    """The address ``text`` names, or a :class:`StoreLocationError` saying what is wrong."""
    first, *others = [part.strip() for part in text.split(",")]
    try:
        parts = urlsplit(first)
        query = parse_qsl(parts.query)
        mode_text = dict(query).get(_MODE_PARAMETER, ClusterMode.AUTO.value)
        base = urlunsplit(
            parts._replace(query=urlencode([(k, v) for k, v in query if k != _MODE_PARAMETER]))
        )
        if parts.scheme not in _SCHEMES:
            raise ValueError(f"the scheme must be one of {', '.join(_SCHEMES)}://")
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
        database = 0 if parts.scheme == "unix" else _database(parts.path)
        seeds = [base] + [_seed_url(base, other) for other in others]
    except ValueError as exc:
        raise StoreLocationError(f"bad Redis URL {redacted(text)}: {exc}") from exc
    try:
        mode = ClusterMode(mode_text.lower())
    except ValueError:
        raise StoreLocationError(
            f"bad Redis URL {redacted(text)}: cluster={mode_text} must be auto, yes or no"
        ) from None
    address = Address(tuple(seeds), mode, database)
    if len(seeds) > 1 and mode is ClusterMode.NO:
        raise StoreLocationError(
            f"Redis address {address.description} lists {len(seeds)} seed nodes, which only "
            "a cluster has: give one URL, or drop cluster=no"
        )
    if len(seeds) > 1 or mode is ClusterMode.YES:
        refuse_database(address)
    return address


def refuse_database(address: Address) -> None:
    if address.database != 0:
        raise StoreLocationError(
            f"Redis address {address.description} names database {address.database}, but a "
            "Redis Cluster has only database 0: drop the /"
            f"{address.database} from the URL (keep namespaces apart by server instead)"
        )


def _database(path: str) -> int:
    name = path.strip("/")
    if not name:
        return 0
    if not name.isdigit():
        raise ValueError(f"the database must be a number, got {name!r}")
    return int(name)


def _seed_url(first: str, seed: str) -> str:
    """A seed after the first: a URL of its own, or ``host:port`` sharing the first's
    scheme, credentials and options."""
    if "://" in seed:
        if urlsplit(seed).port is None:
            raise ValueError(f"seed node {seed!r} names no port")
        return seed
    parts = urlsplit(first)
    host, _, port = seed.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"seed node {seed!r} is not host:port")
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{seed}" if credentials else seed
    return urlunsplit(parts._replace(netloc=netloc))


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs. One that cannot be parsed (a
    broken IPv6 host, a port that is no number) may still hold a password: only its scheme
    is shown."""
    if "," in url:
        return ",".join(redacted(part) for part in url.split(","))
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return f"{url.partition('://')[0]}://<unreadable address>"
    return urlunsplit(parts._replace(netloc=netloc))


def _options() -> dict[str, object]:
    """Every timeout set here, not left to the redis-py version's defaults (the URL's
    query parameters win). A command that times out or finds its connection dropped is
    sent once more on a fresh connection: a process paused past the timeout (SIGSTOP, a
    VM's pause) sees its reads expire the moment it resumes, and that is no outage. Every
    command sent is idempotent or guarded (claims by token, jobs by status), so sending one
    twice is harmless. RESP2 whatever the redis-py version's default: the replies are
    parsed the same way on every supported version."""
    return {
        "socket_timeout": SOCKET_TIMEOUT_S,
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "retry": Retry(NoBackoff(), 1),
        "protocol": 2,
    }


def standalone_client(url: str) -> aioredis.Redis:
    """A client on one server, with a blocking pool: hundreds of concurrent waits queue
    for a connection instead of failing with "Too many connections"."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=None, **_options()
    )
    return aioredis.Redis(connection_pool=pool)


def cluster_client(address: Address) -> RedisCluster:
    """The cluster client, seeded with every node the address names."""
    first, *others = address.urls
    seeds = []
    for url in others:
        parts = urlsplit(url)
        seeds.append(ClusterNode(parts.hostname or "localhost", parts.port or 6379))
    options = _options() | {"retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), CLUSTER_RETRIES)}
    return RedisCluster.from_url(
        first, startup_nodes=seeds or None, max_connections=2 * MAX_CONNECTIONS, **options
    )


async def connect(address: Address) -> Client:
    """The client the address needs; in ``auto`` mode the server is asked first.

    Raises the store error for an unreachable server or a refused question."""
    if address.mode is ClusterMode.YES or len(address.urls) > 1:
        return await _initialized(cluster_client(address), address)
    if address.mode is ClusterMode.NO:
        return await _on_database(address.urls[0], address)
    # Asked on database 0: a cluster node refuses to SELECT another, and that refusal would
    # hide what is wrong (the URL's database, said in one line by refuse_database).
    url = address.urls[0]
    asking = standalone_client(url if address.database == 0 else _on_database_0(url))
    try:
        info = await asking.info("cluster")
    except FAULTS as exc:
        with anyio.CancelScope(shield=True):
            await close(asking)
        raise store_error(exc, address.description) from exc
    if not info.get("cluster_enabled"):
        if address.database == 0:
            return asking
        with anyio.CancelScope(shield=True):
            await close(asking)
        return await _on_database(url, address)
    with anyio.CancelScope(shield=True):
        await close(asking)
    refuse_database(address)
    return await _initialized(cluster_client(address), address)


async def _initialized(client: RedisCluster, address: Address) -> RedisCluster:
    """The cluster client with the slot map learnt: what readiness and status read."""
    try:
        await client.initialize()
    except FAULTS as exc:
        with anyio.CancelScope(shield=True):
            await close(client)
        raise store_error(exc, address.description) from exc
    return client


async def _on_database(url: str, address: Address) -> aioredis.Redis:
    """The client on one server and the URL's database, asked to select it now: a
    database past the server's ``databases`` setting is bad input (the URL names it), not
    an outage to retry. Database 0 always exists, so its client asks nothing."""
    client = standalone_client(url)
    if address.database == 0:
        return client
    try:
        await client.ping()  # the connection selects the database first
    except FAULTS as exc:
        with anyio.CancelScope(shield=True):
            await close(client)
        if isinstance(exc, ResponseError) and not isinstance(exc, NoPermissionError):
            raise StoreLocationError(
                f"Redis address {address.description} names database {address.database}, "
                f"which the server refuses ({exc}): give a lower one (a server has 16, 0 to "
                "15, unless its `databases` setting says otherwise)"
            ) from exc
        raise store_error(exc, address.description) from exc
    return client


def _on_database_0(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/0"))


async def close(client: Client) -> None:
    if isinstance(client, RedisCluster):
        await client.aclose()
    else:
        await client.aclose()
        await client.connection_pool.disconnect()


def primaries(client: Client) -> Sequence[ClusterNode] | None:
    """A cluster's masters as the client knows them now, or None for one server."""
    return client.get_primaries() if isinstance(client, RedisCluster) else None


def store_error(exc: BaseException, where: str) -> StoreUnavailableError:
    """What went wrong, in words: an error reply is Redis answering that it will not do
    it; only a failed connection is "cannot reach"."""
    if isinstance(exc, OutOfMemoryError):
        return StoreFullError(
            f"Redis at {where} refused the write: OOM command not allowed when used memory > "
            "'maxmemory' (free memory in Redis or raise its maxmemory; what it holds is still "
            "read)"
        )
    if isinstance(exc, ClusterDownError):
        return StoreUnavailableError(
            f"Redis Cluster at {where} is down ({exc}): a master is failing or a failover is "
            "in progress; it serves again once a replica takes over or the master returns "
            "(try again shortly; `redis-cli --cluster check HOST:PORT` shows the nodes)"
        )
    if isinstance(exc, TryAgainError):
        return StoreUnavailableError(
            f"Redis Cluster at {where} is moving a slot (TRYAGAIN): try again shortly"
        )
    if isinstance(exc, AskError):  # MOVED or ASK: a cluster node reached as one server
        return StoreRefusedError(
            f"Redis at {where} is a cluster node and redirected a key elsewhere ({exc}): "
            "connect as a cluster (drop cluster=no, or --redis-cluster yes)"
        )
    if isinstance(exc, SlotNotCoveredError):
        return StoreUnavailableError(
            f"Redis Cluster at {where} has no master for a slot ({exc}): a master is down "
            "with no replica to take over, or slots are unassigned (try again once "
            "`redis-cli --cluster check HOST:PORT` says every slot is covered)"
        )
    if isinstance(exc, RedisClusterException):
        return StoreUnavailableError(f"Redis Cluster at {where} failed: {exc} (try again)")
    if isinstance(exc, ResponseError):
        return StoreRefusedError(f"Redis at {where} refused the command: {exc}")
    if isinstance(exc, AuthenticationError):
        return StoreRefusedError(
            f"Redis at {where} refused the connection: {exc} (check the password in the URL)"
        )
    return StoreUnavailableError(
        f"cannot reach Redis at {where}: {exc} "
        "(is redis-server running? check --redis or $MEMO_SOLVER_REDIS_URL)"
    )
