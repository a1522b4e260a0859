"""The store interface: a shared memo of encoded blocks with leased claims.

Every store keeps, per namespace (format version and game fingerprint), blocks as opaque
bytes and claims as ``(token, expiry)``, and may keep the game's definition (opaque bytes
too: a rule-set file) beside them, so that a process that meets a namespace by its
fingerprint alone can rebuild the game. Apart from the namespaces, a store keeps the
registrations: names given to rule sets (opaque documents, each with its fingerprint), shared
by every process on the store. A claim is only a courtesy that keeps two workers
from computing the same block: values are deterministic, so a block computed twice after a
lost lease is harmless, and correctness never depends on the claim.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, Self

from memo_solver.core.errors import UserError


class Claim(enum.Enum):
    """What ``try_claim`` found."""

    CLAIMED = "claimed"
    """The caller now holds the claim and should compute the block."""
    DONE = "done"
    """The block is already stored: fetch it."""
    BUSY = "busy"
    """Someone else holds a live claim: wait for the block."""


@dataclass(frozen=True)
class Coverage:
    """What a store holds for one namespace."""

    blocks: int
    claims: int
    bytes: int
    """What the blocks take: their encoded length (memory, SQLite), or what Redis spends on
    the namespace's block hashes by its own sampled measure (MEMORY USAGE: O(1), with the
    hash's overhead, so more than the encoded length)."""


class StoreUnavailableError(RuntimeError):
    """The store cannot serve this operation now; the message names it and says what to do.

    Every store fault is one of these, so one ``except`` reports them all: unreachable (this
    class itself), refused, full or locked (the subclasses). The service answers 503 (507
    when full) with Retry-After, the CLI exits with status 75: trying again later may work.
    """


class StoreRefusedError(StoreUnavailableError):
    """The store answered but refused the operation (a read-only file, a Redis error reply)."""


class StoreFullError(StoreRefusedError):
    """The store has no room for the write (disk full, Redis at ``maxmemory``); what it
    holds is still read."""


class StoreBusyError(StoreUnavailableError):
    """Another process held the store's write lock for longer than the store waits."""


class StoreLocationError(UserError, StoreUnavailableError):
    """What was named cannot be a store (a folder, a path under a file, a malformed URL).

    Bad input, not an outage: a user error first, so the CLI says it with exit status 2, as
    it says any other. A store error all the same, so code that only reports store trouble
    (the worker's retry loop) reports this too.
    """

    field = "store"


class NamespaceGoneError(UserError):
    """A commit into a namespace deleted since this process began writing to it (a rule set
    deleted during its precompute): refused by the store, atomically with the write, so
    that no block lands where no layout record and no definition say whose it is. The
    caller's own error, not the store's: retrying cannot help, the work is void."""

    field = "rules"
    status = 409

    def __init__(self, namespace: str) -> None:
        super().__init__(
            f"the blocks of {namespace} were deleted while they were being solved (the rule "
            "set was deleted): nothing more is written there",
            "rules",
        )


class RegistrationQuotaError(Exception):
    """A registration of a free name refused because ``quota`` names are registered already:
    checked by the store atomically with the write, so that registrations racing past the
    last free place cannot all take it. The caller says what the quota is and who sets it."""

    def __init__(self, quota: int) -> None:
        super().__init__(f"the registration quota of {quota:,} names is reached")
        self.quota = quota


GONE_HOLD_S = 60.0
"""How long a process keeps refusing its own writes into a namespace it was refused in:
longer than any write of a solve in flight takes to come (a chunk's solve, under a second;
a waiter's lease, 10 s by default, before it claims), so that none of them starts the
deleted namespace afresh; short enough that a rule set registered again is solved by the
same process a minute later."""


class GoneNamespaces:
    """The namespaces a store of this process was refused a write in (deleted by another),
    refused here at once for :data:`GONE_HOLD_S`: one refusal ends the whole solve, where
    the solve's other writes would otherwise write the namespace again from scratch."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}

    def hold(self, namespace: str) -> NamespaceGoneError:
        """Refuse the namespace from now on; the error to raise."""
        self._until[namespace] = time.monotonic() + GONE_HOLD_S
        return NamespaceGoneError(namespace)

    def check(self, namespace: str) -> None:
        """Raise :class:`NamespaceGoneError` for a namespace still held."""
        until = self._until.get(namespace)
        if until is None:
            return
        if time.monotonic() < until:
            raise NamespaceGoneError(namespace)
        del self._until[namespace]

    def release(self, namespace: str) -> None:
        """This process deleted the namespace itself: its next write starts it afresh."""
        self._until.pop(namespace, None)


def mixed(keys: Sequence[str], shuffle: random.Random | None) -> list[str]:
    """What :meth:`Store.arrange` is in a store that keeps every key alike."""
    order = list(keys)
    if shuffle is not None:
        shuffle.shuffle(order)
    return order


class Write(enum.Enum):
    """What a readiness probe found (``Store.probe``), when the store is sound."""

    ACCEPTED = "accepted"
    """A write went through."""
    BUSY = "busy"
    """Another process holds the write lock (SQLite: a precompute committing): writes wait
    their turn, reads go on."""


class Store(Protocol):
    """The async interface the engine, the CLI and the workers share."""

    @property
    def description(self) -> str:
        """Where the store lives, for messages (a path or a URL without password)."""
        ...

    def expect(self, namespace: str, size_bytes: int) -> None:
        """About how much the namespace will hold: a store that spreads a namespace over
        keys or nodes (Redis) sizes its spread by it when the namespace is first written;
        one file or one process's memory has nothing to size."""
        ...

    async def arrange(
        self, namespace: str, keys: Sequence[str], shuffle: random.Random | None
    ) -> list[str]:
        """``keys`` in the order a whole solve should take them: keys the store keeps
        together (Redis: a group) next to each other, so that a chunk of them is a few
        commands, not one per group. ``shuffle`` mixes the order (of the groups, and of the
        keys within each), so that workers side by side take different chunks."""
        ...

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        """The stored blocks among ``keys``; missing ones are absent from the result."""
        ...

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        """Per key, atomically: DONE if the block exists, else take the claim unless
        another token's claim is still live (BUSY). The token may re-claim its own. A
        store that refuses commits into a namespace deleted meanwhile may refuse its claims
        too (Redis: :class:`NamespaceGoneError`, claiming nothing)."""
        ...

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        """Extend the leases of the claims this token still holds among ``keys``."""
        ...

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        """Drop the token's claims among ``keys`` and wake their waiters."""
        ...

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        """Store the blocks, drop the token's claims on them and wake waiters, all at once.
        A store shared between processes keeps a record per namespace written (Redis: its
        layout) and raises :class:`NamespaceGoneError`, writing nothing, when the record
        this process wrote under is gone (:meth:`delete_namespace` since)."""
        ...

    async def wait(self, namespace: str, key: str, timeout_s: float) -> None:
        """Return when the block may have been stored, or after ``timeout_s``."""
        ...

    async def keys(self, namespace: str) -> list[str]:
        """Every stored block key (for export and coverage)."""
        ...

    async def coverage(self, namespace: str) -> Coverage: ...

    async def put_definition(self, namespace: str, definition: bytes) -> None:
        """Keep the definition of the namespace's game beside its blocks. Set once: the
        namespace is named by the game's fingerprint, so a definition already there says
        the same game, and stays."""
        ...

    async def definition(self, namespace: str) -> bytes | None:
        """The definition kept for the namespace, or None."""
        ...

    async def namespaces(self) -> list[str]:
        """Every namespace holding anything (blocks, claims, live or lapsed, a definition),
        sorted. A walk of everything the store holds (Redis: SCAN), for the operator's
        ``prune``: never on a request's path, nor in ``status``."""
        ...

    async def delete_namespace(self, namespace: str) -> int:
        """Delete everything the namespace holds, at once; the number of blocks deleted."""
        ...

    async def written(self) -> list[str]:
        """The namespaces written to, sorted, without walking all the store holds (SQLite:
        a step of the blocks' index per namespace; Redis: an index the writers keep, of
        every namespace written since it was kept): what ``status`` lists beyond the games
        it knows by name (need tables, a rule-set file's values)."""
        ...

    async def strays(self) -> dict[str, Coverage]:
        """What each namespace holds that no reader finds: blocks and claims that no layout
        record covers (Redis: written into a namespace after it was deleted, by a version
        that did not check). A walk of everything, for ``prune`` only."""
        ...

    async def delete_strays(self, namespace: str) -> int:
        """Delete what :meth:`strays` finds of the namespace; the number of blocks deleted."""
        ...

    async def register(
        self, name: str, fingerprint: str, document: bytes, quota: int
    ) -> bytes | None:
        """Register ``document`` (whose rules have ``fingerprint``) as ``name`` if the name is
        free and fewer than ``quota`` names are registered, atomically: None when this call
        registered it, else the document that held the name, left unchanged (``document``
        itself, when another caller registered the same). The first of concurrent callers
        wins, and every other one is told its document. A free name past the quota raises
        :class:`RegistrationQuotaError`, registering nothing: of concurrent registrations of
        new names, exactly as many as there are places left succeed."""
        ...

    async def registration(self, name: str) -> bytes | None:
        """The document registered as ``name``, or None."""
        ...

    async def registrations(self, after: str, limit: int) -> list[tuple[str, bytes]]:
        """A page of registrations: at most ``limit`` (at least 1) names with their
        documents, in ascending bytewise order of the names' UTF-8, strictly after ``after``
        (``""``: from the first). The next page starts after the last name of this one."""
        ...

    async def unregister(self, name: str) -> int | None:
        """Remove the registration of ``name``: None when there was none, else how many
        other names are still registered with its fingerprint (0: no other name shares its
        blocks)."""
        ...

    async def mark_used(self, names: Sequence[str], at: float) -> None:
        """Record that each of ``names`` was asked about at ``at`` (Unix seconds); a name no
        longer registered is left out."""
        ...

    async def last_used(self, now: float) -> list[tuple[str, float]]:
        """Every registration with when it was last asked about, by name; one never recorded
        (registered before this was kept) is recorded as asked about ``now``, so that it
        counts as used at the upgrade."""
        ...

    async def probe(self) -> Write:
        """Claim and release a probe key, in one round trip or one short transaction: proof
        that the store accepts a write now. A refused write raises its store error."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self:
        """Start what the store runs in the background (Redis: its notifications)."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop it and close the store."""
        ...
