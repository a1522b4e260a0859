"""Dice of Doom, version 1 (Land of Lisp, chapter 15): the board, its notation and the rules.

Two players, ``a`` (0) and ``b`` (1), own the hexes of an N x N board, each hex holding 1 to
3 dice. A turn is one or more attacks, each from a hex of the mover's onto a neighbouring
enemy hex with strictly fewer dice (it always succeeds), then a pass that brings
reinforcements. A player who cannot attack at the start of a turn ends the game; whoever
holds the most hexes wins. ``../shared/dice_of_doom.md`` states the rules in full.

Everything here follows the book's Lisp program to the letter, including its orders
(neighbours, moves, the reinforcement scan), because "the book's move" (the first best) and
the published game-tree figures depend on them. This module is rules only: no solving and
no input or output; ``doom_tree`` solves positions and ``doom_play`` runs a game.

Boards are typed in the notation ``a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3`` (rows from the
top, separated by ``/``). Every reader error is a :class:`DoomError` that names the field
and says, in a player's words, what is wrong and what would be right.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Final

from memo_solver.core.errors import UserError

MAX_DICE: Final = 3
"""Dice a hex can hold; attacks and reinforcements never go past it."""
MIN_SIZE: Final = 2
MAX_SIZE: Final = 5
"""Boards from 2x2 (the book's first games) to 5x5. Already on 4x4 most game trees need
more positions than a machine holds, so larger boards could only ever hit the solver's
limit."""
PLAYER_NAMES: Final = ("a", "b")
"""Player 0 is ``a`` and player 1 is ``b``, as the book's ``player-letter`` writes them."""
CELL_CODES: Final = len(PLAYER_NAMES) * MAX_DICE
"""A hex is one of six codes, ``owner * 3 + (dice - 1)``; a board is a base-6 number."""

_CELL = re.compile(r"([a-z])-([0-9]{1,9})", re.ASCII)
"""ASCII digits only (``\\d`` would read ``a-٣`` as ``a-3``), and few of them: a count of
thousands of digits is no board, and ``int`` refuses to read one."""
_SQUARES: Final = ", ".join(str(n * n) for n in range(MIN_SIZE, MAX_SIZE)) + (
    f" or {MAX_SIZE * MAX_SIZE}"
)


class DoomError(UserError):
    """A board, player or move the user gave is invalid; ``field`` names what is wrong (the
    message names it in its own words, so the CLI's line is the message alone)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field)


@dataclass(frozen=True)
class Board:
    """The hexes of an N x N board, row by row from the top-left, as the book stores them."""

    size: int
    owners: tuple[int, ...]
    """0 for player a, 1 for player b, one per hex."""
    dice: tuple[int, ...]
    """1 to 3, one per hex."""

    def __post_init__(self) -> None:
        # Checked here so that no invalid board exists anywhere: every reader funnels into it.
        check_size(self.size)
        hexes = self.size * self.size
        if len(self.owners) != hexes or len(self.dice) != hexes:
            raise DoomError(
                "board",
                f"a {self.size}x{self.size} board has {hexes} hexes, "
                f"got {len(self.owners)} owners and {len(self.dice)} dice counts",
            )
        for pos, (owner, dice) in enumerate(zip(self.owners, self.dice, strict=True)):
            if owner not in (0, 1):
                raise DoomError("board", f"hex {pos} has owner {owner}; owners are 0 (a) or 1 (b)")
            if not 1 <= dice <= MAX_DICE:
                raise DoomError(
                    "board", f"hex {pos} has {dice} dice; a hex holds 1 to {MAX_DICE} dice"
                )

    @property
    def code(self) -> int:
        """The board as one integer: hex ``i`` is base-6 digit ``i``, ``owner * 3 + dice - 1``.

        Other code (stores, the HTTP API, the solver's memo) keys boards by this number, so
        it is fixed: changing it would orphan every stored answer.
        """
        return sum(
            (owner * MAX_DICE + dice - 1) * CELL_CODES**pos
            for pos, (owner, dice) in enumerate(zip(self.owners, self.dice, strict=True))
        )


def check_size(size: int) -> None:
    """Refuse a side length outside 2..5, the boards the solver accepts."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise DoomError(
            "size",
            f"size {size} is not supported; boards are {MIN_SIZE}x{MIN_SIZE} "
            f"to {MAX_SIZE}x{MAX_SIZE}",
        )


def board_from_code(size: int, code: int) -> Board:
    """The board whose :attr:`Board.code` is ``code``."""
    check_size(size)
    hexes = size * size
    if not 0 <= code < CELL_CODES**hexes:
        raise DoomError(
            "code",
            f"code {code} is not a {size}x{size} board; codes run from 0 to "
            f"{CELL_CODES**hexes - 1}",
        )
    owners = []
    dice = []
    for _ in range(hexes):
        code, cell = divmod(code, CELL_CODES)
        owner, spare = divmod(cell, MAX_DICE)
        owners.append(owner)
        dice.append(spare + 1)
    return Board(size, tuple(owners), tuple(dice))


def player_index(name: str) -> int:
    """0 for ``a``, 1 for ``b`` (any case, surrounding spaces ignored)."""
    cleaned = name.strip().lower()
    if cleaned not in PLAYER_NAMES:
        raise DoomError("player", f"player {name.strip()!r} is unknown; the players are a and b")
    return PLAYER_NAMES.index(cleaned)


def player_name(player: int) -> str:
    """``a`` for 0, ``b`` for 1."""
    return PLAYER_NAMES[player]


# --- notation ----------------------------------------------------------------------------------


def parse_board(text: str, size: int | None = None) -> Board:
    """Read ``a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3``, or the same cells without slashes.

    Case and spacing are free (``A-2  a-2/b-1``). With ``size`` given, the board must have
    that size; without it the cell count decides.
    """
    if size is not None:
        check_size(size)
    if not text.strip():
        raise DoomError("board", "the board is empty; type hexes like a-3 b-3 / a-2 b-2")
    rows = [row.split() for row in text.lower().split("/")]
    cells = [cell for row in rows for cell in row]
    if len(rows) > 1:
        _check_rows(rows)
    side = math.isqrt(len(cells))
    if size is not None and len(cells) != size * size:
        raise DoomError(
            "board",
            f"got {_count(len(cells), 'hex', 'hexes')}; a {size}x{size} board needs {size * size}",
        )
    if side * side != len(cells) or not MIN_SIZE <= side <= MAX_SIZE:
        raise DoomError(
            "board",
            f"got {_count(len(cells), 'hex', 'hexes')}; a square board needs {_SQUARES} "
            f"(2x2 to {MAX_SIZE}x{MAX_SIZE})",
        )
    owners = []
    dice = []
    for pos, cell in enumerate(cells):
        owner, count = _parse_cell(pos, cell)
        owners.append(owner)
        dice.append(count)
    return Board(side, tuple(owners), tuple(dice))


def _check_rows(rows: list[list[str]]) -> None:
    """Rows must be non-empty, all as long as the first, and as many as a row is long."""
    for number, row in enumerate(rows, start=1):
        if not row:
            raise DoomError("board", f"row {number} is empty; remove the extra '/'")
        if len(row) != len(rows[0]):
            raise DoomError(
                "board",
                f"row {number} has {_count(len(row), 'hex', 'hexes')} but row 1 has "
                f"{len(rows[0])}; every row needs the same number",
            )
    if len(rows) != len(rows[0]):
        raise DoomError(
            "board",
            f"{len(rows)} rows of {_count(len(rows[0]), 'hex', 'hexes')} is not square; "
            "a board has as many rows as hexes in a row",
        )


def _parse_cell(pos: int, cell: str) -> tuple[int, int]:
    """(owner, dice) of one written hex such as ``b-3``; ``pos`` only names it in errors."""
    match = _CELL.fullmatch(cell)
    if match is None:
        raise DoomError(
            "board",
            f"hex {pos} {cell!r} is not a hex; write the owner (a or b), a dash and "
            f"the dice (1 to {MAX_DICE}), like a-2",
        )
    letter, digits = match.groups()
    if letter not in PLAYER_NAMES:
        raise DoomError(
            "board", f"hex {pos} {cell!r} belongs to {letter!r}; the players are a and b"
        )
    count = int(digits)
    if not 1 <= count <= MAX_DICE:
        raise DoomError(
            "board",
            f"hex {pos} {cell!r} has {_count(count, 'die', 'dice')}; "
            f"a hex holds 1 to {MAX_DICE} dice",
        )
    return PLAYER_NAMES.index(letter), count


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def format_board(board: Board) -> str:
    """The notation :func:`parse_board` reads: ``a-3 b-3 / a-2 b-2``."""
    return " / ".join(" ".join(row) for row in _rows(board))


def draw_board(board: Board) -> str:
    """The board as the book draws it: rows shifted left as they go down, like hexes."""
    return "\n".join(
        "  " * (board.size - number) + " ".join(row) for number, row in enumerate(_rows(board))
    )


def _rows(board: Board) -> list[list[str]]:
    """The hexes written ``a-3``, row by row."""
    cells = [
        f"{player_name(owner)}-{dice}" for owner, dice in zip(board.owners, board.dice, strict=True)
    ]
    return [cells[start : start + board.size] for start in range(0, len(cells), board.size)]


# --- rules -------------------------------------------------------------------------------------


@cache
def neighbours(size: int) -> tuple[tuple[int, ...], ...]:
    """The hexes each hex can attack, in the book's order: up, down, up-left, left, right,
    down-right (left ones only off the left column, right ones only off the right column).

    The order decides the order of attacks, hence the book's choice between equal moves.
    """
    check_size(size)
    hexes = size * size
    table = []
    for pos in range(hexes):
        up, down = pos - size, pos + size
        candidates = [up, down]
        if pos % size != 0:
            candidates += [up - 1, pos - 1]
        if (pos + 1) % size != 0:
            candidates += [pos + 1, down + 1]
        table.append(tuple(p for p in candidates if 0 <= p < hexes))
    return tuple(table)


def attacks(board: Board, player: int) -> tuple[tuple[int, int], ...]:
    """Every legal attack (src, dst) of ``player``, by src ascending, dst in neighbour order."""
    owners, dice = board.owners, board.dice
    return tuple(
        (src, dst)
        for src, near in enumerate(neighbours(board.size))
        if owners[src] == player
        for dst in near
        if owners[dst] != player and dice[src] > dice[dst]
    )


def attack(board: Board, src: int, dst: int) -> Board:
    """The board after hex ``src`` attacks ``dst``: src keeps 1 die, dst changes owner and
    receives the rest. Refuses an attack the rules do not allow, saying why."""
    hexes = board.size * board.size
    for name, pos in (("src", src), ("dst", dst)):
        if not 0 <= pos < hexes:
            raise DoomError(name, f"hex {pos} is not on the board; hexes are 0 to {hexes - 1}")
    if dst not in neighbours(board.size)[src]:
        raise DoomError("dst", f"hex {dst} is not a neighbour of hex {src}")
    if board.owners[src] == board.owners[dst]:
        raise DoomError(
            "dst", f"hex {dst} is not an enemy of hex {src}; both belong to the same player"
        )
    if board.dice[src] <= board.dice[dst]:
        raise DoomError(
            "src",
            f"hex {src} has {board.dice[src]} dice against {board.dice[dst]}; "
            "an attack needs strictly more dice than the defender",
        )
    owners = list(board.owners)
    dice = list(board.dice)
    owners[dst] = owners[src]
    dice[dst] = dice[src] - 1
    dice[src] = 1
    return Board(board.size, tuple(owners), tuple(dice))


def reinforce(board: Board, player: int, captured: int) -> Board:
    """The board after ``player`` ends a turn that captured ``captured`` dice.

    ``captured - 1`` new dice go, one each, to the player's hexes holding fewer than 3, in a
    single scan in hex order; dice left over when the scan ends are lost (the book's
    ``add-new-dice``).
    """
    if captured < 0:
        raise DoomError("captured", f"captured dice cannot be negative, got {captured}")
    spare = captured - 1
    dice = list(board.dice)
    for pos, owner in enumerate(board.owners):
        if spare <= 0:
            break
        if owner == player and dice[pos] < MAX_DICE:
            dice[pos] += 1
            spare -= 1
    return Board(board.size, board.owners, tuple(dice))


def winners(board: Board) -> tuple[int, ...]:
    """The players holding the most hexes, ascending: one player, or both on a tie."""
    held = [board.owners.count(player) for player in range(len(PLAYER_NAMES))]
    best = max(held)
    return tuple(player for player, count in enumerate(held) if count == best)
