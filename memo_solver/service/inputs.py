"""A request's names and states turned into the typed values below the service, or a 422
naming the field (in the CLI's words)."""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import Scope

from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import UnknownGameError, get_game
from memo_solver.games.yahtzee import RuleSet, State, parse_state, state_from_json
from memo_solver.service.errors import ApiError
from memo_solver.service.models import RulesInput, StateInput
from memo_solver.service.service import Service
from memo_solver.service.settings import ADMIN_TOKEN_ENV


async def rules_of(service: Service, value: RulesInput) -> RuleSet:
    """The rule set a request names or defines inline (422 naming ``rules`` if none)."""
    return await service.rulebook.resolve(value)


def game_named(name: str) -> GameEntry:
    try:
        return get_game(name)
    except UnknownGameError as exc:
        raise ApiError(422, "rules", str(exc)) from None


def state_of(raw: StateInput, rules: RuleSet) -> State:
    """A state sent as text or as JSON (a :class:`StateError` says what is wrong)."""
    return parse_state(raw, rules) if isinstance(raw, str) else state_from_json(raw, rules)


def client_of(scope: Scope) -> str | None:
    """The address a request came from (None when the server does not say)."""
    client = scope.get("client")
    return None if client is None else str(client[0])


def authorize(request: Request) -> None:
    """The operator token, or 401/403: for the endpoints that change what others see."""
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


class OperatorRoute(APIRoute):
    """An operator endpoint: the token is checked before anything else of the request is
    read, so that a client without it learns nothing of the body the endpoint takes, and
    costs no parsing."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def authorized(request: Request) -> Response:
            authorize(request)
            return await handler(request)

        return authorized
