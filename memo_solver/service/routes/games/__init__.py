"""Each game family's own HTTP endpoints, beside the routes every game shares.

Every registered game already has its coverage and its jobs (``/v1/rules/{name}/...``,
``/v1/jobs/...``) by name; a family with endpoints of its own (Dice of Doom's advice on a
board) has one module here that says which family it serves (``FAMILY``, its ``--game``
name) and builds its routes for an app (``routes(settings)``). The app takes the modules of
the registered families, in the registry's order, so a new game's endpoints are one module
here and no edit to the app: the families live below the service and cannot hand it routes
themselves.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Protocol

from memo_solver.games.registry import FAMILIES
from memo_solver.service.routes import Routes
from memo_solver.service.settings import ApiSettings


class FamilyRoutes(Protocol):
    FAMILY: str

    def routes(self, settings: ApiSettings) -> Routes: ...


def family_routes(settings: ApiSettings) -> list[Routes]:
    """The routes of every registered family that has a module here, in registry order."""
    modules: dict[str, FamilyRoutes] = {}
    for found in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{found.name}")
        modules[module.FAMILY] = module
    return [modules[f.name].routes(settings) for f in FAMILIES if f.name in modules]
