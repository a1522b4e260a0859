"""``POST /v1/jobs/precompute`` and ``GET /v1/jobs/{job_id}``: background jobs for the
workers, on the shared Redis store, for operators (a bearer token, checked first) only."""

from __future__ import annotations

from fastapi import Request

from memo_solver.jobs.queue import JobQueue
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import OperatorRoute
from memo_solver.service.models import JobOut, PrecomputeRequest
from memo_solver.service.routes import Routes
from memo_solver.service.routes.rules import game_or_rules
from memo_solver.service.service import Service, service_of

routes = Routes()


@routes.post(
    "/v1/jobs/precompute",
    response_model=JobOut,
    status_code=202,
    response_model_exclude_none=True,
    route_class_override=OperatorRoute,
)
async def precompute(body: PrecomputeRequest, request: Request) -> JobOut:
    """Queue the background precompute of a rule set or another game such as
    ``dice-of-doom-3x3`` (operator token required)."""
    service = service_of(request)
    entry = await game_or_rules(service, body.rules)
    queue = _queue(service)
    job_id, queued = await queue.enqueue_precompute(entry)
    record = await queue.record(job_id) or {}
    return JobOut(job=job_id, status=record.get("status", "queued"), queued=queued)


@routes.get(
    "/v1/jobs/{job_id}",
    response_model=JobOut,
    response_model_exclude_none=True,
    route_class_override=OperatorRoute,
)
async def job(job_id: str, request: Request) -> JobOut:
    """A background job's record (operator token required)."""
    record = await _queue(service_of(request)).record(job_id)
    if record is None:
        raise ApiError(404, "job_id", f"no job {job_id!r}")
    return JobOut(job=job_id, status=record.get("status", "?"), record=record)


def _queue(service: Service) -> JobQueue:
    if service.queue is None:
        raise ApiError(
            409, "store", "background jobs need the shared Redis store (serve with --redis URL)"
        )
    return service.queue
