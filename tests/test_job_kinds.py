"""What the jobs a precompute spreads over the workers cost beside the solve itself: a piece
an idle worker takes is solved as a question is, never walked again once others have
solved it, and the precompute's progress report costs a bounded share of its time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Self

import anyio
import pytest

from memo_solver.core import engine as engine_module
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.store import Claim, Coverage, Store
from memo_solver.games.entry import GameEntry, JobRun
from memo_solver.games.registry import get_game
from memo_solver.jobs import kinds
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.redis import RedisStore

RULES = "yahtzee-lower"
"""128 blocks: a whole solve in a fraction of a second."""


class CountingStore(MemoryStore):
    """A memory store that remembers every key a claim asked for, and how long each
    coverage count took (made to take ``coverage_s``, as a store of many groups does)."""

    def __init__(self, coverage_s: float = 0.0) -> None:
        super().__init__()
        self.claimed: list[str] = []
        self.coverage_s = coverage_s
        self.counts: list[tuple[float, float]] = []
        """(start, end) of each coverage count, on the monotonic clock."""
        self.counted = anyio.Event()
        """Set at each count, then replaced."""

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        self.claimed += keys
        return await super().try_claim(namespace, keys, token, lease_s)

    async def coverage(self, namespace: str) -> Coverage:
        started = time.monotonic()
        await anyio.sleep(self.coverage_s)
        found = await super().coverage(namespace)
        self.counts.append((started, time.monotonic()))
        self.counted.set()
        self.counted = anyio.Event()
        return found


def job_run(entry: GameEntry, engine: object, state: str) -> JobRun:
    async def record(**fields: str | int | float) -> None:
        pass

    async def queue(kind: str, state: str) -> None:
        pass

    return JobRun(entry, engine, state, anyio.CapacityLimiter(1), record, queue)  # type: ignore[arg-type]


class CountingRedis(RedisStore):
    """A store on a real redis-server that remembers every key a claim asked for."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.claimed: list[str] = []

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        return self

    async def try_claim(
        self, namespace: str, keys: Sequence[str], token: str, lease_s: float
    ) -> dict[str, Claim]:
        self.claimed += keys
        return await super().try_claim(namespace, keys, token, lease_s)


async def solved_store(entry: GameEntry, leave_out: Sequence[str] = ()) -> CountingStore:
    """A counting memory store holding every block of the game but ``leave_out``."""
    store = CountingStore()
    await fill(store, entry, leave_out)
    return store


async def fill(store: Store, entry: GameEntry, leave_out: Sequence[str]) -> None:
    """Put every block of the game but ``leave_out`` in ``store`` (``leave_out`` must be
    closed upwards: a block's parents left out with it, as a store that lost them)."""
    game = entry.game
    solved = MemoryStore()
    async with open_engine(game, solved) as engine:
        await engine.solve_layers(game.root())
    ns = namespace(game)
    keys = [key for layer in game.layers(game.root()) for key in layer]
    blocks = await solved.get_many(ns, [key for key in keys if key not in leave_out])
    await store.commit(ns, blocks, None)


async def test_a_piece_of_a_precompute_solved_already_is_read_with_no_claim() -> None:
    entry = get_game(RULES)
    game = entry.game
    piece = game.successors(game.root())[0]
    store = await solved_store(entry)
    async with open_engine(game, store) as engine:  # a worker's engine: an empty memo
        await kinds.kind_named("block").run(job_run(entry, engine, piece))
        assert store.claimed == []
        assert engine.counters.computed == 0
        assert engine.memo.get(piece) is not None


async def test_a_piece_taken_with_few_blocks_left_claims_only_those() -> None:
    entry = get_game(RULES)
    game = entry.game
    piece = game.successors(game.root())[0]
    store = await solved_store(entry, leave_out=[game.root(), piece])
    async with open_engine(game, store) as engine:
        await kinds.kind_named("block").run(job_run(entry, engine, piece))
        assert store.claimed == [piece]
        assert engine.counters.computed == 1


async def test_a_piece_taken_with_most_of_its_cone_stored_claims_only_the_missing_blocks(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece whose cone is large (the threshold lowered under its 64 blocks of one value
    each), taken once the others have solved every block but those of at most two boxes
    filled: walked whole, its cone's 64 keys were claimed, 57 of them stored already (and
    read); now only the 7 missing (the piece and its six successors) are claimed, each
    once, and solved."""
    monkeypatch.setattr(engine_module, "LAYERED_CONE_VALUES", 4)
    entry = get_game(RULES)
    game = entry.game
    piece = game.successors(game.root())[0]
    upper = [key for layer in game.layers(game.root())[-3:] for key in layer]
    assert len(upper) == 1 + 7 + 21  # no box, one box, two boxes filled
    missing = [piece, *(key for key in game.successors(piece))]
    async with CountingRedis(redis_url) as store:
        await fill(store, entry, upper)
        async with open_engine(game, store) as engine:  # a worker's engine: an empty memo
            await kinds.kind_named("block").run(job_run(entry, engine, piece))
            assert sorted(store.claimed) == sorted(missing)
            assert engine.counters.computed == 7
            assert (await store.coverage(namespace(game))).blocks == 128 - 29 + 7


@pytest.mark.slow
async def test_a_precompute_reports_its_progress_in_at_most_a_fiftieth_of_its_time() -> None:
    entry = get_game(RULES)
    # A count of 20 ms, as a store of a few hundred groups takes: reported every half
    # second, counting would be 4 % of the time; the report waits 49 times its own time
    # (the count's time plus the record's, so at least 49 times the count's) after each.
    store = CountingStore(coverage_s=0.02)
    async with open_engine(entry.game, store) as engine:
        run = job_run(entry, engine, "")
        async with anyio.create_task_group() as tg:
            tg.start_soon(kinds._report, run)
            with anyio.fail_after(60):
                while len(store.counts) < 3:
                    await store.counted.wait()
            tg.cancel_scope.cancel()
    for (start, end), (later, _) in zip(store.counts, store.counts[1:], strict=False):
        assert later - end >= 49 * (end - start)
