"""Exact values and game-tree statistics of Dice of Doom positions, solved on the memoised DAG.

One module of about 560 lines, on purpose: the readable rules of a position (:class:`Position`,
:func:`legal_moves`, :func:`play_move`) and the solver's hot loop, which expands the same moves
on packed integer keys, must agree move for move (a node's children are its legal moves, in
order), so they are read and changed together. Words and JSON:
:mod:`memo_solver.games.dice_of_doom.report`.

The book's program builds the game tree with ``game-tree`` memoised on its arguments
(board, player, spare dice, first move), which turns the tree into a DAG: the board
``a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3`` with a to move has a tree of 1,468,919,491 nodes
but only 201,861 distinct ``game-tree`` calls. This module builds exactly that DAG, one node
per distinct call, and computes everything bottom-up on it, never walking the tree:

- the value of every node for its mover, 0, 1/2 or 1: a finished game is worth
  1/(number of winners) to each winner; otherwise the best of the mover's moves, where a pass
  is worth 1 minus the next player's value;
- the unshared tree size (nodes, root included), its depth (nodes on the longest path, a
  lone root is depth 1, as the Haskell port's ``treeDepth`` counts), the number of distinct
  positions, the number of memoised calls the book's program makes (one per DAG edge, plus
  the root), and how many leaves each outcome has.

The published figures this reproduces, and so the conventions they fix: the 3x3 board above
gives 1,468,919,491 nodes, depth 40, 201,861 distinct positions and 472,109 calls (the
"HIT" count of the Land of Lisp memo instrumented in the Haskell port's part 3); every 2x2
board, either player to move, gives the tree size and leaf winners of
``tests/data/dice_of_doom_2x2.txt``.

Speed: the DAG is built with an explicit stack (no recursion limit), on integer keys
(the base-6 board code with the spare dice and the player packed below it), with per-size
tables for decoding boards and attacking, and no object allocated per node. The 3x3 board
above, cold, value and statistics, takes 0.82 to 0.85 s of CPU (three runs of
``analyse(make_position(BOARD, "a"))`` timed with ``time.process_time``, on the 2-core
development machine); ``tests/test_doom_tree.py`` holds it under 3 s. Memory: about 60 MB.

A solve that could outgrow its limit is first sized up by random games from its position
(:meth:`DoomSolver._refuse_what_cannot_fit`): one the estimate puts past the limit is
refused at once, not after filling the memory the limit allows, and the limit itself is
bounded by the machine's memory (:func:`check_limit`).
"""

from __future__ import annotations

import math
import os
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import product
from typing import Final

from memo_solver.games.dice_of_doom.board import (
    CELL_CODES,
    MAX_DICE,
    Board,
    DoomError,
    attack,
    attacks,
    board_from_code,
    check_size,
    neighbours,
    parse_board,
    player_index,
    player_name,
    reinforce,
    winners,
)

Move = tuple[int, int] | None
"""An attack (src, dst), or None for ending the turn, as the book writes a pass (``nil``)."""

DEFAULT_LIMIT: Final = 2_000_000
"""Distinct positions one solver may hold: about 0.66 GB. The largest published board needs
201,861; 4x4 and 5x5 boards can need far more than any machine holds."""
BYTES_PER_POSITION: Final = 330
"""Memory one memoised position takes (dict entry, key, children, statistics), measured as
the growth of the process's resident memory while solving the 5x5 board of ``play --size 5
--seed 1`` to 3,000,000 positions: 290 to 323 bytes a position at each progress report
(310 on the published 3x3 board); 330 leaves room for the memo's dict resizing."""

_PROGRESS_EVERY: Final = 1 << 18
"""Positions between two calls of a solver's ``progress``: about a second of solving, so a
quick solve (the published 3x3 board holds 201,861 positions) says nothing."""
_PROBE_WALKS: Final = (16, 4096)
"""Random games the size estimate plays at first and at most, doubling in between: 4,096
games of a 5x5 board take under 2 s of CPU, against 11 s to solve 2,000,000 positions."""
_FIELD_BITS: Final = 64
"""Initial width of each leaf-count field packed below the tree size; widened on demand."""

_KEY_SHIFT: Final = 8
"""A position key is ``code << 8 | captured << 1 | player``. Captured dice stay below 128:
they are at most 2 per hex (see :class:`Position`), 50 on a 5x5 board."""
_CAPTURED: Final = (1 << _KEY_SHIFT - 1) - 1
"""Mask of the captured dice once shifted down by one."""
_STRATUM: Final = (1 << _KEY_SHIFT) - 1
"""Mask of the player and the captured dice of a key: half of a size estimate's stratum."""
_CHUNK: Final = 5
"""Boards are decoded five hexes (one 7,776-entry table lookup) at a time."""


class DoomLimitError(DoomError):
    """Solving a position would hold more distinct positions than the solver's limit allows.

    A user error (422, field ``limit``): a smaller position, or a service started with a
    higher limit, is the fix."""


@dataclass(frozen=True)
class Position:
    """A point in a game: the board, the player to move and how far into the turn they are.

    ``captured`` is the dice taken so far this turn; 0 means the turn has just begun, so no
    pass is allowed yet. Every attack captures at least one die, so the book's ``first-move``
    flag is ``captured == 0`` and is not stored twice.

    An attack moves the defender's dice from the board to the captured count, so captured
    dice plus the dice on the board never exceed what the board held when the turn began,
    3 per hex. Positions past that bound are refused: none can occur in a game.
    """

    board: Board
    player: int
    captured: int = 0

    def __post_init__(self) -> None:
        if self.player not in (0, 1):
            raise DoomError(
                "player", f"player {self.player} is unknown; players are 0 (a) or 1 (b)"
            )
        on_board = sum(self.board.dice)
        most = MAX_DICE * len(self.board.dice) - on_board
        if not 0 <= self.captured <= most:
            raise DoomError(
                "captured",
                f"{self.captured} dice captured this turn is impossible: with {on_board} dice "
                f"on the board it is 0 to {most} (the board held at most {MAX_DICE} dice a hex "
                "when the turn began)",
            )

    @property
    def attacked(self) -> bool:
        """Whether the mover has attacked this turn, so may end it."""
        return self.captured > 0


def make_position(board: str, player: str = "a", captured: int = 0) -> Position:
    """A position from the board notation and a player name, as users type them."""
    return Position(parse_board(board), player_index(player), captured)


@dataclass(frozen=True)
class MoveValue:
    """One legal move, its value for the player making it, and where it leads."""

    move: Move
    value: Fraction
    after: Position


@dataclass(frozen=True)
class TreeStats:
    """The unshared game tree below a position, counted on the DAG (exact integers)."""

    tree_size: int
    """Nodes of the unshared tree, root included: one per ``game-tree`` call of the book's
    unmemoised program."""
    depth: int
    """Nodes on the longest root-to-leaf path; a finished game is depth 1."""
    positions: int
    """Distinct positions (DAG nodes): the calls a memoised program computes."""
    calls: int
    """Memoised ``game-tree`` calls, answered or computed: one per DAG edge, plus the root."""
    a_wins: int
    b_wins: int
    ties: int
    """Leaves of the unshared tree by outcome (a wins, b wins, a tie)."""

    def leaf_winners(self) -> dict[tuple[int, ...], int]:
        """Leaves by winner tuple, only outcomes that occur, in the published table's order:
        ``[A]``, ``[A,B]``, ``[B]``."""
        counts = {(0,): self.a_wins, (0, 1): self.ties, (1,): self.b_wins}
        return {winner: count for winner, count in counts.items() if count}


@dataclass(frozen=True)
class Analysis:
    """Everything about one position: its value, every move's value, the book's move."""

    position: Position
    value: Fraction
    """For the player to move."""
    moves: tuple[MoveValue, ...]
    """The end of the turn first (when allowed), then attacks in the book's order."""
    best: MoveValue | None
    """The first move of the highest value, the one the book's computer plays; None when
    the game is over."""
    winners: tuple[int, ...] | None
    """The winners when the game is over here (the mover cannot attack), else None."""
    stats: TreeStats | None
    """The tree below the position; None when the answer came from values alone (a store
    of turn-start values knows no trees)."""


class DoomSolver:
    """A memo of solved positions for one board size, kept across questions.

    Asking about a position solves what it needs and keeps it, so a game against the
    computer solves its start once and answers every later move from the memo. The memo
    holds at most ``limit`` positions; a question that needs more raises
    :class:`DoomLimitError` and empties the memo.
    """

    def __init__(self, size: int, limit: int = DEFAULT_LIMIT) -> None:
        check_size(size)
        check_limit(limit)
        self.size = size
        self.limit = limit
        self.progress: Callable[[int], None] | None = None
        """Told how many positions the memo holds every 262,144 new ones, from the thread
        that solves: what a command shows of a long solve."""
        self._tables = _tables(size)
        self._clear()

    @property
    def positions(self) -> int:
        """Distinct positions held in the memo."""
        return len(self._keys)

    def value(self, position: Position) -> Fraction:
        """The exact value of ``position`` for its mover."""
        return Fraction(self._value[self._solve(position)], 2)

    def book_move(self, position: Position) -> Move:
        """The move the book's computer plays (first best); raises when the game is over."""
        best = self.analyse_moves(position)[1]
        if best is None:
            raise DoomError("position", "the game is over; there is no move to play")
        return best.move

    def analyse_moves(self, position: Position) -> tuple[tuple[MoveValue, ...], MoveValue | None]:
        """Every legal move with its value, and the first best, without tree statistics."""
        node = self._solve(position)
        moves = legal_moves(position)
        values = self._value
        rated = []
        for move, child in zip(moves, self._kids[node], strict=True):
            half = 2 - values[child] if move is None else values[child]
            rated.append(MoveValue(move, Fraction(half, 2), self._position(child)))
        best = max(rated, key=lambda rated_move: rated_move.value, default=None)
        return tuple(rated), best

    def analyse(self, position: Position) -> Analysis:
        """Value, moves, the book's move and the statistics of the tree below ``position``."""
        node = self._solve(position)
        moves, best = self.analyse_moves(position)
        over = winners(position.board) if not moves else None
        value = Fraction(self._value[node], 2)
        return Analysis(position, value, moves, best, over, self._stats(node))

    # --- the memo --------------------------------------------------------------------------

    def _clear(self) -> None:
        """Empty the memo. Nodes live in parallel lists indexed by discovery number."""
        self._index: dict[int, int] = {}
        self._keys: list[int] = []
        self._kids: list[tuple[int, ...]] = []
        """Children in move order (the pass first); empty until the node is expanded, and
        for ever at a leaf (told apart by its value, set as soon as it is expanded)."""
        self._value: list[int] = []
        """Value for the mover in halves (0, 1, 2); -1 until every child is solved."""
        self._packed: list[int] = []
        """Tree size and leaf counts packed in one integer: the size above three fields of
        ``self._width`` bits (a wins, b wins, ties), so a parent adds its children's counts
        in one sum; see :meth:`_widen`."""
        self._depth: list[int] = []
        self._order: list[int] = []
        """Nodes in the order they were solved: children always before their parents."""
        self._width = _FIELD_BITS

    def _key(self, position: Position) -> int:
        if position.board.size != self.size:
            raise DoomError(
                "size",
                f"this solver holds {self.size}x{self.size} boards, "
                f"not {position.board.size}x{position.board.size}",
            )
        return position.board.code << _KEY_SHIFT | position.captured << 1 | position.player

    def _position(self, node: int) -> Position:
        key = self._keys[node]
        board = board_from_code(self.size, key >> _KEY_SHIFT)
        return Position(board, key & 1, key >> 1 & _CAPTURED)

    def _solve(self, position: Position) -> int:
        """The node of ``position``, with it and everything below it solved."""
        key = self._key(position)
        node = self._index.get(key)
        if node is None:
            if self.limit < _most_keys(self.size):
                self._refuse_what_cannot_fit(key)
            node = self._add(key)
        if self._value[node] < 0:
            try:
                self._build(node)
            except DoomLimitError:
                # Half-expanded nodes would break the next solve's invariants; start over.
                self._clear()
                raise
        if self._packed[node] >> 3 * self._width >= 1 << self._width:
            self._widen()
        return node

    def _limit_error(self, estimate: str) -> DoomLimitError:
        return DoomLimitError(
            "limit",
            f"solving this position needs more than {self.limit:,} distinct positions, "
            f"the solver's limit{estimate}; raise the limit to solve this (--limit of advise, "
            f"stats and play; --doom-limit of serve): a million positions take about "
            f"{BYTES_PER_POSITION} MB of memory",
        )

    def _refuse_what_cannot_fit(self, root: int) -> None:
        """Refuse at once a position whose solve would outgrow the limit, before solving it.

        Random games from the position sample each stratum of positions (player to move,
        dice captured this turn, dice on the board: a game passes through each at most once,
        as the dice on the board and captured this turn fall with every attack and the turn's
        total with every turn). Pairs of games meeting on one position in a stratum of
        ``n`` positions happen about ``games**2 / 2n`` times, fewer the more evenly the
        games spread, so the count of such meetings bounds ``n`` from below; the sum over
        strata, on an upper 95% bound of the meetings, is the estimate. Random games favour
        few positions, so it is far below the truth (the published 3x3 board: 7,755 from
        4,096 games, of 201,861), and what it refuses cannot fit. Games double until the
        estimate passes the limit, or cannot pass it within the most games even if it grew
        with their square.
        """
        expand = self._tables.expand
        rng = random.Random(root)  # the same answer every time for the same position
        strata: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
        games, (walks, most) = 0, _PROBE_WALKS
        while True:
            for _ in range(walks):
                key = root
                while True:
                    children, cells = expand(key)
                    strata[key & _STRATUM, sum(cell % MAX_DICE for cell in cells)][key] += 1
                    if not children:
                        break
                    key = rng.choice(children)
            games += walks
            estimate = sum(map(_stratum_estimate, strata.values()))
            if estimate > self.limit:
                raise self._limit_error(
                    f" (an estimate from {games:,} random games puts it above "
                    f"{math.floor(estimate):,})"
                )
            if games >= most or estimate * (most / games) ** 2 <= self.limit:
                return
            walks = games

    def _add(self, key: int) -> int:
        node = len(self._keys)
        if node >= self.limit:
            raise self._limit_error("")
        if node % _PROGRESS_EVERY == 0 and node and self.progress is not None:
            self.progress(node)
        self._index[key] = node
        self._keys.append(key)
        self._kids.append(())
        self._value.append(-1)
        self._packed.append(0)
        self._depth.append(0)
        return node

    def _build(self, root: int) -> None:
        """Expand and solve every unsolved node below ``root``, children first.

        A node on top of the stack is expanded the first time (its unsolved children pushed
        above it) and solved the second, when everything above it is gone: the graph is
        acyclic, so an expanded node's children are solved by then. This is the hot loop of
        the module, hence local names for everything it touches.
        """
        hexes, expand = self._tables.hexes, self._tables.expand
        index, keys, kids, value = self._index, self._keys, self._kids, self._value
        packed, depth, order = self._packed, self._depth, self._order
        add = self._add
        width = self._width
        one = 1 << 3 * width
        leaf_a, leaf_tie, leaf_b = one | 1 << 2 * width, one | 1, one | 1 << width
        captured_bits = _CAPTURED << 1
        stack = [root]
        while stack:
            node = stack[-1]
            if value[node] >= 0:  # solved meanwhile through another parent
                stack.pop()
                continue
            kid_nodes = kids[node]
            if kid_nodes:  # expanded, and everything pushed above it is solved
                stack.pop()
                key = keys[node]
                if key & captured_bits:  # mid-turn: the pass first, valued by the opponent
                    best = 2 - value[kid_nodes[0]]
                    if best < 2 and len(kid_nodes) > 1:
                        best = max(best, max(map(value.__getitem__, kid_nodes[1:])))
                else:
                    best = max(map(value.__getitem__, kid_nodes))
                value[node] = best
                packed[node] = sum(map(packed.__getitem__, kid_nodes), one)
                depth[node] = 1 + max(map(depth.__getitem__, kid_nodes))
                order.append(node)
                continue
            children, cells = expand(keys[node])
            if not children:  # a turn start without an attack: the game ends here
                player = keys[node] & 1
                held_b = sum(cell >= MAX_DICE for cell in cells)
                held_a = hexes - held_b
                if held_a == held_b:
                    value[node], packed[node] = 1, leaf_tie
                elif (held_a > held_b) == (player == 0):
                    value[node], packed[node] = 2, leaf_a if player == 0 else leaf_b
                else:
                    value[node], packed[node] = 0, leaf_b if player == 0 else leaf_a
                depth[node] = 1
                order.append(node)
                stack.pop()
                continue
            kid_list = []
            for child_key in children:
                child = index.get(child_key)
                if child is None:
                    child = add(child_key)
                    stack.append(child)
                elif value[child] < 0:
                    stack.append(child)
                kid_list.append(child)
            kids[node] = tuple(kid_list)

    def _widen(self) -> None:
        """Repack every solved node with fields twice as wide, after a tree size outgrew them.

        Sizes and leaf counts share one integer so that a parent adds its children's in one
        pass; a field can only overflow if the tree size does, which :meth:`_solve` checks.
        """
        while True:
            width = self._width * 2
            one = 1 << 3 * width
            packed, kids, keys = self._packed, self._kids, self._keys
            for node in self._order:
                kid_nodes = kids[node]
                if kid_nodes:
                    packed[node] = sum(map(packed.__getitem__, kid_nodes), one)
                else:
                    outcome = _leaf_field(keys[node], self._value[node])
                    packed[node] = one | 1 << outcome * width
            self._width = width
            if all(packed[node] >> 3 * width < 1 << width for node in self._order):
                return

    def _stats(self, root: int) -> TreeStats:
        """Statistics of the solved tree below ``root``; distinct positions by a DAG walk."""
        kids = self._kids
        seen = bytearray(len(kids))
        seen[root] = 1
        stack = [root]
        edges = 0
        reached = 1
        while stack:
            kid_nodes = kids[stack.pop()]
            edges += len(kid_nodes)
            for child in kid_nodes:
                if not seen[child]:
                    seen[child] = 1
                    reached += 1
                    stack.append(child)
        width = self._width
        mask = (1 << width) - 1
        packed = self._packed[root]
        return TreeStats(
            tree_size=packed >> 3 * width,
            depth=self._depth[root],
            positions=reached,
            calls=edges + 1,
            a_wins=packed >> 2 * width & mask,
            b_wins=packed >> width & mask,
            ties=packed & mask,
        )


def _stratum_estimate(seen: Counter[int]) -> float:
    """At least how many positions a stratum holds, from how often random games met there.

    ``draws * (draws - 1) / 2`` pairs of games meet on one position ``meetings`` times,
    about once per ``n`` pairs if the stratum has ``n`` positions equally likely, more often
    if not; ``meetings + 2 * sqrt(meetings) + 3`` is above the mean meeting count 19 times
    in 20 (3 when none were seen). Never fewer than the positions seen.
    """
    draws = seen.total()
    meetings = sum(count * (count - 1) // 2 for count in seen.values())
    pairs = draws * (draws - 1) / 2
    return max(len(seen), pairs / (meetings + 2 * math.sqrt(meetings) + 3))


def _most_keys(size: int) -> int:
    """More positions than a board of this size has: no limit above it is ever reached."""
    hexes = size * size
    boards: int = CELL_CODES**hexes
    return 2 * boards * (2 * hexes + 1)  # players, boards, dice captured this turn


def _memory() -> int:
    """This machine's memory in bytes."""
    return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))


def most_positions() -> int:
    """The highest position limit this machine's memory holds, at the measured cost of one."""
    return _memory() // BYTES_PER_POSITION


def check_limit(limit: int, field: str = "limit") -> None:
    """Refuse a position limit below 1, or past what this machine's memory holds: a solve
    would otherwise run until the machine ran out of memory, not until the limit."""
    if limit < 1:
        raise DoomError(field, f"the position limit must be at least 1, got {limit}")
    most = most_positions()
    if limit > most:
        raise DoomError(
            field,
            f"a limit of {limit:,} positions is more than this machine's memory holds: "
            f"{_memory() / 2**30:.1f} GiB at about {BYTES_PER_POSITION} bytes a position "
            f"hold at most {most:,}",
        )


def _leaf_field(key: int, value: int) -> int:
    """Which packed field a leaf counts in (2: a wins, 1: b wins, 0: tie) from its value."""
    if value == 1:
        return 0
    mover_won = value == 2
    return 2 if mover_won == ((key & 1) == 0) else 1


def legal_moves(position: Position) -> tuple[Move, ...]:
    """The moves in the book's order: end of turn first when allowed, then the attacks.

    None at all means the game is over: the mover is at the start of a turn and cannot
    attack.
    """
    moves: list[Move] = [None] if position.attacked else []
    moves += attacks(position.board, position.player)
    return tuple(moves)


def play_move(position: Position, move: Move) -> Position:
    """The position after ``move``: an attack keeps the turn and adds the defender's dice
    to the captured count; ending the turn reinforces and hands the move over."""
    if move is None:
        if not position.attacked:
            raise DoomError("move", "the turn cannot end before the first attack")
        board = reinforce(position.board, position.player, position.captured)
        return Position(board, 1 - position.player)
    src, dst = move
    board = attack(position.board, src, dst)  # checks the hexes, then the rules
    if position.board.owners[src] != position.player:
        raise DoomError("move", f"hex {src} does not belong to {player_name(position.player)}")
    return Position(board, position.player, position.captured + position.board.dice[dst])


Expand = Callable[[int], tuple[list[int], tuple[int, ...]]]
"""A position key to its children's keys in move order, and its board's hex codes."""


@dataclass(frozen=True)
class _Tables:
    """Per-size constants of the hot loop, computed once per size."""

    hexes: int
    expand: Expand
    """What the solver and the size estimate both walk: one move generator on packed keys."""


@cache
def _tables(size: int) -> _Tables:
    hexes = size * size
    chunk_table = tuple(product(range(CELL_CODES), repeat=_CHUNK))
    # product varies the last place fastest; hex codes are little-endian, so reverse each.
    chunk_table = tuple(cells[::-1] for cells in chunk_table)
    chunks, rest = divmod(hexes, _CHUNK)
    last = tuple(cells[:rest] for cells in chunk_table[: CELL_CODES**rest]) if rest else ()
    span = CELL_CODES**_CHUNK
    near = neighbours(size)
    weights = tuple(CELL_CODES**pos for pos in range(hexes))  # adding one: a die more on pos
    key_weights = tuple(weight << _KEY_SHIFT for weight in weights)  # the same, in a key
    # targets[player][attacker code]: defender codes it may attack (empty if none)
    targets = tuple(
        tuple(
            frozenset(
                defender
                for defender in range(CELL_CODES)
                if defender // MAX_DICE != player and defender % MAX_DICE < attacker % MAX_DICE
            )
            if attacker // MAX_DICE == player
            else frozenset()
            for attacker in range(CELL_CODES)
        )
        for player in (0, 1)
    )
    # gains[defender code]: what capturing it adds to a key (its dice, in the captured field)
    gains = tuple((defender % MAX_DICE + 1) << 1 for defender in range(CELL_CODES))

    def expand(key: int) -> tuple[list[int], tuple[int, ...]]:
        player = key & 1
        captured = key >> 1 & _CAPTURED
        code = key >> _KEY_SHIFT
        cells: tuple[int, ...] = ()
        for _ in range(chunks):  # the board code to hex codes, five hexes a lookup
            code, chunk = divmod(code, span)
            cells += chunk_table[chunk]
        if rest:
            cells += last[code]
        code = key >> _KEY_SHIFT
        children = []
        if captured:
            spare = captured - 1
            if spare:
                low, high = MAX_DICE * player, MAX_DICE * player + MAX_DICE - 2
                for pos in range(hexes):
                    if low <= cells[pos] <= high:
                        code += weights[pos]
                        spare -= 1
                        if not spare:
                            break
            children.append(code << _KEY_SHIFT | (1 - player))
        can_hit = targets[player]
        corner = MAX_DICE * player
        for src in range(hexes):
            attacker = cells[src]
            hits = can_hit[attacker]
            if hits:
                src_delta = (corner - attacker) * key_weights[src] + key
                for dst in near[src]:
                    defender = cells[dst]
                    if defender in hits:
                        children.append(
                            src_delta
                            + (attacker - 1 - defender) * key_weights[dst]
                            + gains[defender]
                        )
        return children, cells

    return _Tables(hexes, expand)


def analyse(position: Position, limit: int = DEFAULT_LIMIT) -> Analysis:
    """Analyse one position with a fresh solver (cold: nothing is reused)."""
    return DoomSolver(position.board.size, limit).analyse(position)
