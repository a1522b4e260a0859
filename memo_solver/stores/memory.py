"""A store inside one process: for tests, and for solves that should leave no trace."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Self

import anyio

from memo_solver.core.store import Claim, Coverage, RegistrationQuotaError, Write, mixed


@dataclass
class _Namespace:
    blocks: dict[str, bytes] = field(default_factory=dict)
    claims: dict[str, tuple[str, float]] = field(default_factory=dict)
    events: dict[str, anyio.Event] = field(default_factory=dict)
    definition: bytes | None = None


class MemoryStore:
    """A store inside one process: for tests, and for solves that should leave no trace."""

    description = "memory"

    def __init__(self) -> None:
        self._spaces: dict[str, _Namespace] = {}
        self._registered: dict[str, tuple[str, bytes]] = {}
        """Name -> (fingerprint, document)."""
        self._used: dict[str, float] = {}
        """Name -> when it was last asked about."""

    def _space(self, namespace: str) -> _Namespace:
        return self._spaces.setdefault(namespace, _Namespace())

    def expect(self, namespace: str, size_bytes: int) -> None:
        """Nothing to size: one table holds every namespace."""

    async def arrange(
        self, namespace: str, keys: Sequence[str], shuffle: random.Random | None
    ) -> list[str]:
        return mixed(keys, shuffle)

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        blocks = self._space(namespace).blocks
        return {k: blocks[k] for k in keys if k in blocks}

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        space = self._space(namespace)
        now = time.monotonic()
        result: dict[str, Claim] = {}
        for key in keys:
            holder = space.claims.get(key)
            if key in space.blocks:
                result[key] = Claim.DONE
            elif holder is not None and holder[0] != token and holder[1] > now:
                result[key] = Claim.BUSY
            else:
                space.claims[key] = (token, now + lease_s)
                result[key] = Claim.CLAIMED
        return result

    async def renew(self, namespace: str, keys: Sequence[str], token: str, lease_s: float) -> None:
        claims = self._space(namespace).claims
        expiry = time.monotonic() + lease_s
        for key in keys:
            if claims.get(key, ("", 0.0))[0] == token:
                claims[key] = (token, expiry)

    async def release(self, namespace: str, keys: Sequence[str], token: str) -> None:
        space = self._space(namespace)
        for key in keys:
            if space.claims.get(key, ("", 0.0))[0] == token:
                del space.claims[key]
        self._wake(space, keys)

    async def commit(self, namespace: str, blocks: Mapping[str, bytes], token: str | None) -> None:
        space = self._space(namespace)
        for key, data in blocks.items():
            space.blocks[key] = data
            if token is not None and space.claims.get(key, ("", 0.0))[0] == token:
                del space.claims[key]
        self._wake(space, blocks)

    @staticmethod
    def _wake(space: _Namespace, keys: Iterable[str]) -> None:
        for key in keys:
            event = space.events.pop(key, None)
            if event is not None:
                event.set()

    async def wait(self, namespace: str, key: str, timeout_s: float) -> None:
        space = self._space(namespace)
        if key in space.blocks:
            return
        holder = space.claims.get(key)
        now = time.monotonic()
        if holder is None or holder[1] <= now:
            return  # released or lapsed: the caller may claim it now
        event = space.events.setdefault(key, anyio.Event())
        with anyio.move_on_after(min(timeout_s, holder[1] - now)):
            await event.wait()

    async def keys(self, namespace: str) -> list[str]:
        return sorted(self._space(namespace).blocks)

    async def coverage(self, namespace: str) -> Coverage:
        space = self._space(namespace)
        now = time.monotonic()
        live = sum(1 for _, expiry in space.claims.values() if expiry > now)
        return Coverage(
            blocks=len(space.blocks),
            claims=live,
            bytes=sum(len(v) for v in space.blocks.values()),
        )

    async def put_definition(self, namespace: str, definition: bytes) -> None:
        space = self._space(namespace)
        if space.definition is None:
            space.definition = definition

    async def definition(self, namespace: str) -> bytes | None:
        space = self._spaces.get(namespace)
        return None if space is None else space.definition

    async def namespaces(self) -> list[str]:
        return sorted(
            name
            for name, space in self._spaces.items()
            if space.blocks or space.claims or space.definition is not None
        )

    async def written(self) -> list[str]:
        return sorted(name for name, space in self._spaces.items() if space.blocks)

    async def delete_namespace(self, namespace: str) -> int:
        """Waiters on its claims wake, as at a release: the claims are gone."""
        space = self._spaces.pop(namespace, None)
        if space is None:
            return 0
        self._wake(space, list(space.events))
        return len(space.blocks)

    async def strays(self) -> dict[str, Coverage]:
        """None: one process's memory has no layout, every block is found."""
        return {}

    async def delete_strays(self, namespace: str) -> int:
        return 0

    async def register(
        self, name: str, fingerprint: str, document: bytes, quota: int
    ) -> bytes | None:
        """Atomic as it awaits nothing: no other task runs between the check and the write."""
        held = self._registered.get(name)
        if held is not None:
            return held[1]
        if len(self._registered) >= quota:
            raise RegistrationQuotaError(quota)
        self._registered[name] = (fingerprint, document)
        return None

    async def registration(self, name: str) -> bytes | None:
        found = self._registered.get(name)
        return None if found is None else found[1]

    async def registrations(self, after: str, limit: int) -> list[tuple[str, bytes]]:
        """Python orders text by code point, which is the bytewise order of its UTF-8."""
        names = sorted(name for name in self._registered if name > after)[:limit]
        return [(name, self._registered[name][1]) for name in names]

    async def unregister(self, name: str) -> int | None:
        found = self._registered.pop(name, None)
        if found is None:
            return None
        return sum(1 for fingerprint, _ in self._registered.values() if fingerprint == found[0])

    async def mark_used(self, names: Sequence[str], at: float) -> None:
        self._used.update((name, at) for name in names if name in self._registered)

    async def last_used(self, now: float) -> list[tuple[str, float]]:
        self._used = {name: self._used.get(name, now) for name in self._registered}
        return sorted(self._used.items())

    async def probe(self) -> Write:
        """Memory always has room (a process out of memory fails long before a probe)."""
        return Write.ACCEPTED

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
