"""A server without workers solves a game past its cold budget in the background, in its
own process, where ``--whole-game-solves`` lets the asking client start it: the refusal
offers it, ``POST /v1/solve`` starts it (once per game, however often asked), its progress
is public, and the question is answered once the solve has reached it. Where the setting
forbids it, the refusal says in a player's words that the game is not solved here yet.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from support.api_support import api_client, build_app, error_of

from memo_solver.core.engine import namespace
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.jobs.queue import beat
from memo_solver.service.app import ApiSettings

RULES = "yahtzee-lower"
"""Seven boxes: 128 blocks, solved in a fraction of a second, in eight layers."""
BLOCKS = entry_for(RULE_SETS[RULES]).game.block_count
SMALL_BUDGET = ApiSettings(cold_budget=10)
"""Past which every question of RULES with fewer than four boxes filled is."""
SOLVED_S = 60.0
"""128 small blocks take well under a second of CPU; this bounds a loaded machine's wait."""


def ask(rules: str = RULES) -> dict[str, Any]:
    return {"rules": rules, "state": "start"}


async def coverage(client: httpx.AsyncClient, name: str) -> dict[str, Any]:
    answer = await client.get(f"/v1/rules/{name}/coverage")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def until(probe: Callable[[], Awaitable[bool]]) -> None:
    """Ask ``probe`` every 20 ms until it answers True, within :data:`SOLVED_S`: a solve
    in the background has no event a client can wait on."""
    with anyio.fail_after(SOLVED_S):
        while True:
            if await probe():
                return
            await anyio.sleep(0.02)


async def solved(client: httpx.AsyncClient) -> bool:
    return (await coverage(client, RULES))["solving"] is False


async def answers(client: httpx.AsyncClient) -> bool:
    return (await client.post("/v1/advice", json=ask())).status_code == 200


def compute_limiter(client: httpx.AsyncClient) -> anyio.CapacityLimiter:
    """The service's one compute slot: a solve's blocks are solved only under it."""
    service = client.app.state.service  # type: ignore[attr-defined]
    limiter: anyio.CapacityLimiter = service.engines[RULES]._limiter
    return limiter


@asynccontextmanager
async def compute_held(client: httpx.AsyncClient) -> AsyncIterator[None]:
    """The compute slot taken by the test: a solve started meanwhile waits at its first
    chunk, so what the test sees while it holds the slot is a solve under way, whatever the
    machine's speed."""
    async with compute_limiter(client):
        yield


async def test_a_question_past_the_budget_offers_a_background_solve_that_answers_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, "memo_solver.service.service")
    async with api_client(tmp_path / "s.sqlite", SMALL_BUDGET) as client:
        refused = await client.post("/v1/advice", json=ask())
        message = error_of(refused, 422, "state")
        assert f"this server has not solved {RULES} yet" in message
        offer = refused.json()["error"]["solve"]
        fingerprint = RULE_SETS[RULES].fingerprint
        cost = {key: offer.pop(key) for key in ("cpu_s", "store_bytes")}
        assert offer == {
            "rules": RULES,
            "fingerprint": fingerprint,
            "turn_starts": RULE_SETS[RULES].cone_turn_starts(0),
            "blocks_total": BLOCKS,
            "blocks_done": 0,
        }
        assert cost["cpu_s"] >= 0  # a sample's CPU time, in tenths of a second
        async with compute_held(client):
            statuses: list[int] = []

            async def start() -> None:
                statuses.append((await client.post("/v1/solve", json={"rules": RULES})).status_code)

            # The two at once both get past the store's answers before either starts it.
            service = client.app.state.service  # type: ignore[attr-defined]
            keep = service.rulebook.keep_definition
            both = anyio.Event()
            arrived: list[object] = []

            async def keep_once_both_asked(rules: object) -> None:
                arrived.append(rules)
                if len(arrived) == 2:
                    both.set()
                await both.wait()
                await keep(rules)

            monkeypatch.setattr(service.rulebook, "keep_definition", keep_once_both_asked)
            async with anyio.create_task_group() as tg:  # two at once, then a third
                tg.start_soon(start)
                tg.start_soon(start)
            await start()
            assert statuses == [202, 202, 202]
            progress = await coverage(client, fingerprint)  # no token: the page reads it
            assert progress["solving"] is True
            assert progress["blocks_total"] == BLOCKS
            waiting = error_of(await client.post("/v1/advice", json=ask()), 503, "state")
            assert f"solving {RULES} in the background" in waiting
        await until(lambda: solved(client))
        assert (await coverage(client, RULES))["blocks_done"] == BLOCKS
        # Every block of yahtzee-lower holds one value: the sample's size is about each
        # one's (the end of the game's block is a few bytes shorter).
        stored = await service.store.coverage(namespace(entry_for(RULE_SETS[RULES]).game))
        assert cost["store_bytes"] == pytest.approx(stored.bytes, rel=0.01)
        answered = await client.post("/v1/advice", json=ask())
        assert answered.status_code == 200, answered.text
        done = await client.post("/v1/solve", json={"rules": RULES})
        assert done.status_code == 200, done.text
    async with api_client(tmp_path / "cold.sqlite") as unbudgeted:
        direct = await unbudgeted.post("/v1/advice", json=ask())
    assert answered.json() == direct.json()
    started_logs = [r for r in caplog.records if r.getMessage().startswith("solving ")]
    assert len(started_logs) == 1, "the later POSTs joined the first solve"


async def test_a_shutdown_cancels_the_solve_and_the_next_goes_on_from_the_store(
    tmp_path: Path,
) -> None:
    """The solve runs in the service's task group: a shutdown while it waits for the
    compute slot ends it (the lifespan closes). What the store holds of the game (here a
    later position's cone, answered within the budget) is taken back by the next solve,
    which computes only the rest."""
    store = tmp_path / "s.sqlite"
    with anyio.fail_after(SOLVED_S):  # the shutdown does not wait for the solve
        async with api_client(store, SMALL_BUDGET) as client:
            limiter = compute_limiter(client)
            await limiter.acquire()
            assert (await client.post("/v1/solve", json={"rules": RULES})).status_code == 202
    limiter.release()
    async with api_client(store, SMALL_BUDGET) as client:
        assert (await coverage(client, RULES))["blocks_done"] == 0
        filled = ["three_of_a_kind", "four_of_a_kind", "full_house", "small_straight"]
        late = {"rules": RULES, "state": {"filled": filled}}  # a cone of 8 turn starts
        assert (await client.post("/v1/value", json=late)).status_code == 200
        kept = (await coverage(client, RULES))["blocks_done"]
        assert 0 < kept < BLOCKS
        service = client.app.state.service  # type: ignore[attr-defined]
        before = service.engines[RULES].counters.computed
        resumed = await client.post("/v1/solve", json={"rules": RULES})
        assert resumed.json()["blocks_done"] == kept
        await until(lambda: answers(client))
        assert service.engines[RULES].counters.computed - before == BLOCKS - kept


async def test_two_server_processes_on_one_store_share_one_solve(tmp_path: Path) -> None:
    """As ``serve --workers 2``: each process asked starts its own, and the store's block
    claims give every block to one of them, so the two together solve the game once."""
    store = tmp_path / "s.sqlite"
    async with api_client(store, SMALL_BUDGET) as one, api_client(store, SMALL_BUDGET) as two:
        async with compute_held(one), compute_held(two):
            for client in (one, two):
                started = await client.post("/v1/solve", json={"rules": RULES})
                assert started.status_code == 202, started.text
        await until(lambda: solved(one))
        await until(lambda: solved(two))
        engines = [c.app.state.service.engines[RULES] for c in (one, two)]  # type: ignore[attr-defined]
        assert sum(engine.counters.computed for engine in engines) == BLOCKS
        assert (await one.post("/v1/advice", json=ask())).status_code == 200


@pytest.mark.parametrize(
    ("setting", "who"),
    [
        ("off", "only its operator"),
        pytest.param("loopback", "only someone at the server itself", marks=pytest.mark.full),
    ],
)
async def test_where_the_setting_forbids_it_the_player_is_told_the_game_is_not_solved_yet(
    tmp_path: Path, setting: Any, who: str
) -> None:
    settings = ApiSettings(cold_budget=10, whole_game_solves=setting)
    app = build_app(tmp_path / "s.sqlite", settings)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 4000))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        refused = await client.post("/v1/advice", json=ask())
        message = error_of(refused, 422, "state")
        assert message.startswith(f"this server has not solved {RULES} yet, and {who}")
        assert "solve" not in refused.json()["error"]
        error_of(await client.post("/v1/solve", json={"rules": RULES}), 422, "state")
        assert (await coverage(client, RULES))["solving"] is False


async def test_background_solves_count_against_the_whole_game_queue(tmp_path: Path) -> None:
    settings = ApiSettings(cold_budget=10, whole_game_queue=1)
    async with api_client(tmp_path / "s.sqlite", settings) as client, compute_held(client):
        assert (await client.post("/v1/solve", json={"rules": RULES})).status_code == 202
        other = await client.post("/v1/solve", json={"rules": "yahtzee-upper"})
        assert "--whole-game-queue 1" in error_of(other, 429, "state")


async def test_with_live_workers_a_solve_asked_for_goes_to_them(redis_url: str) -> None:
    """On Redis with a worker alive, the workers' queueing stands: POST /v1/solve queues
    the start's warm job for them and starts nothing in the server's process."""
    async with api_client(redis_url, SMALL_BUDGET) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        await beat(await service.store.client(), "w1", {"worker": "w1"}, ttl_s=60)
        queued = await client.post("/v1/solve", json={"rules": RULES})
        assert queued.status_code == 202, queued.text
        assert (await coverage(client, RULES))["solving"] is False
        _, records = await service.queue.recent_jobs()
        (job,) = [record for record in records if record.get("kind") == "warm"]
        assert job["rules"] == RULES
