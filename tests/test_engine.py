"""The lazy engine: pinned values end to end, laziness, the memo hierarchy, claims, resume.

Every test starts from a fresh store. The whole-game pins of the 13- and 15-box rule sets
take seconds each and are marked slow (as is any rule set not listed in QUICK); everything
else uses small rule sets or late blocks and runs in well under a second.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.lowlevel
import numpy as np
import pytest
from support.store_faults import FULL, on_every_connection, store_file

from memo_solver.core import engine as engine_module
from memo_solver.core.cache import CACHE_MB_ENV, DEFAULT_CACHE_MB
from memo_solver.core.codec import decode_block
from memo_solver.core.engine import Cost, Counters, Engine, namespace as namespace_of, open_engine
from memo_solver.core.errors import UserError
from memo_solver.core.game import Block, Game
from memo_solver.core.store import Claim, Store, StoreFullError
from memo_solver.games.dice_of_doom.game import DiceOfDoomGame
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set, rule_set_document
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.sqlite import SQLiteStore

QUICK = {"yahtzee-upper", "yahtzee-upper-no-bonus", "yahtzee-lower", "yazy"}
LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])  # 7 boxes: 128 blocks of one value each
LOWER_PIN = RULE_SETS["yahtzee-lower"].start_value
HASBRO = YahtzeeGame(RULE_SETS["yahtzee"])
SMALL_GAMES: dict[str, Game] = {"yahtzee-lower": LOWER, "dice-of-doom-2x2": DiceOfDoomGame(2)}
"""Both games of the registry at their smallest: the claim tests run against each."""
_ROOTS: dict[str, Block] = {}


@pytest.fixture(params=list(SMALL_GAMES))
def small(request: pytest.FixtureRequest) -> Game:
    return SMALL_GAMES[request.param]


async def root_of(game: Game) -> Block:
    """The game's root block solved alone on a fresh memory store: what every test expects."""
    if game.name not in _ROOTS:
        _ROOTS[game.name], _ = await solve(game, MemoryStore(), game.root())
    return _ROOTS[game.name]


class Spy:
    """A store proxy that counts calls by method and can react to each commit."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.on_commit: Callable[[dict[str, bytes]], None] | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            result = await cast(Callable[..., Awaitable[Any]], attr)(*args, **kwargs)
            if name == "commit" and self.on_commit is not None:
                self.on_commit(args[1])
            return result

        return call

    def expect(self, namespace: str, size_bytes: int) -> None:
        """The one call that is no coroutine: passed on as it is."""
        self.inner.expect(namespace, size_bytes)

    def store(self) -> Store:
        return cast(Store, self)


class LookedUp(Spy):
    """A store proxy that also keeps how many keys each lookup asked for."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.asked: list[int] = []

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, bytes]:
        self.asked.append(len(keys))
        return await self.inner.get_many(namespace, keys)


def below(game: YahtzeeGame, key: str) -> set[str]:
    """Every block ``key`` depends on, itself included."""
    seen, todo = set(), [key]
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo.extend(game.successors(k))
    return seen


def mask_with_open(game: YahtzeeGame, *names: str) -> int:
    rules = game.rules
    open_bits = sum(1 << rules.category_index(name) for name in names)
    return rules.all_filled & ~open_bits


async def solve(game: Game, store: Store, key: str, **kwargs: Any) -> tuple[Block, Counters]:
    async with open_engine(game, store, **kwargs) as engine:
        value = await engine.block(key)
    return value, engine.counters


# --- the pins, end to end --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[] if name in QUICK else [pytest.mark.slow])
        for name in RULE_SETS
        if not name.startswith("maxi-yatzy")  # a million blocks each: pinned under `full`
    ],
)
async def test_start_value_matches_the_pin(name: str) -> None:
    rules = RULE_SETS[name]
    game = YahtzeeGame(rules)
    store = MemoryStore()
    block, counters = await solve(game, store, game.root())
    assert block.shape == rules.block_shape
    assert block[0, 0] == pytest.approx(rules.start_value, abs=1e-9)
    assert counters.computed == game.block_count
    assert counters.waited == 0
    assert (await store.coverage(namespace_of(game))).blocks == game.block_count


def test_quick_rule_sets_exist() -> None:
    assert QUICK <= set(RULE_SETS)


# --- laziness --------------------------------------------------------------------------------


async def test_a_late_block_computes_only_what_it_needs() -> None:
    mask = mask_with_open(HASBRO, "sixes", "yahtzee", "chance")
    key = block_key(mask)
    store = MemoryStore()
    async with open_engine(HASBRO, store) as engine:
        await engine.block(key)
        # Hand-checkable end games (pins.md), read from the blocks solved on the way.
        only = {
            box: engine.memo.get(block_key(mask_with_open(HASBRO, box)))
            for box in ("chance", "yahtzee", "sixes")
        }
    assert engine.counters == Counters(computed=8, fetched=0, waited=0)
    expected = {block_key(mask | sub) for sub in range(1 << 13) if sub & mask == 0}
    assert len(expected) == 8
    assert set(await store.keys(namespace_of(HASBRO))) == expected
    assert only["chance"] is not None
    assert only["chance"][0, 0] == pytest.approx(70 / 3, abs=1e-9)
    assert only["yahtzee"] is not None
    assert only["yahtzee"][0, 0] == pytest.approx(2.3014321263, abs=1e-9)
    assert only["sixes"] is not None  # upper total at 63: the bonus is already secured
    assert only["sixes"][63, 0] == pytest.approx(30 * (1 - (5 / 6) ** 3), abs=1e-9)


# --- the memo hierarchy ----------------------------------------------------------------------


async def test_a_second_ask_does_no_store_io() -> None:
    spy = Spy(MemoryStore())
    async with open_engine(LOWER, spy.store()) as engine:
        first = await engine.block(LOWER.root())
        calls, counters = Counter(spy.calls), Counters(**vars(engine.counters))
        again = await engine.block(LOWER.root())
        later = await engine.block(block_key(0b1010101))
        assert spy.calls == calls
        assert engine.counters == counters
    assert again is first
    assert later is engine.memo.get(block_key(0b1010101))


async def test_a_fresh_engine_fetches_instead_of_computing() -> None:
    store = MemoryStore()
    _, cold = await solve(LOWER, store, LOWER.root())
    assert cold.computed == 128
    value, warm = await solve(LOWER, store, LOWER.root())
    assert warm.computed == 0
    assert warm.fetched >= 1
    assert value[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)


async def test_a_fresh_engine_fetches_only_what_is_missing_below() -> None:
    store = MemoryStore()
    inner = block_key(0b0000111)
    _, first = await solve(LOWER, store, inner)
    assert first.computed == len(below(LOWER, inner)) == 16
    _, second = await solve(LOWER, store, LOWER.root())
    assert second.computed == 128 - 16


# --- sharing work ----------------------------------------------------------------------------


async def test_concurrent_asks_share_the_work() -> None:
    store = MemoryStore()
    results: list[Block] = []
    async with open_engine(LOWER, store) as engine:

        async def ask() -> None:
            results.append(await engine.block(LOWER.root()))

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(ask)
    assert engine.counters.computed == len(below(LOWER, LOWER.root())) == 128
    assert len(results) == 20
    assert all(r is results[0] for r in results)
    assert results[0][0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)


async def test_concurrent_asks_for_overlapping_blocks_compute_each_once() -> None:
    store = MemoryStore()
    keys = [block_key(m) for m in (0, 0b1, 0b11, 0b1000000, 0b1110000, 0b0101010)]
    async with open_engine(LOWER, store) as engine:
        async with anyio.create_task_group() as tg:
            for key in keys * 3:
                tg.start_soon(engine.block, key)
        blocks = await engine.blocks(keys)
    assert engine.counters.computed == 128
    assert set(blocks) == set(keys)


async def test_two_engines_on_one_store_never_compute_a_block_twice(
    store: Store, small: Game
) -> None:
    values: list[Block] = []
    counters: list[Counters] = []

    async def run() -> None:
        value, done = await solve(small, store, small.root())
        values.append(value)
        counters.append(done)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        tg.start_soon(run)
    expected = await root_of(small)
    assert [v.tobytes() for v in values] == [expected.tobytes()] * 2
    assert sum(c.computed for c in counters) == small.block_count
    assert (await store.coverage(namespace_of(small))).blocks == small.block_count
    assert (await store.coverage(namespace_of(small))).claims == 0


async def test_a_layered_solve_is_the_top_down_one_a_chunk_at_a_time(store: Store) -> None:
    """Two engines solving the whole of yahtzee-lower a layer at a time, each layer in its
    own random order, side by side: the root's value, every block computed once between
    them, and blocks committed a chunk at a time, never more."""
    spy = Spy(store)
    committed: list[int] = []
    spy.on_commit = lambda blocks: committed.append(len(blocks))

    async def run(seed: int) -> tuple[Block, Counters]:
        async with open_engine(LOWER, spy.store()) as engine:
            root = await engine.solve_layers(LOWER.root(), shuffle=random.Random(seed), chunk=16)
            return root, engine.counters

    results: list[tuple[Block, Counters]] = []

    async def keep(seed: int) -> None:
        results.append(await run(seed))

    async with anyio.create_task_group() as tg:
        tg.start_soon(keep, 1)
        tg.start_soon(keep, 2)
    assert [float(root[0, 0]) for root, _ in results] == pytest.approx([LOWER_PIN] * 2, abs=1e-9)
    assert sum(counters.computed for _, counters in results) == LOWER.block_count == 128
    assert sum(committed) == 128
    assert max(committed) <= 16
    assert (await store.coverage(namespace_of(LOWER))).claims == 0


async def test_a_layered_solve_gives_each_thread_whole_chunks() -> None:
    """With ``threads=2`` two chunks are solved at once, each by one call of the game's batch
    solver (the kernel releases the GIL), never split again, and a layer is cut in chunks of
    equal size, as many as a multiple of the threads: a 35-block layer goes out as four
    chunks of 9, 9, 9 and 8 (not 16, 16 and 3, which left one thread idle for the last); a
    layer smaller than two chunks is halved (21 blocks: 11 and 10), so both threads work on
    it. The answer is the one-thread answer."""
    calls: list[int] = []

    class Counted:
        def __init__(self, game: Game) -> None:
            self.game = game

        def __getattr__(self, name: str) -> Any:
            return getattr(self.game, name)

        def solve_many(self, keys: Sequence[str], successors: Any) -> Sequence[Block]:
            calls.append(len(keys))
            return self.game.solve_many(keys, successors)

    async with open_engine(cast(Game, Counted(LOWER)), MemoryStore(), threads=2) as engine:
        root = await engine.solve_layers(LOWER.root(), chunk=16)
    assert float(root[0, 0]) == pytest.approx(LOWER_PIN, abs=1e-9)
    sizes = sorted(len(layer) for layer in LOWER.layers(LOWER.root()))
    assert sizes == [1, 1, 7, 7, 21, 21, 35, 35]
    expected = [1, 1, 4, 3, 4, 3, 11, 10, 11, 10, 9, 9, 9, 8, 9, 9, 9, 8]
    assert sorted(calls) == sorted(expected)


async def test_a_layer_of_costlier_blocks_is_cut_in_smaller_chunks() -> None:
    """Blocks costing four of the game's plainest (saved rolls make Maxi Yatzy's cost 8 to
    22): a chunk of 16 plain blocks' cost holds 4 of them, so the 35-block layer goes out as
    ten chunks of 4 or 3 (a multiple of the two threads), not four of 9."""
    calls: list[int] = []

    class Costly:
        def __init__(self, game: Game) -> None:
            self.game = game

        def __getattr__(self, name: str) -> Any:
            return getattr(self.game, name)

        def block_cost(self, key: str) -> float:
            return 4.0

        def solve_many(self, keys: Sequence[str], successors: Any) -> Sequence[Block]:
            calls.append(len(keys))
            return self.game.solve_many(keys, successors)

    async with open_engine(cast(Game, Costly(LOWER)), MemoryStore(), threads=2) as engine:
        root = await engine.solve_layers(LOWER.root(), chunk=16)
    assert float(root[0, 0]) == pytest.approx(LOWER_PIN, abs=1e-9)
    assert max(calls) == 4
    assert calls.count(4) + calls.count(3) >= 20  # the two 35-block layers: 10 chunks each


def test_a_saved_rolls_turn_costs_its_chain_beside_a_plain_turn() -> None:
    """Maxi Yatzy with saved rolls, 5 boxes filled: banks 0..10, so 12 rolls left at most
    (12 rounds) and a score step per bank a score may carry, 0..12 (13): 25 steps against a
    plain turn's 3."""
    maxi = rule_set_document(RULE_SETS["maxi-yatzy"])
    saved = YahtzeeGame(parse_rule_set(dict(maxi, saved_rolls=True)))
    assert saved.block_cost(format(0b11111, "x")) == pytest.approx(25 / 3)
    assert YahtzeeGame(RULE_SETS["maxi-yatzy"]).block_cost(format(0b11111, "x")) == 1.0


class Listed:
    """A game that counts the successor lists the engine asks it for."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.listed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.game, name)

    def successors(self, key: str) -> Sequence[str]:
        self.listed += 1
        return self.game.successors(key)


@pytest.mark.parametrize("threads", [1, 2])
async def test_a_cold_layered_solve_reads_successors_from_the_memo(threads: int) -> None:
    """Each layer's successors are the blocks just solved: the solver reads them from the
    process memo, so the event loop lists none and asks the store for no block; the claims
    alone say that nothing is stored yet."""
    listed = Listed(LOWER)
    spy = Spy(MemoryStore())
    async with open_engine(cast(Game, listed), spy.store(), threads=threads) as engine:
        root = await engine.solve_layers(LOWER.root(), chunk=16)
    assert float(root[0, 0]) == pytest.approx(LOWER_PIN, abs=1e-9)
    assert engine.counters.computed == LOWER.block_count
    assert listed.listed == 0
    assert spy.calls["get_many"] == 0


async def test_a_layered_solve_with_a_memo_too_small_for_a_layer_gathers_successors() -> None:
    """A memo that holds a few blocks drops most of the layer below before it is read: the
    solver misses them, and the engine gathers them from the store instead, with the
    same answer."""
    listed = Listed(HASBRO)
    key = block_key(mask_with_open(HASBRO, "chance", "yahtzee", "fours", "sixes", "twos"))
    async with open_engine(
        cast(Game, listed),
        MemoryStore(),
        cache_bytes=4 * 8 * int(np.prod(HASBRO.rules.block_shape)),
    ) as engine:
        layered = await engine.solve_layers(key, chunk=4)
    top_down, _ = await solve(HASBRO, MemoryStore(), key)
    assert np.array_equal(layered, top_down, equal_nan=True)
    assert listed.listed > 0


@pytest.mark.slow
async def test_a_cone_mostly_stored_is_walked_by_its_missing_blocks_looked_up_in_bounded_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``yahtzee`` with every block of at least five boxes filled stored (7,099 of 8,192):
    a whole solve finds the 1,093 missing blocks down from the start and solves only those;
    the 1,287 stored blocks next to them are looked up a chunk's worth at a time (the
    bound of a step lowered to nothing: 512 keys), not in one round trip, so that the
    stored blocks of a large cone are never held all at once."""
    monkeypatch.setattr(engine_module, "LAYERED_CONE_VALUES", 1)
    solved = MemoryStore()
    async with open_engine(HASBRO, solved) as engine:
        await engine.solve_layers(HASBRO.root())
    ns = namespace_of(HASBRO)
    layers = HASBRO.layers(HASBRO.root())
    kept = [key for layer in layers[:-5] for key in layer]
    assert len(kept) == 7099
    store = MemoryStore()
    await store.commit(ns, await solved.get_many(ns, kept), None)
    spy = LookedUp(store)
    async with open_engine(HASBRO, spy.store()) as engine:
        root = await engine.solve_layers(HASBRO.root(), shuffle=random.Random(5))
    assert float(root[0, 0]) == pytest.approx(RULE_SETS["yahtzee"].start_value, abs=1e-9)
    assert engine.counters.computed == 8192 - 7099
    assert max(spy.asked) <= 512
    assert sum(spy.asked) >= 1287


# --- large cold cones, a layer at a time --------------------------------------------------------


@pytest.fixture
def lower_is_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """The threshold of a large cone lowered under ``yahtzee-lower``'s whole game (128
    values): its start is a large cone, a state with six boxes open (64 values) is not."""
    monkeypatch.setattr(engine_module, "LAYERED_CONE_VALUES", 64)


@pytest.mark.parametrize("ask", ["block", "blocks"])
async def test_a_cold_question_whose_cone_is_large_is_solved_a_layer_at_a_time(
    lower_is_large: None, ask: str
) -> None:
    """As a precompute solves: the store arranges each layer of the cone, the end of the
    game first, and no block is solved top-down (which holds the whole cone at once)."""
    spy = Spy(MemoryStore())
    async with open_engine(LOWER, spy.store()) as engine:
        if ask == "block":
            root = await engine.block(LOWER.root())
        else:
            root = (await engine.blocks([LOWER.root()]))[LOWER.root()]
    assert float(root[0, 0]) == pytest.approx(LOWER_PIN, abs=1e-9)
    assert spy.calls["arrange"] == len(LOWER.layers(LOWER.root()))
    assert engine.counters.computed == LOWER.block_count


async def test_a_small_cone_or_a_mostly_solved_game_is_answered_top_down(
    lower_is_large: None,
) -> None:
    """Six boxes open is 64 values, not past the threshold; then the start's cone is large
    but the store lacks one block of the whole game, so it cannot lack more of the cone."""
    spy = Spy(MemoryStore())
    async with open_engine(LOWER, spy.store()) as engine:
        await engine.blocks(list(LOWER.successors(LOWER.root())))
        assert spy.calls["arrange"] == 0
        root = await engine.block(LOWER.root())
    assert float(root[0, 0]) == pytest.approx(LOWER_PIN, abs=1e-9)
    assert spy.calls["arrange"] == 0


async def test_a_layered_question_needs_its_cone_at_once_then_counts_its_chunks(
    lower_is_large: None,
) -> None:
    """What a progress bar shows: the cone's blocks before any is solved, then the blocks
    solved, chunk by chunk from the first layer (one block: the bar moves at once)."""
    told: list[tuple[int, int]] = []
    async with open_engine(
        LOWER, MemoryStore(), on_progress=lambda c: told.append((c.needed, c.computed))
    ) as engine:
        await engine.block(LOWER.root())
    assert told[0] == (LOWER.block_count, 0)
    assert told[1] == (LOWER.block_count, 1)
    assert told[-1] == (LOWER.block_count, LOWER.block_count)
    computed = [done for _, done in told]
    assert computed == sorted(computed)


async def test_a_layered_question_takes_back_what_it_finds_stored(lower_is_large: None) -> None:
    """Needed at once are the cone's blocks; those the claims then find stored (solved
    before, here by another process) are taken back, so the bar ends at what was solved."""
    store = MemoryStore()
    late = block_key(mask_with_open(LOWER, "chance", "yahtzee"))  # 4 blocks below it
    await solve(LOWER, store, late)
    told: list[tuple[int, int]] = []
    async with open_engine(
        LOWER, store, on_progress=lambda c: told.append((c.needed, c.computed))
    ) as engine:
        await engine.block(LOWER.root())
    assert told[0] == (LOWER.block_count, 0)
    assert told[-1] == (LOWER.block_count - 4, LOWER.block_count - 4)


async def test_a_large_solve_tells_its_cost_from_a_timed_sample_before_solving(
    lower_is_large: None,
) -> None:
    """Told with the blocks needed, before any is solved: CPU seconds at the rate of a
    sample of the cone solved here, and the bytes its blocks will take in the store (the
    sample's encoded size: every ``yahtzee-lower`` block packs one value, a key of one or
    two characters)."""
    costs: list[Cost | None] = []
    store = MemoryStore()
    async with open_engine(LOWER, store, on_progress=lambda c: costs.append(c.cost)) as engine:
        await engine.block(LOWER.root())
    cost = costs[0]
    assert cost is not None
    assert costs[1:] == [cost] * (len(costs) - 1)
    assert cost.blocks == LOWER.block_count
    assert cost.cpu_s > 0
    stored = (await store.coverage(namespace_of(LOWER))).bytes
    assert abs(cost.store_bytes - stored) <= LOWER.block_count


def test_an_engines_memo_is_bounded_by_default_and_by_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No surface runs with an unbounded memo: a whole solve would hold every layer."""
    monkeypatch.delenv(CACHE_MB_ENV, raising=False)
    assert Engine(LOWER, MemoryStore()).memo.max_bytes == DEFAULT_CACHE_MB << 20
    monkeypatch.setenv(CACHE_MB_ENV, "3")
    assert Engine(LOWER, MemoryStore()).memo.max_bytes == 3 << 20
    assert Engine(LOWER, MemoryStore(), cache_bytes=1000).memo.max_bytes == 1000
    for bad in ("0", "lots", "-5"):
        monkeypatch.setenv(CACHE_MB_ENV, bad)
        with pytest.raises(UserError, match="--cache-mb") as caught:
            Engine(LOWER, MemoryStore())
        assert caught.value.field == "cache_mb"


async def test_a_cold_cone_weighs_each_block_at_its_own_banks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With saved rolls the start's block holds one bank and a block of L boxes filled
    2L + 1: ``yahtzee-lower``'s whole game is 1,024 values, though 128 at the start's
    shape. Past a threshold between the two, the start's cold cone is solved a layer at a
    time."""
    monkeypatch.setattr(engine_module, "LAYERED_CONE_VALUES", 512)
    game = YahtzeeGame(dataclasses.replace(RULE_SETS["yahtzee-lower"], saved_rolls=True))
    assert game.values_below(game.root()) == 1024
    spy = Spy(MemoryStore())
    async with open_engine(game, spy.store()) as engine:
        await engine.block(game.root())
    assert spy.calls["arrange"] == len(game.layers(game.root()))


class Expecting(MemoryStore):
    """A memory store that keeps what each engine told it a namespace may hold."""

    def __init__(self) -> None:
        super().__init__()
        self.expected: dict[str, int] = {}

    def expect(self, namespace: str, size_bytes: int) -> None:
        self.expected[namespace] = size_bytes


@pytest.mark.parametrize("saved_rolls", [False, True], ids=["yatzy", "with-saved-rolls"])
async def test_a_namespace_is_expected_to_hold_every_block_at_its_own_shape(
    saved_rolls: bool,
) -> None:
    """8 bytes a value of every block at its own shape (what sizes a Redis namespace's
    spread): with saved rolls, 16 times ``yatzy``'s blocks at the start's shape, as later
    blocks hold more banks."""
    rules = dataclasses.replace(RULE_SETS["yatzy"], saved_rolls=saved_rolls)
    game = YahtzeeGame(rules)
    store = Expecting()
    async with open_engine(game, store):
        pass
    values = sum(math.prod(rules.block_shape_of(mask)) for mask in rules.reachable_masks(0))
    assert store.expected == {namespace_of(game): 8 * values}
    at_the_start = rules.block_count * math.prod(rules.block_shape)
    assert values == (16 if saved_rolls else 1) * at_the_start


# --- failure and recovery --------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
async def test_a_layered_solve_on_a_full_store_raises_the_stores_error_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """Chunks in flight side by side fail together: the caller sees the store's own error
    (the CLI words it and exits 75), not a group of them."""
    path = await store_file(tmp_path / "full.sqlite3")
    on_every_connection(monkeypatch, FULL)
    async with SQLiteStore(path) as store, open_engine(LOWER, store, threads=threads) as engine:
        with pytest.raises(StoreFullError):
            await engine.solve_layers(LOWER.root(), chunk=16)


async def test_a_cancelled_solve_resumes_where_it_stopped(tmp_path: Path, small: Game) -> None:
    path = tmp_path / "memo.sqlite"
    ns = namespace_of(small)
    sqlite = SQLiteStore(path)
    spy = Spy(sqlite)
    stop = anyio.CancelScope()
    committed = 0

    def cancel_after_20(blocks: dict[str, bytes]) -> None:
        nonlocal committed
        committed += len(blocks)
        if committed > 20:
            stop.cancel()

    spy.on_commit = cancel_after_20
    try:
        async with open_engine(small, spy.store()) as first:
            with stop:
                await first.block(small.root())
        assert stop.cancelled_caught
        assert 20 < first.counters.computed < small.block_count
        coverage = await sqlite.coverage(ns)
        assert coverage.blocks == first.counters.computed
        assert coverage.claims == 0  # the cancelled engine released what it held
    finally:
        await sqlite.aclose()

    reopened = SQLiteStore(path)
    try:
        value, second = await solve(small, reopened, small.root())
        assert (await reopened.coverage(ns)).blocks == small.block_count
    finally:
        await reopened.aclose()
    assert first.counters.computed + second.computed == small.block_count
    assert second.waited == 0
    assert value.tobytes() == (await root_of(small)).tobytes()


async def test_a_corrupt_block_is_recomputed_never_served(store: Store) -> None:
    ns = namespace_of(LOWER)
    root, child = LOWER.root(), block_key(0b0100000)  # child: the Yahtzee box filled
    good, _ = await solve(LOWER, store, root)
    good_child = (await store.get_many(ns, [child]))[child]
    # Junk in the root and one of its successors: asking for the root must recompute both.
    await store.commit(ns, {root: b"junk", child: b"junk"}, None)

    value, counters = await solve(LOWER, store, root)
    assert value[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert value.tobytes() == good.tobytes()
    assert counters.computed == 2
    stored = await store.get_many(ns, [root, child])
    for key in (root, child):
        decoded = decode_block(
            stored[key], fingerprint=LOWER.fingerprint, key=key, shape=LOWER.block_shape(key)
        )
        assert decoded is not None
    assert stored[child] == good_child


async def test_a_block_filed_under_another_key_is_not_served(store: Store) -> None:
    """A valid block stored under the wrong key (a misfiled copy) counts as corrupt."""
    ns = namespace_of(LOWER)
    await solve(LOWER, store, LOWER.root())
    a, b = block_key(0b0000001), block_key(0b1000000)
    blocks = await store.get_many(ns, [a, b])
    await store.commit(ns, {a: blocks[b]}, None)
    async with open_engine(LOWER, store) as engine:
        value = await engine.block(a)
        other = await engine.block(b)
    assert engine.counters.computed == 1
    assert value[0, 0] != other[0, 0]
    assert (await store.get_many(ns, [a])) == {a: blocks[a]}


async def only_the_root_is_missing(store: Store, game: Game) -> bool:
    return (await store.coverage(namespace_of(game))).blocks == game.block_count - 1


async def claims_held(store: Store, ns: str, count: int) -> bool:
    return (await store.coverage(ns)).claims == count


async def waiting(engine: Engine) -> bool:
    """The engine has met a claim held by another token, and waits for its block."""
    return engine.counters.waited >= 1


async def polling(probe: Callable[[], Awaitable[bool]], every: float = 0.02) -> None:
    """Until ``probe`` answers True: the store has no event to wait on."""
    while True:
        if await probe():
            return
        await anyio.sleep(every)


async def test_a_dead_holders_claim_delays_but_does_not_block(store: Store, small: Game) -> None:
    """A peer holds the root's claim and dies once the engine waits for the root: the engine
    waits out the rest of the lease (0.3 s from the peer's last renewal), then computes the
    root itself."""
    ns = namespace_of(small)
    root = small.root()
    lease_s = 0.3
    # Held for as long as the engine may take to get there (a loaded machine): a claim that
    # lapsed early would let the engine take the root without ever waiting.
    assert await store.try_claim(ns, [root], "dead-worker", 60.0) == {root: Claim.CLAIMED}
    died_at = 0.0
    async with open_engine(small, store, lease_s=lease_s) as engine:

        async def holder_dies_while_the_engine_waits() -> None:
            nonlocal died_at
            await polling(lambda: waiting(engine))
            died_at = time.monotonic()
            await store.renew(ns, [root], "dead-worker", lease_s)  # its last renewal

        async with anyio.create_task_group() as tg:
            tg.start_soon(holder_dies_while_the_engine_waits)
            with anyio.fail_after(30):
                value = await engine.block(root)
    waited = time.monotonic() - died_at
    assert value.tobytes() == (await root_of(small)).tobytes()
    assert engine.counters.waited >= 1
    assert engine.counters.computed == small.block_count
    # Not before the lease lapsed (Redis keeps expiry times in whole milliseconds); and not
    # blocked: the engine looks again at the end of each wait of its own lease.
    assert waited >= lease_s - 0.001
    assert (await store.coverage(ns)).claims == 0


async def test_a_live_holders_commit_is_fetched_not_recomputed(store: Store, small: Game) -> None:
    """Another worker holding the root claim and committing it: the engine takes its block."""
    ns = namespace_of(small)
    root = small.root()
    helper = MemoryStore()
    good, _ = await solve(small, helper, root)
    good_bytes = (await helper.get_many(ns, [root]))[root]
    await store.try_claim(ns, [root], "other-worker", 30.0)
    async with open_engine(small, store) as engine:

        async def other_worker_commits() -> None:
            await polling(lambda: waiting(engine))
            await store.commit(ns, {root: good_bytes}, "other-worker")

        async with anyio.create_task_group() as tg:
            tg.start_soon(other_worker_commits)
            with anyio.fail_after(10):
                value = await engine.block(root)
    assert engine.counters.computed == small.block_count - 1
    assert engine.counters.waited >= 1
    assert value.tobytes() == good.tobytes()


async def test_a_released_claim_lets_the_engine_go_on_at_once(store: Store, small: Game) -> None:
    """A peer that gives up its claim (cancelled, failed) does not cost a whole lease."""
    ns = namespace_of(small)
    root = small.root()
    await store.try_claim(ns, [root], "peer", 30.0)
    released_at = 0.0
    async with open_engine(small, store) as engine:

        async def peer_gives_up() -> None:
            nonlocal released_at
            await polling(lambda: waiting(engine))
            await store.release(ns, [root], "peer")
            released_at = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(peer_gives_up)
            with anyio.fail_after(10):
                value = await engine.block(root)
    assert time.monotonic() - released_at < 2.0  # not the 30 s lease
    assert engine.counters.computed == small.block_count
    assert engine.counters.waited >= 1
    assert value.tobytes() == (await root_of(small)).tobytes()


class SlowRoot:
    """A game whose root takes ``seconds`` to solve, longer than the lease it is claimed for."""

    def __init__(self, game: Game, seconds: float) -> None:
        self.game = game
        self.seconds = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.game, name)

    def solve_many(self, keys: Sequence[str], successors: Any) -> Sequence[Block]:
        if self.game.root() in keys:
            time.sleep(self.seconds)  # runs in a worker thread, as every solve does
        return self.game.solve_many(keys, successors)


async def test_a_holder_renews_its_claim_while_a_block_outlasts_the_lease() -> None:
    """The root takes four leases to solve: its holder keeps the claim alive all along, so a
    second engine waits for the commit instead of computing the root a second time."""
    store = MemoryStore()
    slow = cast(Game, SlowRoot(LOWER, seconds=2.0))
    ns = namespace_of(LOWER)
    second: list[Counters] = []

    async def second_engine_asks_while_the_root_is_claimed() -> None:
        await polling(lambda: only_the_root_is_missing(store, LOWER))
        await polling(lambda: claims_held(store, ns, 1))
        value, counters = await solve(LOWER, store, LOWER.root(), lease_s=0.5)
        assert value[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
        second.append(counters)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(second_engine_asks_while_the_root_is_claimed)
            value, first = await solve(slow, store, LOWER.root(), lease_s=0.5)
    assert value[0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert first.computed == 128
    assert second[0].computed == 0
    assert second[0].waited >= 1
    assert (await store.coverage(ns)).claims == 0


async def test_a_solve_cancelled_while_claiming_gives_its_claims_back() -> None:
    """Cancelled between taking its claims and hearing back: nothing is left to lapse."""
    claimed = anyio.Event()

    class SlowReply(MemoryStore):
        async def try_claim(
            self, namespace: str, keys: Sequence[str], token: str, lease_s: float
        ) -> dict[str, Claim]:
            await super().try_claim(namespace, keys, token, lease_s)
            claimed.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    store = SlowReply()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                await solve(LOWER, store, LOWER.root(), lease_s=30.0)

            tg.start_soon(ask)
            await claimed.wait()
            assert (await store.coverage(namespace_of(LOWER))).claims > 0
            tg.cancel_scope.cancel()
    assert (await store.coverage(namespace_of(LOWER))).claims == 0


async def test_a_cancelled_asker_leaves_the_work_to_the_others() -> None:
    spy = Spy(MemoryStore())
    impatient = anyio.CancelScope()
    spy.on_commit = lambda blocks: impatient.cancel()
    results: list[Block] = []
    async with open_engine(LOWER, spy.store()) as engine:

        async def ask_impatiently() -> None:
            with impatient:
                await engine.block(LOWER.root())

        async def ask() -> None:
            await anyio.lowlevel.checkpoint()  # the impatient one owns the work first
            results.append(await engine.block(LOWER.root()))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask_impatiently)
                tg.start_soon(ask)
    assert impatient.cancelled_caught
    assert results[0][0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert engine.counters.computed == 128


async def test_a_store_failure_surfaces_instead_of_hanging() -> None:
    class FullDisk(MemoryStore):
        async def commit(self, namespace: str, blocks: Any, token: str | None) -> None:
            raise OSError("disk full")

    with anyio.fail_after(10), pytest.raises(OSError, match="disk full"):
        await solve(LOWER, FullDisk(), LOWER.root())


async def test_blocks_accepts_a_repeated_key() -> None:
    async with open_engine(LOWER, MemoryStore()) as engine:
        blocks = await engine.blocks([LOWER.root(), LOWER.root()])
    assert blocks[LOWER.root()][0, 0] == pytest.approx(LOWER_PIN, abs=1e-9)
    assert engine.counters.computed == 128


async def test_two_engines_on_two_handles_of_one_file(tmp_path: Path) -> None:
    """As two processes sharing the embedded store: one SQLiteStore object each."""
    path = tmp_path / "memo.sqlite"
    handles = [SQLiteStore(path), SQLiteStore(path)]
    results: list[tuple[Block, Counters]] = []

    async def run(handle: Store) -> None:
        results.append(await solve(LOWER, handle, LOWER.root()))

    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for handle in handles:
                    tg.start_soon(run, handle)
        assert (await handles[0].coverage(namespace_of(LOWER))).blocks == 128
    finally:
        for handle in handles:
            await handle.aclose()
    assert [value[0, 0] for value, _ in results] == pytest.approx([LOWER_PIN] * 2, abs=1e-9)
    assert sum(counters.computed for _, counters in results) == 128
