"""``POST /v1/advice``, ``/v1/advice/batch`` and ``/v1/value``: the best actions for any
state, and its expected score, from the shared memo (computed first when cold).

Warm ``POST /v1/advice`` is answered by :func:`advice_warm`, before the app's layers (its
front door), and any other well-formed one by :func:`advice_fast` (the route's fast path);
both are installed by ``create_app``. :func:`advice` answers whatever they leave, with
FastAPI's parsing and response model. All give the same bytes: see
:mod:`memo_solver.service.fast`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import Request, Response
from starlette.types import Scope

from memo_solver.core.engine import Engine
from memo_solver.games.yahtzee.advice import Advice, advise, advise_held, blocks_needed
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.rules import RuleSet
from memo_solver.games.yahtzee.state import State, StateError, state_to_json
from memo_solver.jobs.queue import Job
from memo_solver.service.fast import (
    AdviceOut,
    BatchOut,
    ErrorDetail,
    advice_body,
    batch_advice,
    batch_body,
    batch_error,
)
from memo_solver.service.inputs import rules_of, state_of
from memo_solver.service.models import BatchRequest, StateRequest, ValueOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import Service, service_of

routes = Routes()

_ADVICE_KEYS = frozenset(StateRequest.model_fields)


@routes.post("/v1/advice", response_model=AdviceOut, response_model_exclude_none=True)
async def advice(body: StateRequest, request: Request) -> dict[str, Any]:
    """Every legal action, best first, with its expected final score and its loss."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    state = state_of(body.state, rules)
    return (await _advise(service, rules, state)).to_json()


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
    return advice_body(held if held is not None else await _advise(service, *asked))


def _held(service: Service, rules: RuleSet, state: State) -> Advice | None:
    """Advice from the blocks in this process's memo (warm: no wait, no deadline), or None."""
    engine = service.peek(rules)
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

    async def answer_all(engine: Engine) -> bytes:
        results: list[bytes] = []
        for item in parsed:
            if isinstance(item, ErrorDetail):
                results.append(batch_error(item.field, item.message))
            else:
                results.append(batch_advice(await advise(engine, rules, item)))
        return batch_body(results)

    # BatchOut's bytes, written directly (see service.fast): no model check of 20,000 actions
    return Response(await service.run_on(rules, answer_all), media_type="application/json")


@routes.post("/v1/value", response_model=ValueOut)
async def value(body: StateRequest, request: Request) -> ValueOut:
    """The expected future score of a state under optimal play."""
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    state = state_of(body.state, rules)
    result = await _advise(service, rules, state)
    return ValueOut(rules=rules.name, value=result.value, turn_start_value=result.turn_start_value)


async def _advise(service: Service, rules: RuleSet, state: State) -> Advice:
    """Advice for a state, within the cold budget and the deadline."""
    warm = _warm(rules, state)
    await service.check_budget(rules, state.filled, blocks_needed(rules, state), warm)
    return await service.run_on(rules, lambda engine: advise(engine, rules, state), warm)


def _warm(rules: RuleSet, state: State) -> Callable[[], Job]:
    """The warm job that leaves a state's advice in the memo, made only when needed."""
    return lambda: Job.warm(entry_for(rules).job_name, json.dumps(state_to_json(state, rules)))
