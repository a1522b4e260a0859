"""Every error the API answers, as one JSON shape: ``{"error": {"field", "message"}}``.

The routes raise (an :class:`ApiError`, or the error of the layer that found the fault:
a bad state, board or game, a store that is down); the handlers installed here turn each
into its status and JSON, with ``Retry-After`` where a retry may succeed. Nothing a client
sends produces a 500.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import RedisClusterException, RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException

from memo_solver.core.errors import UserError
from memo_solver.core.store import Store, StoreFullError, StoreUnavailableError
from memo_solver.service.settings import ApiSettings

_UNION_TAG = re.compile(r"(str|int|float|bool|dict\[.*\]|list\[.*\])$")
"""Where a field takes one of several types (``rules``: a name or a definition), pydantic
names the member it tried after the field; the client's field is the field alone."""


class ApiError(UserError):
    """An error the service itself finds: the status (401 and 403 for the operator token, 404
    for an unknown job, 409 for a job on a store without a queue; 503 with Retry-After when
    the client should ask again), the field at fault and a message in the CLI's words."""

    def __init__(
        self, status: int, field: str, message: str, extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, field)
        self.status = status
        self.extra = extra or {}
        """More of the error object, beside its field and message (``solve``: the offer of
        a background solve that would answer)."""


class AsciiJSONResponse(JSONResponse):
    """JSON as ASCII: a lone surrogate a client sent (JSON allows ``"\\ud800"``) and an
    error echoes back is escaped, where UTF-8 encoding would fail with a 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode()


def error_response(
    status: int,
    field: str,
    message: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    return AsciiJSONResponse(
        {"error": {"field": field, "message": message, **(extra or {})}},
        status_code=status,
        headers=headers,
    )


def install_error_handlers(app: FastAPI, settings: ApiSettings) -> None:
    retry = {"Retry-After": str(settings.retry_after_s)}

    @app.exception_handler(UserError)
    async def user_error(request: Request, exc: UserError) -> JSONResponse:
        """Every error the client can fix, whatever raised it: its status, field and message."""
        return error_response(
            exc.status,
            exc.field,
            exc.message,
            retry if exc.status == 503 else None,
            exc.extra if isinstance(exc, ApiError) else None,
        )

    @app.exception_handler(StoreUnavailableError)
    async def store_down(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        status = 507 if isinstance(exc, StoreFullError) else 503
        return error_response(status, "store", str(exc), retry)

    async def redis_down(request: Request, exc: Exception) -> JSONResponse:
        """The job endpoints talk to Redis directly: its faults are store faults too."""
        from memo_solver.stores.redis_client import store_error

        store: Store = request.app.state.service.store
        return await store_down(request, store_error(exc, store.description))

    # redis-py's cluster faults are not all RedisError
    for fault in (RedisError, RedisClusterException):
        app.add_exception_handler(fault, redis_down)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        if first.get("type") == "json_invalid":
            reason = first.get("ctx", {}).get("error") or first.get("msg", "")
            return error_response(400, "body", f"malformed JSON: {reason}")
        location = [
            str(p) for p in first.get("loc", ()) if p != "body" and not _UNION_TAG.match(str(p))
        ]
        message = str(first.get("msg", "invalid request"))
        return error_response(422, ".".join(location) or "body", message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        field = "path" if exc.status_code in (404, 405) else "request"
        return error_response(exc.status_code, field, str(exc.detail))
