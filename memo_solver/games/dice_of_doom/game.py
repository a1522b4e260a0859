"""Dice of Doom seen as a :class:`~memo_solver.core.game.Game`: turn starts in blocks, solved by
numpy.

A guidepost is a turn start: a board and the player to move. Its value for the mover is
0, 1/2 or 1. The chain of attacks inside a turn is the per-turn local memo: it is expanded
here, breadth first and vectorized over every turn start of a block at once, and its
passes land on the other player's turn starts, which live in other blocks.

A block holds the turn starts of one player to move, one total of dice and one ownership
mask (bit i set: player b holds hex i), in the order of their dice (base 3, hex 0 the
least significant digit). A turn always loses dice (an attack destroys the defender's,
reinforcements give back at most all but one of them), so every successor block has a
smaller total and the blocks form a DAG. Successors are over-approximated from the key
alone (every mask where the mover holds more hexes, every total the captures allow):
cheap to list on the event loop, close enough that a lazy solve stays small.

Summary blocks sit above them so that a precompute has one root: ``a22`` holds, over the
turn starts with ``a`` to move and 22 dice, the mover's expected share (ties counting
half), the share the mover wins and the share that is a tie; the root ``all`` holds the
same three over the whole game.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import cache, cached_property
from typing import Final

import numpy as np
import numpy.typing as npt

from memo_solver.core.bits import submasks
from memo_solver.core.game import Block, Packed
from memo_solver.games.dice_of_doom.board import neighbours
from memo_solver.games.dice_of_doom.sizes import SIZES, doom_name

PLAYERS: Final = "ab"
ROOT: Final = "all"
SUMMARY: Final = ("expected", "won", "tied")
"""What a summary block holds, in order, as shares of its turn starts: the mover's expected
share (a tie counts half), the share the mover wins, the share that ends in a tie."""
_CAP_BITS: Final = 5
_Int = npt.NDArray[np.int64]


class DiceOfDoomGame:
    """Every turn start of the ``size`` x ``size`` game, in blocks of (player, dice, mask)."""

    def __init__(self, size: int) -> None:
        if size not in SIZES:
            raise ValueError(f"the shared memo holds boards of size {SIZES}, not {size}")
        self.size = size
        self.cells = size * size
        self.min_dice, self.max_dice = self.cells, 3 * self.cells
        pairs = [(s, d) for s, ns in enumerate(neighbours(size)) for d in ns]
        self.src = np.array([s for s, _ in pairs], dtype=np.int64)
        self.dst = np.array([d for _, d in pairs], dtype=np.int64)
        digits = np.indices((3,) * self.cells).reshape(self.cells, -1)[::-1].T + 1
        """Row ``code`` holds the dice (1..3 per hex) of dice code ``code``."""
        self.dice_of_code = digits.astype(np.int8)
        sums = digits.sum(axis=1)
        order = np.lexsort((np.arange(len(sums)), sums))
        self.rank = np.empty(len(sums), dtype=np.int64)
        counts = np.bincount(sums, minlength=self.max_dice + 1)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.rank[order] = np.arange(len(sums)) - starts[sums[order]]
        self.codes_by_sum = {
            total: order[starts[total] : starts[total] + counts[total]]
            for total in range(self.min_dice, self.max_dice + 1)
        }
        self.powers = 3 ** np.arange(self.cells, dtype=np.int64)

    @property
    def name(self) -> str:
        return doom_name(self.size)

    @cached_property
    def fingerprint(self) -> str:
        text = f"dice-of-doom v1 size={self.size} max-dice=3 players=2"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def block_count(self) -> int:
        return 1 + len(self._summary_keys) + len(self._turn_keys)

    @cached_property
    def _summary_keys(self) -> list[str]:
        totals = range(self.max_dice, self.min_dice - 1, -1)
        return [f"{p}{total}" for total in totals for p in PLAYERS]

    @cached_property
    def _turn_keys(self) -> list[str]:
        return [
            turn_key(p, total, mask, self.cells)
            for total in range(self.min_dice, self.max_dice + 1)
            for p in range(2)
            for mask in range(1 << self.cells)
        ]

    @cached_property
    def _keys(self) -> frozenset[str]:
        return frozenset([ROOT, *self._summary_keys, *self._turn_keys])

    def turn_starts(self) -> int:
        """How many turn starts the whole game has: two players times every board."""
        return int(2 * 6**self.cells)

    def root(self) -> str:
        return ROOT

    def is_key(self, key: str) -> bool:
        return key in self._keys

    def block_shape(self, key: str) -> tuple[int, ...]:
        if key == ROOT or "-" not in key:
            return (len(SUMMARY),)
        _, total, _ = parse_turn_key(key)
        return (len(self.codes_by_sum[total]),)

    def block_cost(self, key: str) -> float:
        """Unused: without layers there are no chunks to size."""
        return 1.0

    def values_below(self, key: str) -> int:
        """The whole game's, whatever ``key``: a position's cone is known only by walking it.
        A turn start's block holds its board's dice codes, so the turn blocks hold every
        turn start; the root and the summaries one summary each."""
        return (1 + len(self._summary_keys)) * len(SUMMARY) + self.turn_starts()

    def pack(self, key: str, block: Block) -> Packed:
        """Stored whole: a block's turn starts are boards of one ownership mask, no two
        bound to hold one value."""
        return block

    def unpack(self, key: str, packed: Block) -> Block:
        return packed

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        """No grouping: a position's cone is found only by walking it, so it is solved top-down."""
        return []

    def successors(self, key: str) -> Sequence[str]:
        if key == ROOT:
            return self._summary_keys
        if "-" not in key:
            p, total = PLAYERS.index(key[0]), int(key[1:])
            return [turn_key(p, total, mask, self.cells) for mask in range(1 << self.cells)]
        p, total, mask = parse_turn_key(key)
        # The mover only gains hexes: the enemy's hexes after the turn are a strict subset.
        # Each captured hex had at most 2 dice (fewer than its attacker's 3), and the
        # reinforcements give back all but one captured die at most: capturing k hexes
        # leaves between 1 and 2k dice fewer on the board.
        full = (1 << self.cells) - 1
        enemy = mask if p == 0 else ~mask & full
        keys = []
        for sub in submasks(enemy):
            captured = enemy.bit_count() - sub.bit_count()
            if captured == 0:
                continue
            after = sub if p == 0 else ~sub & full
            lowest = max(self.min_dice, total - 2 * captured)
            keys += [turn_key(1 - p, t, after, self.cells) for t in range(lowest, total)]
        return keys

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        return [self.solve(key, successors) for key in keys]

    def solve(self, key: str, successors: Mapping[str, Block]) -> Block:
        if key == ROOT:
            # Each summary is a mean over its total's turn starts: weigh it by their number.
            weights = [len(self.codes_by_sum[int(k[1:])]) for k in self._summary_keys]
            shares = np.stack([successors[k] for k in self._summary_keys])
            return np.average(shares, axis=0, weights=weights)
        if "-" not in key:
            values = np.concatenate([successors[s] for s in self.successors(key)])
            return np.array([values.mean(), np.mean(values == 1.0), np.mean(values == 0.5)])
        p, total, mask = parse_turn_key(key)
        dice = self.dice_of_code[self.codes_by_sum[total]]
        return _TurnSolver(self, p, successors).values(mask, dice)

    def locate(self, owners: Sequence[int], dice: Sequence[int], player: int) -> tuple[str, int]:
        """The block key and index of a turn start (owners 0/1 and dice 1..3 per hex)."""
        mask = sum(1 << i for i, owner in enumerate(owners) if owner)
        code = sum((d - 1) * 3**i for i, d in enumerate(dice))
        return turn_key(player, sum(dice), mask, self.cells), int(self.rank[code])


class _TurnSolver:
    """One block's turns: the chains of attacks breadth first, then values back up."""

    def __init__(self, game: DiceOfDoomGame, player: int, successors: Mapping[str, Block]) -> None:
        self.game = game
        self.player = player
        self.successors = successors

    def values(self, mask: int, dice: npt.NDArray[np.int8]) -> Block:
        g, p = self.game, self.player
        cells = np.arange(g.cells)
        n = len(dice)
        levels = [(np.full(n, mask, dtype=np.int64), dice, np.zeros(n, dtype=np.int64))]
        edges: list[tuple[_Int, _Int]] = []
        while True:
            owners, ds, caps = levels[-1]
            mine = (owners[:, None] >> cells & 1) == p
            src, dst = g.src, g.dst
            legal = mine[:, src] & ~mine[:, dst] & (ds[:, src] > ds[:, dst])
            parent, pair = np.nonzero(legal)
            if len(parent) == 0:
                break
            s, d = src[pair], dst[pair]
            child = ds[parent].copy()
            rows = np.arange(len(parent))
            captured = child[rows, d].astype(np.int64)
            child[rows, d] = child[rows, s] - 1
            child[rows, s] = 1
            bit = np.int64(1) << d
            child_owners = owners[parent] & ~bit if p == 0 else owners[parent] | bit
            # Reinforcements use at most one die per hex: a larger capture counts the same.
            child_caps = np.minimum(caps[parent] + captured, g.cells + 1)
            ident = (child_owners << 20 | (child - 1) @ g.powers) << _CAP_BITS | child_caps
            _, first, inverse = np.unique(ident, return_index=True, return_inverse=True)
            edges.append((parent, inverse))
            levels.append((child_owners[first], child[first], child_caps[first]))
        # Back up from the last level (no attack left: passing is all there is) to the
        # turn starts, where passing is not allowed and no attack means the game is over.
        value = np.full(n, -1.0)
        for depth in range(len(levels) - 1, -1, -1):
            best = np.full(len(levels[depth][0]), -1.0)
            if depth < len(edges):
                parent, kid = edges[depth]
                np.maximum.at(best, parent, value[kid])
            value = np.maximum(best, self._passes(*levels[depth])) if depth else best
        value[value < 0] = self._game_over(mask)
        return value

    def _passes(self, owners: _Int, dice: npt.NDArray[np.int8], caps: _Int) -> Block:
        """The mover's value of ending the turn: reinforce, then 1 - the opponent's value."""
        g, p = self.game, self.player
        mine = (owners[:, None] >> np.arange(g.cells) & 1) == p
        open_ = mine & (dice < 3)
        dice = dice + (open_ & (np.cumsum(open_, axis=1) <= (caps - 1)[:, None]))
        totals = dice.sum(axis=1, dtype=np.int64)
        rank = g.rank[(dice - 1) @ g.powers]
        out = np.empty(len(owners))
        groups, inverse = np.unique(owners << 8 | totals, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(groups) + 1))
        for ident, lo, hi in zip(groups.tolist(), bounds[:-1], bounds[1:], strict=True):
            at = order[lo:hi]
            key = turn_key(1 - p, ident & 0xFF, ident >> 8, g.cells)
            out[at] = 1.0 - self.successors[key][rank[at]]
        return out

    def _game_over(self, mask: int) -> float:
        """The mover cannot attack: whoever holds more hexes wins (a tie is half each)."""
        b_holds = bin(mask).count("1")
        mine = b_holds if self.player == 1 else self.game.cells - b_holds
        theirs = self.game.cells - mine
        return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


@cache
def doom_game(size: int) -> DiceOfDoomGame:
    """One game object per size: its tables take a moment to build."""
    return DiceOfDoomGame(size)


def turn_key(player: int, total: int, mask: int, cells: int) -> str:
    return f"{PLAYERS[player]}{total}-{mask:0{(cells + 3) // 4}x}"


def parse_turn_key(key: str) -> tuple[int, int, int]:
    head, mask = key.split("-")
    return PLAYERS.index(head[0]), int(head[1:]), int(mask, 16)
