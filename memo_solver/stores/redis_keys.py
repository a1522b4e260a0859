"""Every Redis key and channel the project uses: nothing else spells one by hand.

Keys come in hash tags (one per namespace, then ``{jobs}``, ``{rules}`` and ``{probe}``),
so that every Lua script's keys live in one Redis Cluster slot and a request never has to
SCAN the keyspace to find what it counts.

One namespace (format version and game fingerprint, e.g. ``1:3f2a...``) is one tag:

- ``ms:{ns}:blocks``: a hash, block key -> encoded block (written once, never expired;
  ``HLEN`` is the coverage, ``HMGET`` fetches a batch in one round trip). A namespace's
  blocks are a list of such group hashes (:func:`block_groups`; one today), so coverage
  is a sum over groups;
- ``ms:{ns}:claim:<key>``: the claim token, ``SET NX PX lease``;
- ``ms:{ns}:claims``: a sorted set, block key -> claim expiry (Redis server time, ms),
  kept by the claim scripts beside the claim keys so live claims are one ``ZCOUNT``;
- ``ms:{ns}:definition``: the game's definition (a rule-set file), set once (``SET NX``);
- ``ms:{ns}:done:<key>``: the pub/sub channel a commit or a release publishes on.

:func:`namespace_keys` names them all but the claim keys (the members of the claims set
name those), and :func:`namespace_of` tells a namespace by them in a SCAN: a new key of a
namespace joins both.

The jobs are the tag ``{jobs}``:

- ``ms:{jobs}:stream``: the job stream, read by the consumer group ``ms:{jobs}:workers``;
- ``ms:{jobs}:job:<id>``: a job's record (a hash: kind, rules, state, status, progress,
  error), expiring a while after the job finished or failed;
- ``ms:{jobs}:recent``: a sorted set, job id -> when its record expires (ms; ``+inf``
  while queued or running): the index ``status`` lists jobs from;
- ``ms:{jobs}:worker:<id>``: a worker's heartbeat and counters (a hash with a TTL);
- ``ms:{jobs}:alive``: a sorted set, worker id -> heartbeat deadline (ms): the live
  workers are one ``ZRANGEBYSCORE now +inf``.

The registrations of named rule sets are the tag ``{rules}`` (one slot for all, so that
each step is one script):

- ``ms:{rules}:names``: a sorted set of the registered names, every score 0, so that
  ``ZRANGEBYLEX`` pages through them in bytewise order;
- ``ms:{rules}:documents``: a hash, name -> the registered document;
- ``ms:{rules}:fingerprints``: a hash, name -> its document's fingerprint;
- ``ms:{rules}:sharing``: a hash, fingerprint -> how many names are registered with it
  (a counter rather than a set per fingerprint: unregistering learns the fingerprint
  inside its script, and a script may touch only the keys it was handed).

No kind of a namespace's key ends these, so :func:`namespace_of` never takes them for one.

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
RULES_TAG: Final = "{rules}"
REGISTERED_NAMES: Final = f"{PREFIX}:{RULES_TAG}:names"
REGISTERED_DOCUMENTS: Final = f"{PREFIX}:{RULES_TAG}:documents"
REGISTERED_FINGERPRINTS: Final = f"{PREFIX}:{RULES_TAG}:fingerprints"
REGISTERED_SHARING: Final = f"{PREFIX}:{RULES_TAG}:sharing"
REGISTRATIONS: Final = (
    REGISTERED_NAMES,
    REGISTERED_DOCUMENTS,
    REGISTERED_FINGERPRINTS,
    REGISTERED_SHARING,
)
"""Every key of the registrations, in the order the registration scripts take them."""
DONE_PATTERN: Final = f"{PREFIX}:*:done:*"
"""What a process subscribes to once, to hear of every commit and release."""
TAGGED_PATTERN: Final = f"{PREFIX}:{{*"
"""What a SCAN for the namespaces matches: every key with a hash tag (the jobs', the
registrations' and the probe's too, which :func:`namespace_of` leaves out)."""
_BLOCKS, _CLAIMS, _DEFINITION, _CLAIM = "blocks", "claims", "definition", "claim:"


def blocks(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:{_BLOCKS}"


def block_groups(namespace: str) -> list[str]:
    """The hashes that together hold a namespace's blocks (one today)."""
    return [blocks(namespace)]


def claim(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:{_CLAIM}{key}"


def claims(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:{_CLAIMS}"


def definition(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:{_DEFINITION}"


def namespace_keys(namespace: str) -> list[str]:
    """Every key of a namespace but its claim keys: the block groups first."""
    return [*block_groups(namespace), claims(namespace), definition(namespace)]


def namespace_of(key: str) -> str | None:
    """The namespace whose key this is, or None for any other key (a job's, a worker's,
    a registration's, the probe's, another program's)."""
    head, brace, rest = key.partition("{")
    namespace, closing, kind = rest.partition("}:")
    if head != f"{PREFIX}:" or not brace or not closing or not namespace:
        return None
    if kind in (_BLOCKS, _CLAIMS, _DEFINITION) or kind.startswith(_CLAIM):
        return namespace
    return None


def done_channel(namespace: str, key: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:done:{key}"


def worker(worker_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:worker:{worker_id}"


def job(job_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:job:{job_id}"


def probe(token: str) -> str:
    return f"{PREFIX}:{{probe}}:{token}"
