"""``/healthz``, ``/readyz`` and ``/metrics``: for the orchestrator and the monitoring."""

from __future__ import annotations

import os

from fastapi import Request, Response

from memo_solver.core.store import StoreUnavailableError
from memo_solver.service import metrics
from memo_solver.service.errors import error_response
from memo_solver.service.models import ReadyOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import service_of

routes = Routes()


_PID = str(os.getpid())


@routes.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up; ``pid`` says which one (``serve --workers`` runs several)."""
    return {"status": "ok", "pid": _PID}


@routes.get("/readyz", response_model=ReadyOut)
async def readyz(request: Request) -> Response | ReadyOut:
    """The store accepts a write (a probe key claimed and released): 503 naming the
    fault when it does not (unreachable, full, read-only). Within 50 ms: an SQLite
    store whose write lock another process holds is ready, with ``write: busy``."""
    service = service_of(request)
    store = service.store
    try:
        write = await store.probe()
    except StoreUnavailableError as exc:  # not ready, whatever the fault: 503, even full
        retry = {"Retry-After": str(service.settings.retry_after_s)}
        return error_response(503, "store", str(exc), retry)
    return ReadyOut(status="ready", store=store.description, write=write.value)


@routes.get("/metrics", include_in_schema=False)
async def metrics_endpoint() -> Response:
    body, content_type = metrics.render()
    return Response(content=body, media_type=content_type)
