"""The process memo: blocks by key, bounded in bytes, least recently used dropped first.

A server keeps a whole hot game in memory (``yahtzee`` is 8 MiB of float64), so warm
requests touch no network; the bound keeps a long-lived process from growing without
limit when many rule sets or games are asked for, and a whole solve (``maxi-yatzy``: 700
MB of blocks) from holding every layer it has solved.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from memo_solver.core.errors import UserError

if TYPE_CHECKING:  # numpy stays unloaded for a command's parser, which reads the default
    from memo_solver.core.game import Block

CACHE_MB_ENV = "MEMO_SOLVER_CACHE_MB"
DEFAULT_CACHE_MB = 512
"""An engine's memo where its process sets no other bound: a layered solve needs the layer
it solves and the one below (``maxi-yatzy``'s widest two: 350,000 blocks, 240 MB) in memory,
and every smaller game fits whole."""


def memo_bytes(megabytes: int | None = None) -> int:
    """An engine's memo bound: ``megabytes`` MiB where an option gives it (``--cache-mb``
    of ``precompute`` and of the workers), else ``$MEMO_SOLVER_CACHE_MB``, else
    :data:`DEFAULT_CACHE_MB`; what every engine opened with no bound of its own gets."""
    text = os.environ.get(CACHE_MB_ENV, str(DEFAULT_CACHE_MB)) if megabytes is None else ""
    if megabytes is None:
        megabytes = int(text) if text.strip().isdigit() else 0
    if megabytes <= 0:
        given = f"${CACHE_MB_ENV} is {text!r}" if text else f"got {megabytes}"
        raise UserError(f"--cache-mb must be a positive number of MiB ({given})", "cache_mb")
    return megabytes << 20


class BlockCache:
    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._blocks: OrderedDict[str, Block] = OrderedDict()

    def get(self, key: str) -> Block | None:
        block = self._blocks.get(key)
        if block is None:
            self.misses += 1
            return None
        self.hits += 1
        self._blocks.move_to_end(key)
        return block

    def view(self) -> Mapping[str, Block]:
        """The blocks held, read-only and live, read without touching their recency or the
        counts: for a worker thread reading many at once (each read is atomic under the
        GIL, and a block evicted meanwhile is simply missing)."""
        return MappingProxyType(self._blocks)

    def holds(self, keys: Iterable[str]) -> bool:
        """Whether every one of ``keys`` is here (counted neither as hits nor as misses)."""
        return all(key in self._blocks for key in keys)

    def put(self, key: str, block: Block) -> None:
        old = self._blocks.pop(key, None)
        if old is not None:
            self.nbytes -= old.nbytes
        self._blocks[key] = block
        self.nbytes += block.nbytes
        while self.max_bytes is not None and self.nbytes > self.max_bytes and self._blocks:
            _, evicted = self._blocks.popitem(last=False)
            self.nbytes -= evicted.nbytes

    def clear(self) -> None:
        """Forget every block (the store lost some: they must be solved into it again)."""
        self._blocks.clear()
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._blocks)
