"""A property-based fuzz of the HTTP service from its own OpenAPI document (schemathesis).

Schemathesis generates requests for every operation from the document the app serves:
valid ones, ones that break the schema, and unexpected methods. Every answer must match
its documented status, content type and response schema; a request outside the schema
must be refused with a 4xx; and no request may get a 500. The only 5xx allowed is the
documented 503 (a state still computing past its deadline), with its ``Retry-After``.

The app runs on the session's Redis (emptied first) with the operator token set, and a
share of the requests carry the right token, so the job endpoints are fuzzed past their
authorization too. The whole ``yahtzee`` game (the default rule set) is solved before the
fuzz starts, so most states are answered at once. Bounded to about a minute.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.python.asgi import get_client, shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from support.api_support import OPENAPI_PATH, build_app
from support.redis_server import RedisServer

from memo_solver.service.app import ApiSettings
from memo_solver.service.settings import ADMIN_TOKEN_ENV
from memo_solver.stores.memory import MemoryStore

pytestmark = pytest.mark.slow

TOKEN = "fuzz-operator-token"
EXAMPLES_PER_OPERATION = 100
DEADLINE_S = 0.25
WARM_UP_S = 120.0
CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

# The document the app serves (building it starts nothing: no store, no lifespan).
SCHEMA = schemathesis.openapi.from_dict(build_app(MemoryStore).openapi())
_calls = count()


@pytest.fixture(scope="module")
def fuzz_app(redis_server: RedisServer) -> Iterator[FastAPI]:
    """The app on the session Redis, emptied, with ``yahtzee`` solved; its lifespan runs in
    schemathesis's event-loop thread from the first request to the end of the module."""
    with redis_server.client() as client:
        client.flushall()
    url = redis_server.url
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ADMIN_TOKEN_ENV, TOKEN)
        app = build_app(url, ApiSettings(deadline_s=DEADLINE_S))
        try:
            warm_up(app)
            yield app
        finally:
            shutdown_lifespans()


def warm_up(app: FastAPI) -> None:
    """Ask for the ``yahtzee`` start until it is answered (503s while it is computed)."""
    started = time.monotonic()
    with get_client(app) as client:  # type: ignore[arg-type]
        while time.monotonic() - started < WARM_UP_S:
            response = client.post("/v1/value", json={"state": "start"})
            if response.status_code == 200:
                return
            assert response.status_code == 503, response.text
            time.sleep(0.5)
    pytest.fail(f"yahtzee was not solved within {WARM_UP_S:g} s")


def auth_headers() -> dict[str, str]:
    """Every other request carries the right token, one in six a wrong one."""
    turn = next(_calls) % 6
    if turn % 2 == 0:
        return {"Authorization": f"Bearer {TOKEN}"}
    if turn == 5:
        return {"Authorization": "Bearer not-the-token"}
    return {}


@SCHEMA.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_500_and_no_schema_violation(case: schemathesis.Case[Any], fuzz_app: FastAPI) -> None:
    response = case.call(app=fuzz_app, headers=auth_headers())
    case.validate_response(response, checks=CHECKS)
    status = response.status_code
    if status >= 500:
        assert status == 503, (status, response.text[:500])
        assert response.headers.get("retry-after"), response.headers
    if status >= 400:  # every error, the framework's own included, is ours
        assert response.headers["content-type"] == ["application/json"], response.headers
        body = response.json()
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"field", "message"}, body


def test_the_fuzzed_document_is_the_committed_one() -> None:
    assert SCHEMA.raw_schema == json.loads(OPENAPI_PATH.read_text(encoding="utf-8"))
