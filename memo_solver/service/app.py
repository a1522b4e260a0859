"""The HTTP advice service: any state answered over JSON from the shared memo.

Every answer comes from the same engines the CLI uses, one per rule set, kept for the life
of the process with an in-memory block cache in front of the store; cold work runs in the
service's own task group, past a request's deadline if need be (:mod:`.service`). Errors
are 4xx JSON naming the field, in the CLI's words; nothing a client sends produces a 500
(:mod:`.errors`).

Where things are: the routes, one module per concept, in :mod:`.routes`; the request and
response models in :mod:`.models`, but for the advice answer's, which sit in :mod:`.fast`
beside the fast path that writes the same bytes; the ASGI layers in :mod:`.middleware`;
the settings in :mod:`.settings`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from memo_solver.core.store import Store
from memo_solver.jobs.queue import JobQueue
from memo_solver.service import metrics
from memo_solver.service.errors import AsciiJSONResponse, install_error_handlers
from memo_solver.service.fast import FrontDoor, install_fast_post, post_route
from memo_solver.service.middleware import BodyLimit, Observe
from memo_solver.service.models import ERRORS
from memo_solver.service.routes import advice, analysis, health, jobs, page, rules
from memo_solver.service.routes.games import family_routes
from memo_solver.service.service import open_service
from memo_solver.service.settings import ApiSettings

__all__ = ["ApiSettings", "create_app", "openapi_document"]

log = logging.getLogger(__name__)


class ServiceApp(FastAPI):
    """FastAPI with a :class:`~memo_solver.service.fast.FrontDoor` before its layers: the
    warm advice route is answered there, everything else as by FastAPI."""

    front: FrontDoor | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        front = self.front
        if front is not None and front.takes(scope):
            scope["app"] = self  # as Starlette sets it, for the answer to find the service
            await front(scope, receive, send, super().__call__)
            return
        await super().__call__(scope, receive, send)


def create_app(
    open_store: Callable[[], tuple[Store, JobQueue | None]], settings: ApiSettings | None = None
) -> FastAPI:
    """The ASGI app. ``open_store`` makes the store and its job queue (None without one)
    when the lifespan starts: :func:`memo_solver.jobs.storage.open_store_and_queue`."""
    settings = settings or ApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with open_service(open_store, settings) as service:
                app.state.service = service
                assert service.task_group is not None
                service.task_group.start_soon(metrics.publish_engines)
                log.info("serving advice from %s", service.store.description)
                yield
        finally:
            metrics.process_stopped()

    app = ServiceApp(
        title="memo-solver",
        version="0.1.0",
        summary="Optimal strategy for Yahtzee-family dice games and Dice of Doom: advice for "
        "any state.",
        lifespan=lifespan,
        responses=ERRORS,
        default_response_class=AsciiJSONResponse,
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(Observe)  # outermost: counts every answer, 413s included
    install_error_handlers(app, settings)
    for routes in (  # the hot route first: routing tries each route in this order
        advice.routes,
        rules.routes,
        analysis.routes,
        jobs.routes,
        *family_routes(settings),  # each family's own endpoints, found by its name
        page.routes,
        health.routes,
    ):
        routes.add_to(app)
    install_fast_post(app, "/v1/advice", advice.advice_fast)
    hot = post_route(app, "/v1/advice")
    app.front = FrontDoor(hot, advice.advice_warm, settings.max_body_bytes)
    return app


def openapi_document(app: FastAPI) -> str:
    """The OpenAPI document as committed in ``openapi.json`` (sorted, indented)."""
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"
