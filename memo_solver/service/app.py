"""The HTTP advice service: any state answered over JSON from the shared memo.

Every answer comes from the same engines the CLI uses, one per rule set, kept for the life
of the process with an in-memory block cache in front of the store. A cold state is
computed by the service itself (cooperating with the workers through the block claims);
the computation runs in the service's own task group, so when a request's deadline passes
it answers 503 with ``Retry-After`` while the work goes on and lands in the memo, and the
retry is warm. Errors are 4xx JSON naming the field, in the CLI's words; nothing a client
sends produces a 500.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memo_solver.core.engine import Engine, namespace, open_engine
from memo_solver.core.store import Store, StoreFullError, StoreUnavailableError
from memo_solver.games.dice_of_doom.board import DoomError
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import UnknownGameError, get_game, registry
from memo_solver.games.yahtzee.advice import advise, blocks_needed
from memo_solver.games.yahtzee.distribution import Distribution
from memo_solver.games.yahtzee.review import GameError, read_game, review_game
from memo_solver.games.yahtzee.rules import RULE_SETS, RuleSet, UnknownRuleSetError, get_rule_set
from memo_solver.games.yahtzee.state import (
    State,
    StateError,
    parse_state,
    state_from_json,
    state_to_json,
)
from memo_solver.games.yahtzee.stats import distribution_in_thread, stats_json
from memo_solver.jobs.queue import Job, JobError, JobQueue
from memo_solver.service import dice_of_doom as doom_api
from memo_solver.service import metrics
from memo_solver.service.fast import (
    advice_body,
    batch_advice,
    batch_body,
    batch_error,
    install_fast_post,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

ADMIN_TOKEN_ENV = "MEMO_SOLVER_ADMIN_TOKEN"
WEB_DIR = Path(__file__).parent / "web"
MAX_BATCH = 1000
MAX_THRESHOLDS = 100
SHARED_KEPT = 32
"""Finished distributions kept for their retries and repeats (each is a few KiB)."""
SHARED_PENDING = 8
"""Distributions queued or computing at once: a whole game is tens of CPU seconds each."""


@dataclass(frozen=True)
class ApiSettings:
    deadline_s: float = 10.0
    """How long a request waits for a cold computation before 503 + Retry-After."""
    cache_bytes: int = 256 << 20
    """In-process block cache per rule set (the whole ``yahtzee`` game is 8 MiB)."""
    max_body_bytes: int = 1 << 20
    retry_after_s: int = 2
    doom_limit: int = 1_000_000
    """Positions one Dice of Doom request may solve (about 0.3 GB): every 2 x 2 and 3 x 3
    board fits; a larger board past it gets a 422 naming the limit."""


class ApiError(Exception):
    """A client error: status, the field at fault and a message in the CLI's words."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


# --- request and response models ---------------------------------------------------------

StateInput = JsonValue
"""Any JSON: the validator says what is wrong with a state in the CLI's words, at ``state``
(pydantic would name a union member, ``state.dict[str,any]``), and a batch gives a bad
state its own error entry whatever its type."""

_STATE_EXAMPLE: dict[str, JsonValue] = {
    "filled": [
        "twos",
        "threes",
        "fours",
        "fives",
        "sixes",
        "three_of_a_kind",
        "four_of_a_kind",
        "full_house",
        "small_straight",
        "large_straight",
        "chance",
    ],
    "upper": 62,
    "yahtzee_bonus": False,
    "rerolls_left": 2,
    "dice": [1, 2, 2, 2, 6],
}


class StateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"rules": "yahtzee", "state": _STATE_EXAMPLE}]},
    )
    rules: str = Field("yahtzee", description="a built-in rule set (GET /v1/rules)")
    state: StateInput = Field(
        description="JSON state {filled, upper, yahtzee_bonus, rerolls_left, dice}, or the "
        "short text form, or the reference Haskell line"
    )


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: str = "yahtzee"
    states: list[StateInput] = Field(max_length=MAX_BATCH)


class StatsRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"rules": "yahtzee-upper", "state": "start", "thresholds": [60, 80]}]
        },
    )
    rules: str = Field("yahtzee", description="a built-in rule set (GET /v1/rules)")
    state: StateInput = Field(
        "start", description="as for /v1/advice; the points counted are those still to come"
    )
    thresholds: list[int] = Field(
        default_factory=list,
        max_length=MAX_THRESHOLDS,
        description="also answer P(points >= t) for each t",
    )
    full: bool = Field(False, description="include the probability of every total")


class ReviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: str | None = Field(
        None, description="a built-in rule set; default: the game's own rules, else yahtzee"
    )
    game: dict[str, Any] = Field(
        description='{"rules"?, "turns": [{"rolls": [[5 faces], ...], "keeps": [[faces '
        'kept after each roll but the last], ...], "box": name}, ...]}'
    )


class PrecomputeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: str = "yahtzee"


class ActionOut(BaseModel):
    kind: Literal["keep", "score"]
    value: float
    loss: float
    words: str
    keep: list[int] | None = None
    category: str | None = None
    points: int | None = None
    bonus: int | None = None


class AdviceOut(BaseModel):
    game_over: bool
    value: float
    turn_start_value: float
    actions: list[ActionOut]


class ErrorDetail(BaseModel):
    field: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


class BatchItemOut(BaseModel):
    advice: AdviceOut | None = None
    error: ErrorDetail | None = None


class BatchOut(BaseModel):
    results: list[BatchItemOut]


class ValueOut(BaseModel):
    rules: str
    value: float
    turn_start_value: float


class StateOut(BaseModel):
    filled: list[str]
    upper: int
    yahtzee_bonus: bool
    rerolls_left: int | None
    dice: list[int] | None


class StatsOut(BaseModel):
    rules: str
    state: StateOut
    from_start: bool = Field(
        description="true: the points are the final score; false: the points still to come"
    )
    mean: float
    std: float
    percentiles: dict[str, int]
    p_upper_bonus: float
    p_yahtzee: float = Field(description="the chance of scoring 50 in the Yahtzee box")
    p_extra_bonus: float = Field(description="the chance of at least one +100 bonus")
    p_any_yahtzee: float = Field(
        description="the chance that a turn ends with five of a kind, whichever box takes it"
    )
    box_points: dict[str, float]
    bonus_points: dict[str, float]
    survival: dict[str, float]
    probabilities: list[float] | None = Field(
        None, description="P(points == s) for s = 0, 1, ...; only with full: true"
    )


class DecisionOut(BaseModel):
    turn: int
    step: str = Field(description="keep N (the keep after roll N) or box")
    state: str
    dice: list[int]
    rerolls_left: int
    chosen: ActionOut
    best: ActionOut
    loss: float


class ScoredOut(BaseModel):
    turn: int
    box: str
    points: int
    bonus: int


class MistakeOut(BaseModel):
    turn: int
    step: str
    loss: float
    words: str


class ReviewOut(BaseModel):
    rules: str
    turns_played: int
    complete: bool
    decisions: list[DecisionOut]
    boxes: list[ScoredOut]
    final_score: int | float
    banked: int
    remaining_value: float
    expected_score: float
    total_loss: float
    skill: float
    luck: float
    worst_mistakes: list[MistakeOut]


class RuleSetOut(BaseModel):
    name: str
    description: str
    boxes: list[str]
    upper_boxes: list[str]
    yahtzee_box: str | None
    rerolls: int
    upper_threshold: int
    upper_bonus: int
    yahtzee_bonus: int
    joker: Literal["forced", "free", "none"]
    start_value: float
    fingerprint: str
    possible_points: dict[str, list[int]] = Field(
        description="per box, every score a game can put in it, ascending (what some roll "
        "scores there, the Joker's fixed points included): what a scorecard entered by hand "
        "is checked against"
    )


class CoverageOut(BaseModel):
    rules: str
    blocks_total: int
    blocks_done: int
    claims_held: int
    workers_alive: int


class ReadyOut(BaseModel):
    status: Literal["ready"]
    store: str = Field(description="where the store lives (a path, or a URL without password)")
    write: Literal["accepted", "busy"] = Field(
        description="accepted: a probe write went through; busy: another process holds the "
        "SQLite store's write lock (a precompute committing), so writes wait their turn"
    )


class JobOut(BaseModel):
    job: str
    status: str
    queued: bool | None = None
    record: dict[str, str] | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 403, 404, 409, 413, 422, 503, 507)
}
"""Every error is this JSON; 503 and 507 (the store is full) come with Retry-After."""


# --- the service --------------------------------------------------------------------------


@dataclass(eq=False)
class _Work:
    """Work started in the service's task group: its outcome, once done."""

    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: list[Any] = field(default_factory=list)


class Service:
    """What the routes share: the store, one engine per rule set, and the background group."""

    def __init__(self, store: Store, queue: JobQueue | None, settings: ApiSettings) -> None:
        self.store = store
        self.queue = queue
        """The store's job queue (on Redis; None on SQLite or in memory)."""
        self.settings = settings
        self.engines: dict[str, Engine] = {}
        self.task_group: anyio.abc.TaskGroup | None = None
        self.stats_limiter = anyio.CapacityLimiter(1)
        """One distribution computed at a time: a whole game keeps a core busy for tens of
        seconds (``yahtzee`` about 35 CPU s, the 15-box ``yatzy`` about 100)."""
        self._shared: OrderedDict[Hashable, _Work] = OrderedDict()

    def engine(self, rules: RuleSet) -> Engine:
        return self.engines[rules.name]

    async def run(
        self, work: Callable[[], Awaitable[T]], warm: Callable[[], Job] | None = None
    ) -> T:
        """Run ``work`` in the service's task group; wait at most the deadline for it.

        ``warm`` is the job that leaves the same answer in the memo: past the deadline it
        goes to the workers as well (see :meth:`_hand_to_workers`).
        """
        return await self._wait(self._start(work), warm)  # type: ignore[no-any-return]

    async def run_shared(self, key: Hashable, work: Callable[[], Awaitable[T]]) -> T:
        """As :meth:`run`, for work whose result no memo keeps (a score distribution).

        Identical requests share one computation, and the last results are kept: the retry
        after a 503 finds the work its first request started instead of starting it over.
        A failure is not kept. With too many computations queued, a new one is refused
        with a 503 rather than piling whole-game passes on whole-game passes.
        """
        running = self._shared.get(key)
        if running is None:
            pending = sum(not w.done.is_set() for w in self._shared.values())
            if pending >= SHARED_PENDING:
                metrics.DEADLINES.inc()
                raise ApiError(503, "state", "too many computations are queued; retry shortly")
            running = self._shared[key] = self._start(work, forget=key)
            finished = [k for k, w in self._shared.items() if w.done.is_set()]
            for old in finished[: max(0, len(finished) - SHARED_KEPT)]:
                del self._shared[old]
        else:
            self._shared.move_to_end(key)
        return await self._wait(running)  # type: ignore[no-any-return]

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


_ADVICE_KEYS = frozenset(StateRequest.model_fields)


def _rules(name: str) -> RuleSet:
    try:
        return get_rule_set(name)
    except UnknownRuleSetError as exc:
        raise ApiError(422, "rules", str(exc)) from None


def _game(name: str) -> GameEntry:
    try:
        return get_game(name)
    except UnknownGameError as exc:
        raise ApiError(422, "rules", str(exc)) from None


def _state(raw: StateInput, rules: RuleSet) -> State:
    return parse_state(raw, rules) if isinstance(raw, str) else state_from_json(raw, rules)


class _JSONResponse(JSONResponse):
    """JSON as ASCII: a lone surrogate a client sent (JSON allows ``"\\ud800"``) and an
    error echoes back is escaped, where UTF-8 encoding would fail with a 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode()


def create_app(
    open_store: Callable[[], tuple[Store, JobQueue | None]], settings: ApiSettings | None = None
) -> FastAPI:
    """The ASGI app. ``open_store`` makes the store and its job queue (None without one)
    when the lifespan starts: :func:`memo_solver.jobs.storage.open_store_and_queue`."""
    settings = settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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
            metrics.watch_engines(service.engines)
            app.state.service = service
            log.info("serving advice from %s", store.description)
            yield

    app = FastAPI(
        title="memo-solver",
        version="0.1.0",
        summary="Optimal strategy for Yahtzee-family dice games and Dice of Doom: advice for "
        "any state.",
        lifespan=lifespan,
        responses=ERRORS,
        default_response_class=_JSONResponse,
    )
    app.add_middleware(_BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(_Observe)  # outermost: counts every answer, 413s included
    _install_error_handlers(app, settings)

    def service_of(request: Request) -> Service:
        service: Service = request.app.state.service
        return service

    @app.get("/v1/rules", response_model=list[RuleSetOut])
    async def rules_list() -> list[RuleSetOut]:
        """The built-in rule sets with their boxes and pinned start values."""
        return [
            RuleSetOut(
                name=r.name,
                description=r.description,
                boxes=[c.name for c in r.categories],
                upper_boxes=[c.name for c in r.categories if c.upper_face],
                yahtzee_box=None if r.yahtzee_box is None else r.categories[r.yahtzee_box].name,
                rerolls=r.rerolls,
                upper_threshold=r.upper_threshold,
                upper_bonus=r.upper_bonus,
                yahtzee_bonus=r.yahtzee_bonus,
                joker=r.joker,
                start_value=r.start_value,
                fingerprint=r.fingerprint,
                possible_points={
                    c.name: list(points)
                    for c, points in zip(r.categories, r.possible_points, strict=True)
                },
            )
            for r in RULE_SETS.values()
        ]

    @app.post("/v1/advice", response_model=AdviceOut, response_model_exclude_none=True)
    async def advice(body: StateRequest, request: Request) -> dict[str, Any]:
        """Every legal action, best first, with its expected final score and its loss."""
        rules = _rules(body.rules)
        state = _state(body.state, rules)
        service = service_of(request)
        result = await service.run(
            lambda: advise(service.engine(rules), rules, state), _warm(rules, state)
        )
        return result.to_json()

    async def advice_fast(scope: Scope, body: Any) -> bytes | None:
        """``advice`` for a well-formed request, the same bytes without FastAPI's parsing
        and response model (see :mod:`memo_solver.service.fast`); None: ``advice`` answers."""
        if type(body) is not dict or "state" not in body or not body.keys() <= _ADVICE_KEYS:
            return None
        name = body.get("rules", "yahtzee")
        if type(name) is not str:
            return None
        try:
            rules = get_rule_set(name)
            state = _state(body["state"], rules)
        except Exception:  # a bad state (even one too deep to echo): answered as before
            return None
        service: Service = scope["app"].state.service
        engine = service.engine(rules)
        if engine.memo.holds(blocks_needed(rules, state)):  # warm: no wait, no deadline
            return advice_body(await advise(engine, rules, state))
        answer = await service.run(lambda: advise(engine, rules, state), _warm(rules, state))
        return advice_body(answer)

    install_fast_post(app, "/v1/advice", advice_fast)

    @app.post("/v1/advice/batch", response_model=BatchOut, response_model_exclude_none=True)
    async def advice_batch(body: BatchRequest, request: Request) -> Response:
        """Up to 1,000 states answered in order; a bad state gets its own error entry."""
        rules = _rules(body.rules)
        service = service_of(request)
        engine = service.engine(rules)
        parsed: list[State | ErrorDetail] = []
        for raw in body.states:
            try:
                parsed.append(_state(raw, rules))
            except StateError as exc:
                parsed.append(ErrorDetail(field=exc.field, message=exc.message))

        async def answer_all() -> bytes:
            results: list[bytes] = []
            for item in parsed:
                if isinstance(item, ErrorDetail):
                    results.append(batch_error(item.field, item.message))
                else:
                    results.append(batch_advice(await advise(engine, rules, item)))
            return batch_body(results)

        # BatchOut's bytes, written directly (see api_fast): no model check of 20,000 actions
        return Response(await service.run(answer_all), media_type="application/json")

    @app.post("/v1/value", response_model=ValueOut)
    async def value(body: StateRequest, request: Request) -> ValueOut:
        """The expected future score of a state under optimal play."""
        rules = _rules(body.rules)
        state = _state(body.state, rules)
        service = service_of(request)
        result = await service.run(
            lambda: advise(service.engine(rules), rules, state), _warm(rules, state)
        )
        return ValueOut(
            rules=rules.name, value=result.value, turn_start_value=result.turn_start_value
        )

    @app.post("/v1/stats", response_model=StatsOut, response_model_exclude_unset=True)
    async def stats(body: StatsRequest, request: Request) -> dict[str, Any]:
        """The exact distribution of the points to come under optimal play.

        From the start that is the final score; from a state, the points still to come.
        A whole game takes tens of CPU seconds the first time (``yahtzee`` about 35): 503
        with Retry-After until it is done.
        """
        rules = _rules(body.rules)
        state = _state(body.state, rules)
        service = service_of(request)
        engine = service.engine(rules)

        def work() -> Awaitable[Distribution]:
            return distribution_in_thread(engine, rules, state, service.stats_limiter)

        dist = await service.run_shared(("stats", rules.name, state), work)
        return stats_json(dist, rules, state, tuple(body.thresholds), full=body.full)

    @app.post("/v1/review", response_model=ReviewOut, response_model_exclude_unset=True)
    async def review(body: ReviewRequest, request: Request) -> dict[str, Any]:
        """Every decision of a played game against the optimal one, and the score split
        into expected score, skill and luck. A game that breaks the rules: 422, field game.
        """
        named = body.game.get("rules")
        if body.rules is not None:
            rules = _rules(body.rules)
        elif isinstance(named, str):
            try:
                rules = get_rule_set(named)
            except UnknownRuleSetError as exc:
                raise ApiError(422, "game", f"rules: {exc}") from None
        else:
            rules = _rules("yahtzee")
        read_game(body.game, rules)  # a bad game is refused before any work starts
        service = service_of(request)
        result = await service.run(lambda: review_game(service.engine(rules), rules, body.game))
        return result.to_json()

    @app.get("/v1/rules/{name}/coverage", response_model=CoverageOut)
    async def coverage(name: str, request: Request) -> CoverageOut:
        """Blocks solved of total, claims held, and workers alive: for a rule set or any
        other game the service knows (``dice-of-doom-3x3``)."""
        entry = _game(name)
        service = service_of(request)
        game = entry.game
        covered = await service.store.coverage(namespace(game))
        queue = service.queue
        return CoverageOut(
            rules=entry.name,
            blocks_total=game.block_count,
            blocks_done=covered.blocks,
            claims_held=covered.claims,
            workers_alive=0 if queue is None else await queue.live_worker_count(),
        )

    @app.post(
        "/v1/jobs/precompute",
        response_model=JobOut,
        status_code=202,
        response_model_exclude_none=True,
    )
    async def precompute(body: PrecomputeRequest, request: Request) -> JobOut:
        """Queue the background precompute of a rule set or another game such as
        ``dice-of-doom-3x3`` (operator token required)."""
        _authorize(request)
        entry = _game(body.rules)
        queue = _queue(service_of(request))
        job_id, queued = await queue.enqueue_precompute(entry)
        record = await queue.record(job_id) or {}
        return JobOut(job=job_id, status=record.get("status", "queued"), queued=queued)

    @app.get("/v1/jobs/{job_id}", response_model=JobOut, response_model_exclude_none=True)
    async def job(job_id: str, request: Request) -> JobOut:
        """A background job's record (operator token required)."""
        _authorize(request)
        record = await _queue(service_of(request)).record(job_id)
        if record is None:
            raise ApiError(404, "job_id", f"no job {job_id!r}")
        return JobOut(job=job_id, status=record.get("status", "?"), record=record)

    app.include_router(doom_api.router(service_of, settings.doom_limit))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """The players' page: a static front end that calls this API."""
        return FileResponse(WEB_DIR / "index.html")

    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", response_model=ReadyOut)
    async def readyz(request: Request) -> Response | ReadyOut:
        """The store accepts a write (a probe key claimed and released): 503 naming the
        fault when it does not (unreachable, full, read-only). Within 50 ms: an SQLite
        store whose write lock another process holds is ready, with ``write: busy``."""
        store = service_of(request).store
        try:
            write = await store.probe()
        except StoreUnavailableError as exc:  # not ready, whatever the fault: 503, even full
            return _error(503, "store", str(exc), {"Retry-After": str(settings.retry_after_s)})
        return ReadyOut(status="ready", store=store.description, write=write.value)

    @app.get("/metrics", include_in_schema=False)
    async def metrics_endpoint() -> Response:
        body, content_type = metrics.render()
        return Response(content=body, media_type=content_type)

    return app


def _warm(rules: RuleSet, state: State) -> Callable[[], Job]:
    """The warm job that leaves a state's advice in the memo, made only when needed."""
    return lambda: Job.warm(rules.name, json.dumps(state_to_json(state, rules)))


def _queue(service: Service) -> JobQueue:
    if service.queue is None:
        raise ApiError(
            409, "store", "background jobs need the shared Redis store (serve with --redis URL)"
        )
    return service.queue


def _authorize(request: Request) -> None:
    expected = os.environ.get(ADMIN_TOKEN_ENV)
    if not expected:
        raise ApiError(
            403, "authorization", f"operator endpoints are disabled: set ${ADMIN_TOKEN_ENV}"
        )
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, "authorization", "send 'Authorization: Bearer <operator token>'")
    if not hmac.compare_digest(token.encode(), expected.encode()):
        raise ApiError(403, "authorization", "wrong operator token")


def _error(
    status: int, field: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return _JSONResponse(
        {"error": {"field": field, "message": message}}, status_code=status, headers=headers
    )


def _install_error_handlers(app: FastAPI, settings: ApiSettings) -> None:
    retry = {"Retry-After": str(settings.retry_after_s)}

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.field, exc.message, retry if exc.status == 503 else None)

    @app.exception_handler(StateError)
    async def state_error(request: Request, exc: StateError) -> JSONResponse:
        return _error(422, exc.field, exc.message)

    @app.exception_handler(DoomError)
    async def doom_error(request: Request, exc: DoomError) -> JSONResponse:
        return _error(422, exc.field, exc.message)

    @app.exception_handler(GameError)
    async def game_error(request: Request, exc: GameError) -> JSONResponse:
        return _error(422, "game", exc.message)

    @app.exception_handler(StoreUnavailableError)
    async def store_down(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        return _error(507 if isinstance(exc, StoreFullError) else 503, "store", str(exc), retry)

    @app.exception_handler(RedisError)
    async def redis_down(request: Request, exc: RedisError) -> JSONResponse:
        """The job endpoints talk to Redis directly: its faults are store faults too."""
        from memo_solver.stores.redis import store_error

        store: Store = request.app.state.service.store
        return await store_down(request, store_error(exc, store.description))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        if first.get("type") == "json_invalid":
            reason = first.get("ctx", {}).get("error") or first.get("msg", "")
            return _error(400, "body", f"malformed JSON: {reason}")
        location = [str(p) for p in first.get("loc", ()) if p != "body"]
        return _error(422, ".".join(location) or "body", str(first.get("msg", "invalid request")))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        field = "path" if exc.status_code in (404, 405) else "request"
        return _error(exc.status_code, field, str(exc.detail))


class _Observe:
    """Requests and latency per route, as plain ASGI. (``@app.middleware("http")`` runs each
    request in a task group of its own: about 0.27 ms of CPU and some 40 objects in
    reference cycles per request, which the cyclic GC then has to find.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting_status)
        finally:
            path = getattr(scope.get("route"), "path", "unmatched")
            metrics.REQUESTS.labels(path, str(status)).inc()
            metrics.LATENCY.labels(path).observe(time.perf_counter() - started)


class _BodyLimit:
    """413 for bodies over the limit, whether announced by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        too_big = f"request body over {self.max_bytes} bytes"
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _error(413, "body", too_big)(scope, receive, send)
            return
        # Read the body here, so a streamed one over the limit is refused before the app sees
        # it (an error raised while FastAPI reads the body would become its 400).
        chunks: list[bytes] = []
        seen = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await _error(413, "body", too_big)(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


def openapi_document(app: FastAPI) -> str:
    """The OpenAPI document as committed in ``openapi.json`` (sorted, indented)."""
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
