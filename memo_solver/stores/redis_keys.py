"""Every Redis key and channel the project uses: nothing else spells one by hand.

Keys come in hash tags, so that every Lua script's keys live in one Redis Cluster slot and
a request never has to SCAN the keyspace to find what it counts.

A namespace (format version and game fingerprint, e.g. ``1:3f2a...``) spreads its blocks
over groups, each a hash tag of its own (``{ns/g}``, g = 0 .. groups - 1), so that no key
grows past a few megabytes (``maxi-yatzy`` is about 600 MB of blocks) and a cluster spreads
them over every master. A block's group is a hash of its key (:meth:`Layout.group_of`). Per
group:

- ``ms:{ns/g}:blocks``: a hash, block key -> encoded block (written once, never expired;
  ``HLEN`` summed over the groups is the coverage, ``HMGET`` fetches a group's part of a
  batch in one command);
- ``ms:{ns/g}:claim:<key>``: the claim token, ``SET NX PX lease``;
- ``ms:{ns/g}:claims``: a sorted set, block key -> claim expiry (Redis server time, ms),
  kept by the claim scripts beside the claim keys so live claims are one ``ZCOUNT``;
- ``ms:{ns/g}:done``: the sharded pub/sub channel (``SPUBLISH``: only the group's own
  node hears it) on which a commit or a release names its block keys.

The number of groups is fixed per namespace, when it is first written, in its layout record
``ms:{ns}:layout``; a namespace written before groups existed has none until its next write
and holds its blocks under ``{ns}`` itself, which is the layout of one group
(:class:`Layout`), so it stays readable. Each group keeps a copy of the record,
``ms:{ns/g}:layout`` (the record itself for one group), set by every process before its
first write to the namespace and deleted with the group's blocks: a commit's script checks
it in the group's own slot, so a process still writing into a namespace deleted meanwhile
(a worker whose rule set was deleted) is refused, never leaving blocks that no record
covers. Keys of a group that the record does not name are strays (:func:`group_key`).
Beside it, ``ms:{ns}:definition``: the game's definition (a rule-set file), set once
(``SET NX``).

:func:`namespace_of` tells a namespace by its keys in a SCAN (a new key of a namespace
joins it), but for the layout record: a namespace whose only claims were let go holds
nothing, and its record (a few bytes) stays for the next writer, or goes with the namespace.

The jobs are the tag ``{jobs}``:

- ``ms:{jobs}:stream``: the job stream, read by the consumer group ``ms:{jobs}:workers``;
- ``ms:{jobs}:job:<id>``: a job's record (a hash: kind, rules, state, status, progress,
  error), expiring a while after the job finished or failed;
- ``ms:{jobs}:recent``: a sorted set, job id -> when its record expires (ms; ``+inf``
  while queued or running): the index ``status`` lists jobs from;
- ``ms:{jobs}:worker:<id>``: a worker's heartbeat and counters (a hash with a TTL);
- ``ms:{jobs}:alive``: a sorted set, worker id -> heartbeat deadline (ms): the live
  workers are one ``ZRANGEBYSCORE now +inf``;
- ``ms:{jobs}:large``: a sorted set of the ids of the solves past a service's cold budget
  that clients queued (every score 0), pruned of the finished ones as the next is queued:
  what the service's cap on them counts.

The registrations of named rule sets are the tag ``{rules}`` (one slot for all, so that
each step is one script):

- ``ms:{rules}:names``: a sorted set of the registered names, every score 0, so that
  ``ZRANGEBYLEX`` pages through them in bytewise order; its ``ZCARD`` is what the
  registration quota counts, in the script that registers (so the quota is exact);
- ``ms:{rules}:documents``: a hash, name -> the registered document;
- ``ms:{rules}:fingerprints``: a hash, name -> its document's fingerprint;
- ``ms:{rules}:sharing``: a hash, fingerprint -> how many names are registered with it
  (a counter rather than a set per fingerprint: unregistering learns the fingerprint
  inside its script, and a script may touch only the keys it was handed);
- ``ms:{rules}:used``: a hash, name -> when it was last asked about (Unix seconds), written
  at most about hourly per name and server process; a name missing is stamped when
  ``prune`` first reads it.

No kind of a namespace's key ends these, so :func:`namespace_of` never takes them for one.

``ms:{written}:namespaces``: the set of namespaces written (:data:`WRITTEN`).

And ``ms:{probe:<n>}:<random>``: a readiness probe's claim, set and deleted in one round
trip; on a cluster one per master, each ``n`` chosen so that its slot is that master's.
"""

from __future__ import annotations

import functools
import zlib
from binascii import crc_hqx
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

PREFIX: Final = "ms"
JOBS_TAG: Final = "{jobs}"
JOB_STREAM: Final = f"{PREFIX}:{JOBS_TAG}:stream"
JOB_GROUP: Final = f"{PREFIX}:{JOBS_TAG}:workers"
RECENT_JOBS: Final = f"{PREFIX}:{JOBS_TAG}:recent"
LIVE_WORKERS: Final = f"{PREFIX}:{JOBS_TAG}:alive"
LARGE_SOLVES: Final = f"{PREFIX}:{JOBS_TAG}:large"
WRITTEN: Final = f"{PREFIX}:{{written}}:namespaces"
"""A set of every namespace written since it was kept (added by each process before its
first write, removed by a delete): what ``status`` lists without a SCAN."""
RULES_TAG: Final = "{rules}"
REGISTERED_NAMES: Final = f"{PREFIX}:{RULES_TAG}:names"
REGISTERED_DOCUMENTS: Final = f"{PREFIX}:{RULES_TAG}:documents"
REGISTERED_FINGERPRINTS: Final = f"{PREFIX}:{RULES_TAG}:fingerprints"
REGISTERED_SHARING: Final = f"{PREFIX}:{RULES_TAG}:sharing"
REGISTERED_USED: Final = f"{PREFIX}:{RULES_TAG}:used"
REGISTRATIONS: Final = (
    REGISTERED_NAMES,
    REGISTERED_DOCUMENTS,
    REGISTERED_FINGERPRINTS,
    REGISTERED_SHARING,
)
"""Every key of the registrations, in the order the registration scripts take them."""
TAGGED_PATTERN: Final = f"{PREFIX}:{{*"
"""What a SCAN for the namespaces matches: every key with a hash tag (the jobs', the
registrations' and the probes' too, which :func:`namespace_of` leaves out)."""
MIN_GROUPS: Final = 32
"""The fewest groups a namespace is spread over: enough that any cluster of up to eight
masters holds about an equal share (the groups' slots are spaced evenly, see
:meth:`Layout.tag`), few enough that a batch touches few groups (a command each)."""
MAX_GROUPS: Final = 1024
GROUP_BYTES: Final = 2 << 20
"""What a group may hold, by the expected size the engine gives (an upper bound): past
``MIN_GROUPS`` groups, one more per 2 MB, so no key grows past a few megabytes."""
DEFAULT_GROUPS: Final = MIN_GROUPS
"""Groups of a namespace whose size nobody said (an import before any engine opened)."""


def groups_for(size_bytes: int) -> int:
    """How many groups a namespace of about ``size_bytes`` is spread over."""
    return max(MIN_GROUPS, min(MAX_GROUPS, -(-size_bytes // GROUP_BYTES)))


_SLOTS: Final = 16384
_BLOCKS, _CLAIMS, _DEFINITION, _LAYOUT, _CLAIM = (
    "blocks",
    "claims",
    "definition",
    "layout",
    "claim:",
)
_GROUP: Final = "/"


@dataclass(frozen=True)
class Layout:
    """Where a namespace's blocks live: ``groups`` hash tags, or (one group) the
    namespace's own tag, as every namespace written before groups existed."""

    namespace: str
    groups: int

    def tag(self, group: int) -> str:
        """``ns/n``, with ``n`` chosen so that group ``g``'s slot lies in the ``g``-th of
        ``groups`` equal slices of the slot space: masters owning equal slot ranges (as a
        cluster is made) then hold equal shares of the groups, where hashing ``ns/g`` would
        leave one master with twice another's on a few dozen groups."""
        if self.groups == 1:
            return self.namespace
        return f"{self.namespace}{_GROUP}{_spaced_tags(self.namespace, self.groups)[group]}"

    def group_of(self, key: str) -> int:
        """A stable hash of the key (CRC-32: the same in every process and version)."""
        return zlib.crc32(key.encode()) % self.groups

    def by_group(self, keys: Iterable[str]) -> dict[int, list[str]]:
        """The keys split by group, each group's in the order given."""
        split: dict[int, list[str]] = {}
        for key in keys:
            split.setdefault(self.group_of(key), []).append(key)
        return split

    def blocks(self, group: int) -> str:
        return blocks(self.tag(group))

    def claims(self, group: int) -> str:
        return f"{PREFIX}:{{{self.tag(group)}}}:{_CLAIMS}"

    def claim(self, group: int, key: str) -> str:
        return f"{PREFIX}:{{{self.tag(group)}}}:{_CLAIM}{key}"

    def marker(self, group: int) -> str:
        """The group's copy of the layout record (:func:`layout` of its tag)."""
        return layout(self.tag(group))

    def tags(self) -> frozenset[int]:
        """The numbers of the group tags (``ns/n``) this layout names; none for one group."""
        if self.groups == 1:
            return frozenset()
        return frozenset(_spaced_tags(self.namespace, self.groups))

    def done_channel(self, group: int) -> str:
        return f"{PREFIX}:{{{self.tag(group)}}}:done"

    def block_groups(self) -> list[str]:
        return [self.blocks(g) for g in range(self.groups)]


@functools.cache
def _spaced_tags(namespace: str, groups: int) -> tuple[int, ...]:
    """For each group, the least number whose tag's slot lies in the group's slice (about
    ``groups`` tries per group: once per namespace and process)."""
    found: dict[int, int] = {}
    number = 0
    while len(found) < groups:
        slot = crc_hqx(f"{namespace}{_GROUP}{number}".encode(), 0) % _SLOTS
        found.setdefault(slot * groups // _SLOTS, number)
        number += 1
    return tuple(found[g] for g in range(groups))


def blocks(tag: str) -> str:
    """The blocks hash of a group's tag (``ns/n``, or the namespace for one group)."""
    return f"{PREFIX}:{{{tag}}}:{_BLOCKS}"


def group_blocks(namespace: str, number: int) -> str:
    """The blocks hash of the group tag ``ns/number`` (a stray's, whose layout is gone)."""
    return blocks(f"{namespace}{_GROUP}{number}")


def definition(namespace: str) -> str:
    return f"{PREFIX}:{{{namespace}}}:{_DEFINITION}"


def layout(namespace: str) -> str:
    """The namespace's layout record: its number of groups (absent: one, the old layout)."""
    return f"{PREFIX}:{{{namespace}}}:{_LAYOUT}"


def namespace_of(key: str) -> str | None:
    """The namespace whose key this is, or None for any other key (a job's, a worker's,
    a registration's, a probe's, another program's)."""
    head, brace, rest = key.partition("{")
    tag, closing, kind = rest.partition("}:")
    if head != f"{PREFIX}:" or not brace or not closing or not tag:
        return None
    namespace, slash, group = tag.partition(_GROUP)
    claim_or_blocks = kind in (_BLOCKS, _CLAIMS) or kind.startswith(_CLAIM)
    if slash:  # a group's tag: only its blocks and claims live there
        return namespace or None if group.isdigit() and claim_or_blocks else None
    if claim_or_blocks or kind == _DEFINITION:
        return namespace
    return None  # the layout record alone holds nothing (a namespace claimed, then let go)


def group_key(key: str) -> tuple[str, int] | None:
    """The namespace and tag number of a key in one of a namespace's groups
    (``ms:{ns/n}:...``, whatever its kind), or None for any other key."""
    head, brace, rest = key.partition("{")
    tag, closing, _ = rest.partition("}:")
    namespace, slash, group = tag.partition(_GROUP)
    if head != f"{PREFIX}:" or not brace or not closing or not slash or not namespace:
        return None
    return (namespace, int(group)) if group.isdigit() else None


def is_blocks(key: str) -> bool:
    """Whether the key is a group's blocks hash (of a namespace's key, as SCAN finds it)."""
    return key.endswith(f"}}:{_BLOCKS}")


def is_claim(key: str) -> bool:
    """Whether the key is a block's claim (of a namespace's key, as SCAN finds it)."""
    return f"}}:{_CLAIM}" in key


def worker(worker_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:worker:{worker_id}"


def job(job_id: str) -> str:
    return f"{PREFIX}:{JOBS_TAG}:job:{job_id}"


def probe(tag: int, token: str) -> str:
    return f"{PREFIX}:{{probe:{tag}}}:{token}"
