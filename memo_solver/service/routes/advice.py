"""``POST /v1/advice``, ``/v1/advice/batch`` and ``/v1/value``: the best actions for any
state, and its expected score, from the shared memo (computed first when cold); with a
``need``, also the best chance of scoring at least that many more points, from the need
table of the rule set and the request's ``need_cap`` (its own engine and budget); with a
``risk``, also the certainty equivalent at that risk, from the rule set's risk table (its
own engine, weighed like the mean's).

Warm ``POST /v1/advice`` is answered by :func:`advice_warm`, before the app's layers (its
front door), and any other well-formed one by :func:`advice_fast` (the route's fast path);
both are installed by ``create_app``. :func:`advice` answers whatever they leave, with
FastAPI's parsing and response model. All give the same bytes: see
:mod:`memo_solver.service.fast`. A request with a need (or a need cap) or a risk is
always :func:`advice`'s.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import Request, Response
from starlette.types import Scope

from memo_solver.core.engine import Engine
from memo_solver.core.errors import UserError
from memo_solver.games.entry import Cone, GameEntry
from memo_solver.games.yahtzee import (
    DEFAULT_CAP,
    Advice,
    NeedAdvice,
    RiskAdvice,
    RuleSet,
    State,
    StateError,
    advise,
    advise_held,
    advise_need,
    advise_risk,
    check_theta,
    entry_for,
    mean_cone,
    need_entry,
    need_question,
    risk_cone,
    risk_entry_of,
    state_to_json,
)
from memo_solver.jobs.queue import Job
from memo_solver.service.errors import AsciiJSONResponse
from memo_solver.service.fast import (
    AdviceOut,
    BatchOut,
    ErrorDetail,
    NeedAdviceOut,
    RiskAdviceOut,
    SolveOut,
    advice_body,
    batch_advice,
    batch_body,
    batch_error,
    batch_need,
)
from memo_solver.service.inputs import client_of, rules_of, state_of
from memo_solver.service.models import BatchRequest, SolveRequest, StateRequest, ValueOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import Budget, Service, service_of
from memo_solver.service.settings import ApiSettings

routes = Routes()
T = TypeVar("T")

_ADVICE_KEYS = frozenset(StateRequest.model_fields) - {"need", "need_cap", "risk"}
"""What the fast paths answer: a request with a need or a risk is :func:`advice`'s."""


@routes.post(
    "/v1/advice",
    response_model=AdviceOut | NeedAdviceOut | RiskAdviceOut,
    response_model_exclude_none=True,
)
async def advice(body: StateRequest, request: Request) -> Any:
    """Every legal action, best first, with its expected final score and its loss; with a
    need, best chance first, each with its chance as well; with a risk, best certainty
    equivalent first, each with its certainty equivalent as well."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    state = state_of(body.state, rules)
    client = client_of(request.scope)
    theta = _theta(body.risk, body.need)
    if theta is not None:
        risk = await _advise_risk(service, rules, state, theta, client)
        return AsciiJSONResponse(risk.to_json())
    if body.need is not None:
        answer = await _advise_need(service, rules, state, body.need, _cap(body.need_cap), client)
        return AsciiJSONResponse(answer.to_json())
    return (await _advise(service, rules, state, client)).to_json()


async def advice_warm(scope: Scope, body: Any) -> bytes | None:
    """``advice`` for a well-formed request whose blocks are all in this process's memo (no
    wait, no store, no deadline: nothing that can fail); None for anything else. What the
    app's front door answers (see :class:`memo_solver.service.fast.FrontDoor`)."""
    service: Service | None = getattr(scope["app"].state, "service", None)
    if service is None:  # the lifespan is not running: the app answers
        return None
    asked = await _asked(service, body)
    held = None if asked is None else _held(service, *asked)
    return None if held is None else advice_body(held)


async def advice_fast(scope: Scope, body: Any) -> bytes | None:
    """``advice`` for a well-formed request, the same bytes without FastAPI's parsing
    and response model (see :mod:`memo_solver.service.fast`); None: ``advice`` answers."""
    service: Service = scope["app"].state.service
    asked = await _asked(service, body)
    if asked is None:
        return None
    held = _held(service, *asked)
    if held is None:
        held = await _advise(service, *asked, client_of(scope))
    return advice_body(held)


def _held(service: Service, rules: RuleSet, state: State) -> Advice | None:
    """Advice from the blocks in this process's memo (warm: no wait, no deadline), or None."""
    engine = service.peek(entry_for(rules))
    return None if engine is None else advise_held(engine.memo, rules, state)


async def _asked(service: Service, body: Any) -> tuple[RuleSet, State] | None:
    """The rule set and state of a well-formed request body; None: ``advice`` answers it."""
    if type(body) is not dict or "state" not in body or not body.keys() <= _ADVICE_KEYS:
        return None
    name = body.get("rules", "yahtzee")
    if type(name) is not str:
        return None
    try:
        rules = await service.rulebook.resolve(name)
        return rules, state_of(body["state"], rules)
    except Exception:  # a bad state (even one too deep to echo): answered as before
        return None


@routes.post("/v1/advice/batch", response_model=BatchOut, response_model_exclude_none=True)
async def advice_batch(body: BatchRequest, request: Request) -> Response:
    """Up to 1,000 states answered in order; a bad state gets its own error entry."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    parsed: list[State | ErrorDetail] = []
    for raw in body.states:
        try:
            parsed.append(state_of(raw, rules))
        except StateError as exc:
            parsed.append(ErrorDetail(field=exc.field, message=exc.message))

    client = client_of(request.scope)
    theta = _theta(body.risk, body.need)
    if theta is not None:
        return await _batch_risk(service, rules, parsed, theta, client)
    if body.need is not None:
        return await _batch_need(service, rules, parsed, body.need, _cap(body.need_cap), client)
    for item in parsed:
        if not isinstance(item, ErrorDetail):
            await check_state(service, rules, item, client)

    async def answer_all(engine: Engine) -> bytes:
        results: list[bytes] = []
        for item in parsed:
            if isinstance(item, ErrorDetail):
                results.append(batch_error(item.field, item.message))
            else:
                results.append(batch_advice(await advise(engine, rules, item)))
        return batch_body(results)

    # BatchOut's bytes, written directly (see service.fast): no model check of 20,000 actions
    answer = await service.run_on(entry_for(rules), answer_all)
    return Response(answer, media_type="application/json")


@routes.post("/v1/value", response_model=ValueOut, response_model_exclude_none=True)
async def value(body: StateRequest, request: Request) -> ValueOut:
    """The expected future score of a state under optimal play; with a need, also the best
    chance of scoring at least that many more points; with a risk, also the certainty
    equivalent at it."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    state = state_of(body.state, rules)
    client = client_of(request.scope)
    theta = _theta(body.risk, body.need)
    if theta is not None:
        risk = await _advise_risk(service, rules, state, theta, client)
        return ValueOut(
            rules=rules.name,
            value=risk.mean.value,
            turn_start_value=risk.mean.turn_start_value,
            risk=risk.risk,
            certainty_equivalent=risk.certainty_equivalent,
            turn_start_certainty_equivalent=risk.turn_start_certainty_equivalent,
        )
    if body.need is None:
        result = await _advise(service, rules, state, client)
        return ValueOut(
            rules=rules.name, value=result.value, turn_start_value=result.turn_start_value
        )
    need = await _advise_need(service, rules, state, body.need, _cap(body.need_cap), client)
    return ValueOut(
        rules=rules.name,
        value=need.mean.value,
        turn_start_value=need.mean.turn_start_value,
        need=need.need,
        cap=need.cap,
        probability=need.probability,
        turn_start_probability=need.turn_start_probability,
    )


@routes.post(
    "/v1/solve",
    response_model=SolveOut,
    status_code=202,
    responses={200: {"model": SolveOut, "description": "the store holds the whole game"}},
)
async def solve(body: SolveRequest, request: Request, response: Response) -> SolveOut:
    """Start solving a rule set's whole game in the background, where a question past the
    cold budget was refused for want of it (its 422 carries the offer): needs no token,
    but the client must be one ``--whole-game-solves`` lets start it (422), within
    ``--whole-game-queue`` (429). 202 while it runs (its progress:
    ``GET /v1/rules/{fingerprint}/coverage``); 200 when the store holds the whole game."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    start = state_of("start", rules)
    client = client_of(request.scope)
    offer = await service.solve_in_background(mean_cone(rules, start), client, _warm(rules, start))
    if offer.blocks_done >= offer.blocks_total:
        response.status_code = 200
    return SolveOut.model_validate(offer, from_attributes=True)


async def _advise(service: Service, rules: RuleSet, state: State, client: str | None) -> Advice:
    """Advice for a state, within the cold budget and the deadline; ``client`` is the
    asking address (who may start a solve past the budget)."""
    await check_state(service, rules, state, client)
    warm = _warm(rules, state)
    return await service.run_on(entry_for(rules), lambda engine: advise(engine, rules, state), warm)


async def check_state(service: Service, rules: RuleSet, state: State, client: str | None) -> None:
    """The cold budget of a question that reads the values of ``state`` and what follows it
    (advice, a distribution, a review from the start): past it, the workers' (503), or
    refused (422, 429), never solved here."""
    cone = mean_cone(rules, state)
    await service.check_budget(cone, _mean_budget(service.settings), _warm(rules, state), client)


def _mean_budget(settings: ApiSettings) -> Budget:
    """A question's budget in turn starts, past which a background solve of the whole game
    answers it where no worker takes it."""
    return Budget(
        settings.cold_budget,
        "turn starts",
        "budget",
        "the rule set ('memo-solver precompute')",
        "state",
        solves_whole=True,
    )


def _need_budget(settings: ApiSettings) -> Budget:
    """A need's own budget: its table's cone holds a chance per need for every turn start,
    hundreds of times the mean's."""
    return Budget(
        settings.need_budget,
        "chances (turn starts times needs)",
        "need budget",
        "the need table ('memo-solver precompute --need')",
        "need",
    )


def _warm(rules: RuleSet, state: State) -> Callable[[], Job]:
    """The warm job that leaves a state's advice in the memo, made only when needed."""
    return lambda: Job.warm(entry_for(rules).job_name, json.dumps(state_to_json(state, rules)))


TableAnswer = Callable[[Engine, Engine, State], Awaitable[dict[str, object]]]
"""One state's answer from a value table's engine and the mean game's, as JSON."""


async def _batch_table(
    service: Service,
    rules: RuleSet,
    parsed: list[State | ErrorDetail],
    table: GameEntry,
    check: Callable[[State], Awaitable[object]],
    answer: TableAnswer,
) -> Response:
    """A batch on a value table (a need's, a risk's): every state checked first (``check``:
    within the budgets), then one computation on the table's engine and the mean game's."""
    states = [item for item in parsed if not isinstance(item, ErrorDetail)]
    for state in states:
        await check(state)

    async def answer_all() -> bytes:
        async with service.engine(entry_for(rules)) as mean, service.engine(table) as engine:
            results: list[bytes] = []
            for item in parsed:
                if isinstance(item, ErrorDetail):
                    results.append(batch_error(item.field, item.message))
                else:
                    results.append(batch_need(await answer(engine, mean, item)))
            return batch_body(results)

    warm = _table_warm(table, rules, states[0]) if states else None
    return Response(await service.run(answer_all, warm), media_type="application/json")


async def _batch_need(
    service: Service,
    rules: RuleSet,
    parsed: list[State | ErrorDetail],
    need: int,
    cap: int,
    client: str | None,
) -> Response:
    """A batch with a need: every state within both budgets first, then one computation."""

    async def answer(engine: Engine, mean: Engine, state: State) -> dict[str, object]:
        return (await advise_need(engine, mean, rules, state, need)).to_json()

    return await _batch_table(
        service,
        rules,
        parsed,
        need_entry(rules, cap),
        lambda state: _check_need(service, rules, state, need, cap, client),
        answer,
    )


async def _batch_risk(
    service: Service,
    rules: RuleSet,
    parsed: list[State | ErrorDetail],
    theta: float,
    client: str | None,
) -> Response:
    """A batch at a risk: every state within both budgets first, then one computation."""

    async def answer(engine: Engine, mean: Engine, state: State) -> dict[str, object]:
        return (await advise_risk(engine, mean, rules, state, theta)).to_json()

    return await _batch_table(
        service,
        rules,
        parsed,
        risk_entry_of(entry_for(rules), theta),
        lambda state: check_risk(service, rules, state, theta, client),
        answer,
    )


def _theta(risk: float | str | None, need: int | None) -> float | None:
    """The request's risk on the dial (:class:`UserError` naming ``risk`` off it, or beside
    a need), None where it sent none."""
    if risk is None:
        return None
    if need is not None:
        raise UserError("give need or risk, not both", "risk")
    return check_theta(risk)


async def _advise_risk(
    service: Service, rules: RuleSet, state: State, theta: float, client: str | None
) -> RiskAdvice:
    """Advice at a risk (:func:`run_at_risk`)."""
    return await run_at_risk(
        service,
        rules,
        state,
        theta,
        client,
        lambda engine, mean: advise_risk(engine, mean, rules, state, theta),
    )


async def run_at_risk(
    service: Service,
    rules: RuleSet,
    state: State,
    theta: float,
    client: str | None,
    work: Callable[[Engine, Engine], Awaitable[T]],
) -> T:
    """``work`` on the risk table's engine and the mean game's (its values break ties), for
    a question from ``state``: within the mean's cold budget and the risk table's, and the
    deadline; past the deadline the risk table's blocks go to the workers."""
    cone = await check_risk(service, rules, state, theta, client)

    async def on_engines() -> T:
        async with (
            service.engine(entry_for(rules)) as mean,
            service.engine(cone.entry) as engine,
        ):
            return await work(engine, mean)

    return await service.run(on_engines, _table_warm(cone.entry, rules, state))


async def check_risk(
    service: Service, rules: RuleSet, state: State, theta: float, client: str | None
) -> Cone:
    """The mean's budget, then the risk table's cone (the same turn starts, one certainty
    equivalent each) within the same budget, which only the workers solve past."""
    await check_state(service, rules, state, client)
    cone = risk_cone(rules, state, theta)
    if cone.entry is not entry_for(rules):
        warm = _table_warm(cone.entry, rules, state)
        await service.check_budget(cone, _risk_budget(service.settings), warm, client)
    return cone


def _risk_budget(settings: ApiSettings) -> Budget:
    """A risk table's budget: the mean's, in the same turn starts (a risk table has the mean
    table's shape)."""
    return Budget(
        settings.cold_budget,
        "turn starts",
        "budget",
        "the risk table ('memo-solver precompute --risk THETA')",
        "risk",
    )


async def _advise_need(
    service: Service, rules: RuleSet, state: State, need: int, cap: int, client: str | None
) -> NeedAdvice:
    """Advice with a need, within both cold budgets (the mean's, for the ties) and the
    deadline; past the deadline the need table's blocks go to the workers."""
    await _check_need(service, rules, state, need, cap, client)

    async def work() -> NeedAdvice:
        async with (
            service.engine(entry_for(rules)) as mean,
            service.engine(need_entry(rules, cap)) as engine,
        ):
            return await advise_need(engine, mean, rules, state, need)

    return await service.run(work, _table_warm(need_entry(rules, cap), rules, state))


async def _check_need(
    service: Service, rules: RuleSet, state: State, need: int, cap: int, client: str | None
) -> None:
    """The cap, the mean's budget (the ties read it), then what the family says of the
    need: refused, certain or impossible (no solve), or its table's cone within the need
    budget."""
    question = need_question(rules, state, need, cap)
    await check_state(service, rules, state, client)
    if question.refusal is not None:
        raise question.refusal
    if question.cone is not None:
        warm = _table_warm(question.cone.entry, rules, state)
        await service.check_budget(question.cone, _need_budget(service.settings), warm, client)


def _table_warm(table: GameEntry, rules: RuleSet, state: State) -> Callable[[], Job]:
    """The warm job that solves a state's blocks of a value table (a need table: every
    need's chance; a risk table)."""

    def job() -> Job:
        text = table.canonical_state(json.dumps(state_to_json(state, rules)))
        return Job.warm(table.job_name, text)

    return job


def _cap(given: int | None) -> int:
    """The request's need cap: the default where a form sent none (null or empty)."""
    return DEFAULT_CAP if given is None else given
