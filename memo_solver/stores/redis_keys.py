"""Every Redis key and channel the project uses: nothing else spells one by hand.

Keys come in two hash tags, so that every Lua script's keys live in one Redis Cluster slot
and a request never has to SCAN the keyspace to find what it counts.

One namespace (format version and game fingerprint, e.g. ``1:3f2a...``) is one tag:

- ``ms:{ns}:blocks``: a hash, block key -> encoded block (written once, never expired;
  ``HLEN`` is the coverage, ``HMGET`` fetches a batch in one round trip). A namespace's
  blocks are a list of such group hashes (:func:`block_groups`; one today), so coverage
  is a sum over groups;
- ``ms:{ns}:claim:<key>``: the claim token, ``SET NX PX lease``;
- ``ms:{ns}:claims``: a sorted set, block key -> claim expiry (Redis server time, ms),
  kept by the claim scripts beside the claim keys so live claims are one ``ZCOUNT``;
- ``ms:{ns}:done:<key>``: the pub/sub channel a commit or a release publishes on.

The jobs are the other tag, ``{jobs}``:

- ``ms:{jobs}:stream``: the job stream, read by the consumer group ``ms:{jobs}:workers``;
- ``ms:{jobs}:job:<id>``: a job's record (a hash: kind, rules, state, status, progress,
  error), expiring a while after the job finished or failed;
- ``ms:{jobs}:recent``: a sorted set, job id -> when its record expires (ms; ``+inf``
  while queued or running): the index ``status`` lists jobs from;
- ``ms:{jobs}:worker:<id>``: a worker's heartbeat and counters (a hash with a TTL);
- ``ms:{jobs}:alive``: a sorted set, worker id -> heartbeat deadline (ms): the live
  workers are one ``ZRANGEBYSCORE now +inf``.

And ``ms:{probe}:<random>``: a readiness probe's claim, set and deleted in one round trip.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "ms"
JOBS_TAG: Final = "{jobs}"
JOB_STREAM: Final = f"{PREFIX}:{JOBS_TAG}:stream"
JOB_GROUP: Final = f"{PREFIX}:{JOBS_TAG}:workers"
RECENT_JOBS: Final = f"{PREFIX}:{JOBS_TAG}:recent"
LIVE_WORKERS: Final = f"{PREFIX}:{JOBS_TAG}:alive"
DONE_PATTERN: Final = f"{PREFIX}:*:done:*"
"""What a process subscribes to once, to hear of every commit and release."""


def blocks(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:blocks"


def block_groups(namespace: str) -> list[str]:
    """The hashes that together hold a namespace's blocks (one today)."""
    return [blocks(namespace)]


def claim(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:claim:{key}"


def claims(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:claims"


def done_channel(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:done:{key}"


def worker(worker_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:worker:{worker_id}"


def job(job_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:job:{job_id}"


def probe(token: str) -> str:
    return f"{PREFIX}:{{probe}}:{token}"
