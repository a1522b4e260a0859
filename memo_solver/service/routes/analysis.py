"""``POST /v1/stats`` and ``POST /v1/review``: the distribution of the points to come, and
a played game's decisions against the optimal ones."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from fastapi import Request

from memo_solver.games.yahtzee.distribution import Distribution
from memo_solver.games.yahtzee.review import read_game, review_game
from memo_solver.games.yahtzee.catalog import UnknownRuleSetError, get_rule_set
from memo_solver.games.yahtzee.stats import distribution_in_thread, stats_json
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import rules_named, state_of
from memo_solver.service.models import ReviewOut, ReviewRequest, StatsOut, StatsRequest
from memo_solver.service.routes import Routes
from memo_solver.service.service import service_of

routes = Routes()


@routes.post("/v1/stats", response_model=StatsOut, response_model_exclude_unset=True)
async def stats(body: StatsRequest, request: Request) -> dict[str, Any]:
    """The exact distribution of the points to come under optimal play.

    From the start that is the final score; from a state, the points still to come.
    A whole game takes tens of CPU seconds the first time (``yahtzee`` about 35): 503
    with Retry-After until it is done.
    """
    rules = rules_named(body.rules)
    state = state_of(body.state, rules)
    service = service_of(request)
    engine = service.engine(rules)

    def work() -> Awaitable[Distribution]:
        return distribution_in_thread(engine, rules, state, service.stats_limiter)

    dist = await service.run_shared(("stats", rules.name, state), work)
    return stats_json(dist, rules, state, tuple(body.thresholds), full=body.full)


@routes.post("/v1/review", response_model=ReviewOut, response_model_exclude_unset=True)
async def review(body: ReviewRequest, request: Request) -> dict[str, Any]:
    """Every decision of a played game against the optimal one, and the score split
    into expected score, skill and luck. A game that breaks the rules: 422, field game.
    """
    named = body.game.get("rules")
    if body.rules is not None:
        rules = rules_named(body.rules)
    elif isinstance(named, str):
        try:
            rules = get_rule_set(named)
        except UnknownRuleSetError as exc:
            raise ApiError(422, "game", f"rules: {exc}") from None
    else:
        rules = rules_named("yahtzee")
    read_game(body.game, rules)  # a bad game is refused before any work starts
    service = service_of(request)
    result = await service.run(lambda: review_game(service.engine(rules), rules, body.game))
    return result.to_json()
