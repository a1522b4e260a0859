"""Every registered game keeps the engine's contract, checked the same way for each.

In the spirit of OpenSpiel's generic game tests: whatever a game is, the engine, the stores
and the workers only meet it through :class:`memo_solver.core.game.Game`, so every entry of
the registry must hold to the same promises, and a new game joins these checks by being
registered (and by pinning its namespace below):

- the root is a key, and strings from outside that name no block are refused;
- successors are keys and form a DAG from the root that reaches every block: walked whole
  for games of at most ``WHOLE_DAG`` blocks, along ``PATHS`` random paths (seeded per game)
  for larger ones, each of which must end at a block with no successors;
- ``solve`` returns float64 in the declared ``block_shape``, the same bytes every time,
  without writing into its successors (the engine hands it read-only blocks);
- ``values_below`` a block holds at least the values of its closure at their declared
  shapes (what the engine sizes a namespace and a cold cone by);
- the namespace (format version and fingerprint) is the one stored blocks are filed under;
- the codec returns a solved block byte for byte.

Solving is bounded: only blocks whose whole closure (the block and everything below it)
holds at most ``SOLVE_CLOSURE`` blocks are solved, found along the same paths. The file
runs in a few seconds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from memo_solver.core.codec import decode_game_block, encode_game_block
from memo_solver.core.engine import namespace
from memo_solver.core.game import Block, Game
from memo_solver.games.registry import registry

NAMESPACES = {
    # Stored blocks are filed under these: a change orphans every store that holds the game.
    "yahtzee": "1:89113611c1a85da2",
    "yahtzee-free-joker": "1:3368b410a97145e9",
    "yahtzee-no-joker": "1:1fb08d3fd9e9cda7",
    "yahtzee-no-joker-no-bonus": "1:d0cd8029c97f4aa4",
    "yazy": "1:2164c4ff5d8f3733",
    "yahtzee-upper": "1:9069ff0e71790290",
    "yahtzee-upper-no-bonus": "1:514c3ef9a41b97ca",
    "yahtzee-lower": "1:f13d8e46c0fda394",
    "yatzy": "1:d9197e38238c9a11",
    "maxi-yatzy": "1:9b299cc6ba782f20",
    "maxi-yatzy-saved": "1:ac98e23c8e093bad",
    "dice-of-doom-2x2": "1:e809d14180852b1e",
    "dice-of-doom-3x3": "1:eb472e38c829dfd9",
}
WHOLE_DAG = 2_048
"""Games of at most this many blocks have their whole DAG walked."""
PATHS = 12
"""Random root-to-end paths walked in a larger game."""
SOLVE_CLOSURE = 40
"""The most blocks solved below (and with) one block chosen for the solve checks."""
NOT_KEYS = ("", " ", "not a key", "0x0", " 0", "-1", "all ", "a12-", "é", "0" * 40)

NAMES = list(registry())


def game_of(name: str) -> Game:
    return registry()[name].game


def random_paths(game: Game, seed: str) -> Iterator[list[str]]:
    """``PATHS`` walks from the root, each step to a random successor, until a block with
    none; a walk longer than the game has blocks has met a cycle."""
    rng = random.Random(seed)
    for _ in range(PATHS):
        path = [game.root()]
        while successors := game.successors(path[-1]):
            assert len(path) <= game.block_count, f"a path of {game.name} never ends: {path}"
            path.append(rng.choice(list(successors)))
        yield path


def closure(game: Game, key: str, limit: int) -> list[str] | None:
    """``key`` and every block below it, successors before the blocks that need them; None
    once there are more than ``limit``."""
    order: list[str] = []
    done: set[str] = set()
    stack = [(key, iter(game.successors(key)))]
    while stack:
        top, pending = stack[-1]
        below = next((k for k in pending if k not in done), None)
        if below is None:
            stack.pop()
            done.add(top)
            order.append(top)
            if len(order) > limit:
                return None
        else:
            stack.append((below, iter(game.successors(below))))
    return order


def read_only(block: Block) -> Block:
    """A block as the engine hands it over: decoded from bytes, so not writable."""
    frozen = block.copy()
    frozen.flags.writeable = False
    return frozen


def solve_below(game: Game, keys: Sequence[str]) -> dict[str, Block]:
    """Every block of ``keys``' closures, each solved from its read-only successors."""
    solved: dict[str, Block] = {}
    for key in keys:
        order = closure(game, key, SOLVE_CLOSURE)
        assert order is not None
        for k in order:
            if k not in solved:
                solved[k] = read_only(game.solve(k, {s: solved[s] for s in game.successors(k)}))
    return solved


def small_closures(game: Game, seed: str) -> list[str]:
    """From each sampled path, the highest block whose closure is small enough to solve."""
    chosen: list[str] = []
    for path in random_paths(game, seed):
        highest = path[-1]
        for key in reversed(path[:-1]):
            if closure(game, key, SOLVE_CLOSURE) is None:
                break
            highest = key
        chosen.append(highest)
    return list(dict.fromkeys(chosen))


def test_every_registered_game_has_its_namespace_pinned() -> None:
    assert set(NAMESPACES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_namespace_is_the_one_stored_blocks_are_filed_under(name: str) -> None:
    game = game_of(name)
    assert game.name == name
    assert namespace(game) == NAMESPACES[name]


@pytest.mark.parametrize("name", NAMES)
def test_the_root_is_a_key_and_strings_naming_no_block_are_not(name: str) -> None:
    game = game_of(name)
    assert game.is_key(game.root())
    assert game.block_count >= 1
    for text in NOT_KEYS:
        assert not game.is_key(text), f"{name} takes {text!r} for a block"


@pytest.mark.parametrize("name", NAMES)
def test_successors_are_keys_forming_a_dag_from_the_root(name: str) -> None:
    game = game_of(name)
    if game.block_count > WHOLE_DAG:
        for path in random_paths(game, name):
            assert len(set(path)) == len(path), f"a path of {name} comes back: {path}"
            for key in path:
                assert game.is_key(key), f"{name}: {key!r} is a successor but no key"
        return
    # Depth first, grey while on the stack: meeting a grey block again is a cycle.
    grey, black = {game.root()}, set[str]()
    stack = [iter(game.successors(game.root()))]
    path = [game.root()]
    while stack:
        below = next(stack[-1], None)
        if below is None:
            stack.pop()
            black.add(path[-1])
            grey.discard(path.pop())
            continue
        assert game.is_key(below), f"{name}: {below!r} is a successor of {path[-1]!r}, no key"
        assert below not in grey, f"{name} has a cycle: {[*path, below]}"
        if below not in black:
            grey.add(below)
            path.append(below)
            stack.append(iter(game.successors(below)))
    assert len(black) == game.block_count, "the root reaches every block of the game, once"


@pytest.mark.parametrize("name", NAMES)
def test_solve_gives_the_declared_shape_the_same_bytes_every_time(name: str) -> None:
    game = game_of(name)
    chosen = small_closures(game, name)
    solved = solve_below(game, chosen)
    assert any(game.successors(k) for k in solved), "some block solved from successors"
    for key, block in solved.items():
        assert block.dtype == np.float64
        assert block.shape == game.block_shape(key), key
    for key in chosen:
        successors = {s: solved[s] for s in game.successors(key)}
        again = game.solve(key, successors)
        assert again.tobytes() == solved[key].tobytes(), f"{name}: {key!r} solved twice"


@pytest.mark.parametrize("name", NAMES)
def test_the_values_below_a_block_hold_its_closure_at_its_shapes(name: str) -> None:
    game = game_of(name)
    for key in small_closures(game, name):
        order = closure(game, key, SOLVE_CLOSURE)
        assert order is not None
        held = sum(math.prod(game.block_shape(k)) for k in order)
        assert game.values_below(key) >= held, key


@pytest.mark.parametrize("name", NAMES)
def test_the_codec_returns_a_solved_block_byte_for_byte(name: str) -> None:
    game = game_of(name)
    key = small_closures(game, name)[0]
    block = solve_below(game, [key])[key]
    back = decode_game_block(game, key, encode_game_block(game, key, block))
    assert back is not None
    assert back.shape == block.shape
    assert back.tobytes() == block.tobytes()
