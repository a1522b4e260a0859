"""``POST /v1/stats`` and ``POST /v1/review``: the distribution of the points to come, and
a played game's decisions against the optimal ones."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np
from fastapi import Request

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee import (
    AtRisk,
    Distribution,
    check_theta,
    distribution_in_thread,
    entry_for,
    read_game,
    review_game,
    stats_json,
)
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import client_of, rules_of, state_of
from memo_solver.service.models import ReviewOut, ReviewRequest, StatsOut, StatsRequest
from memo_solver.service.routes import Routes
from memo_solver.service.routes.advice import check_risk, check_state, run_at_risk
from memo_solver.service.service import Codec, service_of

routes = Routes()


def _encode(dist: Distribution) -> bytes:
    probabilities = np.ascontiguousarray(dist.probabilities, dtype="<f8")
    return msgpack.packb(
        [
            probabilities.tobytes(),
            dist.p_upper_bonus,
            dist.p_yahtzee,
            dist.p_extra_bonus,
            dist.p_any_yahtzee,
            dist.box_points,
            dist.bonus_points,
        ]
    )


def _decode(data: bytes) -> Distribution:
    probabilities, upper, yahtzee, extra, any_yahtzee, boxes, bonuses = msgpack.unpackb(data)
    return Distribution(
        probabilities=np.frombuffer(probabilities, dtype="<f8").copy(),
        p_upper_bonus=upper,
        p_yahtzee=yahtzee,
        p_extra_bonus=extra,
        p_any_yahtzee=any_yahtzee,
        box_points=boxes,
        bonus_points=bonuses,
    )


DISTRIBUTION = Codec(_encode, _decode)
"""A distribution as the store keeps it for the other processes: every float exact."""


@routes.post("/v1/stats", response_model=StatsOut, response_model_exclude_unset=True)
async def stats(body: StatsRequest, request: Request) -> dict[str, Any]:
    """The exact distribution of the points to come under optimal play.

    From the start that is the final score; from a state, the points still to come.
    A whole game takes tens of CPU seconds the first time (``yahtzee`` about 35): 503
    with Retry-After until it is done. With a risk, under the theta strategy, whose risk
    table is within the same budgets as advice at that risk.
    """
    service = service_of(request)
    rules = await rules_of(service, body.rules)
    state = state_of(body.state, rules)
    client = client_of(request.scope)
    theta = 0.0 if body.risk is None else check_theta(body.risk)
    if theta:
        entry = (await check_risk(service, rules, state, theta, client)).entry
    else:
        await check_state(service, rules, state, client)
        entry = entry_for(rules)

    async def work() -> Distribution:
        async with service.engine(entry) as engine:
            return await distribution_in_thread(engine, rules, state, service.stats_limiter, theta)

    key = ("stats", entry.game.fingerprint, state)
    dist = await service.run_shared(key, work, DISTRIBUTION)
    out = stats_json(dist, rules, state, tuple(body.thresholds), full=body.full)
    return out if body.risk is None else {**out, "risk": theta}


@routes.post("/v1/review", response_model=ReviewOut, response_model_exclude_unset=True)
async def review(body: ReviewRequest, request: Request) -> dict[str, Any]:
    """Every decision of a played game against the optimal one, and the score split
    into expected score, skill and luck; with a risk, against the strategy of that risk,
    each decision's certainty-equivalent loss beside its mean loss. A game that breaks the
    rules: 422, field game.
    """
    named = body.game.get("rules")
    service = service_of(request)
    if body.rules is not None:
        rules = await rules_of(service, body.rules)
    elif isinstance(named, str | dict):
        try:
            rules = await rules_of(service, named)
        except UserError as exc:
            raise ApiError(422, "game", f"rules: {exc.message}") from None
    else:
        rules = await rules_of(service, "yahtzee")
    theta = None if body.risk is None else check_theta(body.risk)
    read_game(body.game, rules)  # a bad game is refused before any work starts
    start, client = state_of("start", rules), client_of(request.scope)
    if theta is not None:
        at_risk = await run_at_risk(
            service,
            rules,
            start,
            theta,
            client,
            lambda engine, mean: review_game(mean, rules, body.game, AtRisk(engine, theta)),
        )
        return at_risk.to_json()
    await check_state(service, rules, start, client)
    result = await service.run_on(
        entry_for(rules), lambda engine: review_game(engine, rules, body.game)
    )
    return result.to_json()
