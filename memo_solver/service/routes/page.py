"""``GET /`` and ``/static``: the players' page, a static front end that calls this API."""

from __future__ import annotations

from pathlib import Path

from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from memo_solver.service.routes import Routes

WEB_DIR = Path(__file__).parent.parent / "web"

routes = Routes()


@routes.get("/", include_in_schema=False)
async def page() -> FileResponse:
    """The players' page: a static front end that calls this API."""
    return FileResponse(WEB_DIR / "index.html")


routes.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
