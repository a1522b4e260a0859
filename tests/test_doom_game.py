"""Dice of Doom on the engine: the blocks of turn starts agree with the position solver.

Two independent solvers meet here: the engine's blocks (every turn start of a block at
once, vectorized, each turn's passes looked up in other blocks) and the position DAG of
:mod:`memo_solver.games.dice_of_doom.tree` (one position, memoised, the book's way). Every turn
start of
the 2 x 2 game and a sample of 3 x 3 ones must get the same value from both; the answers
read from the memo must equal the solved ones, mid-turn positions included.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from functools import cache

import anyio
import numpy as np
import pytest

from memo_solver.core.engine import open_engine
from memo_solver.games.dice_of_doom.advice import advise
from memo_solver.games.dice_of_doom.board import Board, board_from_code
from memo_solver.games.dice_of_doom.game import ROOT, DiceOfDoomGame, doom_game, parse_turn_key
from memo_solver.games.dice_of_doom.tree import DoomLimitError, DoomSolver, Position, make_position
from memo_solver.stores.memory import MemoryStore

SMALL, LARGE = doom_game(2), doom_game(3)


def turn_start(game: DiceOfDoomGame, code: int, player: int) -> tuple[Board, str, int]:
    board = board_from_code(game.size, code)
    key, index = game.locate(board.owners, board.dice, player)
    return board, key, index


def test_the_blocks_hold_every_turn_start_once() -> None:
    assert LARGE.turn_starts() == 20_155_392
    assert LARGE.block_count == 1 + 2 * 19 + 2 * 19 * 512
    assert SMALL.block_count == 1 + 2 * 9 + 2 * 9 * 16
    turn_blocks = [k for k in LARGE.successors(ROOT) for k in LARGE.successors(k)]
    assert len(set(turn_blocks)) == 2 * 19 * 512
    assert sum(LARGE.block_shape(k)[0] for k in turn_blocks) == LARGE.turn_starts()


def test_the_whole_game_holds_every_block_at_its_own_shape() -> None:
    """What the engine tells a store the namespace may hold: the root's and summaries'
    few values and every turn start, not every block at the root's shape."""
    summaries = SMALL.successors(ROOT)
    keys = {ROOT, *summaries, *(k for s in summaries for k in SMALL.successors(s))}
    assert len(keys) == SMALL.block_count
    whole = sum(math.prod(SMALL.block_shape(key)) for key in keys)
    assert SMALL.values_below(ROOT) == whole == SMALL.turn_starts() + 3 * (1 + len(summaries))
    assert LARGE.values_below(ROOT) == LARGE.turn_starts() + 3 * (1 + 2 * 19)


def test_every_2x2_turn_start_has_its_own_place() -> None:
    places = {turn_start(SMALL, code, p)[1:] for code in range(6**4) for p in (0, 1)}
    assert len(places) == SMALL.turn_starts()
    assert all(index < SMALL.block_shape(key)[0] for key, index in places)


def test_successor_blocks_have_fewer_dice_and_the_other_player_to_move() -> None:
    """Every turn loses dice, so the blocks form a DAG; the mover never loses a hex."""
    for key in random.Random(7).sample(LARGE.successors(ROOT), 10):
        for block in LARGE.successors(key)[::50]:
            player, total, mask = parse_turn_key(block)
            for after in LARGE.successors(block):
                p, t, m = parse_turn_key(after)
                assert (p, t < total) == (1 - player, True)
                enemy = mask if player == 0 else ~mask & 0x1FF
                after_enemy = m if player == 0 else ~m & 0x1FF
                assert after_enemy & ~enemy == 0
                assert after_enemy != enemy


@pytest.mark.parametrize("key", ["", "all ", "a8", "c9-000", "a8-000", "a9-200", "a28-000"])
def test_keys_from_outside_are_checked(key: str) -> None:
    assert not LARGE.is_key(key)


async def test_every_2x2_turn_start_matches_the_position_solver() -> None:
    solver = DoomSolver(2)
    async with MemoryStore() as store, open_engine(SMALL, store) as engine:
        await engine.block(SMALL.root())
        for code in range(6**4):
            for player in (0, 1):
                board, key, index = turn_start(SMALL, code, player)
                block = await engine.block(key)
                expected = solver.value(Position(board, player))
                assert Fraction(float(block[index])) == expected, (board, player)


async def test_3x3_turn_starts_match_the_position_solver() -> None:
    """Boards with few dice: their blocks' closure is a few thousand small blocks."""
    rng, checked = random.Random(3), set[tuple[Board, int]]()
    async with MemoryStore() as store, open_engine(LARGE, store) as engine:
        while len(checked) < 25:
            owners = [rng.randrange(2) for _ in range(9)]
            dice = [rng.choice((1, 1, 1, 2, 3)) for _ in range(9)]
            if sum(dice) > 13:
                continue
            board = Board(3, tuple(owners), tuple(dice))
            player = rng.randrange(2)
            key, index = LARGE.locate(owners, dice, player)
            block = await engine.block(key)
            expected = DoomSolver(3).value(Position(board, player))
            assert Fraction(float(block[index])) == expected, (board, player)
            checked.add((board, player))


@cache
def every_2x2_outcome() -> dict[str, float]:
    """Over every 2 x 2 turn start, by the position solver: the mover's expected share (a
    tie counting half), and the shares the mover wins, ties and loses with best play."""
    solver = DoomSolver(2)
    values = [
        solver.value(Position(board_from_code(2, code), player))
        for code in range(6**4)
        for player in (0, 1)
    ]
    n = len(values)
    return {
        "value": float(sum(values) / n),
        "won": values.count(Fraction(1)) / n,
        "tied": values.count(Fraction(1, 2)) / n,
        "lost": values.count(Fraction(0)) / n,
    }


async def test_the_2x2_root_holds_the_expected_share_and_the_shares_won_and_tied() -> None:
    async with MemoryStore() as store, open_engine(SMALL, store) as engine:
        root = await engine.block(SMALL.root())
    outcome = every_2x2_outcome()
    assert list(root) == pytest.approx([outcome["value"], outcome["won"], outcome["tied"]])
    # The expected share is no win rate: a tie counts half in it.
    assert outcome["value"] == pytest.approx(outcome["won"] + outcome["tied"] / 2)
    assert (round(outcome["value"], 4), round(outcome["won"], 4)) == (0.5833, 0.5039)


def mid_turn_positions(size: int, count: int, seed: int) -> list[Position]:
    """Turn starts and positions a few attacks into a turn, found by playing at random."""
    rng, found = random.Random(seed), list[Position]()
    solver = DoomSolver(size)
    while len(found) < count:
        code = rng.randrange(6 ** (size * size))
        position = Position(board_from_code(size, code), rng.randrange(2))
        for _ in range(rng.randrange(3)):
            moves, _ = solver.analyse_moves(position)
            attacks = [m.after for m in moves if m.move is not None]
            if not attacks:
                break
            position = rng.choice(attacks)
        found.append(position)
    return found


async def test_advice_from_the_memo_equals_the_solved_advice() -> None:
    limiter = anyio.CapacityLimiter(1)
    async with MemoryStore() as store, open_engine(SMALL, store) as engine:
        cold = await advise(make_position("a-3 b-3 / a-2 b-2"), engine, DoomSolver(2), limiter)
        assert cold.source == "solved"
        await engine.block(SMALL.root())
        for position in mid_turn_positions(2, 200, seed=1):
            memo = await advise(position, engine, DoomSolver(2), limiter)
            solved = await advise(position, None, DoomSolver(2), limiter)
            # A finished game reaches no turn start: it is the solver's, with its figures.
            over = solved.analysis.winners is not None
            assert (memo.source, solved.source) == ("solved" if over else "memo", "solved")
            assert memo.analysis.value == solved.analysis.value
            assert memo.analysis.moves == solved.analysis.moves
            assert memo.analysis.best == solved.analysis.best
            assert memo.analysis.winners == solved.analysis.winners


def test_a_block_solves_the_same_alone_as_within_the_game() -> None:
    """The vectorized pass does not depend on which other blocks are being solved."""
    solver = DoomSolver(2)
    key = "a6-5"  # a to move, 6 dice, b holds hexes 0 and 2
    player, total, mask = parse_turn_key(key)

    async def solve() -> np.ndarray:
        async with MemoryStore() as store, open_engine(SMALL, store) as engine:
            return await engine.block(key)

    block = anyio.run(solve)
    assert len(block) == SMALL.block_shape(key)[0]
    for code in range(6**4):
        board = board_from_code(2, code)
        if sum(board.dice) != total or sum(o << i for i, o in enumerate(board.owners)) != mask:
            continue
        _, _, index = turn_start(SMALL, code, player)
        assert Fraction(float(block[index])) == solver.value(Position(board, player))


async def test_a_position_past_the_solvers_limit_is_computed_on_the_memo() -> None:
    """Too many positions for the DAG solver: the engine fills the memo and answers."""
    position = make_position("a-3 a-3 / b-2 b-3")  # the largest 2 x 2 tree: 269 nodes
    limiter = anyio.CapacityLimiter(1)
    async with MemoryStore() as store, open_engine(SMALL, store) as engine:
        with pytest.raises(DoomLimitError):
            await advise(position, None, DoomSolver(2, limit=5), limiter)
        advice = await advise(position, engine, DoomSolver(2, limit=5), limiter)
        assert advice.source == "computed"
        assert engine.counters.computed > 0
        again = await advise(position, engine, DoomSolver(2, limit=5), limiter)
        assert again.source == "memo"
    expected = DoomSolver(2).analyse(position)
    for answer in (advice, again):
        assert answer.analysis.value == expected.value
        assert answer.analysis.moves == expected.moves
        assert answer.analysis.best == expected.best
