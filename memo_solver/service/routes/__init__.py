"""The API's routes, one module per concept: rules, advice, analysis, jobs, the page,
health, and each game's own (``dice_of_doom``).

Each concept module lists its routes on a :class:`Routes`, which ``create_app`` adds to the
app's own routing table, as if each had been declared on the app itself. (Recent FastAPI,
0.16x, includes an ``APIRouter`` lazily: its routes stay one entry of the app's table, each
of their requests goes through a second layer of matching, and their route objects are the
router's own, shared by every app including it, where the fast path of ``POST /v1/advice``
must take over one app's own route.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI
from starlette.types import ASGIApp

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class Routes:
    """A concept's routes and mounts, in order, to add to an app with :meth:`add_to`.

    ``get``, ``post`` and ``delete`` take the options of FastAPI's ``app.get``, ``app.post``
    and ``app.delete``, and a route class (``route_class_override``).
    """

    def __init__(self) -> None:
        self._steps: list[Callable[[FastAPI], None]] = []

    def get(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._route("GET", path, options)

    def post(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._route("POST", path, options)

    def delete(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._route("DELETE", path, options)

    def mount(self, path: str, app: ASGIApp, name: str) -> None:
        self._steps.append(lambda target: target.mount(path, app, name=name))

    def add_to(self, app: FastAPI) -> None:
        for step in self._steps:
            step(app)

    def _route(
        self, method: str, path: str, options: dict[str, Any]
    ) -> Callable[[Endpoint], Endpoint]:
        def record(endpoint: Endpoint) -> Endpoint:
            self._steps.append(
                lambda app: app.router.add_api_route(path, endpoint, methods=[method], **options)
            )
            return endpoint

        return record
