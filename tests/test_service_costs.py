"""What an anonymous client may cost the service, and the operator's bounds on it.

Registrations count against a quota (429 naming it), and may be the operator's alone, the
players' page then sending a pasted rule set inline; ``prune --unused-for`` removes the
ones nobody asked about; ``/readyz`` is not ready while Redis has no room for a block.
A solve past the cold budget is started only for the clients ``--whole-game-solves``
lets through, at most ``--whole-game-max`` turn starts each and ``--whole-game-queue`` at
once, the operator's precompute aside. Paging through ``GET /v1/rules`` leaves warm
advice as fast as it was.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from support.api_support import api_client, bearer, build_app, error_of
from support.redis_server import RedisServer
from support.web_support import Service as ServeProcess
from test_api_need import TINY  # three boxes and two dice: cold in milliseconds

from memo_solver.cli import main as memo_cli
from memo_solver.cli.parser import build_parser
from memo_solver.core.engine import namespace_of
from memo_solver.core.store import Store, StoreFullError
from memo_solver.games.yahtzee.family import definition_of
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set, rule_set_document
from memo_solver.jobs.queue import beat
from memo_solver.service.app import ApiSettings
from memo_solver.service.rulebook import USED_EVERY_S
from memo_solver.service.settings import ADMIN_TOKEN_ENV, REGISTRATION_QUOTA_ENV
from memo_solver.stores.redis import RedisStore

TOKEN = "s3cret"
DAY_S = 86_400.0
ROOM = 100
"""A registration quota that the tests of other rules never reach."""
PAST_BUDGET = ApiSettings(cold_budget=5_000)
"""A cold budget that every ``maxi-yatzy`` question of the tests is past."""


def tiny(name: str, points: int = 20) -> dict[str, Any]:
    """TINY under another name, its all-alike box worth ``points`` (another fingerprint)."""
    boxes = [*TINY["boxes"][:1], {**TINY["boxes"][1], "points": points}, TINY["boxes"][2]]
    return TINY | {"name": name, "boxes": boxes}


def maxi(upper_bonus: int) -> dict[str, Any]:
    """A copy of ``maxi-yatzy`` sent inline (89 million turn starts from its start), each
    bonus its own rule set: what a client sends to queue whole-game solves."""
    document = rule_set_document(RULE_SETS["maxi-yatzy"])
    return document | {"name": f"maxi-{upper_bonus}", "upper_bonus": upper_bonus}


# --- registrations -------------------------------------------------------------------------------


async def test_a_registration_past_the_quota_is_a_429_naming_it(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", ApiSettings(registration_quota=2)) as client:
        for name in ("tiny-a", "tiny-b"):
            assert (await client.post("/v1/rules", json=tiny(name))).status_code == 201
        message = error_of(await client.post("/v1/rules", json=tiny("tiny-c")), 429, "rules")
        assert "registration quota of 2" in message
        assert "--registration-quota" in message
        again = await client.post("/v1/rules", json=tiny("tiny-a"))  # no new registration
        assert (again.status_code, again.json()["created"]) == (200, False)
        inline = await client.post("/v1/value", json={"rules": tiny("tiny-c"), "state": "start"})
        assert inline.status_code == 200, inline.text


async def test_of_concurrent_registrations_past_the_quota_exactly_the_quota_are_created(
    store_of: tuple[list[str], Callable[[], Store]],
) -> None:
    """Twenty new rule sets POSTed at once against a quota of three: three are created,
    every other one is a 429 naming the quota, and the store holds three registrations."""
    _, open_store = store_of
    answers: list[httpx.Response] = []
    async with api_client(open_store, ApiSettings(registration_quota=3)) as client:

        async def post(i: int) -> None:
            answers.append(await client.post("/v1/rules", json=tiny(f"tiny-{i:02}", 21 + i)))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(post, i)
        store: Store = client.app.state.service.store  # type: ignore[attr-defined]
        registered = [name for name, _ in await store.registrations("", ROOM)]
    created = sorted(r.json()["name"] for r in answers if r.status_code == 201)
    assert created == registered
    assert len(created) == 3
    refused = [r for r in answers if r.status_code != 201]
    assert len(refused) == 17
    for answer in refused:
        assert "registration quota of 3" in error_of(answer, 429, "rules")


async def test_registering_may_need_the_operator_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served with ``--registration operator``, a registration needs the token (checked
    before the body); a rule set is still read without one, as the page shows it inline."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    settings = ApiSettings(registration="operator")
    async with api_client(tmp_path / "s.sqlite", settings) as client:
        error_of(await client.post("/v1/rules", json=TINY), 401, "authorization")
        error_of(await client.post("/v1/rules", content=b"{not json"), 401, "authorization")
        error_of(
            await client.post("/v1/rules", json=TINY, headers=bearer("wrong")),
            403,
            "authorization",
        )
        read = await client.post("/v1/rules/preview", json=TINY)
        assert read.status_code == 200, read.text
        assert read.json()["name"] == "tiny"
        assert read.json()["built_in"] is False
        listed = (await client.get("/v1/rules")).json()
        assert "tiny" not in [r["name"] for r in listed]  # read, not registered
        created = await client.post("/v1/rules", json=TINY, headers=bearer(TOKEN))
        assert created.status_code == 201, created.text


async def test_a_registration_asked_about_is_stamped_in_the_background_at_most_hourly(
    tmp_path: Path,
) -> None:
    """Registering stamps the name; asking about it by name notes it, and the service's
    background write stamps it, unless this process stamped it within the hour."""
    async with api_client(tmp_path / "s.sqlite") as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        store: Store = service.store
        before = time.time()
        await client.post("/v1/rules", json=TINY)
        [(name, registered)] = await store.last_used(0.0)
        assert name == "tiny"
        assert registered >= before
        long_ago = before - 30 * DAY_S
        await store.mark_used(["tiny"], long_ago)
        for _ in range(3):
            assert (await _value_of(client, "tiny")).is_success
        assert await store.last_used(0.0) == [("tiny", long_ago)]  # nothing written on the way
        await service.rulebook.write_used()
        [(_, stamped)] = await store.last_used(0.0)
        assert stamped >= before
        await store.mark_used(["tiny"], long_ago)
        assert (await _value_of(client, "tiny")).is_success
        await service.rulebook.write_used()  # stamped by this process less than an hour ago
        assert await store.last_used(0.0) == [("tiny", long_ago)]
        assert USED_EVERY_S == 3600.0


async def test_every_store_stamps_its_registrations(store: Store) -> None:
    """A stamp is kept for a registered name only; one never stamped is stamped when the
    stamps are first read; an unregistered name's stamp goes with it."""
    assert await store.last_used(1.0) == []
    for points, name in enumerate(("a", "b", "c"), start=21):
        rules = parse_rule_set(tiny(name, points))
        document = definition_of(rules)
        assert document is not None
        await store.register(name, rules.fingerprint, document, ROOM)
    await store.mark_used(["a", "nobody"], 10.0)
    assert await store.last_used(20.0) == [("a", 10.0), ("b", 20.0), ("c", 20.0)]
    assert await store.last_used(30.0) == [("a", 10.0), ("b", 20.0), ("c", 20.0)]
    await store.unregister("a")
    assert await store.last_used(40.0) == [("b", 20.0), ("c", 20.0)]


async def _register(store: Store, stamps: dict[str, float | None]) -> None:
    """Register each name (its own rule set) with blocks and definition; stamp it when it
    has a time (None: registered before stamps were kept)."""
    async with store:
        for points, (name, stamp) in enumerate(stamps.items(), start=21):
            rules = parse_rule_set(tiny(name, points))
            document = definition_of(rules)
            assert document is not None
            await store.put_definition(namespace_of(rules.fingerprint), document)
            await store.commit(namespace_of(rules.fingerprint), {"a": b"1"}, None)
            await store.register(name, rules.fingerprint, document, ROOM)
            if stamp is not None:
                await store.mark_used([name], stamp)


async def _state_of(store: Store) -> tuple[list[tuple[str, float]], list[str]]:
    async with store:
        return await store.last_used(time.time()), await store.namespaces()


def _prune(
    capsys: pytest.CaptureFixture[str], options: list[str], *args: str
) -> tuple[int, str, str]:
    """``memo-solver OPTIONS prune ARGS`` in this process: its status, stdout and stderr."""
    status = memo_cli.main([*options, "prune", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_prune_unused_for_lists_then_removes_the_registrations_nobody_asked_about(
    store_of: tuple[list[str], Callable[[], Store]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A registration from before the stamps counts as asked about when prune first sees
    it; a stale one is listed by the dry run, then removed with its blocks."""
    options, open_store = store_of
    now = time.time()
    stale_space = namespace_of(parse_rule_set(tiny("stale", 21)).fingerprint)
    stamps = {"stale": now - 40 * DAY_S, "fresh": now - DAY_S, "before-stamps": None}
    anyio.run(_register, open_store(), stamps)

    status, out, err = _prune(capsys, options, "--unused-for", "30", "--dry-run", "--json")
    assert status == 0, err
    answer = json.loads(out)
    assert answer["dry_run"] is True
    assert [r["name"] for r in answer["registrations"]] == ["stale"]
    used, spaces = anyio.run(_state_of, open_store())
    assert [name for name, _ in used] == ["before-stamps", "fresh", "stale"]  # nothing deleted
    assert dict(used)["before-stamps"] >= now  # counted as used when first seen
    assert stale_space in spaces

    status, out, err = _prune(capsys, options, "--unused-for", "30")
    assert status == 0, err
    assert "1 registrations unused for 30 days deleted" in out
    assert "stale  last asked about" in out
    assert "its blocks deleted" in out
    used, spaces = anyio.run(_state_of, open_store())
    assert [name for name, _ in used] == ["before-stamps", "fresh"]
    assert stale_space not in spaces

    status, out, err = _prune(capsys, options, "--unused-for", "30", "--dry-run")
    assert status == 0, err
    assert "0 registrations unused for 30 days" in out
    status, out, err = _prune(capsys, options, "--unused-for", "0")
    assert status == 2
    assert "--unused-for" in err


# --- readiness -----------------------------------------------------------------------------------


async def test_readyz_is_steadily_not_ready_while_redis_has_no_room_for_a_block(
    fresh_redis: RedisServer,
) -> None:
    """A Redis a megabyte short of maxmemory accepts a probe's few bytes but refuses every
    block (the block's own bytes count against maxmemory as they arrive): not ready, every
    time, until it has room again."""
    async with api_client(fresh_redis.url) as client:
        assert (await client.get("/readyz")).status_code == 200
        store: RedisStore = client.app.state.service.store  # type: ignore[attr-defined]
        with fresh_redis.client() as redis:
            redis.config_set("maxmemory-policy", "noeviction")
            redis.config_set("maxmemory", int(redis.info("memory")["used_memory"]) + (1 << 20))
            try:
                for _ in range(20):
                    message = error_of(await client.get("/readyz"), 503, "store")
                    assert "maxmemory" in message
                with pytest.raises(StoreFullError):
                    await store.commit("t:blocks", {"b": b"x" * (2 << 20)}, None)
            finally:
                redis.config_set("maxmemory", 0)
        assert (await client.get("/readyz")).status_code == 200


# --- solves past the cold budget -----------------------------------------------------------------


@asynccontextmanager
async def client_at(
    address: str, store: str, settings: ApiSettings
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app whose requests come from ``address``, with a live worker's
    heartbeat on the Redis at ``store`` (no worker runs: what is queued stays queued)."""
    app = build_app(store, settings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(address, 4000))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        client.app = app  # type: ignore[attr-defined]
        service = app.state.service
        await beat(await service.store.client(), "w1", {"worker": "w1"}, ttl_s=600)
        yield client


async def _warm_jobs(client: httpx.AsyncClient) -> list[dict[str, str]]:
    _, records = await client.app.state.service.queue.recent_jobs()  # type: ignore[attr-defined]
    return [record for record in records if record.get("kind") == "warm"]


async def _value_of(client: httpx.AsyncClient, rules: object, state: object = "start") -> Any:
    return await client.post("/v1/value", json={"rules": rules, "state": state})


async def test_only_loopback_clients_start_solves_past_the_budget_by_default(
    redis_url: str,
) -> None:
    async with client_at("203.0.113.9", redis_url, PAST_BUDGET) as client:
        message = error_of(await _value_of(client, maxi(50)), 422, "state")
        assert "--whole-game-solves loopback" in message
        error_of(await _value_of(client, "maxi-yatzy"), 422, "state")
        assert await _warm_jobs(client) == []
    async with client_at("::1", redis_url, PAST_BUDGET) as client:
        error_of(await _value_of(client, maxi(50)), 503, "state")
        assert len(await _warm_jobs(client)) == 1


@pytest.mark.parametrize(
    ("setting", "address", "status"),
    [("off", "127.0.0.1", 422), ("anyone", "203.0.113.9", 503)],
)
async def test_whole_game_solves_decides_who_starts_them(
    redis_url: str, setting: Any, address: str, status: int
) -> None:
    settings = ApiSettings(cold_budget=5_000, whole_game_solves=setting)
    async with client_at(address, redis_url, settings) as client:
        error_of(await _value_of(client, maxi(50)), status, "state")
        # A need asks for the same solve of the mean first: the same answer.
        asked = {"rules": maxi(50), "state": "start", "need": 300}
        error_of(await client.post("/v1/advice", json=asked), status, "state")


async def test_a_solve_past_the_size_cap_is_a_422_naming_it(redis_url: str) -> None:
    settings = ApiSettings(cold_budget=5_000, whole_game_max=50_000_000)
    async with client_at("127.0.0.1", redis_url, settings) as client:
        message = error_of(await _value_of(client, maxi(50)), 422, "state")
        assert "89,128,960 turn starts" in message
        assert "--whole-game-max of 50,000,000" in message
        # Three boxes filled: 2^17 blocks of 85 turn starts, 11.1 million, within it.
        later = {"filled": ["ones", "twos", "threes"]}
        error_of(await _value_of(client, maxi(50), later), 503, "state")


async def test_solves_past_the_budget_are_capped_in_number_but_not_the_operators(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two queued at once (the default): a third distinct one is a 429 naming the cap, the
    same one again joins its job, and one finishing makes room; the operator's precompute
    is never counted."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    assert ApiSettings().whole_game_queue == 2
    async with client_at("127.0.0.1", redis_url, PAST_BUDGET) as client:
        error_of(await _value_of(client, maxi(50)), 503, "state")
        error_of(await _value_of(client, maxi(51)), 503, "state")
        message = error_of(await _value_of(client, maxi(52)), 429, "state")
        assert "--whole-game-queue 2" in message
        error_of(await _value_of(client, maxi(50)), 503, "state")  # the same job, queued
        assert len(await _warm_jobs(client)) == 2
        precompute = await client.post(
            "/v1/jobs/precompute", json={"rules": maxi(53)}, headers=bearer(TOKEN)
        )
        assert precompute.status_code == 202, precompute.text
        queue = client.app.state.service.queue  # type: ignore[attr-defined]
        first = next(
            job
            for job in await _warm_jobs(client)
            if job["rules"] == parse_rule_set(maxi(50)).fingerprint
        )
        await queue.finish(first["id"], 60.0, status="done")
        error_of(await _value_of(client, maxi(52)), 503, "state")
        error_of(await _value_of(client, maxi(54)), 429, "state")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/advice/batch", {"rules": "maxi-yatzy", "states": ["start"]}),
        ("/v1/stats", {"rules": "maxi-yatzy", "state": "start"}),
        ("/v1/review", {"rules": "maxi-yatzy", "game": {"turns": []}}),
    ],
)
async def test_every_question_of_values_is_held_to_the_cold_budget(
    tmp_path: Path, path: str, body: dict[str, Any]
) -> None:
    """A batch, a distribution and a review read values as advice does: past the budget
    they are refused here (no worker) rather than solved in the service's process."""
    async with api_client(tmp_path / "s.sqlite", PAST_BUDGET) as client:
        message = error_of(await client.post(path, json=body), 422, "state")
        assert "89,128,960 turn starts" in message


def test_serve_takes_its_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REGISTRATION_QUOTA_ENV, "7")
    args = build_parser().parse_args(["serve"])
    assert args.registration_quota == 7
    assert args.whole_game_solves == "loopback"
    given = build_parser().parse_args(["serve", "--registration-quota", "9"])
    assert given.registration_quota == 9


# --- the rule list off the event loop ------------------------------------------------------------

PAGER = """
import sys, threading, urllib.request
base, pages = sys.argv[1], [0] * 4
going, parked = threading.Event(), threading.Semaphore(0)
going.set()
def page_for_ever(i):
    while True:
        if not going.is_set():
            parked.release()
            going.wait()
        url = base + "/v1/rules?limit=100"
        while url:
            with urllib.request.urlopen(url, timeout=60) as answer:
                answer.read()
                link = answer.headers.get("Link")
            url = link and link.split(";")[0].strip("<>")
            pages[i] += 1
for i in range(4):
    threading.Thread(target=page_for_ever, args=(i,), daemon=True).start()
for line in sys.stdin:
    if line.strip() == "pause":
        going.clear()
        for _ in range(4):
            parked.acquire()
        print("paused", flush=True)
    else:
        going.set()
print(min(pages), flush=True)
"""
"""Four clients paging through ``GET /v1/rules``, each through the whole list at a time:
told ``pause``, each finishes its pass and waits, and ``paused`` says all four do (no page
of theirs is then in flight); ``go`` lets them go on. When their standard input closes,
the fewest passes' pages one of them read. Threads of one process: what is measured is
the server's event loop, so the clients' own CPU must not take the server's (on two
cores, four busy client processes would; one takes at most a core, as the GIL allows)."""
ADVICE = json.dumps({"state": "open=ones,yahtzee upper=62 dice=12226 rerolls=2"}).encode()
"""Two boxes open: cold in milliseconds, then warm in the server's memo."""


def _latencies(url: str, body: bytes | None, count: int) -> list[float]:
    """Seconds each of ``count`` requests in a row took: a POST of ``body``, else a GET."""
    latencies = []
    for _ in range(count):
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
        latencies.append(time.perf_counter() - started)
    return latencies


def _p99(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98]


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_paging_the_rule_list_leaves_warm_advice_fast(tmp_path: Path) -> None:
    """Four clients paging through 150 registrations (copies of ``maxi-yatzy``, 20 boxes and
    their points each): warm advice's p99 stays within three times its idle p99. Before,
    each page parsed and serialized its rule sets on the event loop (80-140 ms of CPU a
    page: the warm requests' p99 went from 6 to 132 ms); now a page is kept bytes joined,
    and what is not kept yet is made in a thread, so a page costs the loop about what any
    small request does (/healthz: about a millisecond). Idle and busy are measured in
    turns, the pagers paused and let go again, so that both see the same load from the
    rest of the machine."""
    with ServeProcess(tmp_path / "serve", options=["--registration-quota", "1000"]) as served:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            for i in range(150):
                registered = client.post("/v1/rules", json=maxi(i) | {"name": f"maxi-{i:03}"})
                assert registered.status_code == 201, registered.text
        advice = f"{served.url}/v1/advice"
        _latencies(advice, ADVICE, 20)  # cold first, then warm: in the process's memo
        pagers = subprocess.Popen(
            [sys.executable, "-c", PAGER, served.url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert pagers.stdin is not None
        assert pagers.stdout is not None
        tries: list[str] = []
        try:
            # A loop that serializes pages stalls every advice request behind them in every
            # try (before: 132 ms against 6 ms idle, each time); a busy machine's scheduler
            # stalls one try now and then. So the bound must hold in one of three tries.
            for _ in range(3):
                idle, busy, trivial = _turns(pagers, advice, f"{served.url}/healthz")
                tries.append(
                    f"warm advice p99 idle {1000 * _p99(idle):.1f} ms, median "
                    f"{1000 * statistics.median(idle):.1f} ms; while 4 clients page: p99 "
                    f"{1000 * _p99(busy):.1f} ms, median {1000 * statistics.median(busy):.1f} "
                    f"ms; /healthz median {1000 * statistics.median(trivial):.1f} ms"
                )
                # An advice request may find a request of each pager on the loop before it,
                # however cheap: on a quiet machine, idle's p99 is below what four trivial
                # requests take.
                if _p99(busy) <= 3 * max(_p99(idle), 4 * statistics.median(trivial)):
                    break
            else:
                pytest.fail("warm advice slowed by paging in three tries: " + "; ".join(tries))
        finally:
            fewest, _ = pagers.communicate(timeout=120)
    assert pagers.returncode == 0, "the pagers failed"
    print(f"{fewest.strip()} pages at least per client; " + "; ".join(tries))
    assert int(fewest) >= 2, "each client paged through the whole list (two pages) at least"


def _turns(
    pagers: subprocess.Popen[str], advice: str, trivial_url: str
) -> tuple[list[float], list[float], list[float]]:
    """Warm advice's latencies idle and while the pagers page, and a trivial request's, in
    ten turns: the pagers paused and let go again, so that both see the same load from the
    rest of the machine."""
    assert pagers.stdin is not None
    assert pagers.stdout is not None
    idle: list[float] = []
    busy: list[float] = []
    trivial: list[float] = []
    for _ in range(10):
        pagers.stdin.write("pause\n")
        pagers.stdin.flush()
        assert pagers.stdout.readline() == "paused\n"
        idle += _latencies(advice, ADVICE, 60)
        trivial += _latencies(trivial_url, None, 10)
        pagers.stdin.write("go\n")
        pagers.stdin.flush()
        busy += _latencies(advice, ADVICE, 60)
    return idle, busy, trivial
