"""The small protocol through which the engine learns a game.

The engine, the stores and the claims only ever see string keys, successor lists and
float64 blocks: everything that makes a game a game stays behind this interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Block = npt.NDArray[np.float64]
Packed = npt.NDArray[np.float64] | npt.NDArray[np.float32]
"""What a store holds of a block (:meth:`Game.pack`): any shape, float64 or float32."""


class Game(Protocol):
    """A game whose turn-start values form a DAG of blocks, each solved from its successors."""

    @property
    def name(self) -> str:
        """Short name shown to operators, e.g. ``yahtzee``."""
        ...

    @property
    def fingerprint(self) -> str:
        """Hash of the rules: part of every cache key, so changed rules never share values."""
        ...

    @property
    def block_count(self) -> int:
        """How many blocks the whole game has (for progress and coverage)."""
        ...

    def root(self) -> str:
        """The block holding the start of the game."""
        ...

    def is_key(self, key: str) -> bool:
        """Whether ``key`` names a block of this game (keys also arrive from outside)."""
        ...

    def block_shape(self, key: str) -> tuple[int, ...]:
        """The shape of ``key``'s block, checked when a stored block is decoded."""
        ...

    def block_cost(self, key: str) -> float:
        """What solving ``key``'s block costs beside the game's plainest block (1.0): a whole
        solve cuts each layer into chunks of about the same cost, so that progress and
        Ctrl-C stay prompt where a block costs twenty times another."""
        ...

    def values_below(self, key: str) -> int:
        """At most how many values ``key``'s block and the blocks below it hold, each block
        at its own shape (which may grow as the game goes on): what a cold solve from
        ``key`` may compute, and from the root what the game's namespace may hold."""
        ...

    def pack(self, key: str, block: Block) -> Packed:
        """What is stored of ``key``'s block: the block itself, or fewer values (never more)
        that :meth:`unpack` makes it again bit for bit: where a game knows of values that
        repeat, a store of a whole game shrinks by that much; float32 values where its rules
        store that precision (the block then solved at it). The engine never sees it: the
        codec stores it and checks the block it unpacks."""
        ...

    def unpack(self, key: str, packed: Block) -> Block:
        """``key``'s block (at :meth:`block_shape`) from what :meth:`pack` stored, read back
        as float64; raises ValueError where ``packed`` cannot be one (damaged bytes are
        then a missing block)."""
        ...

    def successors(self, key: str) -> Sequence[str]:
        """The blocks that ``key``'s values depend on (none for the end of the game)."""
        ...

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        """The blocks below ``key`` (itself included) in groups, the end of the game first,
        each block's successors in an earlier group: a whole solve then holds one group in
        flight, not the whole DAG (Maxi Yatzy's is a million blocks). Empty where the game
        has no cheap grouping: its blocks are then solved top-down from ``key``."""
        ...

    def solve(self, key: str, successors: Mapping[str, Block]) -> Block:
        """``key``'s block from its successors' blocks: pure CPU work, no I/O."""
        ...

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        """The blocks of ``keys``, in order, from ``successors`` (holding every successor of
        each): what the engine calls from a worker thread, so a game whose solver releases
        the GIL and works on many blocks at once (the Yahtzee kernel) gets whole batches."""
        ...
