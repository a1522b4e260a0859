"""The service the routes share: the store, one engine per game, and the background task
group where cold work runs past a request's deadline.

It knows games only by their entries (:mod:`memo_solver.games.entry`): the routes, which
know their family, hand it a game's entry, or the cone of a question a family weighed.

A cold state is computed by the service itself (cooperating with the workers through the
block claims); the computation runs in the service's own task group, so when a request's
deadline passes it answers 503 with ``Retry-After`` while the work goes on and lands in
the memo, and the retry is warm.

Work whose result no memo keeps (a score distribution, a Dice of Doom solve) is shared
through the store as well (:meth:`Service.run_shared`): with several server processes
(``serve --workers``) the retry after a 503 may reach another process, which must find the
work the first one started rather than start it again.

One module of about 550 lines, on purpose: the engines, the cold budget, the shared work and
the background solves live and die with one lifespan (its task group and exit stack) and
guard one set of maps; cut apart, each part would hand the others the same state.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

import anyio
from fastapi import Request
from redis.exceptions import RedisError

from memo_solver.core.engine import Cost, Engine, namespace, open_engine
from memo_solver.core.engine_pool import EnginePool
from memo_solver.core.store import Claim, Store, StoreUnavailableError
from memo_solver.games.entry import Cone, GameEntry
from memo_solver.games.registry import registry
from memo_solver.jobs.queue import Job, JobError, JobQueue
from memo_solver.service import metrics
from memo_solver.service.errors import ApiError
from memo_solver.service.rulebook import RuleBook
from memo_solver.service.settings import LOOPBACK, ApiSettings

log = logging.getLogger(__name__)
T = TypeVar("T")

SHARED_KEPT = 32
"""Finished distributions kept for their retries and repeats (each is a few KiB)."""
SHARED_PENDING = 8
"""Distributions queued or computing at once: a whole game is tens of CPU seconds each."""
SHARED_NAMESPACE = "api1:shared"
"""Where shared work is claimed and its results kept, apart from every game's blocks (and
so removed by ``prune``, which is how an operator empties it)."""
SHARED_LEASE_S = 10.0
"""A computing process renews its claim every third of this; one that dies leaves the work
to the next retry after this long."""
USED_WRITE_S = 60.0
"""How often the names asked about are written to the store (:meth:`RuleBook.write_used`):
what a server that stops loses of them, against hourly stamps."""


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a shared result is kept in the store, as bytes."""

    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]


def store_key(key: Hashable) -> str:
    """The store's key for a question (its ``repr``: tuples of plain values, the same in
    every process)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Budget:
    """What a cold question of one value type may cost here, and the words of its refusal
    (the routes', which know the value types: the service weighs any game's cone)."""

    limit: int
    unit: str
    name: str
    """The budget's name in the refusal: which setting to raise."""
    remedy: str
    """What to precompute instead."""
    field: str
    solves_whole: bool = False
    """Whether a background solve of the whole game answers it, where no worker takes it
    (the mean's; a need table's only the workers take)."""


@dataclass(frozen=True)
class SolveOffer:
    """A whole-game solve this service may run in the background for the asking client
    (:meth:`Service.solve_in_background`): what it costs, and how far the store has it."""

    rules: str
    fingerprint: str
    turn_starts: int
    """The whole game's: what the background solve takes (a question's answer comes when
    the solve reaches its own, smaller cone)."""
    blocks_total: int
    blocks_done: int
    cpu_s: float
    """About the CPU seconds of the whole solve on one core of this machine (a sample of
    its blocks timed: :meth:`Engine.cone_cost`), which the player weighs before starting it."""
    store_bytes: int
    """About what the whole game's blocks take in the store (the sample's encoded size)."""


@dataclass(eq=False)
class _Work:
    """Work started in the service's task group: its outcome, once done."""

    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: list[Any] = field(default_factory=list)


class Service:
    """What the routes share: the store, one engine per game, and the background group."""

    def __init__(self, store: Store, queue: JobQueue | None, settings: ApiSettings) -> None:
        self.store = store
        self.queue = queue
        """The store's job queue (on Redis; None on SQLite or in memory)."""
        self.settings = settings
        self.engines: dict[str, Engine] = {}
        """The registry's games' engines, by name."""
        self.pool: EnginePool | None = None
        """Engines of the other games (rule sets registered, inline, by fingerprint, and value
        tables such as need tables)."""
        self.rulebook = RuleBook(store)
        self.task_group: anyio.abc.TaskGroup | None = None
        self.stats_limiter = anyio.CapacityLimiter(1)
        """One distribution computed at a time: a whole game keeps a core busy for tens of
        seconds (``yahtzee`` about 35 CPU s, the 15-box ``yatzy`` about 100)."""
        self._shared: OrderedDict[Hashable, _Work] = OrderedDict()
        self._solves: dict[str, GameEntry] = {}
        self._costs: dict[str, Cost] = {}
        """What a whole solve of each game offered takes (:meth:`solve_offer`), by fingerprint."""
        """The whole-game solves running in this process's task group, by fingerprint (one
        per game: a second asker joins the first)."""
        self.token = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
        """This process's claims on shared work (the store's host/pid/random form)."""

    def _registry_engine(self, entry: GameEntry) -> Engine | None:
        game = entry.game
        fingerprint = game.fingerprint
        engine = self.engines.get(game.name)
        if engine is not None and engine.game.fingerprint == fingerprint:
            return engine
        for engine in self.engines.values():  # a copy of a built-in shares its blocks
            if engine.game.fingerprint == fingerprint:
                return engine
        return None

    def peek(self, entry: GameEntry) -> Engine | None:
        """The open engine of a game, if there is one now (the warm fast path)."""
        engine = self._registry_engine(entry)
        if engine is None and self.pool is not None:
            engine = self.pool.peek(entry.game.fingerprint)
        return engine

    @asynccontextmanager
    async def engine(self, entry: GameEntry) -> AsyncIterator[Engine]:
        """The game's engine (any value table's), opened now if it is not the registry's,
        one per game from the pool, kept open while in use."""
        engine = self._registry_engine(entry)
        if engine is not None:
            yield engine
            return
        assert self.pool is not None, "the app's lifespan is not running"
        async with self.pool.use(entry.game, entry.definition) as engine:
            yield engine

    async def run_on(
        self,
        entry: GameEntry,
        work: Callable[[Engine], Awaitable[T]],
        warm: Callable[[], Job] | None = None,
    ) -> T:
        """:meth:`run` of ``work`` on the game's engine."""

        async def on_engine() -> T:
            async with self.engine(entry) as engine:
                return await work(engine)

        return await self.run(on_engine, warm)

    async def check_budget(
        self, cone: Cone, budget: Budget, warm: Callable[[], Job], client: str | None
    ) -> None:
        """Refuse a cold question whose cone is past the budget: the workers take it (503)
        when any are alive and ``client`` (its address) may start such a solve, else 422 or
        429 naming the budget or the setting. Warm (in a memo or the store): fine."""
        if cone.size <= budget.limit:
            return
        engine = self.peek(cone.entry)
        keys = cone.keys
        if engine is not None and engine.memo.holds(keys):
            return
        if len(await self.store.get_many(namespace(cone.entry.game), keys)) == len(keys):
            return
        if self.queue is not None and await self.queue.live_worker_count():
            self.may_solve(client, cone.turn_starts, cone.game)
            await self.rulebook.keep_definition(cone.entry)  # what the workers solve it from
            await self._hand_large_to_workers(warm)
            metrics.DEADLINES.inc()
            raise ApiError(
                503,
                budget.field,
                f"a cold question of {cone.size:,} {budget.unit} (past this service's "
                f"{budget.name} of {budget.limit:,}) went to the workers; retry later",
            )
        if not budget.solves_whole:
            raise ApiError(
                422,
                budget.field,
                f"this cold question needs up to {cone.size:,} {budget.unit} solved, past "
                f"this service's {budget.name} of {budget.limit:,}; precompute "
                f"{budget.remedy}, start workers on a Redis store, or ask about a later "
                "position",
            )
        await self._refuse_until_solved(cone, budget, client)

    async def _refuse_until_solved(self, cone: Cone, budget: Budget, client: str | None) -> None:
        """A cold question past the budget with no worker to take it, in a player's words:
        503 while this process solves its game in the background (the question is answered
        once the solve has stored its cone: :meth:`check_budget` finds it there), else a 422
        saying the game is not solved yet, with the offer of a background solve where
        ``client`` may start one (:meth:`solve_in_background`)."""
        offer = await self.solve_offer(cone)
        if offer.fingerprint in self._solves:
            metrics.DEADLINES.inc()
            raise ApiError(
                503,
                budget.field,
                f"this server is solving {cone.game} in the background ({offer.blocks_done:,} "
                f"of {offer.blocks_total:,} blocks so far); this position is answered when "
                "the solve reaches it: retry later",
            )
        self.may_solve(client, offer.turn_starts, cone.game)
        raise ApiError(
            422,
            budget.field,
            f"this server has not solved {cone.game} yet: this answer needs up to "
            f"{cone.size:,} turn starts solved (the whole game, solved in the background, is "
            f"{offer.turn_starts:,} in {offer.blocks_total:,} blocks), past its budget of "
            f"{budget.limit:,} for a cold question; start that solve with POST /v1/solve, or "
            "ask about a later position",
            extra={"solve": asdict(offer)},
        )

    async def solve_offer(self, cone: Cone) -> SolveOffer:
        """What a whole-game solve of the game ``cone`` reads takes, and how much of it the
        store holds."""
        game = cone.entry.game
        covered = await self.store.coverage(namespace(game))
        cost = self._costs.get(game.fingerprint)
        if cost is None:  # timed once a game (about a tenth of a second of a worker thread)
            async with self.engine(cone.entry) as engine:
                cost = self._costs[game.fingerprint] = await engine.cone_cost(game.root())
        return SolveOffer(
            cone.game, game.fingerprint, cone.whole, game.block_count, covered.blocks,
            round(cost.cpu_s, 1), cost.store_bytes,
        )  # fmt: skip

    def solving(self, fingerprint: str) -> bool:
        """Whether this process solves that game in the background now."""
        return fingerprint in self._solves

    async def solve_in_background(
        self, cone: Cone, client: str | None, warm: Callable[[], Job]
    ) -> SolveOffer:
        """Start the whole game ``cone`` reads solving (``warm``: its start's job), if the
        store lacks blocks of it and ``client`` may start such a solve: the workers take it
        when any are alive, as they take a cold question past the budget; else this
        process's task group solves it a layer at a time (:meth:`Engine.solve_layers`,
        which takes back what the store holds: a solve stopped by a restart goes on from
        the store's coverage). One per game in this process, joined by a second asker; the
        solves of several processes share the blocks through the store's claims. Counted
        against ``--whole-game-queue`` (429 past it)."""
        offer = await self.solve_offer(cone)
        if offer.blocks_done >= offer.blocks_total:
            return offer
        self.may_solve(client, offer.turn_starts, cone.game)
        entry = cone.entry
        await self.rulebook.keep_definition(entry)  # its progress is read by fingerprint
        if self.queue is not None and await self.queue.live_worker_count():
            await self._hand_large_to_workers(warm)
            return offer
        # Looked at after the last await: two requests at once cannot both start one.
        if offer.fingerprint in self._solves:
            return offer
        if len(self._solves) >= self.settings.whole_game_queue:
            raise self._solves_capped()
        assert self.task_group is not None, "the app's lifespan is not running"
        self._solves[offer.fingerprint] = entry
        self.task_group.start_soon(self._solve_whole, entry)
        return offer

    async def _solve_whole(self, entry: GameEntry) -> None:
        """Runs in the service's task group and is cancelled with it when the service stops:
        what it committed stays in the store, for the next solve to take back."""
        try:
            async with self.engine(entry) as engine:
                log.info("solving %s in the background", entry.name)
                await engine.solve_layers(engine.game.root())
                log.info("solved %s in the background", entry.name)
        except Exception as exc:  # the next question past the budget may start it again
            log.warning("the background solve of %s stopped: %s", entry.name, exc)
        finally:
            del self._solves[entry.game.fingerprint]

    def may_solve(self, client: str | None, turn_starts: int, name: str) -> None:
        """Whether a request from ``client`` (its address) may start a solve of
        ``turn_starts`` past the cold budget, work as large as the operator's precompute:
        the one rule for every value type and wherever the solve runs (the workers, or this
        process in the background); a 422 in a player's words, naming the setting that
        refuses it. How many run at once is capped where they are queued or started
        (:meth:`_hand_large_to_workers`, :meth:`solve_in_background`)."""
        settings = self.settings
        allowed = settings.whole_game_solves == "anyone" or (
            settings.whole_game_solves == "loopback" and client in LOOPBACK
        )
        if not allowed:
            who = {"off": "only its operator", "loopback": "only someone at the server itself"}
            raise ApiError(
                422,
                "state",
                f"this server has not solved {name} yet, and {who[settings.whole_game_solves]} "
                f"can start that solve (--whole-game-solves {settings.whole_game_solves}); "
                "ask about a later position, or ask the operator to precompute it "
                "('memo-solver precompute')",
            )
        if turn_starts > settings.whole_game_max:
            raise ApiError(
                422,
                "state",
                f"this cold question needs a solve of {turn_starts:,} turn starts, past this "
                f"service's --whole-game-max of {settings.whole_game_max:,}; ask the operator "
                "to precompute the rule set ('memo-solver precompute'), or ask about a later "
                "position",
            )

    async def _hand_large_to_workers(self, warm: Callable[[], Job]) -> None:
        """Queue a solve past the cold budget for the workers, unless the cap on such solves
        queued or running is reached: then 429 naming it."""
        assert self.queue is not None
        cap = self.settings.whole_game_queue
        try:
            queued = await self.queue.enqueue_large(warm(), cap)
        except (RedisError, OSError, JobError) as exc:  # best effort, as _hand_to_workers
            log.info("a cold state was not handed to the workers: %s", exc)
            return
        if queued is None:
            raise self._solves_capped()

    def _solves_capped(self) -> ApiError:
        cap = self.settings.whole_game_queue
        return ApiError(
            429,
            "state",
            f"{cap} solves past this service's budget are queued or running already "
            f"(--whole-game-queue {cap}); retry once one is done",
        )

    async def run(
        self, work: Callable[[], Awaitable[T]], warm: Callable[[], Job] | None = None
    ) -> T:
        """Run ``work`` in the service's task group; wait at most the deadline for it.

        ``warm`` is the job that leaves the same answer in the memo: past the deadline it
        goes to the workers as well (see :meth:`_hand_to_workers`).
        """
        return await self._wait(self._start(work), warm)  # type: ignore[no-any-return]

    async def run_shared(
        self, key: Hashable, work: Callable[[], Awaitable[T]], codec: Codec[T]
    ) -> T:
        """As :meth:`run`, for work whose result no memo keeps (a score distribution).

        Identical requests share one computation, and the last results are kept: the retry
        after a 503 finds the work its first request started instead of starting it over,
        in this process or in another one on the same store (:meth:`_through_store`).
        A failure is not kept. With too many computations queued, a new one is refused
        with a 503 rather than piling whole-game passes on whole-game passes.
        """
        running = self._shared.get(key)
        if running is None:
            pending = sum(not w.done.is_set() for w in self._shared.values())
            if pending >= SHARED_PENDING:
                metrics.DEADLINES.inc()
                raise ApiError(503, "state", "too many computations are queued; retry shortly")
            running = self._shared[key] = self._start(
                lambda: self._through_store(store_key(key), work, codec), forget=key
            )
            finished = [k for k, w in self._shared.items() if w.done.is_set()]
            for old in finished[: max(0, len(finished) - SHARED_KEPT)]:
                del self._shared[old]
        else:
            self._shared.move_to_end(key)
        return await self._wait(running)  # type: ignore[no-any-return]

    async def _through_store(
        self, name: str, work: Callable[[], Awaitable[T]], codec: Codec[T]
    ) -> T:
        """The result kept in the store, or the one another process is computing (waited
        for), or, when no one is, ``work`` done here under a claim.

        The result is kept in the store when the work outlived a request's deadline: then
        a 503 invited retries, which may reach any process. Quicker work is cheaper to do
        again than to keep (every Dice of Doom position anyone asked would stay in the
        store otherwise): its claim is released, and a request waiting on it in another
        process computes it itself.
        """
        store = self.store
        while True:
            kept = await store.get_many(SHARED_NAMESPACE, [name])
            if name in kept:
                return codec.decode(kept[name])
            claim = await store.try_claim(SHARED_NAMESPACE, [name], self.token, SHARED_LEASE_S)
            if claim[name] is Claim.CLAIMED:
                break
            if claim[name] is Claim.BUSY:  # computing in another process: wait for it
                await store.wait(SHARED_NAMESPACE, name, SHARED_LEASE_S)
        metrics.COMPUTATIONS.inc()
        started = time.monotonic()
        assert self.task_group is not None, "the app's lifespan is not running"
        done = anyio.Event()
        self.task_group.start_soon(self._renew, name, done)
        try:
            result = await work()
        except BaseException:
            with anyio.CancelScope(shield=True), suppress(StoreUnavailableError):
                await store.release(SHARED_NAMESPACE, [name], self.token)  # else it lapses
            raise
        finally:
            done.set()
        try:
            if time.monotonic() - started >= self.settings.deadline_s:
                await store.commit(SHARED_NAMESPACE, {name: codec.encode(result)}, self.token)
            else:
                await store.release(SHARED_NAMESPACE, [name], self.token)
        except StoreUnavailableError as exc:  # the answer stands; only the sharing is lost
            log.warning("a shared result was not kept in the store: %s", exc)
        return result

    async def _renew(self, name: str, done: anyio.Event) -> None:
        """Renew this process's claim on shared work until it is ``done``."""
        while True:
            with anyio.move_on_after(SHARED_LEASE_S / 3):
                await done.wait()
            if done.is_set():
                return
            try:
                await self.store.renew(SHARED_NAMESPACE, [name], self.token, SHARED_LEASE_S)
            except StoreUnavailableError as exc:  # a courtesy: at worst, computed twice
                log.info("a shared computation's claim was not renewed: %s", exc)

    async def _hand_to_workers(self, warm: Callable[[], Job]) -> None:
        """Queue a cold state's warm job when a worker is alive (Redis only), so that the
        workers solve it beside this service and the retry finds it solved.

        Jobs are content-addressed: repeated cold requests for one state queue it once
        while it waits. A done record is queued again: the state is cold, so its blocks
        are gone. Best effort: the request's answer is the 503 whatever happens here.
        """
        if self.queue is None:
            return
        try:
            if await self.queue.live_worker_count():
                await self.queue.enqueue(warm(), again_if_done=True)
        except (RedisError, OSError, JobError) as exc:
            log.info("a cold state was not handed to the workers: %s", exc)

    def _start(self, work: Callable[[], Awaitable[Any]], forget: Hashable = None) -> _Work:
        assert self.task_group is not None, "the app's lifespan is not running"
        started = _Work()

        async def background() -> None:
            try:
                started.outcome.append(await work())
            except Exception as exc:  # handed to the requests that asked, if still waiting
                started.outcome.append(exc)
                if forget is not None and self._shared.get(forget) is started:
                    del self._shared[forget]
            finally:
                started.done.set()

        self.task_group.start_soon(background)
        return started

    async def _wait(self, work: _Work, warm: Callable[[], Job] | None = None) -> Any:
        with anyio.move_on_after(self.settings.deadline_s):
            await work.done.wait()
        if not work.done.is_set():
            metrics.DEADLINES.inc()
            if warm is not None:
                await self._hand_to_workers(warm)
            raise ApiError(
                503, "state", "still computing this state; retry shortly (the work goes on)"
            )
        if not work.outcome:  # cancelled: the service is shutting down
            raise ApiError(503, "state", "the service is shutting down; retry shortly")
        result = work.outcome[0]
        if isinstance(result, Exception):
            raise result
        return result


@asynccontextmanager
async def open_service(
    open_store: Callable[[], tuple[Store, JobQueue | None]], settings: ApiSettings
) -> AsyncIterator[Service]:
    """The service on the store and job queue ``open_store`` makes (the queue None without
    one: :func:`memo_solver.jobs.storage.open_store_and_queue`): an engine for every
    registered game, sharing one compute limiter, and the background group, cancelled when
    it closes."""
    async with AsyncExitStack() as stack:
        store, queue = open_store()
        await stack.enter_async_context(store)
        service = Service(store, queue, settings)
        limiter = anyio.CapacityLimiter(1)
        for name, entry in registry().items():
            service.engines[name] = await stack.enter_async_context(
                open_engine(
                    entry.game,
                    store,
                    compute_limiter=limiter,
                    cache_bytes=settings.cache_bytes,
                )
            )
        service.task_group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(service.task_group.cancel_scope.cancel)
        service.task_group.start_soon(_write_used, service.rulebook)
        service.pool = EnginePool(
            store,
            limiter,
            service.task_group,
            capacity=settings.rule_engines,
            cache_bytes=settings.cache_bytes,
        )
        metrics.watch_engines(service.engines)
        yield service


async def _write_used(rulebook: RuleBook) -> None:
    while True:
        await anyio.sleep(USED_WRITE_S)
        await rulebook.write_used()


def service_of(request: Request) -> Service:
    """The running service of the app that received ``request``."""
    service: Service = request.app.state.service
    return service
