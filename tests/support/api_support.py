"""What the API tests share: the app on a store with its lifespan running, random states,
and the checks every error answer must pass.

The app is driven in process through ``httpx.ASGITransport`` with its lifespan entered by
hand (starlette's ``TestClient`` would warn, and warnings are errors here), so a test sees
the same app ``memo-solver serve`` runs, minus the socket.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from memo_solver.core.store import Store
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, state_to_json
from memo_solver.jobs.storage import open_store_and_queue
from memo_solver.service.app import ApiSettings, create_app
from support.random_states import random_state

REPO = Path(__file__).resolve().parents[2]
OPENAPI_PATH = REPO / "openapi.json"
TOL = 1e-9
"""Against the pinned start values (they are printed to 10 decimals)."""
SAME = 1e-12
"""Between two answers computed from the same blocks (the API and the CLI)."""
YAHTZEE_PIN = 254.5877287345
LOWER_PIN = 139.9712924424
UPPER_PIN = 71.9515297337
ERROR_KEYS = {"field", "message"}
OFFER_KEY = "solve"
"""Beside them in a refusal past the cold budget, where the client may start the solve."""

StoreFactory = Callable[[], Store]


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: none of the user's MEMO_SOLVER_ settings, one
    BLAS thread (the solver's numpy passes are small), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def cli(*args: str) -> list[str]:
    """The ``memo-solver`` command line, run by this interpreter (the venv's)."""
    return [sys.executable, "-m", "memo_solver", *args]


def build_app(store: Path | str | StoreFactory, settings: ApiSettings | None = None) -> FastAPI:
    """The app on an SQLite file (a path), on a Redis URL with its job queue (as ``serve``
    opens them), or on whatever ``store()`` opens, with no job queue."""
    if isinstance(store, Path | str):
        location = store
        return create_app(lambda: open_store_and_queue(location), settings or ApiSettings())
    factory = store
    return create_app(lambda: (factory(), None), settings or ApiSettings())


@asynccontextmanager
async def api_client(
    store: Path | str | StoreFactory, settings: ApiSettings | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with its lifespan running (store, engines, background group).

    ``store`` is an SQLite file to open (created if missing), a Redis URL, or a store
    factory such as ``MemoryStore``. The app is ``client.app`` (set here for the tests). An
    error the app raises comes back as the 500 a server would send, for the test to see.
    """
    app = build_app(store, settings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        client.app = app  # type: ignore[attr-defined]
        yield client


# --- random valid states ----------------------------------------------------------------------


def late_states(
    rules: RuleSet, rng: random.Random, count: int, max_open: int = 4, unrolled: float = 0.1
) -> list[State]:
    """``count`` random states with 1..``max_open`` boxes open (cheap to solve cold); a share
    ``unrolled`` of them before the turn's first roll."""
    boxes = range(len(rules.categories))
    states = []
    for _ in range(count):
        opened = sum(1 << b for b in rng.sample(boxes, rng.randint(1, max_open)))
        filled = rules.all_filled & ~opened
        states.append(random_state(rules, rng, filled, rolled=rng.random() >= unrolled))
    return states


def as_json(state: State, rules: RuleSet) -> dict[str, object]:
    """The state as the API (and ``advise -``) reads it."""
    return state_to_json(state, rules)


def bearer(token: str) -> dict[str, str]:
    """The header of the operator endpoints."""
    return {"Authorization": f"Bearer {token}"}


# --- checks -----------------------------------------------------------------------------------


def error_of(response: httpx.Response, status: int, field: str | None = None) -> str:
    """Assert ``response`` is the error JSON with this status (and field); its message."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"}, body
    detail = body["error"]
    assert set(detail) - {OFFER_KEY} == ERROR_KEYS, body
    for key in ERROR_KEYS:
        assert isinstance(detail[key], str), body
        assert detail[key], body
    if field is not None:
        assert detail["field"] == field, body
    message: str = detail["message"]
    return message


def assert_same_advice(got: dict[str, Any], want: dict[str, Any], tol: float = SAME) -> None:
    """Two advice answers agree: the same flags, values to ``tol`` and the same actions (in
    order, with every key other than the numbers equal)."""
    assert got["game_over"] == want["game_over"]
    assert abs(got["value"] - want["value"]) <= tol, (got["value"], want["value"])
    assert abs(got["turn_start_value"] - want["turn_start_value"]) <= tol
    assert len(got["actions"]) == len(want["actions"]), (got["actions"], want["actions"])
    for mine, theirs in zip(got["actions"], want["actions"], strict=True):
        numbers = {"value", "loss"}
        assert {k: v for k, v in mine.items() if k not in numbers} == {
            k: v for k, v in theirs.items() if k not in numbers
        }, (mine, theirs)
        for key in numbers:
            assert abs(mine[key] - theirs[key]) <= tol, (key, mine, theirs)


async def coverage_of(client: httpx.AsyncClient, fingerprint: str, query: str) -> dict[str, Any]:
    """``GET /v1/rules/{fingerprint}/coverage{query}``, which must answer 200: its body."""
    response = await client.get(f"/v1/rules/{fingerprint}/coverage{query}")
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer
