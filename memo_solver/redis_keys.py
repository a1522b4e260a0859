"""Every Redis key and channel the project uses: nothing else spells one by hand.

One namespace (format version and game fingerprint, e.g. ``1:3f2a...``) lives in one hash
slot: its name is the hash tag, so the Lua scripts that touch a block and its claim
together also run on Redis Cluster.

- ``ms:{ns}:blocks``: a hash, block key -> encoded block (written once, never expired;
  ``HLEN`` is the coverage, ``HMGET`` fetches a batch in one round trip);
- ``ms:{ns}:claim:<key>``: the claim token, ``SET NX PX lease``;
- ``ms:{ns}:done:<key>``: the pub/sub channel a commit or a release publishes on;
- ``ms:jobs``: the job stream, read by the consumer group ``ms:workers``;
- ``ms:job:<id>``: a job's record (a hash: kind, rules, state, status, progress, error);
- ``ms:worker:<id>``: a worker's heartbeat and counters (a hash with a TTL);
- ``ms:{probe}:<random>``: a readiness probe's claim, set and deleted in one round trip.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "ms"
JOB_STREAM: Final = f"{PREFIX}:jobs"
JOB_GROUP: Final = f"{PREFIX}:workers"
WORKER_PREFIX: Final = f"{PREFIX}:worker:"
JOB_PREFIX: Final = f"{PREFIX}:job:"
DONE_PATTERN: Final = f"{PREFIX}:*:done:*"
"""What a process subscribes to once, to hear of every commit and release."""


def blocks(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:blocks"


def claim(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:claim:{key}"


def claim_pattern(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:claim:*"


def done_channel(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:done:{key}"


def worker(worker_id: str) -> str:
    return f"{WORKER_PREFIX}{worker_id}"


def job(job_id: str) -> str:
    return f"{JOB_PREFIX}{job_id}"


def probe(token: str) -> str:
    return f"{PREFIX}:{{probe}}:{token}"
