"""The lazy top-down solver: the memo hierarchy and the claim protocol in one place.

``await engine.block(key)`` answers from, in order: the process memo; work already in
flight in this process (shared, never started twice); the store (the global memo). Only
when all three miss does it solve the successors (concurrently, in random order so that
workers sharing a store spread out), queue the block for the pipeline, which claims, computes
(off the event loop) and commits the ready blocks a batch at a time. Every finished block
is committed as soon as its batch is, so an interrupted solve resumes where it stopped. A
claim is held only while its batch is computed; the engine renews all its claims every
third of a lease and releases them in a shielded scope when the work is cancelled or fails.

One module of about 830 lines, on purpose: the engine is one piece of state (the process
memo, the blocks in flight, the claims held, the queues and the counters) that all its
paths share: a top-down query, a layered solve (of a whole cone, or of the part of it
missing), the plan and cost a query tells first, the batch pipeline, the coalesced lookups
and the claim renewal. The rules that tie them (a block is solved at most once in a
process, whichever path asks for it; a claim is held only while its batch is computed, and
given back in a shielded scope) each hold across several paths, so they are read in one
place; cut by path, each module would reach into the others' state. What is not the
engine lives beside it: the process memo (:mod:`~memo_solver.core.cache`), the block bytes
(:mod:`~memo_solver.core.codec`), what it knows of a game and of a store
(:mod:`~memo_solver.core.game`, :mod:`~memo_solver.core.store`), and engines opened on
demand (:mod:`~memo_solver.core.engine_pool`).

A cold question whose cone is large (past :data:`LAYERED_CONE_VALUES` values that no store
may hold) is not solved top-down, which holds a task, an in-flight record and the successors
of every block of the cone at once (a new user's ``maxi-yatzy`` question: 8 GB): it is solved
a layer at a time like a whole precompute (:meth:`Engine.solve_layers`), from the layers the
game tells, so that every surface asking ``block`` gets the bounded path.

Asked to (``on_progress``), the engine also says what a query will cost before solving it:
the blocks below the queried ones that no store holds, counted once per engine (a layered
solve: the blocks of its cone, less those it then finds stored), so that a command can show
progress against a known total (``counters.needed``).

Nothing here knows which game it solves: see :class:`memo_solver.core.game.Game`.
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import anyio.to_thread
import numpy as np

from memo_solver.core.cache import BlockCache, memo_bytes
from memo_solver.core.codec import FORMAT_VERSION, decode_game_block, encode_game_block
from memo_solver.core.game import Block, Game
from memo_solver.core.store import Claim, Store, StoreUnavailableError

log = logging.getLogger(__name__)
DEFAULT_LEASE_S = 10.0
"""Long enough for a batch (512 Maxi Yatzy blocks take about 0.1 s), short enough that the
claims of a killed process hold others up for seconds, not minutes; renewed every third of
it."""
LAYER_CHUNK = 512
"""Blocks of a layer a whole solve claims, solves and commits at once: a few store round
trips' worth, and enough blocks for the kernel's batch call to cost nothing beside them."""
LAYERED_CONE_VALUES = 1 << 19
"""Values (turn starts times a block's width) past which a cold cone is solved a layer at a
time: 4 MiB, past 4,096 ``yahtzee`` blocks (the whole game is 8,192), or a need table's
cone past three boxes open; a smaller cone costs the layered path's listing and per-layer
claims for little, a larger one holds too much top-down."""
_THREAD_CALL_S = 0.05
"""About how long one call of the solver in a worker thread should last: a cancelled solve
(Ctrl-C) waits for the call under way, so a chunk is solved in calls this short."""
_COST_SAMPLE = 16
_COST_PROBE_S = 0.05
"""A large solve's cost is timed on up to :data:`_COST_SAMPLE` blocks of its widest layer,
one, then as many as this much CPU allows in one call (a call of one block costs more per
block than a solve's): a rate, not a guess, for a twentieth of a second."""
_STORED_SAMPLE = 32
"""Keys of a cone looked up to tell whether most of it is stored (see
:meth:`Engine._missing_part`): a share known to about a tenth, enough to tell a cone a
worker finds solved around it from a cold one."""
_MAX_BATCH = 256
_BATCH_S = 0.25
"""About how long one batch should compute: cheap blocks (a Yahtzee block, 0.6 ms) go 256
at a time, costly ones (a middle Dice of Doom block, tens of ms) a few at a time, so that a
batch's claims never keep other workers waiting for seconds on blocks they need next."""


@dataclass
class Counters:
    """What this engine did, for logs, progress and worker heartbeats."""

    computed: int = 0
    fetched: int = 0
    waited: int = 0
    needed: int = 0
    """Blocks that queries found missing below them (counted only with ``on_progress``)."""
    cost: Cost | None = None
    """What the latest large solve will take, told with its needed blocks (with
    ``on_progress``; see :meth:`Engine._cost`)."""


@dataclass(frozen=True)
class Cost:
    """What solving a large cone will take, said before it starts."""

    blocks: int
    cpu_s: float
    """CPU seconds at this machine's rate (the sample's CPU time per block)."""
    store_bytes: int
    """What its blocks will add to the store (the sample's encoded size per block)."""


@dataclass
class _InFlight:
    done: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _Job:
    """A block whose successors are known, queued for the claim-compute-commit pipeline."""

    key: str
    successors: dict[str, Block]
    done: anyio.Event = field(default_factory=anyio.Event)
    value: Block | None = None
    """Set when the block was solved or found; None when another worker holds its claim."""
    error: Exception | None = None
    """Set when its batch failed (the store went away): raised to whoever waits for it."""


@dataclass
class _Lookup:
    """Keys wanted from the store, coalesced with other lookups into one round trip."""

    keys: Sequence[str]
    asked: anyio.Event = field(default_factory=anyio.Event)
    error: Exception | None = None


class Engine:
    """Solves a game's blocks lazily on top of a store. Use :func:`open_engine`."""

    def __init__(
        self,
        game: Game,
        store: Store,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        compute_limiter: anyio.CapacityLimiter | None = None,
        cache_bytes: int | None = None,
        token: str | None = None,
        on_progress: Callable[[Counters], None] | None = None,
        threads: int = 1,
    ) -> None:
        self.game = game
        self.store = store
        self.lease_s = lease_s
        self.namespace = namespace(game)
        # host/pid/random: lets a store on this host see that a claim's holder has died.
        self.token = token or f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
        """Whose claims these are. Two live engines must never share one; an engine that
        replaces a dead one of this process may take over its token, and so its claims."""
        self.counters = Counters()
        self.threads = threads
        """Threads a batch of blocks is split over (the solver releases the GIL)."""
        self._limiter = compute_limiter or anyio.CapacityLimiter(threads)
        self.memo = BlockCache(memo_bytes() if cache_bytes is None else cache_bytes)
        self._in_flight: dict[str, _InFlight] = {}
        self._held: set[str] = set()
        # The two queues (blocks ready to solve, lookups to make) are a list each with a
        # wake-up event, not anyio memory object streams, for what their consumers do with
        # them: each takes its backlog as one batch (every waiting lookup in one store round
        # trip, as many ready blocks as a batch holds), which a list hands over in one slice
        # and a stream one ``receive_nowait`` at a time until ``WouldBlock`` (0.5 us a block
        # against 0.2: nothing beside a block's solve, so speed does not decide it). What a
        # stream adds goes unused: a bound (each sender waits on its item's own event, which
        # brings its answer back, so the backlog is at most the tasks waiting), an end (the
        # consumers are cancelled with the engine), several consumers (one each). And a
        # stream's two ends must be closed, or anyio warns (an error in the suite), also for
        # an engine built and never opened.
        self._ready: list[_Job] = []
        self._work = anyio.Event()
        self._lookups: list[_Lookup] = []
        self._lookup_work = anyio.Event()
        self._on_progress = on_progress
        self._block_s = 0.0
        """CPU seconds a block took in the last call of the solver (0: not timed yet)."""
        self._planned: set[str] = set()
        """Keys a plan has looked at, to be looked at by no other."""
        self._needed: set[str] = set()
        """Keys counted in ``counters.needed``: found missing by a plan, or computed while a
        concurrent plan was still looking (it then finds them stored)."""

    async def block(self, key: str, *, shuffle: random.Random | None = None) -> Block:
        """The block ``key``, computing whatever is missing below it: a layer at a time
        where its cone is large and cold (:meth:`_large_cold_cone`; ``shuffle`` as
        :meth:`solve_layers` takes it), else top-down."""
        if self.memo.get(key) is None:
            found = await self.stored([key])
            if key in found:
                return found[key]
            layers = await self._large_cold_cone(key)
            if layers:
                return await self._solve_layered(key, layers, shuffle=shuffle)
            if self._on_progress is not None:
                await self._plan([key])
        return await self._shared(key, fetch_first=True)

    async def _large_cold_cone(self, key: str) -> Sequence[Sequence[str]]:
        """The layers of ``key``'s cone (``key`` not stored) when that many of its values
        may be missing that solving them top-down would hold too much at once, else none.
        At most as many of its blocks are missing as the whole game lacks (the store's
        coverage, one count), so a question over a mostly solved game stays top-down, where
        it reads only what lies next to the missing blocks. The cone's values are the
        game's count (:meth:`Game.values_below`: each block at its own shape, where a
        Yahtzee block with saved rolls holds more banks as the game goes on)."""
        layers = await anyio.to_thread.run_sync(self.game.layers, key)
        values = self.game.values_below(key) if layers else 0
        if values <= LAYERED_CONE_VALUES:
            return []
        blocks = sum(len(layer) for layer in layers)
        missing = self.game.block_count - (await self.store.coverage(self.namespace)).blocks
        # The missing blocks weighed at the cone's mean block (its blocks' widths may differ).
        return layers if values * min(blocks, missing) > LAYERED_CONE_VALUES * blocks else []

    async def solve_layers(
        self, key: str, *, shuffle: random.Random | None = None, chunk: int = LAYER_CHUNK
    ) -> Block:
        """``key``'s block with everything below it, solved a layer at a time from the end of
        the game (:meth:`Game.layers`), ``chunk`` blocks at once; top-down where the game has
        no layers. What a whole solve uses: each chunk is claimed, solved by
        :meth:`Game.solve_many` in one thread and committed as a whole, so a million-block
        game costs no task, event or in-flight record per block. ``shuffle`` orders each
        layer at random, so that workers solving the same cone side by side mostly take
        different blocks (the claims keep them from computing any block twice); the store
        arranges a layer so that a chunk's keys are ones it keeps together
        (:meth:`Store.arrange`)."""
        layers = await anyio.to_thread.run_sync(self.game.layers, key)
        return await self._solve_layered(key, layers, shuffle=shuffle, chunk=chunk)

    async def _solve_layered(
        self,
        key: str,
        layers: Sequence[Sequence[str]],
        *,
        shuffle: random.Random | None = None,
        chunk: int = LAYER_CHUNK,
    ) -> Block:
        """:meth:`solve_layers` on the layers of ``key``'s cone, listed already. With
        ``on_progress``, the cone's blocks not in memory are needed at once, the plan a
        top-down query makes by walking its cone (which would hold the cone's keys);
        each chunk then takes back those it finds stored."""
        in_flight = anyio.CapacityLimiter(self.threads)
        layers = await self._missing_part(key, layers, shuffle)
        if self._on_progress is not None:
            cone = (k for layer in layers for k in layer)
            needed = sum(1 for k in cone if self.memo.get(k) is None)
            self.counters.cost = await self._cost(layers, needed)
            self.counters.needed += needed
            self._on_progress(self.counters)

        async def solve(keys: Sequence[str]) -> None:
            async with in_flight:
                await self._solve_chunk(keys)

        for layer in layers:
            if not layer:
                continue  # all stored (only a walk of a cone's missing part leaves one empty)
            order = await self.store.arrange(self.namespace, layer, shuffle)
            # With threads, as many chunks as threads at once, each one thread's (one call
            # of the solver): one's claims, lookups and commit run on the event loop while
            # the others' blocks are in the kernel. A chunk costs at most ``chunk`` of the
            # game's plainest blocks (:meth:`Game.block_cost`, read off the layer's first:
            # a layer's blocks cost alike) whatever the thread count (cut to 2 blocks a call,
            # 16 threads were slower than 4), and a layer is cut in a multiple of ``threads``
            # chunks of equal size, so that no thread idles at the layer's end while another
            # solves a full chunk (1,716 blocks were 512, 512, 512 and 180: two threads did
            # 1,024 blocks' work).
            most = max(1, round(chunk / self.game.block_cost(layer[0]))) if layer else chunk
            count = self.threads * max(1, -(-len(order) // (self.threads * most)))
            size = max(1, -(-len(order) // count))
            chunks = [order[start : start + size] for start in range(0, len(order), size)]
            async with task_group() as tg:
                for keys in chunks:
                    tg.start_soon(solve, keys)
        return await self._shared(key, fetch_first=True)

    async def _missing_part(
        self, key: str, layers: Sequence[Sequence[str]], shuffle: random.Random | None
    ) -> Sequence[Sequence[str]]:
        """The cone's layers cut to the blocks no store holds, where most of the cone is
        stored; else the layers as they are. A worker that takes a piece of a precompute
        after another (``maxi-yatzy``'s pieces are the blocks of one box filled, each half
        the game) finds most of its cone solved by the others around it: walked whole, each
        stored block was claimed again and, where its memo had dropped it, read and decoded
        again (2.16 million claims for 1.05 million blocks through two workers), and the
        chunks of the layers solved were thinned by the stored ones. The missing blocks are
        found the way a plan finds them (:meth:`_missing_below`: down from ``key`` through
        missing blocks only), reading the stored blocks next to them, which their solve
        needs. Finding them costs a lookup and a successor list per missing block (about
        20 us on ``maxi-yatzy``, measured by ``scripts/bench/bench_lean.py``) where the walk
        cost a claim per stored block (8 us) and a read of those its memo dropped (20 us):
        it pays once about half the cone is stored, which :data:`_STORED_SAMPLE` of its
        keys, drawn over its layers by their sizes, tell. A store holding less than half as
        many blocks as the cone has is not sampled (a cold solve asks the store for no block
        before its claims)."""
        blocks = sum(len(layer) for layer in layers)
        if not blocks or 2 * (await self.store.coverage(self.namespace)).blocks < blocks:
            return layers  # a game of no layers (solved top-down), or a cone mostly cold
        draw = shuffle or random.Random()
        sizes = [len(layer) for layer in layers]
        picked = draw.choices(range(len(layers)), weights=sizes, k=_STORED_SAMPLE)
        sample = list({layers[i][draw.randrange(sizes[i])] for i in picked})
        if 2 * len(await self.stored(sample)) < len(sample):
            return layers
        missing = set(await self._missing_below([key], set()))
        return [[k for k in layer if k in missing] for layer in layers]

    async def _solve_chunk(self, keys: Sequence[str]) -> None:
        """Solve the blocks of ``keys`` (one layer's) that no one has: their successors are
        below, in layers solved before. The claims tell which the store holds already (read,
        not solved), so a cold chunk makes one store round trip before its solve. Blocks
        another worker holds, or a query of this process is solving top-down, are then
        awaited the top-down way (and counted as that way counts them)."""
        later = [key for key in keys if key in self._in_flight]
        todo = [key for key in keys if key not in self._in_flight and self.memo.get(key) is None]
        solved: list[str] = []
        if todo:
            _, busy, solved = await self._claim_and_solve(todo)
            later += busy
        self.counters.computed += len(solved)
        if self._on_progress is not None:
            self.counters.needed -= len(todo) - len(solved)
            self._on_progress(self.counters)
        if later:
            await self._gather(later)

    async def _solve_from_memo(self, keys: Sequence[str]) -> dict[str, tuple[Block, bytes]]:
        """``keys`` solved with their successors read straight from the process memo by the
        worker threads: in a layered solve the layers below were just solved or read, so
        the event loop lists and gathers no successor (that was half its time per block,
        time the other thread's kernel waited on). Should one be missing (evicted from a
        bounded memo, or being solved top-down by a query), they are gathered the usual way
        and the blocks solved again."""
        try:
            return await self._solve_in_threads(keys, self.memo.view(), threads=1)
        except KeyError:
            wanted = self._successors_of(keys)
            successors = await self.stored(wanted)
            if len(successors) < len(wanted):
                successors.update(await self.blocks([s for s in wanted if s not in successors]))
            return await self._solve_in_threads(keys, successors, threads=1)

    async def cone_cost(self, key: str) -> Cost:
        """What solving ``key``'s whole cone cold would take on this machine (from the root,
        a whole game), measured as a large solve measures it before it starts: what a
        service tells a player before it offers to solve a game it has not solved."""
        layers = await anyio.to_thread.run_sync(self.game.layers, key)
        return await self._cost(layers, sum(len(layer) for layer in layers))

    async def _cost(self, layers: Sequence[Sequence[str]], blocks: int) -> Cost:
        """What solving ``blocks`` blocks of these layers will take: blocks of the widest
        layer, spread over it, are solved on made-up successors (zeros: a block costs the
        same whatever its successors hold) in a worker thread for about
        :data:`_COST_PROBE_S` of CPU, their CPU time and encoded sizes measured, after one
        untimed block (which loads the compiled solver: a second on a busy machine, and
        then no more, so the bar moves as soon as it is shown)."""
        widest = max(layers, key=len)
        sample = list(widest[:: max(1, len(widest) // _COST_SAMPLE)][:_COST_SAMPLE])
        successors = {
            s: np.zeros(self.game.block_shape(s))
            for key in sample
            for s in self.game.successors(key)
        }
        await anyio.to_thread.run_sync(self._timed_solve, sample[:1], successors)
        timed = sample[1:2] or sample
        cpu_s, size = await anyio.to_thread.run_sync(self._timed_solve, timed, successors)
        # Then as many as a twentieth of a second allows, in one call, as a solve calls it.
        rest = sample[2 : 2 + int(_COST_PROBE_S / max(cpu_s, 1e-6))]
        if len(rest) > 1:
            timed = rest
            cpu_s, size = await anyio.to_thread.run_sync(self._timed_solve, rest, successors)
        return Cost(blocks, blocks * cpu_s / len(timed), blocks * size // len(timed))

    def _timed_solve(
        self, keys: Sequence[str], successors: Mapping[str, Block]
    ) -> tuple[float, int]:
        """Runs in a worker thread: the CPU seconds this thread spent solving ``keys`` and
        their encoded bytes, nothing kept."""
        started = time.thread_time()
        solved = self._solve(keys, successors)
        return time.thread_time() - started, sum(len(data) for _, data in solved.values())

    async def blocks(self, keys: Sequence[str]) -> dict[str, Block]:
        """Several blocks at once: one store round trip for those already solved; each
        missing one whose cone is large and cold solved a layer at a time, as by
        :meth:`block`."""
        keys = list(dict.fromkeys(keys))
        found = await self.stored(keys)  # kept: a bounded memo may drop them at once
        for key in keys:
            if key not in found and self.memo.get(key) is None:
                layers = await self._large_cold_cone(key)
                if layers:
                    found[key] = await self._solve_layered(key, layers)
        rest = [key for key in keys if key not in found]
        if rest:
            if self._on_progress is not None:
                await self._plan(rest)
            found.update(await self._gather(rest))
        return {key: found[key] for key in keys}

    async def _plan(self, keys: Sequence[str]) -> None:
        """Count the blocks below ``keys`` that are neither stored nor counted before, and
        tell ``on_progress`` when there are any (:meth:`_missing_below`, skipping the keys
        any plan has looked at: a concurrent plan counts none twice)."""
        self._count_needed(await self._missing_below(keys, self._planned))

    async def _missing_below(self, keys: Sequence[str], seen: set[str]) -> list[str]:
        """The blocks at or below ``keys`` that no store holds, each once, skipping those in
        ``seen`` (which gains every key looked at, as it is looked at).

        A stored block's successors are stored too (a block is committed only once they
        are), so the walk goes down only from missing blocks: a warm query costs the one
        lookup it would make anyway, and what a cold one finds stored stays in the process
        memo for the solve that follows. Successors are listed in a worker thread: a whole
        3 x 3 Dice of Doom cone is 3.5 million keys, seconds of CPU. A step's keys are
        looked up about :data:`LAYERED_CONE_VALUES` values at a time (at least a chunk's
        worth of keys), so that the stored blocks found next to a large cone's missing ones
        (a ``maxi-yatzy-saved`` piece's: a hundred thousand blocks of tens of kB) are never
        held all at once; a question's plan, under that bound, makes one lookup a step.
        """
        frontier = [key for key in dict.fromkeys(keys) if key not in seen]
        missing = []
        while frontier:
            seen.update(frontier)  # now, so that a concurrent walk of ``seen`` skips them
            width = math.prod(self.game.block_shape(frontier[0]))
            step = max(LAYER_CHUNK, LAYERED_CONE_VALUES // width)
            absent = []
            for start in range(0, len(frontier), step):
                part = frontier[start : start + step]
                stored = await self.stored(part)
                absent += [key for key in part if key not in stored]
            if not absent:
                break
            missing += absent
            below = await anyio.to_thread.run_sync(self._successors_of, absent)
            frontier = [key for key in below if key not in seen]
        return missing

    def _count_needed(self, keys: Sequence[str]) -> None:
        """Count ``keys`` in ``counters.needed``, each once, and say so."""
        fresh = [key for key in keys if key not in self._needed]
        if fresh and self._on_progress is not None:
            self._needed.update(fresh)
            self.counters.needed += len(fresh)
            self._on_progress(self.counters)

    def _successors_of(self, keys: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(s for key in keys for s in self.game.successors(key)))

    async def stored(self, keys: Sequence[str]) -> dict[str, Block]:
        """The blocks among ``keys`` that are already solved (process memo or store),
        computing none: for answers that can fall back on something cheaper than a solve."""
        found = {k: v for k in keys if (v := self.memo.get(k)) is not None}
        missing = [k for k in keys if k not in found]
        if missing:
            found.update(await self._lookup(missing))
        return found

    async def _shared(self, key: str, *, fetch_first: bool) -> Block:
        while True:
            value = self.memo.get(key)
            if value is not None:
                return value
            flight = self._in_flight.get(key)
            if flight is None:
                return await self._fly(key, self._take_off(key), fetch_first=fetch_first)
            await flight.done.wait()  # the owner may have been cancelled: look again

    def _take_off(self, key: str) -> _InFlight:
        """Register this process as solving ``key`` (synchronously, so no one doubles it)."""
        flight = self._in_flight[key] = _InFlight()
        return flight

    async def _fly(self, key: str, flight: _InFlight, *, fetch_first: bool) -> Block:
        try:
            if fetch_first:
                found = await self._lookup([key])
                if key in found:
                    return found[key]
            return await self._compute(key)
        finally:
            del self._in_flight[key]
            flight.done.set()

    async def _lookup(self, keys: Sequence[str]) -> dict[str, Block]:
        """Fetch from the store, coalesced with concurrent lookups into one round trip."""
        lookup = _Lookup(keys)
        self._lookups.append(lookup)
        self._lookup_work.set()
        await lookup.asked.wait()
        if lookup.error is not None:
            raise lookup.error
        return {k: v for k in keys if (v := self.memo.get(k)) is not None}

    async def _lookup_forever(self) -> None:
        """Serve lookups until the engine closes: a failed fetch (the store gone) fails the
        lookups of that round, never this task, or every later lookup would wait forever."""
        while True:
            await self._lookup_work.wait()
            self._lookup_work = anyio.Event()
            batch, self._lookups = self._lookups, []
            try:
                await self._fetch(list({key for lookup in batch for key in lookup.keys}))
            except Exception as exc:
                for lookup in batch:
                    lookup.error = exc
            finally:
                for lookup in batch:
                    lookup.asked.set()

    async def _fetch(self, keys: Sequence[str]) -> dict[str, Block]:
        raw = await self.store.get_many(self.namespace, keys)
        found: dict[str, Block] = {}
        for key, data in raw.items():
            value = decode_game_block(self.game, key, data)
            if value is not None:
                found[key] = value
                self.memo.put(key, value)
        self.counters.fetched += len(found)
        return found

    async def _gather(self, keys: Sequence[str]) -> dict[str, Block]:
        result = await self.stored(keys)
        missing = [k for k in keys if k not in result]
        if missing:
            # Start an owner only for blocks nobody in this process is solving yet; the
            # others are awaited below, so each block costs one task, not one per parent.
            unowned = [k for k in missing if k not in result and k not in self._in_flight]
            random.shuffle(unowned)
            flights = {k: self._take_off(k) for k in unowned}
            others = [k for k in missing if k not in result and k not in flights]

            async def own(key: str) -> None:
                result[key] = await self._fly(key, flights[key], fetch_first=False)

            if len(unowned) > 1:
                async with task_group() as tg:
                    for key in unowned[1:]:
                        tg.start_soon(own, key)
                    await own(unowned[0])
                    for key in others:
                        result[key] = await self._shared(key, fetch_first=False)
            else:
                # One owner or none: no task group needed (the common case deep down).
                for key in unowned:
                    await own(key)
                for key in others:
                    result[key] = await self._shared(key, fetch_first=False)
        return result

    async def _compute(self, key: str) -> Block:
        successors = await self._gather(self.game.successors(key))
        while True:
            job = _Job(key, successors)
            self._ready.append(job)
            self._work.set()
            await job.done.wait()
            if job.error is not None:
                raise job.error
            if job.value is not None:
                return job.value
            # Another worker holds the claim: wait for its commit, or for its lease to lapse.
            self.counters.waited += 1
            log.info("block %s is claimed by another worker; waiting for it", key)
            await self.store.wait(self.namespace, key, self.lease_s)
            found = await self._fetch([key])
            if key in found:
                return found[key]

    async def _pipeline_forever(self) -> None:
        """Claim, compute and commit the blocks that are ready, a batch at a time.

        A thread hop or a store round trip costs more than solving a small block, and in a
        cold solve hundreds of blocks become ready together: batching them makes the cost
        per block that of the numpy pass alone.
        """
        size = _MAX_BATCH
        while True:
            await self._work.wait()
            self._work = anyio.Event()
            batch, self._ready = self._ready[:size], self._ready[size:]
            if self._ready:
                self._work.set()
            started = time.perf_counter()
            try:
                await self._run_batch(batch)
                per_block = (time.perf_counter() - started) / len(batch)
                size = max(1, min(_MAX_BATCH, int(_BATCH_S / max(per_block, 1e-6))))
            except Exception as exc:  # the batch's failure (the store gone), not the engine's
                for job in batch:
                    job.error = exc
            finally:
                for job in batch:
                    job.done.set()

    async def _run_batch(self, batch: list[_Job]) -> None:
        successors: dict[str, Block] = {}
        for job in batch:
            successors.update(job.successors)
        values, _, solved = await self._claim_and_solve([job.key for job in batch], successors)
        for job in batch:
            job.value = values.get(job.key)
        if self._on_progress is not None and solved:
            self._count_needed(solved)
            self.counters.computed += len(solved)
            self._on_progress(self.counters)
        else:
            self.counters.computed += len(solved)

    async def _claim_and_solve(
        self, keys: Sequence[str], successors: Mapping[str, Block] | None = None
    ) -> tuple[dict[str, Block], list[str], list[str]]:
        """Claim ``keys``, solve and commit those claimed, read those already stored: their
        values, the keys another worker holds (to be waited for) and those solved here
        (for the caller to count as its progress counts them). Without
        ``successors`` the solver reads them from the process memo
        (:meth:`_solve_from_memo`)."""
        try:
            claims = await self.store.try_claim(self.namespace, keys, self.token, self.lease_s)
        except anyio.get_cancelled_exc_class():
            # The claims may have been taken with the reply still on its way: give back any
            # that are ours (release compares the token) rather than let them lapse.
            with anyio.CancelScope(shield=True):
                await self.store.release(self.namespace, keys, self.token)
            raise
        claimed = [key for key in keys if claims[key] is Claim.CLAIMED]
        self._held.update(claimed)
        committed = False
        try:
            stored = [key for key in keys if claims[key] is Claim.DONE]
            found = await self._fetch(stored) if stored else {}
            # A stored block that failed to verify is recomputed and overwritten, claim or not.
            todo = [key for key in keys if claims[key] is not Claim.BUSY and key not in found]
            if successors is None:
                solved = await self._solve_from_memo(todo)
            else:
                solved = await self._solve_in_threads(todo, successors)
            if solved:
                await self.store.commit(
                    self.namespace, {key: data for key, (_, data) in solved.items()}, self.token
                )
            committed = True
        finally:
            self._held.difference_update(claimed)
            if not committed and claimed:
                with anyio.CancelScope(shield=True):
                    await self.store.release(self.namespace, claimed, self.token)
        values = dict(found)
        for key, (value, _) in solved.items():
            self.memo.put(key, value)
            values[key] = value
        busy = [key for key in keys if claims[key] is Claim.BUSY]
        log.debug(
            "batch of %d: %d computed, %d found stored, %d held by other workers",
            len(keys),
            len(solved),
            len(found),
            len(busy),
        )
        return values, busy, list(solved)

    async def _solve_in_threads(
        self, keys: Sequence[str], successors: Mapping[str, Block], threads: int | None = None
    ) -> dict[str, tuple[Block, bytes]]:
        """``keys`` solved off the event loop, split over ``threads`` threads (default: the
        engine's; the game's solver releases the GIL), each share in calls of
        :meth:`Game.solve_many` of about :data:`_THREAD_CALL_S` (the first of one block, to
        time it): a cancelled solve stops after the call under way. A layered solve's chunk
        is one thread's share already (``threads=1``)."""
        solved: dict[str, tuple[Block, bytes]] = {}
        if not keys:
            return solved
        size = -(-len(keys) // (threads or self.threads))

        async def run(part: Sequence[str]) -> None:
            start = 0
            while start < len(part):
                count = max(1, int(_THREAD_CALL_S / self._block_s)) if self._block_s else 1
                piece = part[start : start + count]
                solved.update(
                    await anyio.to_thread.run_sync(
                        self._solve, piece, successors, limiter=self._limiter
                    )
                )
                start += len(piece)

        parts = [keys[start : start + size] for start in range(0, len(keys), size)]
        async with task_group() as tg:
            for part in parts[1:]:
                tg.start_soon(run, part)
            await run(parts[0])
        return solved

    def _solve(
        self, keys: Sequence[str], successors: Mapping[str, Block]
    ) -> dict[str, tuple[Block, bytes]]:
        """Runs in a worker thread: the game's solver and encoding, no I/O; timed in this
        thread's CPU (a wait for the compute limiter or for a core is no block's cost)."""
        started = time.thread_time()
        solved = {}
        for key, value in zip(keys, self.game.solve_many(keys, successors), strict=True):
            value.setflags(write=False)
            data = encode_game_block(self.game, key, value)
            solved[key] = (value, data)
        self._block_s = (time.thread_time() - started) / max(1, len(keys))
        return solved

    async def _renew_forever(self) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            if self._held:
                try:
                    await self.store.renew(
                        self.namespace, list(self._held), self.token, self.lease_s
                    )
                except StoreUnavailableError as exc:  # the batch's own calls fail and say so
                    log.warning("could not renew claims: %s", exc)


def expect_game(store: Store, game: Game) -> None:
    """Tell the store how much the game's namespace may hold: every block at its own shape,
    8 bytes a value (an upper bound: blocks pack what no state reaches)."""
    store.expect(namespace(game), game.values_below(game.root()) * 8)


def namespace(game: Game) -> str:
    """The store namespace of a game's blocks: format version and rules fingerprint."""
    return namespace_of(game.fingerprint)


def namespace_of(fingerprint: str) -> str:
    """The namespace of the game with this fingerprint (known before the game is built)."""
    return f"{FORMAT_VERSION}:{fingerprint}"


def fingerprint_in(name: str) -> str:
    """The fingerprint a namespace is named by (:func:`namespace_of` read back)."""
    return name.partition(":")[2]


def of_this_format(name: str) -> bool:
    """Whether a namespace holds blocks of this format version: another's are unreadable."""
    return name.partition(":")[0] == str(FORMAT_VERSION)


@asynccontextmanager
async def open_engine(
    game: Game,
    store: Store,
    *,
    lease_s: float = DEFAULT_LEASE_S,
    compute_limiter: anyio.CapacityLimiter | None = None,
    cache_bytes: int | None = None,
    token: str | None = None,
    on_progress: Callable[[Counters], None] | None = None,
    definition: bytes | None = None,
    threads: int = 1,
) -> AsyncIterator[Engine]:
    """An engine whose claim renewal runs for as long as the context is open.

    ``on_progress(counters)`` is told, on the event loop, when a query has found blocks to
    compute, before it computes any (``needed`` grew; see :meth:`Engine._plan`), and when a
    batch of them is computed: what a command needs to show its progress.

    ``definition``, for a game outside the registry (a rule-set file), is kept in the store
    beside the game's blocks before any is solved: what lets a worker solve it by its
    fingerprint alone, and ``prune`` tell it from debris.

    ``threads``: how many threads a batch of blocks is split over (one per process by
    default: workers scale by process).

    ``cache_bytes``: the bound of the engine's memo; none given, the process's
    (:func:`memo_solver.core.cache.memo_bytes`)."""
    if definition is not None:
        await store.put_definition(namespace(game), definition)
    expect_game(store, game)
    engine = Engine(
        game,
        store,
        lease_s=lease_s,
        compute_limiter=compute_limiter,
        cache_bytes=cache_bytes,
        token=token,
        on_progress=on_progress,
        threads=threads,
    )
    async with task_group() as tg:
        tg.start_soon(engine._renew_forever)
        tg.start_soon(engine._pipeline_forever)
        tg.start_soon(engine._lookup_forever)
        try:
            yield engine
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def task_group() -> AsyncIterator[anyio.abc.TaskGroup]:
    """A task group whose failure is raised as the first non-cancellation error in it (see
    :func:`first_failure`), as callers expect it."""
    try:
        async with anyio.create_task_group() as tg:
            yield tg
    except BaseExceptionGroup as group:
        raise first_failure(group) from None


def first_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The failure to report from a task group: the first one that is not a cancellation.

    Concurrent parts of one solve fail for one reason (a store gone, the caller's own
    error), so callers' ``except`` clauses should see that error as itself, not wrapped
    in as many groups as the recursion was deep.
    """
    cancelled = anyio.get_cancelled_exc_class()
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        elif not isinstance(exc, cancelled):
            return exc
    return group
