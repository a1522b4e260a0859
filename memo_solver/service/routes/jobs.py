"""``POST /v1/jobs/precompute`` and ``GET /v1/jobs/{job_id}``: background jobs for the
workers, on the shared Redis store, for operators (a bearer token) only."""

from __future__ import annotations

import hmac
import os

from fastapi import Request

from memo_solver.jobs.queue import JobQueue
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import game_named
from memo_solver.service.models import JobOut, PrecomputeRequest
from memo_solver.service.routes import Routes
from memo_solver.service.service import Service, service_of
from memo_solver.service.settings import ADMIN_TOKEN_ENV

routes = Routes()


@routes.post(
    "/v1/jobs/precompute",
    response_model=JobOut,
    status_code=202,
    response_model_exclude_none=True,
)
async def precompute(body: PrecomputeRequest, request: Request) -> JobOut:
    """Queue the background precompute of a rule set or another game such as
    ``dice-of-doom-3x3`` (operator token required)."""
    _authorize(request)
    entry = game_named(body.rules)
    queue = _queue(service_of(request))
    job_id, queued = await queue.enqueue_precompute(entry)
    record = await queue.record(job_id) or {}
    return JobOut(job=job_id, status=record.get("status", "queued"), queued=queued)


@routes.get("/v1/jobs/{job_id}", response_model=JobOut, response_model_exclude_none=True)
async def job(job_id: str, request: Request) -> JobOut:
    """A background job's record (operator token required)."""
    _authorize(request)
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


def _authorize(request: Request) -> None:
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
